import { ResourceSyncError, isResourceSyncError, type ErrorCode, messageOf } from '../core/errors.js';
import { documentKindById, type DocumentKind } from '../core/model/document-kinds.js';
import type { Entry, Ln } from '../core/model/types.js';
import type { HashValue } from '../core/hash.js';
import { safeRelativePath } from '../node/safe-path.js';
import { readManifestPath } from '../core/manifest-path.js';
import type { HttpGet } from '../client/http.js';
import { patchLinks, type AuthorityCheck, type RelatedLinks } from './links.js';
import { isJsonPatchMediaType } from '../core/json-patch.js';
import type { MirrorStorage } from './mirror-storage.js';
import { type DestinationNote, type GapNote } from './notes.js';

/**
 * What one application of a Resource Dump or Change Dump shares among its parts: its options and report types,
 * the run's state, and the small helpers of its errors.
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
  /** The key in `storage` (local path relative to the folder), from `mapPath`. */
  relPath: string;
  change: 'created' | 'updated' | 'deleted';
  /** For deletions: whether the copy was removed (`delete: true`). */
  applied: boolean;
  /** The destination held these bytes already (see `current`): nothing was written. */
  unchanged?: true;
  length?: number;
  /** Digests computed while writing, by algorithm. */
  hashes?: Record<string, string>;
  lastmod?: string;
  /** Links kept for the user (§14). */
  links: RelatedLinks;
  /** The manifest entry's `rs:ln` links as written, kept in the state as a Resource List's are (§14, §14.8 `via`). */
  ln?: Ln[];
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
  /** Bitstreams the destination held already (`current`): not written again. */
  unchanged: number;
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
  /** The client for the dump documents (the packages are read with `http`); default `http`. */
  documents?: HttpGet;
  authority: AuthorityCheck;
  /**
   * Where the bitstreams go (`createLocalDirectory(dest)` for a folder): written through its staged writes,
   * deletions removed from it, patch bases read from it; packages are downloaded to its scratch files. Settled
   * before the call resolves.
   */
  storage: MirrorStorage;
  /** The mapper: a resource URI (`loc`) → its key in `storage` (its relative path); throws `RS_UNSAFE_PATH` to refuse. */
  mapPath: (loc: string) => string;
  /**
   * False for a manifest entry to leave alone (a sync's URL filter): nothing written or removed, `onResource` not
   * called. Default every entry.
   */
  include?: (loc: string) => boolean;
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
  /** Change Dumps: skip packages whose `until` is at or before this W3C Datetime (the cursor), and the changes at or before it in the others. */
  after?: string;
  /**
   * True when the destination holds the bytes a manifest entry describes already (its hashes decide; a length
   * alone does not): the bitstream is not written again, and `onResource` hears it with `unchanged`.
   */
  current?: (
    loc: string,
    relPath: string,
    expected: { length?: number; hashes: HashValue[] },
  ) => boolean | Promise<boolean>;
  /** Bitstreams extracted at the same time (changes to one path stay in order). Default 4. */
  concurrency?: number;
}

export const DEFAULT_MAX_TOTAL = 2 ** 40;
/** Largest change description (and local copy) patched from a Change Dump package. */
export const MAX_PATCH_BYTES = 16 * 1024 * 1024;

/** A JSON Patch link of a Change Dump Manifest entry whose change description is in the package (`path`). @see Z39.99 §14.4 */
export function packagedPatch(item: Entry): Ln | undefined {
  return patchLinks(item).find((ln) => ln.path !== undefined && isJsonPatchMediaType(ln.type));
}
export const DOC_LIMITS = { maxBytes: 50 * 1024 * 1024 };

export type Flavor = 'resource' | 'change';
/** The dump of each flavor; its index and its packages' manifest are read from its kind (`isPartOf`, `manifestKind`). */
export const DUMP_KIND: Record<Flavor, DocumentKind> = {
  resource: documentKindById('resource-dump'),
  change: documentKindById('change-dump'),
};

export interface Run {
  opts: ApplyDumpOptions;
  flavor: Flavor;
  report: DumpReport;
  /** Where the bitstreams go (`opts.storage`). */
  storage: MirrorStorage;
  extractedTotal: number;
  maxTotal: number;
  /** The cursor (`after`) in ms since the epoch. */
  afterMs: number | undefined;
}

export function rsError(
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
export function packageName(path: string): string {
  return safeRelativePath(readManifestPath(path)?.name ?? path);
}

export function checkAuthority(authority: AuthorityCheck, url: string): void {
  if (!authority.allows(url))
    throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the Source's authority.`, { data: { url } });
  authority.check(url);
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'The dump was aborted.', { cause: signal.reason });
}

export function fail(run: Run, pkg: string, err: unknown, extra: { loc?: string; path?: string } = {}): void {
  const code: ErrorCode = isResourceSyncError(err) ? err.code : 'RS_IO';
  run.report.failures.push({ code, message: messageOf(err), package: pkg, ...extra });
}
