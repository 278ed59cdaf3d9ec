/**
 * The progress of the runs on a job queue ({@link syncWithQueue}'s), read from the queue itself: for each run, its
 * chunk jobs by state and the resources they hold and have done. Any machine that reaches the queue's database can ask,
 * while the coordinator runs or after it is gone; nothing is read from the coordinator's process.
 * @see Z39.99 §5.2 (Baseline Synchronization)
 */
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { CHUNK_QUEUE, isPostgresUrl } from './queue-jobs.js';
import { redactedUrl } from '../node/postgres.js';

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
  /** The runs whose jobs the queue still holds (completed jobs for 12 hours), oldest first. */
  runs: QueueRunStatus[];
}

type Row = Record<Exclude<keyof QueueRunStatus, 'lastCompletedAt' | 'startedAt'>, string> & { started_at: Date; last_completed_at: Date | null };

const STATUS_SQL = `SELECT data->>'run' AS run, data->'state'->>'destination' AS destination,
    coalesce(data->'storage'->>'url', data->'storage'->>'path') AS storage,
    count(*) AS chunks, coalesce(sum(jsonb_array_length(data->'entries')), 0) AS resources,
    count(*) FILTER (WHERE state IN ('created', 'retry')) AS waiting,
    count(*) FILTER (WHERE state = 'active') AS active,
    count(*) FILTER (WHERE state = 'completed') AS completed,
    count(*) FILTER (WHERE state IN ('failed', 'cancelled')) AS failed,
    count(*) FILTER (WHERE retry_count > 0) AS retried,
    coalesce(sum((output->>'done')::bigint) FILTER (WHERE state = 'completed'), 0) AS done,
    min(created_on) AS started_at, max(completed_on) FILTER (WHERE state = 'completed') AS last_completed_at
  FROM pgboss.job WHERE name = $1 GROUP BY 1, 2, 3 ORDER BY min(created_on)`;

/**
 * Reads the progress of every run the queue at `url` holds jobs of: one connection, one query, no job touched. A
 * queue that was never used answers no run.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `url` is not a postgres:// URL, RS_IO when it cannot be reached
 * @example
 * const { runs } = await readQueueStatus('postgres://rs@db/rs');
 * for (const r of runs) console.log(r.run, `${r.completed}/${r.chunks} chunks, ${r.done}/${r.resources} resources`);
 */
export async function readQueueStatus(url: string): Promise<QueueStatus> {
  const queue = redactedUrl(url);
  if (!isPostgresUrl(url)) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Queue '${queue}' is not a postgres:// URL.`, { data: { url: queue } });
  const { default: postgres } = await import('pg');
  const client = new postgres.Client({ connectionString: url });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const exists = await client.query<{ t: string | null }>(`SELECT to_regclass('pgboss.job')::text AS t`);
    if (exists.rows[0]?.t === null) return { queue, runs: [] };
    const { rows } = await client.query<Row>(STATUS_SQL, [CHUNK_QUEUE]);
    return { queue, runs: rows.map(statusOf) };
  } catch (err) {
    throw new ResourceSyncError('RS_IO', `The queue at ${queue} could not be read: ${messageOf(err)}.`, { cause: err, data: { url: queue } });
  } finally {
    await client.end().catch(() => undefined);
  }
}

function statusOf(r: Row): QueueRunStatus {
  const out: QueueRunStatus = {
    run: r.run,
    destination: r.destination,
    storage: r.storage,
    chunks: Number(r.chunks),
    resources: Number(r.resources),
    waiting: Number(r.waiting),
    active: Number(r.active),
    completed: Number(r.completed),
    failed: Number(r.failed),
    retried: Number(r.retried),
    done: Number(r.done),
    startedAt: r.started_at.toISOString(),
  };
  if (r.last_completed_at !== null) out.lastCompletedAt = r.last_completed_at.toISOString();
  return out;
}
