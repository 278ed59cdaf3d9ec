/**
 * The progress of the runs on a job queue ({@link syncWithQueue}'s), read from the queue itself: for each run, its
 * chunk jobs by state and the resources they hold and have done. Any machine that reaches the queue's database can ask,
 * while the coordinator runs or after it is gone; nothing is read from the coordinator's process.
 * @see Z39.99 §5.2 (Baseline Synchronization)
 */
import { openQueueRuns, type QueueRunCounts } from './queue-runs.js';

/** One run's chunk jobs, as the queue holds them. */
export interface QueueRunStatus {
  /** The run's id (the same for a coordinator resumed after a kill). */
  run: string;
  /** The destination's key in the state. */
  destination: string;
  /** Where the workers write: the folder's path or the `s3://` URL. */
  storage: string;
  /** Chunk jobs sent. */
  chunks: number;
  /** Resources in those jobs. */
  resources: number;
  /** Jobs waiting for a worker (new, or to be retried). */
  waiting: number;
  /** Jobs in a worker's hands. */
  active: number;
  /** Jobs done. */
  completed: number;
  /** Jobs the workers gave up on (the coordinator applies them itself) or cancelled. */
  failed: number;
  /** Jobs taken more than once (a worker killed, its job expired; or a chunk failed as a whole). */
  retried: number;
  /** Resources of the jobs done. */
  done: number;
  /** When the run's first job was sent, ISO 8601. */
  startedAt: string;
  /** When its last job was done, ISO 8601, if any is. */
  lastCompletedAt?: string;
}

/** What {@link readQueueStatus} answers. */
export interface QueueStatus {
  /** The queue's URL, its password hidden. */
  queue: string;
  /** The runs whose jobs the queue or its archive still holds, oldest first. */
  runs: QueueRunStatus[];
}

/**
 * Reads the progress of every run the queue at `url` holds jobs of (through {@link openQueueRuns}, the reader the
 * explorer's Queue view uses too): one connection, no job touched. A queue that was never used answers no run.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `url` is not a postgres:// URL, RS_IO when it cannot be reached
 * @example
 * const { runs } = await readQueueStatus('postgres://rs@db/rs');
 * for (const r of runs) console.log(r.run, `${r.completed}/${r.chunks} chunks, ${r.done}/${r.resources} resources`);
 */
export async function readQueueStatus(url: string): Promise<QueueStatus> {
  const reader = await openQueueRuns(url);
  try {
    return { queue: reader.queue, runs: (await reader.read()).map(statusOf) };
  } finally {
    await reader.close().catch(() => undefined);
  }
}

function statusOf(r: QueueRunCounts): QueueRunStatus {
  const out: QueueRunStatus = {
    run: r.run,
    destination: r.destination,
    storage: r.storage,
    chunks: r.chunks.total,
    resources: r.resources.total,
    waiting: r.chunks.waiting,
    active: r.chunks.active,
    completed: r.chunks.completed,
    failed: r.chunks.failed,
    retried: r.chunks.retried,
    done: r.resources.done,
    startedAt: new Date(r.createdAt).toISOString(),
  };
  if (r.lastCompletedAt !== undefined) out.lastCompletedAt = new Date(r.lastCompletedAt).toISOString();
  return out;
}
