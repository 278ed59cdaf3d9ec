/**
 * File resolution for the Source server: a root directory and path segments become a confined real path,
 * its metadata and validators, and, for small files, its bytes; resolutions are cached for a while.
 *
 * Confinement: a file whose real path (after symlinks) leaves its root or passes through a hidden folder
 * (a segment starting with `.`) is not found. Only the documents' root may have a hidden first segment
 * (`.well-known`, `.resourcesync`).
 */
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import { join, sep } from 'node:path';
import { HTML_LINK_MAX_BYTES, HTML_LINK_MEDIA_TYPE } from '../core/html-discovery.js';
import type { ResponderResponse } from './request-response.js';

/** Metadata of a regular file, and its bytes when it is small. */
export interface FileInfo {
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

/** A directory that files are served from; `real` is its real path once resolved. */
export interface Root {
  dir: string;
  real: string | undefined;
}

/** What a file is to the Source: a resource of a set, a published document, or the published robots.txt. */
export type FileKind = 'resource' | 'document' | 'robots';

/** A request-target resolved to a file: what to serve and how. `info` undefined = not found. */
export interface Resolution {
  real: string | undefined;
  info: FileInfo | undefined;
  contentType: string;
  kind: FileKind;
  link: string | undefined;
  checkedAt: number;
  /** Bytes this entry holds in memory. */
  weight: number;
  /** The response to a plain GET (no conditions, no range, identity coding), built once; read-only. */
  plain: ResponderResponse | undefined;
}

/** Stored bytes → served bytes. */
export type Rewrite = (stored: Buffer) => Uint8Array;

const XML = 'application/xml';
const MAX_RESOLUTIONS = 50_000;

function etagOf(st: Stats): string {
  return `"${st.ino.toString(16)}-${st.size.toString(16)}-${Math.round(st.mtimeMs * 1000).toString(16)}"`;
}

function sameFile(info: FileInfo, st: Stats): boolean {
  return (
    info.ino === st.ino &&
    (info.storedSize ?? info.size) === st.size &&
    info.mtimeMs === st.mtimeMs &&
    info.ctimeMs === st.ctimeMs
  );
}

/** Metadata and validators (ETag, Last-Modified) of a file, without its bytes. */
export function infoFrom(st: Stats): FileInfo {
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

/** Resolves path segments below a root to a file, confined as the module comment says. */
export class FileResolver {
  constructor(
    private readonly smallLimit: number,
    private readonly mediaType: (fileName: string) => string,
  ) {}

  /**
   * The resolution of `segments` below `root`. `prev` is the last resolution of the same request path: its
   * metadata and bytes are kept when the file is unchanged. `html` rewrites HTML resources (discovery link).
   */
  resolve(
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
          : this.mediaType(name);
    const r: Resolution = {
      real: undefined,
      info: undefined,
      contentType,
      kind,
      link,
      checkedAt: at,
      weight: 0,
      plain: undefined,
    };
    const real = confined(root, segments, kind === 'document');
    if (real === undefined) return r;
    const st = statSync(real, { throwIfNoEntry: false });
    if (st === undefined || !st.isFile()) return r;
    r.real = real;
    const old = prev?.real === real ? prev.info : undefined;
    if (old !== undefined && sameFile(old, st)) r.info = old;
    else if (html !== undefined && contentType === HTML_LINK_MEDIA_TYPE && st.size <= HTML_LINK_MAX_BYTES)
      r.info = rewritten(real, html) ?? infoFrom(st);
    else if (st.size <= this.smallLimit) r.info = readSmall(real, this.smallLimit) ?? infoFrom(st);
    else r.info = infoFrom(st);
    r.weight = (r.info.bytes?.length ?? 0) + (r.info.gz?.length ?? 0);
    return r;
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

/** Resolutions by request path, trusted for a while by the caller; FIFO-bounded in entries and in bytes held. */
export class ResolutionCache {
  private readonly resolutions = new Map<string, Resolution>();
  private held = 0;

  constructor(private readonly maxBytes: number) {}

  get(path: string): Resolution | undefined {
    return this.resolutions.get(path);
  }

  /** Counts bytes that a cached resolution took on later (a gzip copy). */
  grow(bytes: number): void {
    this.held += bytes;
  }

  store(path: string, r: Resolution): void {
    const resolutions = this.resolutions;
    const old = resolutions.get(path);
    if (old !== undefined) {
      this.held -= old.weight;
      resolutions.delete(path);
    }
    resolutions.set(path, r);
    this.held += r.weight;
    if (this.held <= this.maxBytes && resolutions.size <= MAX_RESOLUTIONS) return;
    for (const [k, v] of resolutions) {
      if (this.held <= this.maxBytes && resolutions.size <= MAX_RESOLUTIONS) break;
      if (v === r) continue;
      resolutions.delete(k);
      this.held -= v.weight;
    }
  }

  clear(): void {
    this.resolutions.clear();
    this.held = 0;
  }
}
