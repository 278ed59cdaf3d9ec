/**
 * Reading the progress of the sync runs spread over the job queue (pg-boss on PostgreSQL), without writing anything
 * there: per run and destination, the chunk jobs by state (waiting, active, done, failed) and the resources the done
 * chunks applied and failed, from `pgboss.job` and `pgboss.archive`. The explorer's Queue view shows it
 * (`resourcesync explore --web <url> --queue postgres://…`). A job's run and destination never change, so they are
 * read once per job (its data holds up to 1,000 entries); each later read touches only the small columns.
 * @see Z39.99 §5.2 (Baseline Synchronization); docs/destination.md
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import { postgresError, redactedUrl } from '../node/postgres.js';
import { CHUNK_QUEUE, isPostgresUrl } from './queue-jobs.js';

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

/** A job's state and what it reports, from the small columns only. */
interface JobRow {
  id: string;
  state: string;
  done: string | null;
  failed: string | null;
  created: string;
  updated: string;
}

const JOBS_SQL = `SELECT DISTINCT ON (id) id, state, output->>'done' AS done, output->>'failed' AS failed,
  (extract(epoch FROM created_on) * 1000)::bigint AS created,
  (extract(epoch FROM coalesce(completed_on, started_on, created_on)) * 1000)::bigint AS updated
  FROM (SELECT id, state, output, created_on, started_on, completed_on, 0 AS pref FROM pgboss.job WHERE name = $1
        UNION ALL SELECT id, state, output, created_on, started_on, completed_on, 1 FROM pgboss.archive WHERE name = $1) j
  ORDER BY id, pref`;

const NAMES_SQL = `SELECT id, data->>'run' AS run, data->'state'->>'destination' AS destination FROM pgboss.job WHERE id = ANY($1::uuid[])
  UNION ALL SELECT id, data->>'run', data->'state'->>'destination' FROM pgboss.archive WHERE id = ANY($1::uuid[])`;

/**
 * Opens a read-only reader of the chunk jobs on the queue at `url` (the `pg` module is loaded on first use). A queue
 * that pg-boss has not created yet reads as no run.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `url` is not a postgres:// URL; `read()` throws RS_IO when the
 *   database cannot be reached
 * @example
 * const reader = await openQueueProgress('postgres://rs@db/rs');
 * for (const r of (await reader.read()).runs) console.log(r.destination, r.chunks);
 */
export async function openQueueProgress(url: string): Promise<QueueProgressReader> {
  if (!isPostgresUrl(url)) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Queue '${redactedUrl(url)}' is not a postgres:// URL.`, { data: { url: redactedUrl(url) } });
  }
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ connectionString: url, max: 1, idleTimeoutMillis: 10_000 });
  pool.on('error', () => undefined);
  const names = new Map<string, { run: string; destination: string }>();
  return {
    read: async () => {
      try {
        return { at: Date.now(), queue: redactedUrl(url), runs: await readRuns(pool, names) };
      } catch (err) {
        if ((err as { code?: string }).code === '42P01') return { at: Date.now(), queue: redactedUrl(url), runs: [] }; // no pg-boss schema yet
        throw postgresError(`Cannot read the queue at ${redactedUrl(url)}`, err);
      }
    },
    close: () => pool.end(),
  };
}

/** The runs of the jobs on the queue; `names` keeps each job's run and destination between reads. */
async function readRuns(pool: pg.Pool, names: Map<string, { run: string; destination: string }>): Promise<QueueRunProgress[]> {
  const jobs = (await pool.query<JobRow>(JOBS_SQL, [CHUNK_QUEUE])).rows;
  const unknown = jobs.filter((j) => !names.has(j.id)).map((j) => j.id);
  if (unknown.length > 0) {
    const rows = (await pool.query<{ id: string; run: string | null; destination: string | null }>(NAMES_SQL, [unknown])).rows;
    for (const r of rows) names.set(r.id, { run: r.run ?? '?', destination: r.destination ?? '?' });
  }
  const seen = new Set(jobs.map((j) => j.id));
  for (const id of names.keys()) if (!seen.has(id)) names.delete(id); // jobs pg-boss has since deleted
  const runs = new Map<string, QueueRunProgress>();
  for (const j of jobs) {
    const name = names.get(j.id);
    if (name === undefined) continue;
    const key = `${name.run}\n${name.destination}`;
    let r = runs.get(key);
    if (r === undefined) {
      r = { ...name, chunks: { waiting: 0, active: 0, done: 0, failed: 0, total: 0 }, resources: { done: 0, failed: 0 }, createdAt: Number(j.created), updatedAt: 0 };
      runs.set(key, r);
    }
    count(r, j);
  }
  return [...runs.values()].sort((a, b) => b.updatedAt - a.updatedAt || (a.run < b.run ? -1 : 1)).slice(0, MAX_RUNS);
}

/** Adds a job to its run's counts. */
function count(r: QueueRunProgress, j: JobRow): void {
  r.chunks.total++;
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
      r.chunks.done++;
      r.resources.done += Number(j.done ?? 0) - Number(j.failed ?? 0);
      r.resources.failed += Number(j.failed ?? 0);
      break;
    default: // failed, cancelled
      r.chunks.failed++;
  }
}
