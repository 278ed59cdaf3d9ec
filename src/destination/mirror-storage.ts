/**
 * Where a Destination keeps its copies of the Source's resources: one small asynchronous interface,
 * {@link MirrorStorage}, so that the mirror can live in a local folder (`LocalDirectory`, the default, see
 * `createLocalDirectory` in src/destination/local-directory.ts) or elsewhere (an S3-compatible bucket, a shared
 * file system reached through a service) without the sync, audit, follower or dump code knowing which.
 *
 * Keys are the Mapper's relative paths: `/`-separated, no empty, `.` or `..` segment, no leading `/`, nothing
 * under `.resourcesync` (the tool's own state). Every method refuses any other key with `RS_UNSAFE_PATH`
 * before it touches the storage.
 *
 * Every method returns a promise (an implementation may have the answer at hand; callers still `await` it), and
 * no caller relies on two calls being made together: the only multi-step operation, putting a verified body
 * under a key, is a {@link StagedWrite} that becomes visible in one {@link StagedWrite.commit}.
 *
 * An S3 implementation maps it as follows: `stat` is HEAD; `read`/`openRead` GET (with a Range or a size check
 * for `maxBytes`); `stage` spools to a local temporary file or opens a multipart upload, `commit` is the PUT
 * with `Content-MD5` (or `CompleteMultipartUpload`), `abort` deletes the spool (or `AbortMultipartUpload`);
 * `remove` is DELETE (no folders to prune); `list` is ListObjectsV2 under the mirror's prefix; `settle` waits
 * for uploads under way.
 */

import type { HashAlgorithm } from '../core/constants.js';

/** A key's size and modification time. */
export interface StoredFacts {
  /** Bytes. */
  size: number;
  /** Modification time, ms since the epoch (for a folder, the file's mtime; for an object store, `Last-Modified`). */
  mtimeMs: number;
}

/** One entry of {@link MirrorStorage.list}. */
export interface StoredItem extends StoredFacts {
  key: string;
}

/** Options of {@link MirrorStorage.stage}. */
export interface StageOptions {
  /** Set as the committed copy's modification time (ms since the epoch), e.g. the resource's `lastmod`. */
  mtimeMs?: number | undefined;
  /**
   * The length the caller expects (the Source's `rs:md length`), a hint: an implementation may keep a body
   * this small in memory and write it with one call at commit. The caller still checks the length itself.
   */
  sizeHint?: number | undefined;
}

/** Options of {@link StagedWrite.write}. */
export interface WriteChunkOptions {
  /**
   * The caller reads into this buffer again once the promise resolves (a pooled buffer): the implementation
   * copies or writes the bytes before it resolves and keeps no reference. Without it the chunk is the
   * implementation's from then on (the caller never changes it), which lets it batch chunks without copying.
   */
  reused?: boolean;
}

/**
 * Bytes on their way to a key, in a place no reader of the storage sees (a temporary file, a spool, a
 * multipart upload). The caller writes the body, checks it (length, hashes), then either commits it or aborts
 * it: an unverified body never becomes visible. Calls are made one at a time (the next `write` after the
 * previous one resolved; `commit` or `abort` once, after the last `write` resolved).
 */
export interface StagedWrite {
  /** The key it is for. */
  readonly key: string;
  /**
   * Appends `chunk`. Resolves when the next chunk may be written (backpressure); a failure to store earlier
   * chunks may surface here or at `commit`. Rejects with a recoverable `RS_IO` (the stage must then be aborted).
   */
  write(chunk: Uint8Array, options?: WriteChunkOptions): Promise<void>;
  /**
   * Makes the bytes written visible under the key, atomically: a reader sees the previous copy (or none) until
   * then, and the whole new copy after; never a part. An existing copy is replaced. Resolves once the copy is
   * in place and as durable as the storage promises for a commit (see {@link MirrorStorage.settle} for the
   * rest). Rejects with a `ResourceSyncError` (`RS_IO`, or `RS_UNSAFE_PATH` when the key's place turned out to
   * lead outside the storage, e.g. a folder replaced by a symbolic link) and leaves nothing staged behind.
   */
  commit(): Promise<void>;
  /** Drops the bytes written; nothing becomes visible. Never rejects; a second call does nothing. */
  abort(): Promise<void>;
}

/** What {@link MirrorStorage.hash} answers. */
export interface StoredDigests {
  /** Bytes read. */
  length: number;
  /** Lower-case hex digest of each algorithm asked for. */
  hashes: Partial<Record<HashAlgorithm, string>>;
  mtimeMs: number;
}

/** Options of {@link MirrorStorage.read}. */
export interface ReadOptions {
  /** Largest copy the caller accepts: a larger one is refused with a recoverable `RS_LIMIT_BYTES`, unread. */
  maxBytes: number;
}

/**
 * The mirror's copies of the Source's resources, by key (the Mapper's relative path). One object serves one
 * run (a sync, an audit, a follower, a dump) or several one after the other; methods may be called concurrently
 * for different keys. Errors are `ResourceSyncError`s: `RS_UNSAFE_PATH` for a key that is not a safe relative
 * path, `RS_IO` (recoverable) for a storage failure, `RS_LIMIT_BYTES` for a copy over a cap.
 * @example
 * const storage = createLocalDirectory('/mirror');
 * const staged = await storage.stage('a/b.txt', { mtimeMs: Date.parse('2026-01-01T00:00:00Z') });
 * await staged.write(new TextEncoder().encode('hello'));
 * await staged.commit(); // visible, whole
 * await storage.settle(); // durable
 */
export interface MirrorStorage {
  /** Where the mirror is, for messages and reports (a folder's path, a bucket's URL). */
  readonly location: string;
  /** The copy's size and modification time; undefined when the key holds nothing. */
  stat(key: string): Promise<StoredFacts | undefined>;
  /**
   * The whole copy (a patch's base, a small document); undefined when the key holds nothing. Rejects with
   * `RS_LIMIT_BYTES` when it is larger than `maxBytes`.
   */
  read(key: string, options: ReadOptions): Promise<Uint8Array | undefined>;
  /** The copy's bytes as a stream, in order; undefined when the key holds nothing. */
  openRead(key: string): Promise<AsyncIterable<Uint8Array> | undefined>;
  /**
   * Length and digests of the copy for `algorithms` (md5 need not be among them); undefined when the key holds
   * nothing. An implementation may answer from digests it keeps, as long as they are of the bytes now stored.
   */
  hash(key: string, algorithms: readonly HashAlgorithm[]): Promise<StoredDigests | undefined>;
  /**
   * Starts a {@link StagedWrite} for `key` (checked here: an unsafe key rejects with `RS_UNSAFE_PATH` before
   * anything is stored). Nothing is visible until its `commit`. Stages of different keys may be open at once.
   */
  stage(key: string, options?: StageOptions): Promise<StagedWrite>;
  /**
   * Removes the copy under `key`; resolves `false` when there was none (not an error). A folder's
   * implementation also removes the parent folders this leaves empty (never the mirror's own folder).
   */
  remove(key: string): Promise<boolean>;
  /**
   * Every key that holds a copy, with its size and modification time, in no promised order; nothing of the
   * tool's own state or staged writes. An empty or missing mirror yields nothing.
   */
  list(): AsyncIterable<StoredItem>;
  /** True when the mirror holds no copy (the tool's own state aside). */
  isEmpty(): Promise<boolean>;
  /**
   * Waits for every commit under way, then makes everything committed so far durable (for a folder: the
   * folders that received files are fsynced). A run calls it before it reports its work done.
   */
  settle(): Promise<void>;
  /**
   * Drops what a killed run left staged (temporary files, spools, unfinished uploads). Called at the start of
   * a run that holds the Destination's lease, never while another run may be staging.
   */
  discardStaged(): Promise<void>;
  /**
   * A path for a new local temporary file that the caller creates and removes (a dump's package, a download
   * spooled before it is read whole). It is on this machine's disk, outside every key, and
   * {@link discardStaged} removes any left behind.
   */
  scratchFile(): Promise<string>;
}
