/**
 * A sync whose resources are fetched by workers fed from a job queue (pg-boss on PostgreSQL): the coordinator
 * discovers and plans as `sync` does, hands each Resource List's entries, and each Change List's changes (the last
 * of each resource), to the queue in chunks, waits for the workers to apply them, and goes on as `sync` does
 * (deletions inferred, the cursor moved once a Change List's chunks are all done, settling).
 * @see Z39.99 §5.2 (Baseline Synchronization, Incremental Synchronization), §12.1
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { openPostgresDestinationState } from './postgres-state.js';
import {
  CHUNK_QUEUE,
  JOB_VERSION,
  MAX_CHUNK,
  chunkId,
  isPostgresUrl,
  jobEntry,
  openQueue,
  openStorage,
  storageDescriptorFor,
  type ChunkJob,
  type ChunkQueue,
  type OpenedStorage,
  type StorageDescriptor,
} from './queue-jobs.js';
import { redactedUrl } from '../node/postgres.js';
import { SessionJobs, type EndedJob } from './queue-session.js';
import { runPool } from './run-pool.js';
import { runSync } from './sync.js';
import type { SyncOptions, SyncReport } from './sync-options.js';
import type { ResourceDispatch, SetRun, SyncRun } from './sync-run.js';

/** The state's key of the run in hand: a coordinator run again after a kill finds its run (and its jobs) there. */
const RUN_META = 'queue:run';
/**
 * Chunks sent to the queue in one statement: 5 (5,000 entries) keeps the round trips few while what waits to be
 * sent stays small (entries held across collections are promoted, and the old space grows with them: 20 took the
 * coordinator planning 10^6 resources from about 185 to 225 MB peak RSS).
 */
const INSERT_BATCH = 5;

/** The chunk jobs of a run, by state, while the coordinator waits. */
export interface QueueProgress {
  /** Chunks sent so far in the run. */
  chunks: number;
  /** Waiting for a worker (`created` or `retry` in pg-boss). */
  waiting: number;
  /** In a worker's hands. */
  active: number;
  /** Done (their outcome counted). */
  completed: number;
  /** Given up after every retry (then applied by the coordinator itself). */
  failed: number;
}

/** Options of {@link syncWithQueue}: a sync's, with the queue and the shared state named by URL. */
export interface QueueSyncOptions extends Omit<SyncOptions, 'state' | 'storage' | 'http' | 'auth'> {
  /** The queue's PostgreSQL URL (pg-boss's tables are created there, in the schema `pgboss`). */
  queue: string;
  /** The Destination state's PostgreSQL URL (may be the queue's database); workers open it from the jobs. */
  stateUrl: string;
  /** The destination's key in the state. Default: `dest` resolved to an absolute path, or an `s3://` URL as given. */
  destination?: string;
  /**
   * With an `s3://` `dest`: the S3-compatible server. Default: `AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`, else
   * AWS S3; credentials and region from the standard AWS variables, for the coordinator and each worker alike.
   */
  s3Endpoint?: string;
  /** Entries per job, at most 10,000. Default 1,000. */
  chunkSize?: number;
  /** A job in a worker's hands longer than this is given to another worker (a killed worker's). Default 60. */
  expireInSeconds?: number;
  /** Attempts of a job after the first, when a worker fails or is lost; then the coordinator applies it. Default 5. */
  retryLimit?: number;
  /** How often the coordinator reads the jobs' states while it waits, ms. Default 250. */
  pollIntervalMs?: number;
  /** Hears the jobs' states while the coordinator waits for them. */
  onQueueProgress?: (p: QueueProgress) => void;
}

/**
 * Synchronizes `dest` with a Source as {@link sync} does, with the resources of every Resource List, and the changes
 * of every Change List (the last change of each resource there: created, updated, deleted), fetched, verified,
 * written (or removed) and recorded by workers ({@link runSyncWorker}) that take chunk jobs from the queue: a job names the run's state
 * (`stateUrl`, `destination`) and storage (`dest`), so a worker needs nothing else. The coordinator holds the
 * state's lease throughout; the workers write their records through the state's `apply` without it,
 * on the coordinator's behalf. Returns the report a plain sync returns (the same counts and failures).
 * `dest` may be `s3://bucket/prefix`: the coordinator and every worker then open that bucket (the same way, from
 * the URL and their own environment's endpoint and credentials), and the report names the bucket as its `dest`.
 * A coordinator killed and run again with the same options resumes its run: the run's id is in the state, its jobs
 * keep their ids, and the jobs already done are counted, not done again. A dry run needs no worker: it plans as
 * `sync` does.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `queue` or `stateUrl` is not a postgres:// URL, and what `sync` throws
 * @example
 * const report = await syncWithQueue({ source: 'http://example.com/capabilitylist.xml', dest: '/shared/mirror',
 *   queue: 'postgres://rs@db/rs', stateUrl: 'postgres://rs@db/rs' });
 * await syncWithQueue({ source: 'http://example.com/capabilitylist.xml', dest: 's3://mirrors/example',
 *   queue: 'postgres://rs@db/rs', stateUrl: 'postgres://rs@db/rs', s3Endpoint: 'http://127.0.0.1:7480' });
 */
export async function syncWithQueue(options: QueueSyncOptions): Promise<SyncReport> {
  for (const [name, url] of [['queue', options.queue], ['state', options.stateUrl]] as const) {
    if (!isPostgresUrl(url)) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The ${name} '${redactedUrl(url)}' is not a postgres:// URL.`, { data: { [name]: redactedUrl(url) } });
  }
  const chunkSize = options.chunkSize ?? 1000;
  if (!Number.isInteger(chunkSize) || chunkSize < 1 || chunkSize > MAX_CHUNK) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Chunk size ${chunkSize} is not between 1 and ${MAX_CHUNK}.`, { data: { chunkSize } });
  }
  const dryRun = options.dryRun ?? false;
  const descriptor = storageDescriptorFor(options.dest);
  const destination = options.destination ?? (descriptor.kind === 's3' ? descriptor.url : resolve(options.dest));
  const mirror = await openMirror(descriptor, options);
  let state: Awaited<ReturnType<typeof openPostgresDestinationState>> | undefined;
  const expireInSeconds = options.expireInSeconds ?? 60;
  let queue: ChunkQueue | undefined;
  try {
    state = await openPostgresDestinationState(options.stateUrl, { destination, readonly: dryRun });
    if (!dryRun) queue = await openQueue(options.queue, { maintenanceIntervalSeconds: Math.max(1, Math.min(10, Math.ceil(expireInSeconds / 2))) });
    const q = queue;
    const runOptions = { ...options, ...mirror.overrides, state };
    const report = await runSync(runOptions, q === undefined ? undefined : (run) => ChunkDispatch.open(q, run, options, { chunkSize, expireInSeconds, destination, storage: descriptor }));
    if (!dryRun) await state.setMeta(RUN_META, undefined);
    return mirror.location === undefined ? report : { ...report, dest: mirror.location };
  } finally {
    await queue?.close();
    await state?.close();
    await mirror.close();
  }
}

/**
 * The coordinator's mirror: for a bucket, its storage (opened as the workers open it, the bucket checked first) and
 * a temporary local folder as the sync's `dest`; for a folder, nothing (the sync opens `dest`).
 */
async function openMirror(descriptor: StorageDescriptor, options: QueueSyncOptions): Promise<{ overrides: Partial<SyncOptions>; location?: string; close(): Promise<void> }> {
  if (descriptor.kind !== 's3') return { overrides: {}, close: () => Promise.resolve() };
  const opened: OpenedStorage = openStorage(descriptor, options.s3Endpoint !== undefined ? { s3Endpoint: options.s3Endpoint } : {});
  try {
    await opened.s3!.checkBucket();
  } catch (err) {
    await opened.close().catch(() => undefined);
    throw err;
  }
  const workDir = await mkdtemp(join(tmpdir(), 'resourcesync-s3-run-'));
  return {
    overrides: { dest: workDir, storage: opened.storage },
    location: opened.s3!.location,
    close: async () => {
      try {
        await opened.close();
      } finally {
        await rm(workDir, { recursive: true, force: true });
      }
    },
  };
}

/** A chunk job as it is inserted into the queue. */
type QueuedJob = { id: string; name: string; data: ChunkJob; expireInSeconds: number; retryLimit: number; retryDelay: number };

/** The ResourceDispatch of a coordinator: chunk jobs sent to the queue, then waited for and counted. */
class ChunkDispatch implements ResourceDispatch {
  readonly #queue: ChunkQueue;
  readonly #options: QueueSyncOptions;
  readonly #template: Omit<ChunkJob, 'set' | 'entries'>;
  /** How many times each chunk of changes was sent by this process (a later round of the same list sends it anew). */
  readonly #changeSends = new Map<string, number>();
  /** The URLs of the chunks of changes that failed, since the last window of changes began. */
  readonly #changeFailures = new Set<string>();
  /** The jobs of this run that an earlier coordinator left unfinished were waited for. */
  #staleWaited = false;
  readonly #chunkSize: number;
  readonly #expireInSeconds: number;
  /** This process's jobs in the queue, found by a tag (not by ids held here). */
  readonly #jobs: SessionJobs;
  /** Jobs sent and not yet counted: a count, whatever the number of jobs. */
  #outstanding = 0;
  #sent = 0;
  #completed = 0;
  #failed = 0;

  private constructor(queue: ChunkQueue, jobs: SessionJobs, options: QueueSyncOptions, template: Omit<ChunkJob, 'set' | 'entries'>, sizes: { chunkSize: number; expireInSeconds: number }) {
    this.#queue = queue;
    this.#jobs = jobs;
    this.#options = options;
    this.#template = template;
    this.#chunkSize = sizes.chunkSize;
    this.#expireInSeconds = sizes.expireInSeconds;
  }

  /** The dispatch of `run`: its id found in the state (a run resumed) or made and recorded there. */
  static async open(queue: ChunkQueue, run: SyncRun, options: QueueSyncOptions, sizes: { chunkSize: number; expireInSeconds: number; destination: string; storage: StorageDescriptor }): Promise<ChunkDispatch> {
    let id = await run.state.getMeta(RUN_META);
    if (id === undefined) {
      id = randomUUID();
      await run.state.setMeta(RUN_META, id);
    }
    const connection: ChunkJob['connection'] = { source: options.source };
    if (options.allowOrigins !== undefined) connection.allowOrigins = options.allowOrigins;
    if (options.maps !== undefined) connection.maps = options.maps;
    if (options.base !== undefined) connection.base = options.base;
    if (options.timeoutMs !== undefined) connection.timeoutMs = options.timeoutMs;
    if (options.retries !== undefined) connection.retries = options.retries;
    if (options.rate !== undefined) connection.rate = options.rate;
    const template: Omit<ChunkJob, 'set' | 'entries'> = {
      version: JOB_VERSION,
      run: id,
      state: { url: options.stateUrl, destination: sizes.destination },
      storage: sizes.storage,
      connection,
      behaviour: { delete: options.delete ?? false, verifyRetries: options.verifyRetries ?? 2, preferMirrors: options.preferMirrors ?? false, rehash: options.baseline === true && !run.fresh },
      fresh: run.fresh,
    };
    return new ChunkDispatch(queue, await SessionJobs.open(queue, id), options, template, sizes);
  }

  /** The job of a chunk, to insert: its data, expiry and retries. */
  #job(id: string, set: string, kind: 'resources' | 'changes', entries: Entry[]): QueuedJob {
    const data: ChunkJob = { ...this.#template, kind, set, entries };
    return { id, name: CHUNK_QUEUE, data, expireInSeconds: this.#expireInSeconds, retryLimit: this.#options.retryLimit ?? 5, retryDelay: 1 };
  }

  /** Sends the entries in chunks of `chunkSize`, `INSERT_BATCH` chunks a statement; resolves once all are sent. */
  async enqueue(run: SyncRun, setRun: SetRun, entries: AsyncIterable<Entry>): Promise<void> {
    const set = setRun.set.key;
    let chunk: Entry[] = [];
    let jobs: QueuedJob[] = [];
    const send = async (): Promise<void> => {
      if (jobs.length === 0) return;
      await this.#send(run, jobs);
      jobs = [];
      await this.#report();
    };
    const close = async (): Promise<void> => {
      if (chunk.length === 0) return;
      const id = chunkId(this.#template.run, set, this.#sent, chunk);
      jobs.push(this.#job(id, set, 'resources', chunk));
      this.#sent++;
      chunk = [];
      if (jobs.length >= INSERT_BATCH) await send();
    };
    for await (const e of entries) {
      if (run.options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Sync aborted.', { data: {} });
      if (chunk.length === 0 && jobs.length === 0) await this.#waitForStale(run);
      chunk.push(jobEntry(e));
      if (chunk.length >= this.#chunkSize) await close();
    }
    await close();
    await send();
  }

  /** Waits for every job sent: each done one's outcome counted, each given up applied here. */
  async settled(run: SyncRun): Promise<void> {
    const pollMs = this.#options.pollIntervalMs ?? 250;
    const signal = run.options.signal;
    while (this.#outstanding > 0) {
      if (signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Sync aborted while waiting for the workers.', { data: {} });
      const before = this.#outstanding;
      await this.#collect(run);
      if (this.#outstanding === before) await sleep(pollMs, undefined, signal ? { signal } : {}).catch(() => undefined);
    }
    await this.#report();
    await run.flush();
  }

  /**
   * Sends the changes of one Change List (one per resource: see `incremental`) in chunks of `chunkSize` and waits for
   * every one; returns the URLs that failed. Chunks may run in any order and at once, since no two hold the same
   * resource; the caller moves the cursor only once this resolves. Before the first window of a coordinator, the
   * jobs an earlier coordinator of the same run left unfinished are waited for: an older change of a resource still
   * in the queue must not land after a newer one. A chunk's id is derived from its run, set, Change List, place and
   * changes (a resumed coordinator sends the same ids, and the queue keeps the jobs it has); sent again by the same
   * process (a later round of a Change List that did not move where this chunk lies), it gets a new id and is applied
 * again.
   * @see Z39.99 §12.1 (the last change of a resource wins)
   */
  async applyChanges(run: SyncRun, setRun: SetRun, changes: readonly Entry[], changeList: string): Promise<ReadonlySet<string>> {
    if (changes.length === 0) return new Set();
    await this.#waitForStale(run);
    const set = setRun.set.key;
    this.#changeFailures.clear();
    let jobs: QueuedJob[] = [];
    for (let at = 0, place = 0; at < changes.length; at += this.#chunkSize, place++) {
      if (run.options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Sync aborted.', { data: {} });
      const entries = changes.slice(at, at + this.#chunkSize).map(jobEntry);
      const where = `changes ${changeList} ${place}`;
      const first = chunkId(this.#template.run, set, where, entries);
      const before = this.#changeSends.get(first) ?? 0;
      this.#changeSends.set(first, before + 1);
      const id = before === 0 ? first : chunkId(this.#template.run, set, `${where} ${before}`, entries);
      jobs.push(this.#job(id, set, 'changes', entries));
      this.#sent++;
      if (jobs.length >= INSERT_BATCH || at + this.#chunkSize >= changes.length) {
        await this.#send(run, jobs);
        jobs = [];
      }
    }
    await this.settled(run);
    const failed = new Set(this.#changeFailures);
    this.#changeFailures.clear();
    return failed;
  }

  /**
   * Before the first chunk this coordinator sends: waits until no job of this run that it did not send (an earlier
   * coordinator's, killed) is waiting or in a worker's hands, so that none of them lands after a newer chunk.
   */
  async #waitForStale(run: SyncRun): Promise<void> {
    if (this.#staleWaited) return;
    await this.#jobs.waitForStale(this.#options.pollIntervalMs ?? 250, run.options.signal);
    this.#staleWaited = true;
  }

  /** Inserts `jobs` and tags them as this process's: each is counted once it ends (at once when already archived). */
  async #send(run: SyncRun, jobs: QueuedJob[]): Promise<void> {
    await this.#queue.boss.insert(jobs);
    this.#outstanding += jobs.length;
    for (const row of await this.#jobs.claim(jobs.map((j) => j.id))) await this.#count(run, row);
  }

  /** Counts the jobs that ended since the last look, a page at a time: done ones absorbed, given-up ones applied here. */
  async #collect(run: SyncRun): Promise<void> {
    for (let page = 0; page < 1000; page++) {
      const ended = await this.#jobs.takeEnded();
      for (const row of ended) await this.#count(run, row);
      if (ended.length === 0) break;
    }
    await this.#report();
  }

  /** Counts one ended job: a done one's outcome absorbed, a given-up one applied here. */
  async #count(run: SyncRun, row: EndedJob): Promise<void> {
    this.#outstanding--;
    if (row.state === 'completed' && row.output !== null && typeof row.output.done === 'number') {
      run.applier.absorb(row.output);
      if (row.output.changes !== undefined) for (const f of row.output.failed) this.#changeFailures.add(f.url);
      this.#completed++;
    } else {
      this.#failed++;
      await this.#applyHere(run, row.id);
    }
  }

  /** A job the workers gave up on (or that was cancelled): its entries applied by the coordinator. */
  async #applyHere(run: SyncRun, id: string): Promise<void> {
    const { job, archive } = this.#queue.tables;
    const rows = await this.#queue.query<{ data: ChunkJob }>(`SELECT data FROM ${job} WHERE name = $1 AND id = $2 UNION ALL SELECT data FROM ${archive} WHERE name = $1 AND id = $2 LIMIT 1`, [CHUNK_QUEUE, id]);
    const data = rows[0]?.data;
    if (data === undefined) return;
    const previous = run.applier.setKey;
    run.applier.setKey = data.set;
    const changes = data.kind === 'changes';
    await runPool(data.entries, run.concurrency, async (e, release) => {
      if ((await run.applier.apply(e, release)) === undefined && changes) this.#changeFailures.add(e.loc);
    });
    await run.flush();
    run.applier.setKey = previous;
  }

  /** Tells `onQueueProgress` the run's jobs by state. */
  async #report(): Promise<void> {
    const cb = this.#options.onQueueProgress;
    if (cb === undefined) return;
    const { waiting, active } = this.#outstanding === 0 ? { waiting: 0, active: 0 } : await this.#jobs.states();
    cb({ chunks: this.#sent, waiting, active, completed: this.#completed, failed: this.#failed });
  }
}
