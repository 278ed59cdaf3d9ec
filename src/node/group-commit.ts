/**
 * Group commit of verified files, as databases commit many transactions with one log flush (and as git's
 * `core.fsyncMethod=batch` does for objects): temporary files are written without an fsync each; one
 * durability barrier makes a whole batch durable, then every file of the batch is renamed into place. A file
 * is never visible under its final name before its bytes are durable, exactly as with an fsync per file, but
 * thousands of small files cost a handful of barriers instead of thousands of fsyncs.
 *
 * At most one barrier runs at a time. A batch is closed when it holds `maxBatch` files, when its first file
 * has waited `gatherMs` (or more, while the previous barrier ran), or when no file came for `idleMs` (the end
 * of a list, or a slow Source): a barrier is a journal commit and a disk flush, and while it runs file creation
 * on the same file system stalls, so a few large batches beat many small ones (measured here: back-to-back
 * barriers of ~15 files each held a 5,000-file sync to ~1,700 files/s).
 */

import { dirname } from 'node:path';
import { syncFileSystem, type DurabilityBarrier } from './sync-file-system.js';

interface Staged {
  /** When it was staged (`performance.now()`). */
  at: number;
  tmp: string;
  finalPath: string;
  place: () => void | Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Options of {@link GroupCommit}. */
export interface GroupCommitOptions {
  /** Makes a batch durable. Default {@link syncFileSystem} (one `syncfs` on Linux, else an fsync per file). */
  barrier?: DurabilityBarrier;
  /** Most files in one batch. Default 1,024. */
  maxBatch?: number;
  /** Longest wait of a batch's first file before the batch is closed, ms. Default 50. */
  gatherMs?: number;
  /** A batch is closed early when no file was staged for this long, ms. Default 10. */
  idleMs?: number;
  /**
   * Remember the folders that received files, for {@link GroupCommit.settle}. Default true; false for a group
   * commit whose renames another one settles (the small-file thread's, whose files the sync's own group commit
   * learns of through {@link GroupCommit.placed}): a long-lived thread would otherwise remember every folder.
   */
  remember?: boolean;
}

/**
 * Commits staged files in batches behind one durability barrier each.
 * @example
 * const group = new GroupCommit();
 * await group.commit(tmpPath, finalPath, () => renameSync(tmpPath, finalPath)); // resolves once durable and renamed
 * await group.settle(); // one more barrier for the renames themselves
 */
export class GroupCommit {
  readonly #barrier: DurabilityBarrier;
  readonly #maxBatch: number;
  readonly #gatherMs: number;
  readonly #idleMs: number;
  readonly #remember: boolean;
  #queue: Staged[] = [];
  /** Ends the current gathering wait early (the batch is full). */
  #full: (() => void) | undefined;
  #running: Promise<void> | undefined;
  /** Folders that received files (their new entries are made durable by `settle`). */
  #touchedDirs = new Set<string>();
  /** Files placed since the last `settle`. */
  #placedSince = 0;
  /** Barriers run (for tests and reports). */
  barriers = 0;
  /**
   * True when no barrier was given: the default one, `syncfs`, which the small-file thread runs too. Small files
   * may then be committed by that thread's own group commit (`SmallFileOp.durable`); their renames are reported
   * here with {@link placed}, so that {@link settle} makes them durable. A given barrier (a test's, a caller's)
   * cannot cross to the thread: every file then goes through this object.
   */
  readonly defaultBarrier: boolean;

  constructor(options: GroupCommitOptions = {}) {
    this.defaultBarrier = options.barrier === undefined;
    this.#barrier = options.barrier ?? syncFileSystem;
    this.#maxBatch = Math.max(1, options.maxBatch ?? 1024);
    this.#gatherMs = Math.max(0, options.gatherMs ?? 50);
    this.#idleMs = Math.max(0, options.idleMs ?? 10);
    this.#remember = options.remember ?? true;
  }

  /**
   * Queues a finished temporary file; `place` (its rename to `finalPath`, synchronous or not) runs after the
   * barrier that covers it; the renames of a batch are started together.
   * Rejects when the barrier or `place` fails; the temporary file is then the caller's to remove.
   */
  commit(tmp: string, finalPath: string, place: () => void | Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ at: performance.now(), tmp, finalPath, place, resolve, reject });
      if (this.#queue.length >= this.#maxBatch) this.#full?.();
      this.#running ??= this.#run();
    });
  }

  async #run(): Promise<void> {
    while (this.#queue.length > 0) {
      // gather: until the batch is full, its first file has waited gatherMs, or no file came for idleMs
      // (the producer is done or stalled: waiting longer would only add latency)
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
      const files = batch.map((s) => s.tmp);
      try {
        await this.#barrier(dirname(files[0]!), files);
        this.barriers++;
      } catch (err) {
        for (const s of batch) s.reject(err);
        continue;
      }
      // every rename of the batch is started before any is awaited (a worker takes them as one batch)
      await Promise.all(
        batch.map(async (s) => {
          try {
            await s.place();
            if (this.#remember) this.placed(s.finalPath);
            s.resolve();
          } catch (err) {
            s.reject(err);
          }
        }),
      );
    }
    this.#running = undefined;
  }

  /**
   * Records a file renamed into place by another group commit of the same file system (the small-file thread's,
   * after its own barrier): {@link settle} makes that rename durable too.
   */
  placed(finalPath: string): void {
    this.#placedSince++;
    this.#touchedDirs.add(dirname(finalPath));
  }

  /**
   * Waits for every staged file, then, when files were renamed since the last `settle`, runs one last barrier
   * over every folder that received files, so that the renames too are durable before the caller reports the
   * work done. (With `syncfs` one barrier covers everything; the fallback fsyncs each folder: POSIX does not
   * promise that an fsync of one file makes another file's rename durable.)
   */
  async settle(): Promise<void> {
    while (this.#running !== undefined) await this.#running;
    if (this.#placedSince === 0 || this.#touchedDirs.size === 0) return;
    const dirs = [...this.#touchedDirs];
    const placed = this.#placedSince;
    this.#touchedDirs.clear();
    this.#placedSince = 0;
    try {
      await this.#barrier(dirs[0]!, dirs);
    } catch (err) {
      // not durable: the next settle tries these folders again
      for (const d of dirs) this.#touchedDirs.add(d);
      this.#placedSince += placed;
      throw err;
    }
    this.barriers++;
  }
}
