/**
 * The core of the Source server: maps a minimal request (method, request-target, header fields) to a
 * response description (status, header fields, body as bytes or as an open file range) that adapters write.
 * `handler.ts` wraps it as a web-standard `(Request) => Promise<Response>`; `node-adapter.ts` writes it
 * straight to `node:http` without building `Request`/`Response` objects on the hot path.
 *
 * Routes:
 * - `/.well-known/resourcesync` → the Source Description (`application/xml`). @see Z39.99 §6.3.2
 * - `/.resourcesync/**` → the other published documents (`application/xml`, ZIP packages `application/zip`).
 * - `/robots.txt` → the published robots.txt with its `Sitemap:` lines (§6.3.4), unless the (single) set has
 *   a resource named `robots.txt`: a resource is then served as listed, byte for byte, because a Destination
 *   verifies it against the length and hash in the Resource List.
 * - everything else → resources of the sets: one set at `/<relative path>`, several at `/<set>/<relative path>`.
 *   Every resource response carries `Link: <Capability List>; rel="resourcesync"`. @see Z39.99 §6.3.3
 *   With `htmlDiscoveryLink`, HTML resources (up to 1 MiB) are served with `<link rel="resourcesync">` inserted
 *   in their `<head>` by `withResourceSyncLink` (src/core/html-discovery.ts). The served bitstream must keep
 *   the length and hash published for it, so this is only sound when the Source published the same bytes:
 *   `publish` with `htmlDiscoveryLink` runs the same pure function over the same file before it hashes it.
 *
 * Confinement: a target with `..`, `%2e%2e`, `%2f`, `%5c`, `\`, NUL or control characters is refused with 400;
 * hidden segments (starting with `.`) outside the document routes, directories, and files whose real path
 * (after symlinks) leaves the set directory or passes through a hidden folder are 404.
 */
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ResourceSyncError } from '../core/errors.js';
import { REL_RESOURCESYNC, WELL_KNOWN_PATH } from '../core/constants.js';
import { HTML_LINK_MAX_BYTES, HTML_LINK_MEDIA_TYPE, withResourceSyncLink } from '../core/html-discovery.js';
import {
  acceptsEncoding,
  evaluatePreconditions,
  ifRangeHolds,
  isCompressible,
  parseRange,
  type ConditionalHeaders,
} from './http-semantics.js';
import { mediaType as sourceMediaType } from '../core/media-type.js';
import { parseTarget } from './target.js';

/** One set of resources served by the Source. @see Z39.99 §5.1 (sets of resources) */
export interface SourceSet {
  /** Name of the set; with several sets it is the first URL path segment of its resources. */
  name: string;
  /** Directory holding the resources. */
  dir: string;
  /** URL of the set's Capability List, for the `Link` header. Default: `<base>/.resourcesync/<name>/capabilitylist.xml`. */
  capabilityList?: string;
}

/** Options of `createSourceCore` and `createSourceHandler`. */
export interface SourceServerOptions {
  /** The sets of resources (at least one). */
  sets: readonly SourceSet[];
  /** Directory of the published documents, laid out as their URL paths (`.well-known/resourcesync`, `.resourcesync/…`, `robots.txt`). */
  outDir: string;
  /**
   * Base URL of the Source. Its path, if any, is stripped from request paths that start with it, and it
   * prefixes the default Capability List URLs. Without it those URLs are path-absolute (`/.resourcesync/…`).
   */
  baseUrl?: string;
  /** Compress compressible types with gzip when the client accepts it. Default true. */
  gzip?: boolean;
  /** Files up to this size are read synchronously and kept in a validated memory cache. Default 64 KiB. */
  smallFileLimit?: number;
  /** Total bytes of small files kept in memory (original and gzip). Default 16 MiB. */
  cacheBytes?: number;
  /**
   * How long (ms) a resolved file (real path, confinement check, metadata, small-file bytes) is trusted before
   * it is checked again on the file system, like nginx's `open_file_cache_valid`. `invalidate()` forgets
   * everything at once (the watcher calls it on every change). 0 checks on every request. Default 1000.
   */
  cacheMs?: number;
  /** Clock for `cacheMs`. Default `performance.now`. */
  now?: () => number;
  /** Media type for a file name. Default: the Source's table (`src/source/media-type.ts`), so that Content-Type equals the listed `type`. */
  mediaType?: (fileName: string) => string;
  /** Called with unexpected errors that became 500 responses. */
  onError?: (error: unknown) => void;
  /**
   * Serve HTML resources (`text/html`, at most 1 MiB on disk) with `<link rel="resourcesync" href="<Capability
   * List>">` inserted in their `<head>` (HTML that has one, or no head, is served as stored). Use it only with
   * a Source published with `htmlDiscoveryLink` and the same Capability List URLs, which lists these bytes.
   * Default false. @see Z39.99 §6.3.3
   */
  htmlDiscoveryLink?: boolean;
}

/** The request as the core needs it. `headers` has lower-case names (like `IncomingMessage.headers`). */
export interface CoreRequest {
  method: string;
  /** The request-target as received (origin-form `/path?query`, or absolute-form). */
  target: string;
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

/** Body of a core response. A `file` body owns `handle`: the writer must close it. */
export type CoreBody =
  | { type: 'bytes'; bytes: Uint8Array }
  | {
      type: 'file';
      handle: FileHandle;
      /** First byte, inclusive. */
      start: number;
      /** Last byte, exclusive. */
      end: number;
      /** Compress the range with gzip while writing (no Content-Length is set then). */
      gzip: boolean;
    };

/**
 * A response description: status, header fields (lower-case names) and an optional body (none for HEAD).
 * Read-only: the core returns the same object for repeated plain GETs of a cached file.
 */
export interface CoreResponse {
  status: number;
  headers: Record<string, string>;
  body?: CoreBody;
}

/** A function from request to response description, as adapters call it. */
export type CoreHandler = (request: CoreRequest) => CoreResponse | Promise<CoreResponse>;

/** The server core: one function from request to response description. It never throws. */
export interface SourceCore extends CoreHandler {
  /** Forgets every cached resolution, so that the next requests look at the file system again. */
  invalidate(): void;
}

const XML = 'application/xml';
const ALLOW = 'GET, HEAD';
const GZIP_MIN = 256;

/** Metadata of a regular file, and its bytes when it is small. */
interface FileInfo {
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  etag: string;
  lastModified: string;
  mtimeSeconds: number;
  bytes: Buffer | undefined;
  gz: Buffer | undefined;
  /** Size of the file on disk when `bytes` were rewritten (HTML discovery link); `size` is that of `bytes`. */
  storedSize?: number;
}

interface Root {
  dir: string;
  real: string | undefined;
}

type FileKind = 'resource' | 'document' | 'robots';

/** A request-target resolved to a file: what to serve and how. `info` undefined = not found. */
interface Resolution {
  real: string | undefined;
  info: FileInfo | undefined;
  contentType: string;
  kind: FileKind;
  link: string | undefined;
  checkedAt: number;
  /** Bytes this entry holds in memory. */
  weight: number;
  /** The response to a plain GET (no conditions, no range, identity coding), built once; read-only. */
  plain: CoreResponse | undefined;
}

function statusResponse(status: number, text: string, extra?: Record<string, string>): CoreResponse {
  const bytes = Buffer.from(`${status} ${text}\n`);
  return {
    status,
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(bytes.length),
      ...extra,
    },
    body: { type: 'bytes', bytes },
  };
}

function header(h: CoreRequest['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

function etagOf(st: Stats): string {
  return `"${st.ino.toString(16)}-${st.size.toString(16)}-${Math.round(st.mtimeMs * 1000).toString(16)}"`;
}

function gzipTag(etag: string): string {
  return `${etag.slice(0, -1)}-gz"`;
}

function encodePathSegment(s: string): string {
  return encodeURIComponent(s);
}


function sameFile(info: FileInfo, st: Stats): boolean {
  return info.ino === st.ino && (info.storedSize ?? info.size) === st.size && info.mtimeMs === st.mtimeMs && info.ctimeMs === st.ctimeMs;
}

function infoFrom(st: Stats): FileInfo {
  const mtimeSeconds = Math.floor(st.mtimeMs / 1000);
  return {
    ino: st.ino,
    size: st.size,
    mtimeMs: st.mtimeMs,
    ctimeMs: st.ctimeMs,
    etag: etagOf(st),
    lastModified: new Date(mtimeSeconds * 1000).toUTCString(),
    mtimeSeconds,
    bytes: undefined,
    gz: undefined,
  };
}

/** Reads a small regular file in full, with metadata from the same descriptor; undefined if it is not one. */
function readSmall(real: string, limit: number): FileInfo | undefined {
  const fd = openSync(real, 'r');
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > limit) return undefined;
    const buf = Buffer.allocUnsafe(st.size);
    let n = 0;
    while (n < st.size) {
      const r = readSync(fd, buf, n, st.size - n, n);
      if (r === 0) break;
      n += r;
    }
    if (n !== st.size) return undefined; // truncated meanwhile
    const info = infoFrom(st);
    info.bytes = buf;
    return info;
  } finally {
    closeSync(fd);
  }
}

/** Stored bytes → served bytes. */
type Rewrite = (stored: Buffer) => Uint8Array;

/** Reads an HTML file whole and gives it its discovery link; undefined if it is not a regular file of at most 1 MiB. */
function rewritten(real: string, html: Rewrite): FileInfo | undefined {
  const info = readSmall(real, HTML_LINK_MAX_BYTES);
  if (info?.bytes === undefined) return undefined;
  const out = html(info.bytes);
  if (out !== info.bytes) {
    info.storedSize = info.size;
    info.bytes = Buffer.from(out.buffer, out.byteOffset, out.byteLength);
    info.size = out.byteLength;
  }
  return info;
}

const MAX_RESOLUTIONS = 50_000;

/**
 * Builds the server core for a Source. See the module comment for the routes.
 * @example
 * const core = createSourceCore({ sets: [{ name: 'data', dir: '/srv/data' }], outDir: '/srv/data/.resourcesync/publish' });
 * const res = await core({ method: 'GET', target: '/a.txt', headers: {} });
 * @see Z39.99 §6.3 (discovery)
 */
export function createSourceCore(options: SourceServerOptions): SourceCore {
  if (options.sets.length === 0) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'Server options: at least one set of resources is needed.');
  }
  const names = new Set<string>();
  for (const s of options.sets) {
    if (s.name === '' || s.name.startsWith('.') || s.name.includes('/') || names.has(s.name)) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Server options: set name '${s.name}' is empty, hidden, contains '/' or is repeated.`,
        { data: { name: s.name } },
      );
    }
    names.add(s.name);
  }
  const base = options.baseUrl === undefined ? undefined : new URL(options.baseUrl);
  const basePath = base === undefined ? '' : base.pathname.replace(/\/+$/, '');
  const basePrefix = basePath === '' ? [] : basePath.slice(1).split('/').map((s) => decodeURIComponent(s));
  const origin = base === undefined ? '' : `${base.origin}${basePath}`;
  const gzipOn = options.gzip ?? true;
  const smallLimit = options.smallFileLimit ?? 64 * 1024;
  const cacheMax = options.cacheBytes ?? 16 * 1024 * 1024;
  const cacheMs = options.cacheMs ?? 1000;
  const clock = options.now ?? (() => performance.now());
  const mediaType = options.mediaType ?? sourceMediaType;
  const onError = options.onError;

  const sets = new Map<string, { root: Root; link: string; html: Rewrite | undefined }>();
  for (const s of options.sets) {
    const cap = s.capabilityList ?? `${origin}/.resourcesync/${encodePathSegment(s.name)}/capabilitylist.xml`;
    const html = options.htmlDiscoveryLink === true ? (stored: Buffer): Uint8Array => withResourceSyncLink(stored, cap) : undefined;
    sets.set(s.name, { root: { dir: s.dir, real: undefined }, link: `<${cap}>; rel="${REL_RESOURCESYNC}"`, html });
  }
  const docs: Root = { dir: options.outDir, real: undefined };
  const onlySet = options.sets.length === 1 ? sets.get(options.sets[0]!.name)! : undefined;
  const roots = [docs, ...[...sets.values()].map((s) => s.root)];

  // Resolutions by request path, trusted for cacheMs; FIFO-bounded in entries and in bytes held.
  const resolutions = new Map<string, Resolution>();
  let held = 0;
  function store(path: string, r: Resolution): void {
    const old = resolutions.get(path);
    if (old !== undefined) {
      held -= old.weight;
      resolutions.delete(path);
    }
    resolutions.set(path, r);
    held += r.weight;
    if (held <= cacheMax && resolutions.size <= MAX_RESOLUTIONS) return;
    for (const [k, v] of resolutions) {
      if (held <= cacheMax && resolutions.size <= MAX_RESOLUTIONS) break;
      if (v === r) continue;
      resolutions.delete(k);
      held -= v.weight;
    }
  }

  function rootReal(root: Root): string | undefined {
    if (root.real === undefined) {
      try {
        root.real = realpathSync.native(root.dir);
      } catch {
        return undefined;
      }
    }
    return root.real;
  }

  /** Real path of the file if it lies inside `root` and its path below the root has no hidden segment. */
  function confined(root: Root, segments: readonly string[], allowHiddenFirst: boolean): string | undefined {
    const top = rootReal(root);
    if (top === undefined) return undefined;
    let real: string;
    try {
      real = realpathSync.native(join(top, ...segments));
    } catch {
      return undefined;
    }
    const prefix = top.endsWith(sep) ? top : top + sep;
    if (!real.startsWith(prefix)) return undefined;
    const rel = real.slice(prefix.length);
    let i = 0;
    for (;;) {
      if (rel.charCodeAt(i) === 46 /* '.' */ && !(allowHiddenFirst && i === 0)) return undefined;
      const next = rel.indexOf(sep, i);
      if (next < 0) break;
      i = next + 1;
    }
    return real;
  }

  function resolveFile(
    root: Root,
    segments: readonly string[],
    kind: FileKind,
    link: string | undefined,
    prev: Resolution | undefined,
    at: number,
    html?: Rewrite,
  ): Resolution {
    const name = segments[segments.length - 1]!;
    const contentType =
      kind === 'robots'
        ? 'text/plain; charset=utf-8'
        : kind === 'document' && (name === 'resourcesync' || name.endsWith('.xml'))
          ? XML
          : mediaType(name);
    const r: Resolution = { real: undefined, info: undefined, contentType, kind, link, checkedAt: at, weight: 0, plain: undefined };
    const real = confined(root, segments, kind === 'document');
    if (real === undefined) return r;
    const st = statSync(real, { throwIfNoEntry: false });
    if (st === undefined || !st.isFile()) return r;
    r.real = real;
    const old = prev?.real === real ? prev.info : undefined;
    if (old !== undefined && sameFile(old, st)) r.info = old;
    else if (html !== undefined && contentType === HTML_LINK_MEDIA_TYPE && st.size <= HTML_LINK_MAX_BYTES) r.info = rewritten(real, html) ?? infoFrom(st);
    else if (st.size <= smallLimit) r.info = readSmall(real, smallLimit) ?? infoFrom(st);
    else r.info = infoFrom(st);
    r.weight = (r.info.bytes?.length ?? 0) + (r.info.gz?.length ?? 0);
    return r;
  }

  /** Routes a request path to a file resolution, or to an immediate response. */
  function route(path: string, prev: Resolution | undefined, at: number): Resolution | CoreResponse {
    const parsed = parseTarget(path);
    if (!parsed.ok) return statusResponse(400, 'Bad Request');
    let segs = parsed.segments;
    if (basePrefix.length > 0 && basePrefix.length <= segs.length && basePrefix.every((p, i) => segs[i] === p)) {
      segs = segs.slice(basePrefix.length);
    }
    if (segs.length === 0 || parsed.directory) return statusResponse(404, 'Not Found');
    const first = segs[0]!;
    if (first.charCodeAt(0) === 46 /* '.' */) {
      if (first === '.well-known' && segs.length === 2 && `/${segs.join('/')}` === WELL_KNOWN_PATH) {
        return resolveFile(docs, segs, 'document', undefined, prev, at);
      }
      if (first === '.resourcesync' && segs.length > 1 && segs.every((s, i) => i === 0 || !s.startsWith('.'))) {
        return resolveFile(docs, segs, 'document', undefined, prev, at);
      }
      return statusResponse(404, 'Not Found');
    }
    for (const s of segs) if (s.charCodeAt(0) === 46) return statusResponse(404, 'Not Found');
    if (onlySet !== undefined) {
      const r = resolveFile(onlySet.root, segs, 'resource', onlySet.link, prev, at, onlySet.html);
      if (r.info === undefined && segs.length === 1 && first === 'robots.txt') {
        return resolveFile(docs, segs, 'robots', undefined, prev, at);
      }
      return r;
    }
    if (segs.length === 1 && first === 'robots.txt') return resolveFile(docs, segs, 'robots', undefined, prev, at);
    const set = sets.get(first);
    if (set === undefined || segs.length === 1) return statusResponse(404, 'Not Found');
    return resolveFile(set.root, segs.slice(1), 'resource', set.link, prev, at, set.html);
  }

  function fail(error: unknown): CoreResponse {
    const code = (error as NodeJS.ErrnoException | undefined)?.code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG' || code === 'EISDIR') {
      return statusResponse(404, 'Not Found');
    }
    if (code === 'EACCES' || code === 'EPERM') return statusResponse(403, 'Forbidden');
    onError?.(error);
    return statusResponse(500, 'Internal Server Error');
  }

  function respond(req: CoreRequest, r: Resolution, info: FileInfo, handle: FileHandle | undefined): CoreResponse {
    const h = req.headers;
    const size = info.size;
    const headers: Record<string, string> = {
      'content-type': r.contentType,
      'last-modified': info.lastModified,
      'accept-ranges': 'bytes',
    };
    if (r.link !== undefined) headers.link = r.link;
    if (r.kind !== 'resource') headers['cache-control'] = 'no-cache';
    const rangeHeader = req.method === 'GET' ? header(h, 'range') : undefined;
    let gzip = false;
    if (gzipOn && size >= GZIP_MIN && isCompressible(r.contentType)) {
      headers.vary = 'Accept-Encoding';
      gzip = rangeHeader === undefined && acceptsEncoding(header(h, 'accept-encoding'), 'gzip');
    }
    const etag = gzip ? gzipTag(info.etag) : info.etag;
    headers.etag = etag;

    if (
      h['if-match'] !== undefined ||
      h['if-none-match'] !== undefined ||
      h['if-modified-since'] !== undefined ||
      h['if-unmodified-since'] !== undefined
    ) {
      const conditional: ConditionalHeaders = {
        'if-match': header(h, 'if-match'),
        'if-none-match': header(h, 'if-none-match'),
        'if-modified-since': header(h, 'if-modified-since'),
        'if-unmodified-since': header(h, 'if-unmodified-since'),
      };
      const pre = evaluatePreconditions(conditional, etag, info.mtimeSeconds);
      if (pre === 'failed') return statusResponse(412, 'Precondition Failed', { etag });
      if (pre === 'not-modified') {
        delete headers['content-type'];
        delete headers['accept-ranges'];
        return { status: 304, headers };
      }
    }

    let status = 200;
    let start = 0;
    let end = size;
    if (rangeHeader !== undefined && ifRangeHolds(header(h, 'if-range'), etag, info.lastModified)) {
      const range = parseRange(rangeHeader, size);
      if (range === 'unsatisfiable') {
        return statusResponse(416, 'Range Not Satisfiable', { 'content-range': `bytes */${size}`, 'accept-ranges': 'bytes' });
      }
      if (range !== undefined) {
        status = 206;
        start = range.start;
        end = range.end;
        headers['content-range'] = `bytes ${start}-${end - 1}/${size}`;
      }
    }
    const head = req.method === 'HEAD';
    if (info.bytes !== undefined) {
      let bytes: Buffer = info.bytes;
      if (gzip) {
        if (info.gz === undefined) {
          info.gz = gzipSync(info.bytes);
          r.weight += info.gz.length;
          held += info.gz.length;
        }
        bytes = info.gz;
        headers['content-encoding'] = 'gzip';
      } else if (status === 206) {
        bytes = bytes.subarray(start, end);
      }
      headers['content-length'] = String(bytes.length);
      return head ? { status, headers } : { status, headers, body: { type: 'bytes', bytes } };
    }
    if (gzip) headers['content-encoding'] = 'gzip';
    else headers['content-length'] = String(end - start);
    if (head || handle === undefined) return { status, headers };
    return { status, headers, body: { type: 'file', handle, start, end, gzip } };
  }

  /** Serves a file without bytes in memory through a descriptor, with metadata from that descriptor. */
  async function respondFromDescriptor(req: CoreRequest, r: Resolution): Promise<CoreResponse> {
    const handle = await open(r.real!, 'r');
    let res: CoreResponse | undefined;
    try {
      const st = await handle.stat();
      if (!st.isFile()) return statusResponse(404, 'Not Found');
      res = respond(req, r, infoFrom(st), handle);
      return res;
    } finally {
      if (res?.body?.type !== 'file') await handle.close();
    }
  }

  function handle(req: CoreRequest): CoreResponse | Promise<CoreResponse> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return statusResponse(405, 'Method Not Allowed', { allow: ALLOW });
    }
    const q = req.target.indexOf('?');
    const path = q < 0 ? req.target : req.target.slice(0, q);
    const at = clock();
    let r = resolutions.get(path);
    if (r === undefined || at - r.checkedAt >= cacheMs) {
      const routed = route(path, r, at);
      if (!('checkedAt' in routed)) return routed;
      r = routed;
      if (cacheMs > 0) store(path, r);
    }
    if (r.info === undefined) return statusResponse(404, 'Not Found');
    if (r.info.bytes !== undefined) {
      const h = req.headers;
      if (
        req.method === 'GET' &&
        h.range === undefined &&
        h['if-none-match'] === undefined &&
        h['if-modified-since'] === undefined &&
        h['if-match'] === undefined &&
        h['if-unmodified-since'] === undefined &&
        (h['accept-encoding'] === undefined || !isCompressible(r.contentType))
      ) {
        // the hot path: one response object per resolution, written as is by the adapter
        return (r.plain ??= respond(req, r, r.info, undefined));
      }
      return respond(req, r, r.info, undefined);
    }
    if (req.method === 'HEAD') return respond(req, r, r.info, undefined);
    return respondFromDescriptor(req, r).catch(fail);
  }

  const core = ((req: CoreRequest) => {
    try {
      return handle(req);
    } catch (error) {
      return fail(error);
    }
  }) as SourceCore;
  core.invalidate = () => {
    resolutions.clear();
    held = 0;
    for (const root of roots) root.real = undefined;
  };
  return core;
}
