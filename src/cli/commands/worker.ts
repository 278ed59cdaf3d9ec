import { stderr, stdout } from 'node:process';
import { runSyncWorker, type ChunkReport } from '../../destination/queue-worker.js';
import { readQueueStatus, type QueueRunStatus } from '../../destination/queue-status.js';
import { messageOf } from '../../core/errors.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { EXIT, exitCodeOf, integerOption, reportFailure } from '../mirror-options.js';
import { quietSdk } from '../s3-dest.js';
import { cliDurability } from '../cli-durability.js';

const HELP = `Usage: resourcesync worker --queue <postgres-url> [options]
       resourcesync worker --queue <postgres-url> --status [--json]

Take chunk jobs of 'resourcesync sync ... --queue <postgres-url>' from the queue and apply them: each
resource fetched, verified (length and hashes) and written into the mirror the job names (a folder
this machine reaches at the same path, or an s3://BUCKET/PREFIX), and recorded in the PostgreSQL
state the job names. Run as many workers as you like, on any machines. A job names everything a
worker needs but credentials: the Source's come from RESOURCESYNC_BEARER, RESOURCESYNC_BASIC or
RESOURCESYNC_AUTH_<HOST>, as for sync; a bucket's from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
(AWS_SESSION_TOKEN, AWS_PROFILE) and AWS_REGION, on the endpoint of --s3-endpoint, else
AWS_ENDPOINT_URL_S3 or AWS_ENDPOINT_URL, else AWS S3.

A chunk is done at least once: one done again writes nothing (what is held is checked first); a
worker killed (kill -9) leaves its chunk to another once the job expires (sync's --job-expiry).
SIGTERM or SIGINT: the chunk in hand is finished and reported, then the worker exits 0.

Options:
  --queue URL              the queue's PostgreSQL URL (the one given to sync --queue)
  --concurrency N          resources fetched at once (default 16)
  --poll MS                how long to wait before looking again when the queue is empty
                           (default 500)
  --s3-endpoint URL        the S3-compatible server of the jobs' s3:// mirrors (path-style
                           addressing)
  --no-fsync               do not make files durable before renaming them
  --fsync-method M         batch (default) or file, as for sync
  --json                   one JSON line per chunk on stdout
  --status                 print the progress of the runs the queue holds jobs of (chunks
                           waiting, active, done, given up and retried; resources done), then
                           exit; with --json, one JSON object
  -h, --help               show this help

Output: one line per chunk: its id, the capability set, created, updated, unchanged and failed
counts and the time taken; a chunk that could not be applied as a whole (its state or folder out of
reach) is named with the reason, and retried by the queue.

Exit codes:
  0  stopped by SIGTERM or SIGINT; with --status, the status printed
  2  usage error
  3  the queue could not be opened (or, with --status, read)
`;

const WORKER_FLAGS = {
  queue: { type: 'string' },
  concurrency: { type: 'string' },
  poll: { type: 'string' },
  's3-endpoint': { type: 'string' },
  'no-fsync': { type: 'boolean' },
  'fsync-method': { type: 'string' },
  json: { type: 'boolean' },
  status: { type: 'boolean' },
} as const;

/** One line for a chunk dealt with. */
function chunkLine(c: ChunkReport): string {
  const head = `chunk ${c.id} (${c.entries} resources of ${c.set}${c.retry > 0 ? `, attempt ${c.retry + 1}` : ''})`;
  if (c.outcome === undefined) return `${head}: not applied, to be retried: ${c.error ?? 'unknown error'}`;
  const o = c.outcome;
  return `${head}: created ${o.created}, updated ${o.updated}, unchanged ${o.unchanged}, failed ${o.failed.length} in ${(c.durationMs / 1000).toFixed(1)} s`;
}

/** One line for a run's progress. */
function runLine(r: QueueRunStatus): string {
  const extra = `${r.failed > 0 ? `, ${r.failed} given up` : ''}${r.retried > 0 ? `, ${r.retried} retried` : ''}`;
  return `run ${r.run} into ${r.storage}: ${r.completed}/${r.chunks} chunks done (${r.done}/${r.resources} resources), ${r.waiting} waiting, ${r.active} active${extra}`;
}

/** `worker --status`: the queue's runs, printed. */
async function printStatus(queue: string, json: boolean): Promise<number> {
  try {
    const status = await readQueueStatus(queue);
    if (json) stdout.write(`${JSON.stringify(status)}\n`);
    else stdout.write(status.runs.length === 0 ? `no run on the queue ${status.queue}\n` : status.runs.map((r) => `${runLine(r)}\n`).join(''));
    return EXIT.OK;
  } catch (err) {
    reportFailure('worker', err, json);
    return exitCodeOf(err);
  }
}

/** `resourcesync worker`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('worker', args, WORKER_FLAGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const flags = parsed.values;
  if (parsed.positionals.length > 0) return usageError('worker', `unexpected argument '${parsed.positionals[0]}'.`);
  let concurrency: number | undefined, poll: number | undefined;
  try {
    if (flags.queue === undefined) throw new Error('--queue postgres://… is required');
    if (!/^postgres(ql)?:\/\/[^/]/i.test(flags.queue) || !URL.canParse(flags.queue)) throw new Error('--queue is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)');
    concurrency = integerOption('concurrency', flags.concurrency, 1);
    poll = integerOption('poll', flags.poll, 10);
    const endpoint = flags['s3-endpoint'];
    if (endpoint !== undefined && (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol))) throw new Error(`--s3-endpoint '${endpoint}' is not an http(s) URL`);
    if (flags['fsync-method'] !== undefined && flags['fsync-method'] !== 'batch' && flags['fsync-method'] !== 'file') {
      throw new Error(`--fsync-method must be 'batch' or 'file', not '${flags['fsync-method']}'`);
    }
  } catch (err) {
    return usageError('worker', err);
  }
  if (flags.status === true) return printStatus(flags.queue, flags.json ?? false);
  const durable = cliDurability(!(flags['no-fsync'] ?? false), flags['fsync-method'] === 'file' ? 'file' : 'batch');
  quietSdk();
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await runSyncWorker({
      queue: flags.queue,
      signal: stop.signal,
      durability: durable.durability,
      ...(concurrency !== undefined ? { concurrency } : {}),
      ...(poll !== undefined ? { pollIntervalMs: poll } : {}),
      ...(flags['s3-endpoint'] !== undefined ? { s3Endpoint: flags['s3-endpoint'] } : {}),
      onChunk: (c) => void stdout.write(`${flags.json === true ? JSON.stringify(c) : chunkLine(c)}\n`),
      onError: (err) => void stderr.write(`resourcesync worker: the queue's maintenance failed: ${messageOf(err)}\n`),
    });
    return EXIT.OK;
  } catch (err) {
    reportFailure('worker', err, flags.json);
    return stop.signal.aborted ? EXIT.OK : exitCodeOf(err);
  } finally {
    await durable.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
