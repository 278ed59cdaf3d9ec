/**
 * The core of the Source server (its responder): maps a minimal request (method, request-target, header fields) to a
 * response description (status, header fields, body as bytes or as an open file range) that adapters write.
 * `handler.ts` wraps it as a web-standard `(Request) => Promise<Response>`; `node-adapter.ts` writes it
 * straight to `node:http` without building `Request`/`Response` objects on the hot path. Its parts: `routes.ts`
 * (request path → file), `file-resolver.ts` (confinement, metadata, small-file bytes, the resolution cache) and
 * `file-response.ts` (preconditions, ranges, gzip).
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
import { ResourceSyncError } from '../core/errors.js';
import { mediaType as sourceMediaType } from '../core/media-type.js';
import { isCompressible } from './http-semantics.js';
import { FileResolver, ResolutionCache } from './file-resolver.js';
import { respond, respondFromDescriptor, statusResponse, type ResponseOptions } from './file-response.js';
import type { ResponderHandler, ResponderRequest, ResponderResponse } from './request-response.js';
import { createRouter } from './routes.js';

/** One set of resources served by the Source. @see Z39.99 §5.1 (sets of resources) */
export interface SourceSet {
  /** Name of the set; with several sets it is the first URL path segment of its resources. */
  name: string;
  /** Directory holding the resources. */
  dir: string;
  /** URL of the set's Capability List, for the `Link` header. Default: `<base>/.resourcesync/<name>/capabilitylist.xml`. */
  capabilityList?: string;
}

/** Options of `createSourceResponder` and `createSourceHandler`. */
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
  /**
   * Resources of every set under `/<set>/`, even when there is one set (default false: a single set's resources
   * are at the root). Use it with a Source published with `namedSets`.
   */
  namedSets?: boolean;
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
  /** Media type for a file name. Default: the Source's table (`src/core/media-type.ts`), so that Content-Type equals the listed `type`. */
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

/** The server core: one function from request to response description. It never throws. */
export interface SourceResponder extends ResponderHandler {
  /** Forgets every cached resolution, so that the next requests look at the file system again. */
  invalidate(): void;
}

const ALLOW = 'GET, HEAD';

/**
 * Builds the server core for a Source. See the module comment for the routes.
 * @example
 * const core = createSourceResponder({ sets: [{ name: 'data', dir: '/srv/data' }], outDir: '/srv/data/.resourcesync/publish' });
 * const res = await core({ method: 'GET', target: '/a.txt', headers: {} });
 * @see Z39.99 §6.3 (discovery)
 */
export function createSourceResponder(options: SourceServerOptions): SourceResponder {
  checkSetNames(options.sets);
  const cacheMs = options.cacheMs ?? 1000;
  const clock = options.now ?? (() => performance.now());
  const onError = options.onError;
  const files = new FileResolver(options.smallFileLimit ?? 64 * 1024, options.mediaType ?? sourceMediaType);
  const router = createRouter(options, files);
  const resolutions = new ResolutionCache(options.cacheBytes ?? 16 * 1024 * 1024);
  const responses: ResponseOptions = { gzip: options.gzip ?? true, onHeld: (bytes) => resolutions.grow(bytes) };

  const fail = (error: unknown): ResponderResponse => failureResponse(error, onError);

  function handle(req: ResponderRequest): ResponderResponse | Promise<ResponderResponse> {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      return statusResponse(405, 'Method Not Allowed', { allow: ALLOW });
    }
    const q = req.target.indexOf('?');
    const path = q < 0 ? req.target : req.target.slice(0, q);
    const at = clock();
    let r = resolutions.get(path);
    if (r === undefined || at - r.checkedAt >= cacheMs) {
      const routed = router.route(path, r, at);
      if (!('checkedAt' in routed)) return routed;
      r = routed;
      if (cacheMs > 0) resolutions.store(path, r);
    }
    if (r.info === undefined) return statusResponse(404, 'Not Found');
    if (r.info.bytes !== undefined) {
      if (isPlainGet(req, r.contentType)) {
        // the hot path: one response object per resolution, written as is by the adapter
        return (r.plain ??= respond(req, r, r.info, undefined, responses));
      }
      return respond(req, r, r.info, undefined, responses);
    }
    if (req.method === 'HEAD') return respond(req, r, r.info, undefined, responses);
    return respondFromDescriptor(req, r, responses).catch(fail);
  }

  const core = ((req: ResponderRequest) => {
    try {
      return handle(req);
    } catch (error) {
      return fail(error);
    }
  }) as SourceResponder;
  core.invalidate = () => {
    resolutions.clear();
    for (const root of router.roots) root.real = undefined;
  };
  return core;
}

/** Set names are unique, not empty, not hidden and without '/'; at least one set. */
function checkSetNames(sets: SourceServerOptions['sets']): void {
  if (sets.length === 0) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'Server options: at least one set of resources is needed.');
  }
  const names = new Set<string>();
  for (const s of sets) {
    if (s.name === '' || s.name.startsWith('.') || s.name.includes('/') || names.has(s.name)) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Server options: set name '${s.name}' is empty, hidden, contains '/' or is repeated.`,
        { data: { name: s.name } },
      );
    }
    names.add(s.name);
  }
}

/** A file system failure as a response: 404 for a missing path, 403 for one refused, else 500 (reported). */
function failureResponse(error: unknown, onError: ((error: unknown) => void) | undefined): ResponderResponse {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG' || code === 'EISDIR') {
    return statusResponse(404, 'Not Found');
  }
  if (code === 'EACCES' || code === 'EPERM') return statusResponse(403, 'Forbidden');
  onError?.(error);
  return statusResponse(500, 'Internal Server Error');
}

/**
 * A GET without range, conditions or a gzip choice to make: answered by the one response object kept with the
 * resolution.
 */
function isPlainGet(req: ResponderRequest, contentType: string): boolean {
  const h = req.headers;
  return (
    req.method === 'GET' &&
    h.range === undefined &&
    h['if-none-match'] === undefined &&
    h['if-modified-since'] === undefined &&
    h['if-match'] === undefined &&
    h['if-unmodified-since'] === undefined &&
    (h['accept-encoding'] === undefined || !isCompressible(contentType))
  );
}
