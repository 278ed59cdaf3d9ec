/**
 * `sync --queue postgres://…`: the options that hand a sync's resources to workers on a job queue, checked, and the
 * coordinator's progress (the run's resources, and its chunk jobs by state) on the progress bar.
 */
import type { QueueProgress, QueueSyncOptions } from '../destination/queue-sync.js';
import type { SyncOptions } from '../destination/sync-options.js';
import { integerOption } from './mirror-options.js';
import type { ProgressBar } from './progress.js';
import type { StateChoice } from './state-option.js';

/** The command-line options of this module. */
export const QUEUE_OPTIONS = {
  queue: { type: 'string' },
  'chunk-size': { type: 'string' },
  'job-expiry': { type: 'string' },
} as const;

/** Their lines in `sync`'s help. */
export const QUEUE_HELP = `  --queue URL              fetch the resources of Resource Lists with workers ('resourcesync
                           worker --queue URL', on any machine): chunk jobs on a pg-boss queue
                           in that PostgreSQL database; needs --state postgres://… (it may be
                           the same database) and a <dest-dir> every worker reaches at the same
                           path, or s3://BUCKET/PREFIX (each worker's endpoint: its --s3-endpoint
                           or AWS_ENDPOINT_URL). Output and exit codes as without it; run again
                           after a kill, it resumes the run and its jobs
  --chunk-size N           with --queue: resources per job (default 1000, at most 10000)
  --job-expiry S           with --queue: a job in a worker's hands longer than S seconds is
                           given to another worker (default 60)`;

/** What `--queue` and its companions ask for. */
export interface QueueChoice {
  url: string;
  chunkSize?: number;
  expireInSeconds?: number;
}

/**
 * The queue the options name, or undefined without `--queue`; throws a usage message for a queue that is not
 * PostgreSQL, a state that is not, `--follow`, or companions without `--queue`.
 */
export function queueChoice(v: { queue?: string | undefined; 'chunk-size'?: string | undefined; 'job-expiry'?: string | undefined; follow?: boolean | undefined }, state: StateChoice): QueueChoice | undefined {
  const url = v.queue;
  if (url === undefined) {
    if (v['chunk-size'] !== undefined || v['job-expiry'] !== undefined) throw new Error('--chunk-size and --job-expiry go with --queue');
    return undefined;
  }
  if (!/^postgres(ql)?:\/\/[^/]/i.test(url) || !URL.canParse(url)) throw new Error('--queue is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)');
  if (state.kind !== 'postgres') throw new Error('--queue needs --state postgres://… (the workers record what they write there)');
  if (v.follow === true) throw new Error('--queue goes without --follow');
  const chunkSize = integerOption('chunk-size', v['chunk-size'], 1);
  if (chunkSize !== undefined && chunkSize > 10_000) throw new Error(`--chunk-size '${chunkSize}' is more than 10000`);
  const expireInSeconds = integerOption('job-expiry', v['job-expiry'], 1);
  return { url, ...(chunkSize !== undefined ? { chunkSize } : {}), ...(expireInSeconds !== undefined ? { expireInSeconds } : {}) };
}

/** The coordinator's options: the sync's, with the queue, the shared state, and the jobs' states on the bar. */
export function queueSyncOptions(sync: SyncOptions, queue: QueueChoice, state: StateChoice & { kind: 'postgres' }, bar: ProgressBar): QueueSyncOptions {
  const { state: _state, storage: _storage, http: _http, auth: _auth, ...rest } = sync;
  let jobs: QueueProgress | undefined;
  let last: Parameters<NonNullable<SyncOptions['onProgress']>>[0] | undefined;
  const show = (): void => {
    if (last === undefined) return;
    const label = jobs === undefined ? last.phase : `${last.phase} [jobs: ${jobs.waiting} waiting, ${jobs.active} active, ${jobs.completed}/${jobs.chunks} done${jobs.failed > 0 ? `, ${jobs.failed} given up` : ''}]`;
    bar.update({ label, done: last.done, ...(last.total !== undefined ? { total: last.total } : {}), ...(last.estimate !== undefined ? { estimate: last.estimate } : {}), bytes: last.bytes, failed: last.failed });
  };
  return {
    ...rest,
    queue: queue.url,
    stateUrl: state.url,
    destination: state.key,
    ...(queue.chunkSize !== undefined ? { chunkSize: queue.chunkSize } : {}),
    ...(queue.expireInSeconds !== undefined ? { expireInSeconds: queue.expireInSeconds } : {}),
    onProgress: (p) => {
      last = p;
      show();
    },
    onQueueProgress: (p) => {
      jobs = p;
      show();
    },
  };
}
