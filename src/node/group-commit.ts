/**
 * Group commit of verified files, as databases commit many transactions with one log flush (and as git's
 * `core.fsyncMethod=batch` does for objects): temporary files are written without an fsync each and queued; a
 * batch is made durable with the fsyncs of all its files run together (in parallel on libuv's thread pool, where
 * the file system can merge them into few journal commits), then every file of the batch is renamed into place.
 * A file is never visible under its final name before its bytes are durable, exactly as with an fsync per file,
 * but the caller does not wait for each fsync on its own: its next downloads overlap with the batch's.
 *
 * At most one batch is flushed at a time. A batch is closed when it holds `maxBatch` files, when its first file
 * has waited `gatherMs` (or more, while the previous batch was flushed), or when no file came for `idleMs` (the
 * end of a list, or a slow Source).
 */

import { fsyncEachOf, renameIntoPlace, TouchedFolders, writtenThere, type Durability, type SmallFile, type SmallFileCalls } from './durability.js';

interface Staged {
  /** When it was queued (`performance.now()`). */
  at: number;
  tmp: string;
  finalPath: string;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Makes the data of `files` durable (the default fsyncs each, several at a time). */
export type FlushFiles = (files: readonly string[]) => Promise<void>;

/** Options of {@link GroupCommit}. */
export interface GroupCommitOptions {
  /**
   * Makes a batch's files durable; a rejection fails the whole batch. Default: an fsync of each, 8 at a time,
   * where a file that cannot be synced fails alone.
   */
  flush?: FlushFiles;
  /** Most files in one batch. Default 1,024. */
  maxBatch?: number;
  /** Longest wait of a batch's first file before the batch is closed, ms. Default 50. */
  gatherMs?: number;
  /** A batch is closed early when no file was queued for this long, ms. Default 10. */
  idleMs?: number;
  /** Makes the calls of small files there (a `SmallFileThread`): their temporary files, and every batch's renames. */
  thread?: SmallFileCalls;
}

/**
 * A {@link Durability} that commits files in batches: one flush of the batch's files, then their renames. The
 * default of a sync.
 * @example
 * const group = new GroupCommit();
 * await group.commit(tmpPath, finalPath); // resolves once durable and renamed
 * await group.settle(); // the folders that received files are fsynced: the renames are durable too
 */
export class GroupCommit implements Durability {
  readonly #flush: FlushFiles | undefined;
  readonly #maxBatch: number;
  readonly #gatherMs: number;
  readonly #idleMs: number;
  readonly #folders = new TouchedFolders();
  #queue: Staged[] = [];
  /** Ends the current gathering wait early (the batch is full). */
  #full: (() => void) | undefined;
  #running: Promise<void> | undefined;
  readonly #thread: SmallFileCalls | undefined;
  /** Batches flushed (for tests and reports). */
  batches = 0;
  /** With a `thread`: the temporary file written there, then queued here. */
  readonly writeSmall?: (file: SmallFile) => Promise<void>;

  constructor(options: GroupCommitOptions = {}) {
    this.#flush = options.flush;
    this.#maxBatch = Math.max(1, options.maxBatch ?? 1024);
    this.#gatherMs = Math.max(0, options.gatherMs ?? 50);
    this.#idleMs = Math.max(0, options.idleMs ?? 10);
    this.#thread = options.thread;
    if (options.thread !== undefined) this.writeSmall = writtenThere(options.thread, this);
  }

  /**
   * Queues a finished temporary file; it is renamed to `finalPath` after the flush of its batch. Rejects when
   * the flush or the rename fails; the temporary file is then the caller's to remove.
   */
  commit(tmp: string, finalPath: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ at: performance.now(), tmp, finalPath, resolve, reject });
      if (this.#queue.length >= this.#maxBatch) this.#full?.();
      this.#running ??= this.#run();
    });
  }

  async #run(): Promise<void> {
    while (this.#queue.length > 0) {
      // gather: until the batch is full, its first file has waited gatherMs, or no file came for idleMs
      while (this.#queue.length < this.#maxBatch) {
        const now = performance.now();
        const left = this.#gatherMs - (now - this.#queue[0]!.at);
        const idle = now - this.#queue[this.#queue.length - 1]!.at;
        if (left <= 0 || idle >= this.#idleMs) break;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, this.#idleMs - idle));
          this.#full = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        this.#full = undefined;
      }
      const batch = this.#queue.splice(0, this.#maxBatch);
      const errors = await this.#flushBatch(batch.map((s) => s.tmp));
      this.batches++;
      const durable = batch.filter((_, i) => errors[i] === undefined);
      for (const [i, s] of batch.entries()) if (errors[i] !== undefined) s.reject(errors[i]);
      const renamed = await this.#place(durable);
      for (const [i, s] of durable.entries()) {
        if (renamed[i] !== undefined) s.reject(renamed[i]);
        else {
          this.#folders.add(s.finalPath);
          s.resolve();
        }
      }
    }
    this.#running = undefined;
  }

  /** Renames a batch's durable files into place (on the thread, when there is one); each one's error. */
  async #place(batch: readonly Staged[]): Promise<unknown[]> {
    if (this.#thread !== undefined && batch.length > 0) return this.#thread.rename(batch);
    return batch.map((s) => {
      try {
        renameIntoPlace(s.tmp, s.finalPath);
        return undefined;
      } catch (err) {
        return err ?? new Error('The rename failed.');
      }
    });
  }

  /** Each file's error (undefined where it is durable). */
  async #flushBatch(files: readonly string[]): Promise<unknown[]> {
    if (this.#flush === undefined) return fsyncEachOf(files);
    try {
      await this.#flush(files);
      return [];
    } catch (err) {
      return files.map(() => err ?? new Error('The flush of a batch failed.'));
    }
  }

  /**
   * Waits for every queued file, then fsyncs every folder that received files since the last `settle`, so that
   * the renames too are durable before the caller reports the work done.
   */
  async settle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
    await this.#folders.sync();
  }
}
