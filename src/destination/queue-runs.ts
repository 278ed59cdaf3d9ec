/**
 * The one reader of the sync runs on the job queue (pg-boss on PostgreSQL): the chunk jobs of `pgboss.job` and
 * `pgboss.archive`, counted per run and destination, without writing anything there. `worker --status`
 * ({@link readQueueStatus}, queue-status.ts) and the explorer's Queue view ({@link openQueueProgress},
 * queue-progress.ts) both read through it and only shape its counts. A job's run, destination, storage and number of
 * entries never change, so they are read once per job (its data holds up to 1,000 entries); each later read touches
 * only the small columns.
 * @see Z39.99 §5.2 (Baseline Synchronization); docs/destination.md
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import { pgConnection, postgresError, redactedUrl } from '../node/postgres.js';
import { CHUNK_QUEUE, isPostgresUrl } from './queue-jobs.js';

/** One run's chunk jobs on the queue, counted. Times are ms since the epoch. */
export interface QueueRunCounts {
  /** The run's id (the same for a coordinator resumed after a kill). */
  run: string;
  /** The destination's key in the state. */
  destination: string;
  /** Where the workers write: the folder's path or the `s3://` URL. */
  storage: string;
  chunks: {
    total: number;
    /** New, or to be retried. */
    waiting: number;
    active: number;
    completed: number;
    /** Given up on, or cancelled. */
    failed: number;
    /** Taken more than once. */
    retried: number;
  };
  resources: {
    /** Entries in the run's jobs. */
    total: number;
    /** Entries the completed jobs report done (those that failed included). */
    done: number;
    /** Entries the completed jobs report failed. */
    failed: number;
  };
  /** When its first job was sent. */
  createdAt: number;
  /** When a job of it last changed (sent, taken or completed). */
  updatedAt: number;
  /** When its last job was completed, if any is. */
  lastCompletedAt?: number;
}

/** A reader of a queue's runs, holding one connection at most (made on the first read). */
export interface QueueRunsReader {
  /** The queue's URL without its password. */
  readonly queue: string;
  /**
   * The runs whose jobs the queue or its archive holds, oldest first; none when pg-boss never made its tables there.
   * @throws ResourceSyncError RS_IO naming the queue (without its password) when it cannot be read
   */
  read(): Promise<QueueRunCounts[]>;
  close(): Promise<void>;
}

/** What is read of a job's columns each time. */
interface JobRow {
  id: string;
  state: string;
  retries: number;
  done: string | null;
  failed: string | null;
  created: string;
  updated: string;
  completed: string | null;
}

/** What is read of a job's data once. */
interface JobName {
  run: string;
  destination: string;
  storage: string;
  entries: number;
}

const ms = (column: string): string => `floor(extract(epoch FROM ${column}) * 1000)::bigint`;

const JOBS_SQL = `SELECT DISTINCT ON (id) id, state, retry_count AS retries, output->>'done' AS done, output->>'failed' AS failed,
  ${ms('created_on')} AS created, ${ms('coalesce(completed_on, started_on, created_on)')} AS updated,
  CASE WHEN state = 'completed' THEN ${ms('completed_on')} END AS completed
  FROM (SELECT id, state, retry_count, output, created_on, started_on, completed_on, 0 AS pref FROM pgboss.job WHERE name = $1
        UNION ALL SELECT id, state, retry_count, output, created_on, started_on, completed_on, 1 FROM pgboss.archive WHERE name = $1) j
  ORDER BY id, pref`;

const NAME_COLUMNS = `id, data->>'run' AS run, data->'state'->>'destination' AS destination,
  coalesce(data->'storage'->>'url', data->'storage'->>'path') AS storage,
  CASE WHEN jsonb_typeof(data->'entries') = 'array' THEN jsonb_array_length(data->'entries') ELSE 0 END AS entries`;

const NAMES_SQL = `SELECT ${NAME_COLUMNS} FROM pgboss.job WHERE id = ANY($1::uuid[])
  UNION ALL SELECT ${NAME_COLUMNS} FROM pgboss.archive WHERE id = ANY($1::uuid[])`;

/**
 * Opens a read-only reader of the chunk jobs on the queue at `url` (the `pg` module is loaded on first use).
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `url` is not a postgres:// URL
 * @example
 * const reader = await openQueueRuns('postgres://rs@db/rs');
 * for (const r of await reader.read()) console.log(r.run, `${r.chunks.completed}/${r.chunks.total}`);
 * await reader.close();
 */
export async function openQueueRuns(url: string): Promise<QueueRunsReader> {
  const queue = redactedUrl(url);
  if (!isPostgresUrl(url)) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Queue '${queue}' is not a postgres:// URL.`, { data: { url: queue } });
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ ...pgConnection(url), max: 1, idleTimeoutMillis: 10_000 });
  pool.on('error', () => undefined);
  const names = new Map<string, JobName>();
  return {
    queue,
    read: async () => {
      try {
        return await readRuns(pool, names);
      } catch (err) {
        if ((err as { code?: string }).code === '42P01') return []; // no pg-boss tables yet
        throw postgresError(`Cannot read the queue at ${queue}`, err);
      }
    },
    close: () => pool.end(),
  };
}

/** The runs of the jobs on the queue, oldest first; `names` keeps each job's name between reads. */
async function readRuns(pool: pg.Pool, names: Map<string, JobName>): Promise<QueueRunCounts[]> {
  const jobs = (await pool.query<JobRow>(JOBS_SQL, [CHUNK_QUEUE])).rows;
  const unknown = jobs.filter((j) => !names.has(j.id)).map((j) => j.id);
  if (unknown.length > 0) {
    type NameRow = { id: string; run: string | null; destination: string | null; storage: string | null; entries: number };
    for (const r of (await pool.query<NameRow>(NAMES_SQL, [unknown])).rows) {
      names.set(r.id, { run: r.run ?? '?', destination: r.destination ?? '?', storage: r.storage ?? '?', entries: Number(r.entries) });
    }
  }
  const seen = new Set(jobs.map((j) => j.id));
  for (const id of names.keys()) if (!seen.has(id)) names.delete(id); // jobs pg-boss has since deleted
  const runs = new Map<string, QueueRunCounts>();
  for (const j of jobs) {
    const name = names.get(j.id);
    if (name === undefined) continue;
    const key = `${name.run}\n${name.destination}`;
    let r = runs.get(key);
    if (r === undefined) {
      r = {
        run: name.run,
        destination: name.destination,
        storage: name.storage,
        chunks: { total: 0, waiting: 0, active: 0, completed: 0, failed: 0, retried: 0 },
        resources: { total: 0, done: 0, failed: 0 },
        createdAt: Number(j.created),
        updatedAt: 0,
      };
      runs.set(key, r);
    }
    count(r, j, name);
  }
  return [...runs.values()].sort((a, b) => a.createdAt - b.createdAt || (a.run < b.run ? -1 : 1));
}

/** Adds a job to its run's counts. */
function count(r: QueueRunCounts, j: JobRow, name: JobName): void {
  r.chunks.total++;
  r.resources.total += name.entries;
  if (Number(j.retries) > 0) r.chunks.retried++;
  r.createdAt = Math.min(r.createdAt, Number(j.created));
  r.updatedAt = Math.max(r.updatedAt, Number(j.updated));
  switch (j.state) {
    case 'created':
    case 'retry':
      r.chunks.waiting++;
      break;
    case 'active':
      r.chunks.active++;
      break;
    case 'completed':
      r.chunks.completed++;
      r.resources.done += Number(j.done ?? 0);
      r.resources.failed += Number(j.failed ?? 0);
      if (j.completed !== null) r.lastCompletedAt = Math.max(r.lastCompletedAt ?? 0, Number(j.completed));
      break;
    default: // failed, cancelled
      r.chunks.failed++;
  }
}
