/**
 * The progress of the sync runs spread over the job queue (pg-boss on PostgreSQL) as the explorer's Queue view shows
 * it (`resourcesync explore --web <url> --queue postgres://…`): per run and destination, the chunk jobs by state
 * (waiting, active, done, failed) and the resources the done chunks applied and failed, most recently changed first.
 * Read by {@link openQueueRuns} (queue-runs.ts), the one reader of the queue's runs.
 * @see Z39.99 §5.2 (Baseline Synchronization); docs/destination.md
 */
import { openQueueRuns, type QueueRunCounts } from './queue-runs.js';

/** One run on the queue: its chunk jobs by state and the resources they did. Times are ms since the epoch. */
export interface QueueRunProgress {
  run: string;
  destination: string;
  chunks: { waiting: number; active: number; done: number; failed: number; total: number };
  resources: { done: number; failed: number };
  createdAt: number;
  updatedAt: number;
}

/** The runs on a queue, most recently changed first. */
export interface QueueProgress {
  /** When it was read. */
  at: number;
  /** The queue's URL without its password or query. */
  queue: string;
  runs: QueueRunProgress[];
}

/** A reader of a queue's progress, holding one connection at most. */
export interface QueueProgressReader {
  read(): Promise<QueueProgress>;
  close(): Promise<void>;
}

/** Most runs shown (the most recently changed). */
const MAX_RUNS = 200;

/**
 * Opens a read-only reader of the chunk jobs on the queue at `url` (through {@link openQueueRuns}, the reader
 * `worker --status` uses too; the `pg` module is loaded on first use). A queue that pg-boss has not created yet reads
 * as no run.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `url` is not a postgres:// URL; `read()` throws RS_IO when the
 *   database cannot be reached
 * @example
 * const reader = await openQueueProgress('postgres://rs@db/rs');
 * for (const r of (await reader.read()).runs) console.log(r.destination, r.chunks);
 */
export async function openQueueProgress(url: string): Promise<QueueProgressReader> {
  const reader = await openQueueRuns(url);
  return {
    read: async () => {
      const runs = (await reader.read()).map(progressOf);
      return { at: Date.now(), queue: reader.queue, runs: runs.sort((a, b) => b.updatedAt - a.updatedAt || (a.run < b.run ? -1 : 1)).slice(0, MAX_RUNS) };
    },
    close: () => reader.close(),
  };
}

function progressOf(r: QueueRunCounts): QueueRunProgress {
  const { waiting, active, completed: done, failed, total } = r.chunks;
  return {
    run: r.run,
    destination: r.destination,
    chunks: { waiting, active, done, failed, total },
    resources: { done: r.resources.done - r.resources.failed, failed: r.resources.failed },
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
}
