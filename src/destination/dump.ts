import { createHash, randomUUID, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { once as onceEvent } from 'node:events';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { ResourceSyncError, isResourceSyncError, type ErrorCode } from '../core/errors.js';
import { knownHashes, nodeHashName, parseLength, type HashValue } from '../core/hash.js';
import type { DocumentKindId } from '../core/model/document-kinds.js';
import type { Entry, Ln } from '../core/model/types.js';
import { formatW3CDatetime, parseW3CDatetime } from '../core/w3c-datetime.js';
import { readDocument } from '../core/xml/read-document.js';
import { safeJoin, safeRelativePath } from '../node/safe-path.js';
import { readManifestPath } from '../core/manifest-path.js';
import type { HttpGet } from './http.js';
import {
  applyJsonPatchBytes,
  once,
  patchLinks,
  readFileCapped,
  relatedLinks,
  type AuthorityCheck,
  type RelatedLinks,
} from './links.js';
import { isJsonPatchMediaType } from '../core/json-patch.js';
import { FsyncEach, type Durability } from '../node/durability.js';
import { DestinationRoot } from '../node/destination-root.js';
import { writeVerified, type ByteSource } from './verified-write.js';
import { gapNote, note, type DestinationNote, type GapNote } from './notes.js';

/**
 * Applying Resource Dumps (baseline) and Change Dumps (incremental): download each ZIP package,
 * verify it, check its manifest, and extract every bitstream to the local path of its `loc`.
 * The copy of the manifest a `rel="contents"` link points to is never fetched: the manifest inside
 * the package is the one applied.
 * @see Z39.99 §11, §13
 */

/** Where a failure happened and why. */
export interface DumpFailure {
  code: ErrorCode;
  message: string;
  /** The package URL. */
  package: string;
  /** The resource, for failures of one bitstream. */
  loc?: string;
  /** The manifest `path` or ZIP entry name concerned. */
  path?: string;
}

/** One bitstream written or one deletion seen, passed to `onResource` so the sync can record it. */
export interface DumpResource {
  loc: string;
  /** Local path relative to `dest`, from `mapPath`. */
  relPath: string;
  change: 'created' | 'updated' | 'deleted';
  /** For deletions: whether the local file was removed (`delete: true`). */
  applied: boolean;
  length?: number;
  /** Digests computed while writing, by algorithm. */
  hashes?: Record<string, string>;
  lastmod?: string;
  /** Links kept for the user (§14). */
  links: RelatedLinks;
  package: string;
}

/** What applying a dump did. */
export interface DumpReport {
  /** Packages read (fully or partly). */
  packages: number;
  /** Bitstreams extracted and verified (patched ones included). */
  extracted: number;
  /** Resources updated by applying a JSON Patch from the package to the local copy (§14.4). */
  patched: number;
  created: number;
  updated: number;
  deleted: number;
  /** Bytes of bitstreams written. */
  bytes: number;
  /** Bytes of packages downloaded. */
  packageBytes: number;
  failures: DumpFailure[];
  /** Resources whose manifest entry has no hash: checked by length only. */
  unverified: string[];
  /** ZIP entries that the manifest does not describe: ignored. */
  ignoredEntries: string[];
  /** Deletions seen but not applied (without `delete: true`). */
  deletionsNotApplied: string[];
  /** Change Dump Manifest entries at or before the cursor (`after`) in a package that straddles it: skipped. */
  skippedBeforeCursor: number;
  /** Change Dumps: the latest `until` (or `lastmod`) of the packages applied, for the cursor. */
  until?: string;
  /**
   * Change Dumps: set when the packages on offer start after the cursor (`after`): changes were missed, nothing was
   * applied, and this says why.
   */
  gap?: GapNote;
  /** What was tolerated or skipped. */
  notes: DestinationNote[];
  /** Milliseconds spent downloading and extracting (read + verify + write). */
  timings: { downloadMs: number; extractMs: number };
}

/** Progress of `applyResourceDump` / `applyChangeDump`, reported through `onProgress`. */
export interface DumpProgress {
  phase: 'download' | 'extract';
  package: string;
  /** Bytes so far in this phase of this package. */
  bytes: number;
  files: number;
}

/** Options of `applyResourceDump` and `applyChangeDump`. Effects (HTTP, authority, mapper) are injected. */
export interface ApplyDumpOptions {
  /** URL of the Resource Dump / Change Dump (or their index). */
  dumpUrl: string;
  http: HttpGet;
  authority: AuthorityCheck;
  /** The destination root. Packages are downloaded to `<dest>/.resourcesync/tmp/`. */
  dest: string;
  /** The mapper: a resource URI (`loc`) → its path relative to `dest`; throws `RS_UNSAFE_PATH` to refuse. */
  mapPath: (loc: string) => string;
  /** Apply deletions of Change Dump Manifests. Default false: reported only. */
  delete?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: DumpProgress) => void;
  /** Called for each bitstream written and each deletion seen, in manifest order. */
  onResource?: (r: DumpResource) => void | Promise<void>;
  /** Cap on the bytes extracted from all packages together. Default 1 TiB. */
  maxTotalBytes?: number;
  /** Cap on the ZIP entries of one package. Default 1,000,000. */
  maxEntries?: number;
  /**
   * Makes each file written durable (passed to `writeVerified`; a given one is settled by the caller). Default:
   * an fsync of each file, and of the folders that received files before the call resolves.
   */
  durability?: Durability;
  /** Change Dumps: skip packages whose `until` is at or before this W3C Datetime (the cursor), and the changes at or before it in the others. */
  after?: string;
  /** Bitstreams extracted at the same time (changes to one path stay in order). Default 4. */
  concurrency?: number;
}

const DEFAULT_MAX_TOTAL = 2 ** 40;
/** Largest change description (and local copy) patched from a Change Dump package. */
const MAX_PATCH_BYTES = 16 * 1024 * 1024;

/** A JSON Patch link of a Change Dump Manifest entry whose change description is in the package (`path`). @see Z39.99 §14.4 */
function packagedPatch(item: Entry): Ln | undefined {
  return patchLinks(item).find((ln) => ln.path !== undefined && isJsonPatchMediaType(ln.type));
}
const DOC_LIMITS = { maxBytes: 50 * 1024 * 1024 };

/**
 * Applies a Resource Dump: every package's bitstreams are extracted to `mapPath(loc)`, verified
 * against the manifest's `length` and `hash`.
 * @example
 * const report = await applyResourceDump({ dumpUrl, http, authority, dest: '/mirror', mapPath: (loc) => mapper.toPath(loc) });
 * @see Z39.99 §11
 */
export function applyResourceDump(options: ApplyDumpOptions): Promise<DumpReport> {
  return applyDump(options, 'resource');
}

/**
 * Applies a Change Dump: packages in forward chronological order, each manifest's changes in order;
 * `created`/`updated` bitstreams are extracted, `deleted` ones removed only with `delete: true`.
 * @example
 * const report = await applyChangeDump({ dumpUrl, http, authority, dest, mapPath, delete: true, after: cursor });
 * @see Z39.99 §13
 */
export function applyChangeDump(options: ApplyDumpOptions): Promise<DumpReport> {
  return applyDump(options, 'change');
}

type Flavor = 'resource' | 'change';
const DUMP_KIND: Record<Flavor, DocumentKindId> = { resource: 'resource-dump', change: 'change-dump' };
const INDEX_KIND: Record<Flavor, DocumentKindId> = { resource: 'resource-dump-index', change: 'change-dump-index' };
const MANIFEST_KIND: Record<Flavor, DocumentKindId> = {
  resource: 'resource-dump-manifest',
  change: 'change-dump-manifest',
};

interface Run {
  opts: ApplyDumpOptions;
  flavor: Flavor;
  report: DumpReport;
  tmpDir: string;
  /** The destination folder as this run sees it (temporary files, confinement, pooled buffers). */
  root: DestinationRoot;
  durability: Durability;
  extractedTotal: number;
  maxTotal: number;
  /** The cursor (`after`) in ms since the epoch. */
  afterMs: number | undefined;
}

function rsError(
  code: ErrorCode,
  message: string,
  data: Record<string, unknown> = {},
  cause?: unknown,
): ResourceSyncError {
  return new ResourceSyncError(code, message, { data, recoverable: true, ...(cause === undefined ? {} : { cause }) });
}

/**
 * The ZIP entry a manifest `path` names: `/a/b`, and what producers write instead, `a/b` (resync-build) and
 * `./a/b`, all name `a/b` relative to the package root; then the usual safety checks (`RS_UNSAFE_PATH`).
 * @see Z39.99 §11.2 (`path`), src/core/manifest-path.ts
 */
function packageName(path: string): string {
  return safeRelativePath(readManifestPath(path)?.name ?? path);
}

function checkAuthority(authority: AuthorityCheck, url: string): void {
  if (!authority.allows(url))
    throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the Source's authority.`, { data: { url } });
  authority.check(url);
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'The dump was aborted.', { cause: signal.reason });
}

async function applyDump(opts: ApplyDumpOptions, flavor: Flavor): Promise<DumpReport> {
  const report: DumpReport = {
    packages: 0,
    extracted: 0,
    patched: 0,
    created: 0,
    updated: 0,
    deleted: 0,
    bytes: 0,
    packageBytes: 0,
    failures: [],
    unverified: [],
    ignoredEntries: [],
    deletionsNotApplied: [],
    skippedBeforeCursor: 0,
    notes: [],
    timings: { downloadMs: 0, extractMs: 0 },
  };
  const run: Run = {
    opts,
    flavor,
    report,
    tmpDir: join(opts.dest, '.resourcesync', 'tmp'),
    root: new DestinationRoot(opts.dest),
    durability: opts.durability ?? new FsyncEach(),
    extractedTotal: 0,
    maxTotal: opts.maxTotalBytes ?? DEFAULT_MAX_TOTAL,
    afterMs: opts.after === undefined ? undefined : parseW3CDatetime(opts.after, true)?.ms,
  };
  const packages = await listPackages(run, opts.dumpUrl, 0);
  if (flavor === 'change') orderChangePackages(run, packages);
  const after = run.afterMs;
  if (flavor === 'change' && after !== undefined && packages.length > 0) {
    // §13.1 from/until: the earliest package must reach back to the cursor, or changes in between are missing
    const froms = packages.map((p) => parseW3CDatetime(p.md?.from ?? '', true)?.ms).filter((t): t is number => t !== undefined);
    const earliest = froms.length === packages.length ? Math.min(...froms) : undefined;
    if (earliest !== undefined && earliest > after) {
      report.gap = gapNote({ url: opts.dumpUrl, start: formatW3CDatetime(earliest), cursor: opts.after ?? '', dumps: true });
      return report;
    }
  }
  await mkdir(run.tmpDir, { recursive: true });
  for (const pkg of packages) {
    throwIfAborted(opts.signal);
    if (flavor === 'change' && after !== undefined) {
      const until = parseW3CDatetime(pkg.md?.until ?? pkg.lastmod ?? '', true)?.ms;
      if (until !== undefined && until <= after) {
        report.notes.push(note('package-before-cursor', { url: pkg.loc }));
        continue;
      }
    }
    await applyPackage(run, pkg);
  }
  if (opts.durability === undefined) await run.durability.settle();
  return report;
}

/** Reads a dump (or dump index) and returns its package entries with absolute `loc`s. */
async function listPackages(run: Run, url: string, depth: number): Promise<Entry[]> {
  const { opts, flavor } = run;
  checkAuthority(opts.authority, url);
  const res = await opts.http(url, opts.signal ? { signal: opts.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw rsError('RS_HTTP_STATUS', `Dump '${url}' answered HTTP ${res.status}.`, { url, status: res.status });
  }
  const reader = await readDocument(res.body, { limits: DOC_LIMITS, ...(opts.signal ? { signal: opts.signal } : {}) });
  const kind = reader.kind?.id;
  const base = res.url || url;
  const entries: Entry[] = [];
  for await (const e of reader.entries) {
    let loc: string;
    try {
      loc = new URL(e.loc, base).href;
    } catch {
      run.report.notes.push(note('dump-loc-invalid', { url, loc: e.loc }));
      continue;
    }
    entries.push({ ...e, loc });
  }
  if (kind === INDEX_KIND[flavor]) {
    if (depth > 0) throw rsError('RS_INVALID_DOCUMENT', `Dump index '${url}' is nested in another index.`, { url });
    const out: Entry[] = [];
    for (const e of entries) out.push(...(await listPackages(run, e.loc, depth + 1)));
    return out;
  }
  if (kind !== DUMP_KIND[flavor]) {
    throw rsError(
      'RS_INVALID_DOCUMENT',
      `Document '${url}' is not a ${flavor === 'resource' ? 'Resource Dump' : 'Change Dump'} (capability '${reader.header.md?.capability ?? ''}').`,
      { url },
    );
  }
  return entries;
}

/** Change Dump packages should be in forward chronological order (§13.1); tolerate others by sorting on `from`. */
function orderChangePackages(run: Run, packages: Entry[]): void {
  const key = (e: Entry) => parseW3CDatetime(e.md?.from ?? e.lastmod ?? '', true)?.ms;
  const keys = packages.map(key);
  const sorted = keys.every((k, i) => i === 0 || k === undefined || keys[i - 1] === undefined || keys[i - 1]! <= k);
  if (sorted) return;
  const indexed = packages.map((e, i) => ({ e, i, k: keys[i] ?? Number.NEGATIVE_INFINITY }));
  indexed.sort((a, b) => a.k - b.k || a.i - b.i);
  packages.splice(0, packages.length, ...indexed.map((x) => x.e));
  run.report.notes.push(note('packages-out-of-order', { url: run.opts.dumpUrl }));
}

function fail(run: Run, pkg: string, err: unknown, extra: { loc?: string; path?: string } = {}): void {
  const code: ErrorCode = isResourceSyncError(err) ? err.code : 'RS_IO';
  run.report.failures.push({ code, message: err instanceof Error ? err.message : String(err), package: pkg, ...extra });
}

async function applyPackage(run: Run, pkg: Entry): Promise<void> {
  const { opts, report } = run;
  const tmp = join(run.tmpDir, `pkg-${randomUUID()}.zip`);
  try {
    try {
      checkAuthority(opts.authority, pkg.loc);
    } catch (err) {
      fail(run, pkg.loc, err);
      return;
    }
    report.packages++;
    const t0 = performance.now();
    try {
      report.packageBytes += await download(run, pkg, tmp);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      fail(run, pkg.loc, err);
      return;
    } finally {
      report.timings.downloadMs += performance.now() - t0;
    }
    const t1 = performance.now();
    try {
      await extractPackage(run, pkg.loc, tmp);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      fail(run, pkg.loc, err);
    } finally {
      report.timings.extractMs += performance.now() - t1;
    }
    if (run.flavor === 'change') {
      const until = pkg.md?.until ?? pkg.lastmod;
      const ms = until === undefined ? undefined : parseW3CDatetime(until, true)?.ms;
      const cur = report.until === undefined ? undefined : parseW3CDatetime(report.until, true)?.ms;
      if (until !== undefined && ms !== undefined && (cur === undefined || ms > cur)) report.until = until;
    }
  } finally {
    await rm(tmp, { force: true });
  }
}

function hashers(hashes: HashValue[]): Array<{ h: HashValue; hash: Hash }> {
  return hashes.map((h) => ({ h, hash: createHash(nodeHashName(h.algorithm as 'md5')) }));
}

/** Streams a package to `tmp`, checking its `length` and `hash` from the dump. Returns the byte count. */
async function download(run: Run, pkg: Entry, tmp: string): Promise<number> {
  const { opts } = run;
  const res = await opts.http(pkg.loc, opts.signal ? { signal: opts.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw rsError('RS_HTTP_STATUS', `Package '${pkg.loc}' answered HTTP ${res.status}.`, {
      url: pkg.loc,
      status: res.status,
    });
  }
  const length = parseLength(pkg.md?.length);
  const hs = hashers(knownHashes(pkg.md?.hash));
  if (length === undefined && hs.length === 0)
    run.report.notes.push(note('package-unverified', { url: pkg.loc }));
  const out = createWriteStream(tmp, { flags: 'wx' });
  let n = 0;
  try {
    for await (const chunk of res.body) {
      n += chunk.byteLength;
      if (length !== undefined && n > length) {
        throw rsError('RS_LENGTH_MISMATCH', `Package '${pkg.loc}' is longer than its length '${length}'.`, {
          url: pkg.loc,
          expected: length,
        });
      }
      for (const { hash } of hs) hash.update(chunk);
      if (!out.write(chunk)) await onceEvent(out, 'drain');
      opts.onProgress?.({ phase: 'download', package: pkg.loc, bytes: n, files: 0 });
    }
    out.end();
    await onceEvent(out, 'finish');
  } catch (err) {
    out.destroy();
    throw err;
  }
  if (length !== undefined && n !== length) {
    throw rsError('RS_LENGTH_MISMATCH', `Package '${pkg.loc}' has ${n} bytes, not '${length}'.`, {
      url: pkg.loc,
      expected: length,
      actual: n,
    });
  }
  for (const { h, hash } of hs) {
    const actual = hash.digest('hex');
    if (actual !== h.digest) {
      throw rsError('RS_HASH_MISMATCH', `Package '${pkg.loc}' has ${h.algorithm} '${actual}', not '${h.digest}'.`, {
        url: pkg.loc,
        expected: h.digest,
        actual,
      });
    }
  }
  return n;
}

function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      path,
      { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true },
      (err, zip) => {
        if (err) reject(err);
        else resolve(zip);
      },
    );
  });
}

/** Lists a ZIP's entries (central directory only). yauzl refuses absolute, `..` and backslash names. */
function listEntries(zip: yauzl.ZipFile, max: number, pkg: string): Promise<Map<string, yauzl.Entry>> {
  return new Promise((resolve, reject) => {
    const map = new Map<string, yauzl.Entry>();
    let count = 0;
    const onError = (err: Error) =>
      reject(rsError('RS_ZIP', `Package '${pkg}' is refused: ${err.message}.`, { url: pkg }, err));
    zip.on('error', onError);
    zip.on('entry', (entry: yauzl.Entry) => {
      if (++count > max) {
        reject(rsError('RS_LIMIT_ENTRIES', `Package '${pkg}' has more than ${max} entries.`, { url: pkg, max }));
        return;
      }
      if (map.has(entry.fileName)) {
        reject(
          rsError('RS_ZIP', `Package '${pkg}' has two entries named '${entry.fileName}'.`, {
            url: pkg,
            path: entry.fileName,
          }),
        );
        return;
      }
      map.set(entry.fileName, entry);
      zip.readEntry();
    });
    zip.on('end', () => resolve(map));
    zip.readEntry();
  });
}

/** A stored (not compressed, not encrypted) entry, read straight from its byte range. */
function isStored(entry: yauzl.Entry): boolean {
  return entry.compressionMethod === 0 && !entry.isEncrypted();
}

/**
 * A stored entry's bytes as a `ByteSource` over the package's open file: `writeVerified` reads them into its
 * pooled buffers (no allocation, no stream per entry). Exactly the entry's declared size is read.
 */
async function storedSource(ctx: PackageCtx, entry: yauzl.Entry, onBytes: (n: number) => void): Promise<ByteSource> {
  if (entry.compressedSize !== entry.uncompressedSize) {
    throw rsError('RS_ZIP', `ZIP entry '${entry.fileName}' is stored but its sizes differ.`, { path: entry.fileName });
  }
  const { fileDataStart } = await ctx.zip.readLocalFileHeaderPromise(entry, { minimal: true });
  const file = await ctx.file();
  let position = fileDataStart;
  let left = entry.compressedSize;
  return {
    async read(into: Uint8Array): Promise<number> {
      if (left === 0) return 0;
      const { bytesRead } = await file.read(into, 0, Math.min(into.byteLength, left), position);
      if (bytesRead === 0) {
        throw rsError('RS_ZIP', `ZIP entry '${entry.fileName}' is cut short.`, { path: entry.fileName });
      }
      position += bytesRead;
      left -= bytesRead;
      onBytes(bytesRead);
      return bytesRead;
    },
  };
}

/**
 * Opens an entry's stream. An error listener is attached at once: yauzl's size check and inflate
 * errors can fire before the stream is consumed (`capped` re-throws them).
 */
async function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, file?: string): Promise<Readable> {
  if (file !== undefined && entry.compressionMethod === 0 && !entry.isEncrypted()) {
    // Stored: read the byte range directly in 1 MiB chunks (yauzl's reader hands out 16 KiB chunks,
    // which halves the throughput). The size checks stay: `capped` stops past the declared size.
    if (entry.compressedSize !== entry.uncompressedSize) {
      throw rsError('RS_ZIP', `ZIP entry '${entry.fileName}' is stored but its sizes differ.`, {
        path: entry.fileName,
      });
    }
    const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
    if (entry.compressedSize === 0) return Readable.from([]);
    const stream = createReadStream(file, {
      start: fileDataStart,
      end: fileDataStart + entry.compressedSize - 1,
      highWaterMark: 1 << 20,
    });
    stream.on('error', () => {});
    return stream;
  }
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) {
        reject(err);
        return;
      }
      stream.on('error', () => {});
      resolve(stream);
    });
  });
}

/**
 * The bytes of an entry, stopping with `RS_LIMIT_BYTES` as soon as more than `limit` bytes come out
 * (a decompression bomb is never inflated past its declared size).
 */
async function* capped(
  stream: Readable,
  limit: number,
  what: string,
  onBytes: (n: number) => void,
): AsyncGenerator<Uint8Array> {
  let n = 0;
  try {
    if (stream.errored) throw stream.errored;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      n += chunk.byteLength;
      if (n > limit)
        throw rsError('RS_LIMIT_BYTES', `ZIP entry '${what}' inflates past ${limit} bytes.`, { path: what, limit });
      onBytes(chunk.byteLength);
      yield chunk;
    }
    if (stream.errored) throw stream.errored as Error;
  } catch (err) {
    if (isResourceSyncError(err)) throw err;
    // yauzl's size validation ("too many bytes in the stream") and inflate errors.
    throw rsError(
      'RS_ZIP',
      `ZIP entry '${what}' cannot be read: ${err instanceof Error ? err.message : String(err)}.`,
      { path: what },
      err,
    );
  } finally {
    stream.destroy();
  }
}

/** What extracting one manifest entry needs. */
interface PackageCtx {
  run: Run;
  pkgUrl: string;
  tmp: string;
  zip: yauzl.ZipFile;
  entries: Map<string, yauzl.Entry>;
  /** ZIP entry names the manifest refers to. */
  used: Set<string>;
  /** The package file, opened once for every stored entry read from it. */
  file: () => Promise<FileHandle>;
  progress: { files: number };
}

/**
 * The effect of one manifest entry; it returns what to report (in manifest order) once done. `staged` is
 * called when it no longer needs its extraction slot (its file only waits for a group commit).
 */
type Work = (staged: () => void) => Promise<() => void | Promise<void>>;

/**
 * Checks one manifest entry (change type, mapped path, bitstream present, sizes, cap) and returns its
 * local path and the work to do, or undefined for a change at or before the cursor; throws the first
 * problem found, before anything is read or written.
 */
function prepareItem(ctx: PackageCtx, item: Entry): { relPath: string; work: Work } | undefined {
  const { run, pkgUrl, tmp, zip, entries, used, progress } = ctx;
  const { opts, report, flavor } = run;
  const loc = item.loc;
  let work: Work;
  const change = flavor === 'change' ? item.md?.change : 'created';
  if (change !== 'created' && change !== 'updated' && change !== 'deleted') {
    throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has change '${change ?? ''}'.`, { loc });
  }
  if (flavor === 'change' && run.afterMs !== undefined) {
    // A package that straddles the cursor: changes at or before it were applied already (1.1 `datetime`, else `lastmod`).
    const at = parseW3CDatetime(item.md?.datetime ?? item.lastmod ?? '', true)?.ms;
    if (at !== undefined && at <= run.afterMs) return undefined;
  }
  const rel = safeRelativePath(opts.mapPath(loc));
  /** Writes a verified bitstream to `rel`, with the entry's lastmod as mtime. */
  const write = (body: AsyncIterable<Uint8Array> | ByteSource, expected: { length: number; hashes?: HashValue[] }, staged: () => void) => {
    const lastmod = item.lastmod === undefined ? undefined : parseW3CDatetime(item.lastmod, true);
    return writeVerified({
      root: run.root,
      relPath: rel,
      body,
      expected,
      durability: run.durability,
      onVerified: staged,
      ...(lastmod ? { mtime: new Date(lastmod.ms) } : {}),
    });
  };
  /** Tells the caller (the state store) what was written. */
  const applied = (result: { length: number; hashes: Record<string, string> }) =>
    opts.onResource?.({
      loc,
      relPath: rel,
      change,
      applied: true,
      length: result.length,
      hashes: result.hashes,
      ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
      links: relatedLinks(item),
      package: pkgUrl,
    });
  if (change === 'deleted') {
    work = () => applyDeletion(run, pkgUrl, item, rel);
  } else {
    const path = item.md?.path;
    const patchLn = path === undefined ? packagedPatch(item) : undefined;
    if (path === undefined && patchLn !== undefined && change === 'updated') {
      // Only a change description in the package (§14.4): patch the local copy, verify by hash.
      const patchName = packageName(patchLn.path!);
      const patchEntry = entries.get(patchName);
      if (patchEntry === undefined)
        throw rsError('RS_ZIP', `Package '${pkgUrl}' lacks the patch '${patchLn.path!}' of '${loc}'.`, {
          url: pkgUrl,
          loc,
          path: patchLn.path,
        });
      used.add(patchName);
      const patchLimit = Math.min(patchEntry.uncompressedSize, MAX_PATCH_BYTES);
      if (patchEntry.uncompressedSize > MAX_PATCH_BYTES)
        throw rsError('RS_LIMIT_BYTES', `Patch '${patchName}' is larger than ${MAX_PATCH_BYTES} bytes.`, {
          loc,
          path: patchName,
        });
      const hashes = knownHashes(item.md?.hash);
      const length = parseLength(item.md?.length);
      work = async (staged) => {
        const chunks: Buffer[] = [];
        for await (const c of capped(await openEntry(zip, patchEntry, tmp), patchLimit, patchName, () => {}))
          chunks.push(Buffer.from(c));
        const local = await readFileCapped(safeJoin(opts.dest, rel), MAX_PATCH_BYTES).catch((err: unknown) => {
          throw rsError('RS_PATCH', `Patch for '${loc}' has no local copy to apply to.`, { loc }, err);
        });
        const bytes = applyJsonPatchBytes(
          local,
          Buffer.concat(chunks),
          { hashes, ...(length === undefined ? {} : { length }) },
          loc,
        );
        const result = await write(once(bytes), { length: bytes.length, hashes }, staged);
        return async () => {
          progress.files++;
          report.extracted++;
          report.patched++;
          report.updated++;
          report.bytes += result.length;
          await applied(result);
        };
      };
    } else {
      if (path === undefined) throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has no path.`, { loc });
      const name = packageName(path);
      const zipEntry = entries.get(name);
      if (zipEntry === undefined || name.endsWith('/'))
        throw rsError('RS_ZIP', `Package '${pkgUrl}' lacks the bitstream '${path}' of '${loc}'.`, {
          url: pkgUrl,
          loc,
          path,
        });
      used.add(name);
      const length = parseLength(item.md?.length);
      const hashes = knownHashes(item.md?.hash);
      if (length !== undefined && zipEntry.uncompressedSize !== length) {
        throw rsError(
          'RS_LENGTH_MISMATCH',
          `ZIP entry '${name}' declares ${zipEntry.uncompressedSize} bytes, the manifest '${length}'.`,
          { loc, path, expected: length, actual: zipEntry.uncompressedSize },
        );
      }
      const limit = Math.min(length ?? zipEntry.uncompressedSize, zipEntry.uncompressedSize);
      if (run.extractedTotal + limit > run.maxTotal) {
        throw rsError('RS_LIMIT_BYTES', `ZIP entry '${name}' would pass the cap of ${run.maxTotal} extracted bytes.`, {
          loc,
          path,
          limit: run.maxTotal,
        });
      }
      run.extractedTotal += limit; // reserved before extraction starts
      if (hashes.length === 0) report.unverified.push(loc);
      work = async (staged) => {
        let written = 0;
        const onBytes = (n: number): void => {
          written += n;
          opts.onProgress?.({ phase: 'extract', package: pkgUrl, bytes: written, files: progress.files });
        };
        const body = isStored(zipEntry)
          ? await storedSource(ctx, zipEntry, onBytes)
          : capped(await openEntry(zip, zipEntry, tmp), limit, name, onBytes);
        const expected: { length: number; hashes?: HashValue[] } = {
          length: length ?? zipEntry.uncompressedSize,
        };
        if (hashes.length > 0) expected.hashes = hashes;
        const result = await write(body, expected, staged);
        return async () => {
          progress.files++;
          report.extracted++;
          report.bytes += result.length;
          if (change === 'updated') report.updated++;
          else report.created++;
          await applied(result);
        };
      };
    }
  }
  return { relPath: rel, work };
}

async function extractPackage(run: Run, pkgUrl: string, tmp: string): Promise<void> {
  const { opts, report, flavor } = run;
  const zip = await openZip(tmp).catch((err: unknown) => {
    throw rsError(
      'RS_ZIP',
      `Package '${pkgUrl}' is not a readable ZIP file: ${err instanceof Error ? err.message : String(err)}.`,
      { url: pkgUrl },
      err,
    );
  });
  let packageFile: Promise<FileHandle> | undefined;
  try {
    const entries = await listEntries(zip, opts.maxEntries ?? 1_000_000, pkgUrl);
    const manifestEntry = entries.get('manifest.xml');
    if (manifestEntry === undefined)
      throw rsError('RS_ZIP', `Package '${pkgUrl}' has no manifest.xml at its top level.`, { url: pkgUrl });
    const used = new Set<string>(['manifest.xml']);
    const manifestStream = await openEntry(zip, manifestEntry);
    const reader = await readDocument(
      capped(manifestStream, DOC_LIMITS.maxBytes, 'manifest.xml', () => {}),
      {
        limits: DOC_LIMITS,
        ...(opts.signal ? { signal: opts.signal } : {}),
      },
    );
    if (reader.kind?.id !== MANIFEST_KIND[flavor]) {
      throw rsError(
        'RS_INVALID_DOCUMENT',
        `Package '${pkgUrl}' manifest.xml is not a ${flavor === 'resource' ? 'Resource Dump Manifest' : 'Change Dump Manifest'} (capability '${reader.header.md?.capability ?? ''}').`,
        { url: pkgUrl },
      );
    }
    // The manifest is read entry by entry while bitstreams are extracted (random access into the ZIP).
    // Checks run in manifest order; up to `concurrency` extractions overlap (changes to one path stay in
    // order); failures and `onResource` calls are reported in manifest order.
    const concurrency = Math.max(1, opts.concurrency ?? 4);
    const inFlight = new Set<Promise<void>>();
    /** Extractions holding a slot: not yet verified (or not done). */
    const active = new Set<Promise<void>>();
    const maxInFlight = concurrency * 64;
    const lastForPath = new Map<string, Promise<void>>();
    let turn: Promise<void> = Promise.resolve();
    let aborted: Error | undefined;
    const ctx: PackageCtx = { run, pkgUrl, tmp, zip, entries, used, progress: { files: 0 }, file: () => (packageFile ??= open(tmp, 'r')) };
    try {
      for await (const item of reader.entries) {
        throwIfAborted(opts.signal);
        if (aborted !== undefined) break;
        const loc = item.loc;
        const where = { loc, ...(item.md?.path === undefined ? {} : { path: item.md.path }) };
        const myTurn = turn;
        let release!: () => void;
        turn = new Promise((r) => (release = r));
        /** Waits for the previous item's report, reports this one, lets the next one report. */
        const report1 = async (fn: () => void | Promise<void>): Promise<void> => {
          await myTurn;
          try {
            await fn();
          } finally {
            release();
          }
        };
        let work: Work;
        let relPath: string | undefined;
        try {
          const prepared = prepareItem(ctx, item);
          if (prepared === undefined) {
            await report1(() => {
              report.skippedBeforeCursor++;
            });
            continue;
          }
          ({ relPath, work } = prepared);
        } catch (err) {
          // A check failed: nothing to extract; report it in its turn.
          await report1(() => fail(run, pkgUrl, err, where));
          continue;
        }
        const before = relPath === undefined ? undefined : lastForPath.get(relPath);
        let staged!: () => void;
        const slot = new Promise<void>((r) => (staged = r));
        active.add(slot);
        void slot.then(() => active.delete(slot));
        const task: Promise<void> = (async () => {
          await before;
          let done: () => void | Promise<void>;
          try {
            done = await work(staged);
          } catch (err) {
            if (isResourceSyncError(err, 'RS_ABORTED')) aborted ??= err;
            done = () => fail(run, pkgUrl, err, where);
          }
          await report1(done);
        })().catch((err: unknown) => {
          aborted ??= err instanceof Error ? err : new Error(String(err)); // an onResource callback threw
        });
        if (relPath !== undefined) lastForPath.set(relPath, task);
        inFlight.add(task);
        void task.then(() => {
          staged();
          inFlight.delete(task);
          if (relPath !== undefined && lastForPath.get(relPath) === task) lastForPath.delete(relPath);
        });
        while (active.size >= concurrency) await Promise.race(active);
        while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
      }
    } finally {
      // Never leave extractions running behind an error or an abort (the package file is removed next).
      await Promise.all(inFlight);
    }
    if (aborted !== undefined) throw aborted;
    for (const name of entries.keys()) {
      if (!used.has(name) && !name.endsWith('/')) report.ignoredEntries.push(`${pkgUrl}#${name}`);
    }
  } finally {
    zip.close();
    await packageFile?.then((h) => h.close()).catch(() => undefined);
  }
}

/** Removes a deleted resource's file (only with `delete: true`); returns what to report in its turn. */
async function applyDeletion(run: Run, pkgUrl: string, item: Entry, relPath: string): Promise<() => Promise<void>> {
  const { opts, report } = run;
  const base = {
    loc: item.loc,
    relPath,
    change: 'deleted' as const,
    links: relatedLinks(item),
    package: pkgUrl,
    ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
  };
  if (opts.delete !== true) {
    return async () => {
      report.deletionsNotApplied.push(item.loc);
      await opts.onResource?.({ ...base, applied: false });
    };
  }
  await rm(safeJoin(opts.dest, relPath), { force: true });
  return async () => {
    report.deleted++;
    await opts.onResource?.({ ...base, applied: true });
  };
}
