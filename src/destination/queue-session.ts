/**
 * The chunk jobs one coordinator process sent, found again in the queue by a tag rather than by a list of ids held
 * in memory: the coordinator's memory and each poll's statement stay the same size whatever the number of jobs.
 * The tag is pg-boss's `singleton_key`, which a queue of the standard policy (ours) never reads: `<session>` on a job
 * sent and not yet counted, `<session>:counted` once its outcome was taken. Taking an outcome and marking it counted
 * are one statement, so no outcome is counted twice, whenever pg-boss moves the job to its archive.
 * @see Z39.99 §5.2 (Baseline Synchronization)
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ResourceSyncError } from '../core/errors.js';
import { CHUNK_QUEUE, type ChunkOutcome, type ChunkQueue } from './queue-jobs.js';

/** A job that ended (`completed`, `failed`, `cancelled`, or archived in any state) and was just counted. */
export interface EndedJob {
  id: string;
  state: string;
  /** The worker's outcome of a completed job; null otherwise. */
  output: ChunkOutcome | null;
}

/** Ended jobs taken in one statement: what one poll holds in memory is bounded. */
const PAGE = 500;
/** Live states of a job: waiting for a worker, or in a worker's hands. */
const LIVE = `state IN ('created', 'retry', 'active')`;
/** The columns of an ended job, its output only when completed. */
const ENDED = `id, state, CASE WHEN state = 'completed' THEN output END AS output`;

/** The jobs of one coordinator process in the queue: tagged when sent, counted once each as they end. */
export class SessionJobs {
  readonly #queue: ChunkQueue;
  readonly #run: string;
  readonly #tag: string;
  readonly #counted: string;
  /** The queue's clock when this session began: its jobs archived since are looked for in the archive. */
  readonly #since: Date;

  private constructor(queue: ChunkQueue, run: string, session: string, since: Date) {
    this.#queue = queue;
    this.#run = run;
    this.#tag = `rs:${session}`;
    this.#counted = `rs:${session}:counted`;
    this.#since = since;
  }

  /** A new session of the run `run` (a coordinator process), begun now by the queue's clock. */
  static async open(queue: ChunkQueue, run: string): Promise<SessionJobs> {
    const [row] = await queue.query<{ now: Date }>('SELECT now() - interval \'1 minute\' AS now', []);
    return new SessionJobs(queue, run, randomUUID(), row!.now);
  }

  /**
   * Tags the jobs just sent (`ids`) as this session's. A job an earlier coordinator of the run sent with the same id
   * (the queue kept its row) is tagged too; one already archived is counted at once and returned.
   */
  async claim(ids: readonly string[]): Promise<EndedJob[]> {
    if (ids.length === 0) return [];
    const { job, archive } = this.#queue.tables;
    await this.#queue.query(`UPDATE ${job} SET singleton_key = $3 WHERE name = $1 AND id = ANY($2::uuid[])`, [CHUNK_QUEUE, ids, this.#tag]);
    return this.#queue.query<EndedJob>(
      `UPDATE ${archive} a SET singleton_key = $3 WHERE a.name = $1 AND a.id = ANY($2::uuid[])
       AND NOT EXISTS (SELECT 1 FROM ${job} j WHERE j.name = $1 AND j.id = a.id) RETURNING ${ENDED}`,
      [CHUNK_QUEUE, ids, this.#counted],
    );
  }

  /**
   * Takes up to 500 of this session's jobs that ended since the last call, marked counted in the same statement
   * (in the job table, else in the archive for those pg-boss moved there since the session began).
   */
  async takeEnded(): Promise<EndedJob[]> {
    const { job, archive } = this.#queue.tables;
    const ended = await this.#queue.query<EndedJob>(
      `UPDATE ${job} SET singleton_key = $3 WHERE name = $1 AND id IN (SELECT id FROM ${job} WHERE name = $1 AND singleton_key = $2
       AND state IN ('completed', 'failed', 'cancelled') LIMIT ${PAGE} FOR UPDATE SKIP LOCKED) RETURNING ${ENDED}`,
      [CHUNK_QUEUE, this.#tag, this.#counted],
    );
    if (ended.length >= PAGE) return ended;
    const archived = await this.#queue.query<EndedJob>(
      `UPDATE ${archive} SET singleton_key = $3 WHERE name = $1 AND id IN (SELECT id FROM ${archive} WHERE archived_on >= $4 AND name = $1
       AND singleton_key = $2 LIMIT ${PAGE - ended.length} FOR UPDATE SKIP LOCKED) RETURNING ${ENDED}`,
      [CHUNK_QUEUE, this.#tag, this.#counted, this.#since],
    );
    return [...ended, ...archived];
  }

  /** This session's jobs not yet counted, waiting for a worker and in a worker's hands. */
  async states(): Promise<{ waiting: number; active: number }> {
    const { job } = this.#queue.tables;
    const rows = await this.#queue.query<{ state: string; n: string }>(`SELECT state, count(*) AS n FROM ${job} WHERE name = $1 AND singleton_key = $2 AND ${LIVE} GROUP BY state`, [
      CHUNK_QUEUE,
      this.#tag,
    ]);
    const of = (...states: string[]): number => rows.filter((r) => states.includes(r.state)).reduce((n, r) => n + Number(r.n), 0);
    return { waiting: of('created', 'retry'), active: of('active') };
  }

  /**
   * Waits until no job of the run sent by an earlier coordinator (killed) is waiting or in a worker's hands. They are
   * found once by their run (each live job's data read once) and tagged `<session>:stale`; then only counted by tag.
   * A stale job sent again by this session is tagged as this session's, and counted as its own.
   */
  async waitForStale(pollMs: number, signal: AbortSignal | undefined): Promise<void> {
    const { job } = this.#queue.tables;
    const stale = `${this.#tag}:stale`;
    await this.#queue.query(`UPDATE ${job} SET singleton_key = $3 WHERE name = $1 AND ${LIVE} AND data->>'run' = $2`, [CHUNK_QUEUE, this.#run, stale]);
    const count = async (): Promise<number> =>
      Number((await this.#queue.query<{ n: string }>(`SELECT count(*) AS n FROM ${job} WHERE name = $1 AND singleton_key = $2 AND ${LIVE}`, [CHUNK_QUEUE, stale]))[0]?.n ?? 0);
    while ((await count()) > 0) {
      if (signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Sync aborted while waiting for the jobs of an earlier coordinator.', { data: {} });
      await sleep(pollMs, undefined, signal ? { signal } : {}).catch(() => undefined);
    }
  }
}
