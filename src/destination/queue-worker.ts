/**
 * A sync worker: takes chunk jobs from the queue ({@link syncWithQueue}'s), fetches, verifies and writes their
 * resources (of a Resource List, or changes of a Change List: created, updated, deleted) into the storage the job
 * names, and records them in the state the job names, through its `apply`.
 * Jobs are at least once: a chunk done again changes nothing (a resource recorded with the same facts, or a file
 * that already has them, is left as it is), and a killed worker's chunk is taken by another once it expires.
 * @see Z39.99 §5.2 (Baseline Synchronization, Incremental Synchronization)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import type { Durability } from '../node/durability.js';
import { connect, type Connection } from './connection.js';
import { openPostgresDestinationState } from './postgres-state.js';
import type { PlanAction, PlanItem } from './plan.js';
import { CHUNK_QUEUE, JOB_VERSIONS_READ, openQueue, openStorage, type ChunkJob, type ChunkOutcome, type ChunkQueue, type OpenedStorage } from './queue-jobs.js';
import type { ChangeResults } from './resource-applier.js';
import { runPool } from './run-pool.js';
import type { DestinationState } from './state.js';
import { applierFor } from './sync-run.js';

/** Options of {@link runSyncWorker}. */
export interface SyncWorkerOptions {
  /** The queue's PostgreSQL URL (the coordinator's `queue`). */
  queue: string;
  /** Resources fetched at once. Default 16. */
  concurrency?: number;
  /** Stops the worker: the chunk in hand is finished and reported first, then it returns. */
  signal?: AbortSignal;
  /** Authorization header values per origin, for the Sources of the jobs (never carried by a job). */
  auth?: Record<string, string>;
  /** How a folder's files are made durable. Default: a group commit. */
  durability?: Durability;
  /**
   * The S3-compatible server of the jobs' `s3://` storages. Default: `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`,
   * else AWS S3; credentials and region from the standard AWS variables (never carried by a job).
   */
  s3Endpoint?: string;
  /** How long to wait before looking again when the queue has nothing, ms. Default 500. */
  pollIntervalMs?: number;
  /** How often to look for expired jobs (a killed worker's), s; the processes of a queue share it. Default 5. */
  maintenanceIntervalSeconds?: number;
  /** Hears each chunk done (or failed, to be retried). */
  onChunk?: (c: ChunkReport) => void;
  /** Hears errors met in the background (the queue's maintenance). */
  onError?: (err: unknown) => void;
}

/** A chunk a worker dealt with. */
export interface ChunkReport {
  /** The job's id. */
  id: string;
  run: string;
  set: string;
  entries: number;
  /** Attempts before this one (a retry after a failure or an expiry). */
  retry: number;
  /** What was done; undefined when the chunk failed as a whole (it is retried). */
  outcome?: ChunkOutcome;
  /** Why the chunk failed as a whole. */
  error?: string;
  durationMs: number;
}

/** What a worker keeps open between chunks: the states, storages and connections the jobs named. */
class Opened {
  readonly states = new Map<string, Promise<DestinationState>>();
  readonly storages = new Map<string, OpenedStorage>();
  readonly connections = new Map<string, Connection>();

  state(job: ChunkJob): Promise<DestinationState> {
    const key = JSON.stringify([job.state.url, job.state.destination]);
    let s = this.states.get(key);
    if (s === undefined) {
      s = openPostgresDestinationState(job.state.url, { destination: job.state.destination });
      s.catch(() => this.states.delete(key));
      this.states.set(key, s);
    }
    return s;
  }

  /** The storage the job names, opened once for every job that names it (an S3 client's connections reused). */
  storage(job: ChunkJob, options: SyncWorkerOptions): OpenedStorage {
    const key = JSON.stringify(job.storage);
    let s = this.storages.get(key);
    if (s === undefined) {
      s = openStorage(job.storage, { ...(options.durability !== undefined ? { durability: options.durability } : {}), ...(options.s3Endpoint !== undefined ? { s3Endpoint: options.s3Endpoint } : {}) });
      this.storages.set(key, s);
    }
    return s;
  }

  connection(job: ChunkJob, options: SyncWorkerOptions): Connection {
    const key = JSON.stringify(job.connection);
    let c = this.connections.get(key);
    if (c === undefined) {
      c = connect({ ...job.connection, concurrency: options.concurrency ?? 16, ...(options.auth ? { auth: options.auth } : {}) });
      this.connections.set(key, c);
    }
    return c;
  }

  async close(): Promise<void> {
    for (const s of this.storages.values()) await s.close().catch(() => undefined);
    for (const c of this.connections.values()) await c.close();
    for (const s of this.states.values()) await (await s.catch(() => undefined))?.close();
  }
}

/**
 * Applies one chunk: every entry fetched (or found held), verified, written and recorded; failures recorded as
 * pending under the job's capability set, as a plain sync records them. A resource whose record (or file) already
 * has the entry's facts is left as it is: a chunk done twice writes nothing the second time (a retry in a run that
 * started on an empty destination counts what an earlier attempt wrote as created).
 */
async function applyChunk(job: ChunkJob, retry: number, opened: Opened, options: SyncWorkerOptions): Promise<ChunkOutcome> {
  const kind = jobKind(job);
  const store = await opened.state(job);
  const { storage } = opened.storage(job, options);
  const connection = opened.connection(job, options);
  const { behaviour } = job;
  const plans = new Map<string, PlanItem>();
  // every record and file is looked at first, even on a first attempt: the same chunk may be in two hands
  const applier = applierFor(
    { connection, store, storage, options: { delete: behaviour.delete, verifyRetries: behaviour.verifyRetries, preferMirrors: behaviour.preferMirrors } },
    {
      dryRun: false,
      adopt: true,
      fresh: false,
      rehash: behaviour.rehash,
      // changes: an earlier failure of a resource (pending in the state) is resolved by its change done here
      ...(kind === 'changes' ? { hasPending: () => true, onPlan: (item: PlanItem) => void plans.set(item.url, item) } : {}),
    },
  );
  applier.setKey = job.set;
  const results: ChangeResults = { created: [], updated: [], unchanged: [], deleted: [], skipped: [], absent: [] };
  await runPool(job.entries, options.concurrency ?? 16, async (e, release) => {
    const action = await applier.apply(e, release);
    const item = plans.get(e.loc);
    plans.delete(e.loc);
    if (kind === 'changes' && action !== undefined) results[changeResult(action, item, retry > 0 ? e.md?.change : undefined)].push(e.loc);
  });
  await storage.settle();
  await applier.flush();
  const { created, updated, deleted, unchanged, bytes, failed, warnings } = applier.counts;
  const done = job.entries.length;
  if (kind === 'changes') {
    const n = { created: results.created.length, updated: results.updated.length, deleted: results.deleted.length, unchanged: results.unchanged.length };
    return { ...n, bytes, failed, warnings, done, changes: results };
  }
  if (job.fresh && retry > 0) return { created: created + unchanged, updated, deleted, unchanged: 0, bytes, failed, warnings, done };
  return { created, updated, deleted, unchanged, bytes, failed, warnings, done };
}

/**
 * What a change applied became, from the action `apply` returned and the plan item it applied. On a retry (`retried`:
 * the change as listed), a resource found already in line was most likely written by the attempt that was lost, and
 * counts as the change says (created or updated), as that attempt would have counted it.
 */
function changeResult(action: PlanAction, item: PlanItem | undefined, retried?: string): keyof ChangeResults {
  if (item?.reason === 'absent') return 'absent';
  if (action === 'delete') return item?.kept === true ? 'skipped' : 'deleted';
  if (action === 'unchanged' && (retried === 'created' || retried === 'updated')) return retried;
  return action === 'create' ? 'created' : action === 'update' ? 'updated' : 'unchanged';
}

/**
 * What a job's entries are: a Resource List's or changes. A job of a format this worker does not know (sent by a
 * newer coordinator) is refused, to be retried by a worker that knows it.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for an unknown version or kind, or a job without entries
 */
function jobKind(job: ChunkJob): 'resources' | 'changes' {
  const version: unknown = (job as { version?: unknown }).version;
  if (typeof version !== 'number' || !JOB_VERSIONS_READ.includes(version)) {
    const known = JOB_VERSIONS_READ.join(' and ');
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The chunk job is of format version ${String(version)}; this worker reads versions ${known}: upgrade the worker.`, { data: { version: String(version) } });
  }
  const kind = job.version === 1 ? 'resources' : job.kind;
  if ((kind !== 'resources' && kind !== 'changes') || !Array.isArray(job.entries)) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The chunk job (version ${job.version}) is of kind '${String(kind)}', which this worker does not know.`, { data: { kind: String(kind) } });
  }
  return kind;
}

/**
 * Runs a sync worker until `signal` aborts: takes one chunk job at a time from the queue, applies it, and completes
 * the job with its outcome (the coordinator counts it); a chunk that fails as a whole (its state or storage out of
 * reach) is failed, to be retried by pg-boss. An abort lets the chunk in hand finish and be reported first.
 * Workers do not take the state's lease: the coordinator holds it for the run, and the workers write their records
 * on its behalf through the state's `apply` (one transaction per batch).
 * @returns the number of chunks done
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `queue` is not a postgres:// URL, RS_IO when it cannot be reached
 * @example
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * await runSyncWorker({ queue: 'postgres://rs@db/rs', concurrency: 16, signal: stop.signal });
 */
export async function runSyncWorker(options: SyncWorkerOptions): Promise<number> {
  const queue = await openQueue(options.queue, {
    maintenanceIntervalSeconds: options.maintenanceIntervalSeconds ?? 5,
    ...(options.onError ? { onError: options.onError } : {}),
  });
  const opened = new Opened();
  let chunks = 0;
  try {
    while (options.signal?.aborted !== true) {
      const [job] = await queue.boss.fetch<ChunkJob>(CHUNK_QUEUE, { batchSize: 1, includeMetadata: true });
      if (job === undefined) {
        await sleep(options.pollIntervalMs ?? 500, undefined, options.signal ? { signal: options.signal } : {}).catch(() => undefined);
        continue;
      }
      await takeJob(queue, job, opened, options);
      chunks++;
    }
  } finally {
    await opened.close();
    await queue.close();
  }
  return chunks;
}

/** Applies one job and completes it with its outcome, or fails it (to be retried) when it could not be applied. */
async function takeJob(queue: ChunkQueue, job: { id: string; data: ChunkJob; retryCount: number }, opened: Opened, options: SyncWorkerOptions): Promise<void> {
  const started = Date.now();
  const report: ChunkReport = { id: job.id, run: String(job.data.run), set: String(job.data.set), entries: job.data.entries?.length ?? 0, retry: job.retryCount, durationMs: 0 };
  try {
    const outcome = await applyChunk(job.data, job.retryCount, opened, options);
    await queue.boss.complete(CHUNK_QUEUE, job.id, outcome);
    const { changes: _byResource, ...counts } = outcome;
    report.outcome = counts;
  } catch (err) {
    report.error = messageOf(err);
    await queue.boss.fail(CHUNK_QUEUE, job.id, { message: report.error });
  }
  report.durationMs = Date.now() - started;
  options.onChunk?.(report);
}
