/**
 * `resourcesync build <dir>... --base-url <url> --out <publish-dir>`: publishes one or more directories
 * as a ResourceSync Source for an existing web server, updating the change lists from the stored
 * snapshot on each run.
 */
import { createHash } from 'node:crypto';
import { basename, join, resolve } from 'node:path';
import { RESOURCESYNC_DIR } from '../../core/constants.js';
import { parseS3Url, type S3Target } from '../../node/s3-url.js';
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import { requireFolderOrNothing } from '../../node/folder.js';
import { publish, type PublishOptions, type PublishProgress, type PublishResult } from '../../source/publish.js';
import { publishNotification } from '../../notify/publisher.js';
import { isValidSetName, normalizeBaseUrl } from '../../source/url-path.js';
import { PUBLISH_ARGS, PUBLISH_HELP, PublishArgsError, publishArgs } from '../publish-options.js';
import { PUBLISH_SECRET_ENV } from '../serve-push.js';
import { SNAPSHOTS_ARGS, SNAPSHOTS_HELP, snapshotsOpener } from '../snapshots-options.js';
import { sendToHub } from '../../live/push.js';
import { FEED_ARGS, FEED_HELP, FeedArgsError, feedFromArgs } from '../feed-options.js';
import { statSync } from 'node:fs';

const HELP = `Usage: resourcesync build <dir>... --base-url <url> --out <publish-dir> [options]
       resourcesync build --jsonl <file|-> --base-url <url> --out <publish-dir> --state <dir> [options]
       resourcesync build --pg-inventory <postgres-url> --pg-query <sql> --base-url <url> --out <publish-dir> --state <dir>

Writes the documents of a ResourceSync Source for the directories (one set of resources each) into
<publish-dir>, which is to be served at <url>. Each run records the changes since the previous one.

Options:
  --base-url URL          where <publish-dir> is served (required)
  --out DIR               the publish folder (required), or s3://BUCKET/PREFIX: every document
                          uploaded there (with --snapshots), a working copy kept in the state folder
  --s3-endpoint URL       the S3-compatible server of --out s3://… (default AWS_ENDPOINT_URL, else
                          AWS S3; credentials and region from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
                          AWS_REGION)
  --state DIR             state folder (default <dir>/.resourcesync/ of each set)
  --name NAME             set name, once per <dir> in order (default: the folder's name;
                          for a feed, the file's name, or 'resources')
${SNAPSHOTS_HELP}${FEED_HELP}${PUBLISH_HELP}  --hub URL               advertise notification channels with this WebSub hub and publish the
                          changes of this run to it (Change and Framework Notifications),
                          with the secret in ${PUBLISH_SECRET_ENV}, when set
                          (sent as Authorization: Bearer)
  --json                  print a JSON summary on stdout
  -h, --help              this help

Resources of a single set are published at <url><path>; with several sets at <url><name>/<path>.
Exit status: 0 done, 1 failure, 2 usage error, 3 the bucket of --out s3://… does not exist.
`;

class UsageError extends Error {}

/** `--out s3://…`: the bucket, the endpoint given, and the local working copy of the documents. */
interface S3Out extends S3Target {
  endpoint?: string;
  workDir: string;
}

/** Exit status of a bucket that does not exist. */
const NO_BUCKET_EXIT = 3;

/** Set names from the folders' names: invalid characters become `-`, duplicates get a suffix. */
export function setNames(dirs: string[], given: string[]): string[] {
  const used = new Set<string>();
  return dirs.map((dir, i) => {
    let name = given[i];
    if (name !== undefined) {
      if (!isValidSetName(name))
        throw new UsageError(
          `--name '${name}' is not a valid set name (letters, digits, '.', '_', '-'; not starting with '.')`,
        );
    } else {
      name = basename(resolve(dir))
        .replace(/[^A-Za-z0-9._-]/g, '-')
        .replace(/^[.]+/, '')
        .slice(0, 80);
      if (!isValidSetName(name)) name = 'resources';
      const base = name;
      for (let k = 2; used.has(name); k++) name = `${base}-${k}`;
    }
    if (used.has(name)) throw new UsageError(`set name '${name}' is used twice`);
    used.add(name);
    return name;
  });
}

const ARGS = {
  'base-url': { type: 'string' },
  out: { type: 'string' },
  's3-endpoint': { type: 'string' },
  state: { type: 'string' },
  name: { type: 'string', multiple: true },
  ...SNAPSHOTS_ARGS,
  ...PUBLISH_ARGS,
  ...FEED_ARGS,
  hub: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The publication the options ask for, and the bucket of `--out s3://…`; or the usage error's exit code. */
function readOptions(values: ParsedCommandArgs<typeof ARGS>['values'], positionals: string[]): { opts: PublishOptions; s3?: S3Out } | number {
  let opts: PublishOptions;
  let s3: S3Out | undefined;
  try {
    const feed = feedFromArgs(values, { stdin: () => process.stdin, ...(values.name?.[0] !== undefined ? { name: values.name[0] } : {}) });
    if (feed !== undefined && positionals.length > 0) throw new UsageError('give directories or a feed (--jsonl, --pg-inventory), not both');
    if (feed !== undefined && (values.name ?? []).length > 1) throw new UsageError('a feed is one set: give --name once');
    if (feed === undefined && positionals.length === 0) throw new UsageError('give at least one directory, --jsonl or --pg-inventory');
    if (feed !== undefined && values.state === undefined) throw new UsageError('a feed needs --state DIR (where its snapshots are kept)');
    if (feed?.file !== undefined && statSync(feed.file, { throwIfNoEntry: false })?.isFile() !== true) throw new UsageError(`--jsonl '${values.jsonl}' is not a file`);
    if (feed !== undefined && values.dumps === true) throw new UsageError('--dumps is not for a feed: its resources are held elsewhere');
    if (values['base-url'] === undefined) throw new UsageError('--base-url is required');
    if (values.out === undefined) throw new UsageError('--out is required');
    const baseUrl = normalizeBaseUrl(values['base-url']);
    if (baseUrl === undefined)
      throw new UsageError(
        `--base-url '${values['base-url']}' is not an absolute http(s) URL without query or fragment`,
      );
    const shared = publishArgs(values);
    const given = values.name ?? [];
    if (feed === undefined && given.length > positionals.length) throw new UsageError('more --name options than directories');
    const names = feed === undefined ? setNames(positionals, given) : [];
    const snapshots = snapshotsOpener(values, baseUrl, feed === undefined ? positionals.length : 1);
    if (typeof snapshots === 'string') throw new UsageError(snapshots);
    if (values.hub !== undefined && (!URL.canParse(values.hub) || !/^https?:$/.test(new URL(values.hub).protocol)))
      throw new UsageError(`--hub '${values.hub}' is not an http(s) URL`);
    s3 = s3Out(values, positionals[0]);
    opts = {
      sets: feed !== undefined ? [{ name: feed.name, feed: feed.feed }] : positionals.map((dir, i) => ({ name: names[i]!, dir })),
      baseUrl,
      outDir: s3?.workDir ?? values.out,
      ...shared,
      ...(values.state !== undefined ? { stateDir: values.state } : {}),
      ...(snapshots !== undefined ? { snapshots } : {}),
      ...(values.hub !== undefined ? { notifications: { hub: values.hub } } : {}),
    };
  } catch (err) {
    if (err instanceof UsageError || err instanceof PublishArgsError || err instanceof FeedArgsError)
      return usageError('build', err.message);
    throw err;
  }
  try {
    requireFolderOrNothing(resolve(opts.outDir), s3 === undefined ? '--out' : 'the working copy of --out s3://…');
  } catch (err) {
    return usageError('build', err);
  }
  return s3 === undefined ? { opts } : { opts, s3 };
}

/** The bucket of `--out s3://BUCKET/PREFIX`, or undefined for a folder; throws a `UsageError` for a wrong one. */
function s3Out(values: ParsedCommandArgs<typeof ARGS>['values'], firstDir: string | undefined): S3Out | undefined {
  const endpoint = values['s3-endpoint'];
  const target = s3Target(values.out!);
  if (target === undefined) {
    if (endpoint !== undefined) throw new UsageError('--s3-endpoint applies to --out s3://… only');
    return undefined;
  }
  if (endpoint !== undefined && (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol))) throw new UsageError(`--s3-endpoint '${endpoint}' is not an http(s) URL`);
  if (values.snapshots === undefined) {
    throw new UsageError('--out s3://… keeps no history in the bucket: give --snapshots postgres://… (or an SQLite file) for the Source\'s history');
  }
  const where = endpoint ?? (process.env.AWS_ENDPOINT_URL || 'AWS S3');
  const id = createHash('sha256').update(`${where}\n${target.bucket}\n${target.prefix}`).digest('hex').slice(0, 16);
  if (values.state === undefined && firstDir === undefined) throw new UsageError('--out s3://… with a feed keeps its working copy in the state folder: give --state');
  const root = values.state !== undefined ? resolve(values.state) : join(resolve(firstDir!), RESOURCESYNC_DIR);
  return { ...target, ...(endpoint !== undefined ? { endpoint } : {}), workDir: join(root, 's3-documents', id) };
}

function s3Target(out: string): S3Target | undefined {
  try {
    return parseS3Url(out);
  } catch (err) {
    throw new UsageError(`--out: ${messageOf(err)}`);
  }
}

/** Progress on a terminal: one line, rewritten at most every 100 ms while scanning. */
function progressLine(feed: boolean): (p: PublishProgress) => void {
  let last = 0;
  return (p) => {
    const t = Date.now();
    if (t - last < 100 && p.phase === 'scan') return;
    last = t;
    const what =
      p.phase !== 'scan' ? `writing ${p.phase}` : feed ? `read ${p.files} lines` : `scanned ${p.files} files (${(p.bytes / 1e6).toFixed(1)} MB)`;
    process.stderr.write(`\r\x1b[K${p.set}: ${what}`);
  };
}

/** Push: the notifications of this run, in order (Change Notification §4.1); how many were published. */
async function sendNotifications(notifications: PublishResult['notifications']): Promise<number> {
  let published = 0;
  const send = sendToHub(process.env[PUBLISH_SECRET_ENV]);
  for (const n of notifications ?? []) {
    const items = [...n.change.map((payload) => ({ topic: n.changeTopic, payload })), ...(n.framework ? [{ topic: n.frameworkTopic, payload: n.framework }] : [])];
    for (const item of items) {
      await publishNotification({ hub: n.hub, topic: item.topic, capabilityList: n.capabilityList, payload: item.payload }, send);
      published++;
    }
  }
  return published;
}

/** What was left out, each with its code: the first few in full, then a count. */
function printWarnings(result: PublishResult): void {
  const shown = result.warnings.slice(0, 10);
  for (const w of shown) process.stderr.write(`resourcesync build: warning ${w.code}: set '${w.set}': ${w.message}\n`);
  const more = result.warnings.length - shown.length + result.warningsOmitted;
  if (more > 0) process.stderr.write(`resourcesync build: warning ${shown[0]!.code}: ${more} more ${shown[0]!.code === 'RS_INVALID_FEED' ? 'bad lines left out' : 'names not published'}\n`);
  if (result.skipped > 0) process.stderr.write(`resourcesync build: ${result.skipped} bad line(s) of the feed left out (--lenient)\n`);
}

/** Runs `resourcesync build` with its arguments; resolves to the exit code (0 done, 1 failure, 2 usage). */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('build', args, ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const json = parsed.values.json === true;
  const read = readOptions(parsed.values, parsed.positionals);
  if (typeof read === 'number') return read;
  const { opts, s3 } = read;
  if (s3 !== undefined) {
    // the SDK is pinned to a line that supports this Node: its warning about later lines says nothing to a user
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { createS3Documents } = await import('../../source/s3-documents.js');
    const sink = createS3Documents(s3);
    try {
      await sink.checkBucket();
    } catch (err) {
      const missing = isResourceSyncError(err) && (err.data as { s3Code?: string } | undefined)?.s3Code === 'NoSuchBucket';
      if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: isResourceSyncError(err) ? err.code : 'ERROR', message: messageOf(err) } })}\n`);
      process.stderr.write(`resourcesync build: ${messageOf(err)}\n`);
      return missing ? NO_BUCKET_EXIT : 1;
    }
    opts.sink = sink;
  }
  const shownOut = s3 === undefined ? resolve(opts.outDir) : `s3://${s3.bucket}/${s3.prefix}`;

  const ac = new AbortController();
  const onSignal = (): void => ac.abort(new Error('interrupted'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const tty = process.stderr.isTTY;
  const started = Date.now();
  try {
    const { notifications, ...result } = await publish({ ...opts, signal: ac.signal, ...(tty ? { onProgress: progressLine(opts.sets.some((s) => s.feed !== undefined)) } : {}) });
    if (tty) process.stderr.write('\r\x1b[K');
    const published = await sendNotifications(notifications);
    const ms = Date.now() - started;
    if (json) {
      process.stdout.write(
        `${JSON.stringify({ ok: true, ...result, sets: opts.sets.map((s) => s.name), durationMs: ms, ...(notifications ? { notificationsPublished: published } : {}) })}\n`,
      );
    } else {
      const c = result.changes;
      process.stdout.write(
        `Published ${result.resources} resources in ${opts.sets.length} set(s) to ${shownOut} in ${(ms / 1000).toFixed(1)} s\n` +
          `Changes: ${c.created} created, ${c.updated} updated, ${c.deleted} deleted\n` +
          (result.sink ? `Documents: ${result.sink.uploaded} uploaded (${result.sink.bytes} bytes), ${result.sink.unchanged} unchanged, ${result.sink.deleted} deleted\n` : '') +
          (result.skipped > 0 ? `Skipped: ${result.skipped} bad line(s)\n` : '') +
          `Source Description: ${result.sourceDescription}\n` +
          (notifications ? `Notifications published to ${opts.notifications!.hub}: ${published}\n` : ''),
      );
    }
    printWarnings(result);
    return 0;
  } catch (err) {
    if (tty) process.stderr.write('\r\x1b[K');
    const code = isResourceSyncError(err) ? err.code : 'ERROR';
    const message = messageOf(err);
    if (json) process.stdout.write(`${JSON.stringify({ ok: false, error: { code, message } })}\n`);
    process.stderr.write(`resourcesync build: ${message}${isResourceSyncError(err) ? ` (${code})` : ''}\n`);
    return 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
