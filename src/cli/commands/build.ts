/**
 * `resourcesync build <dir>... --base-url <url> --out <publish-dir>`: publishes one or more directories
 * as a ResourceSync Source for an existing web server, updating the change lists from the stored
 * snapshot on each run.
 */
import { basename, resolve } from 'node:path';
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import { requireFolderOrNothing } from '../../node/folder.js';
import { publish, type PublishOptions, type PublishProgress, type PublishResult } from '../../source/publish.js';
import { publishNotification } from '../../notify/publisher.js';
import { isValidSetName, normalizeBaseUrl } from '../../source/url-path.js';
import { PUBLISH_ARGS, PUBLISH_HELP, PublishArgsError, publishArgs } from '../publish-options.js';
import { PUBLISH_SECRET_ENV } from '../serve-push.js';
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
  --out DIR               the publish folder (required)
  --state DIR             state folder (default <dir>/.resourcesync/ of each set)
  --name NAME             set name, once per <dir> in order (default: the folder's name;
                          for a feed, the file's name, or 'resources')
${FEED_HELP}${PUBLISH_HELP}  --hub URL               advertise notification channels with this WebSub hub and publish the
                          changes of this run to it (Change and Framework Notifications),
                          with the secret in ${PUBLISH_SECRET_ENV}, when set
                          (sent as Authorization: Bearer)
  --json                  print a JSON summary on stdout
  -h, --help              this help

Resources of a single set are published at <url><path>; with several sets at <url><name>/<path>.
Exit status: 0 done, 1 failure, 2 usage error.
`;

class UsageError extends Error {}

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
  state: { type: 'string' },
  name: { type: 'string', multiple: true },
  ...PUBLISH_ARGS,
  ...FEED_ARGS,
  hub: { type: 'string' },
  json: { type: 'boolean' },
} as const;

/** The publication the options ask for; or the usage error's exit code. */
function readOptions(values: ParsedCommandArgs<typeof ARGS>['values'], positionals: string[]): PublishOptions | number {
  let opts: PublishOptions;
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
    if (values.hub !== undefined && (!URL.canParse(values.hub) || !/^https?:$/.test(new URL(values.hub).protocol)))
      throw new UsageError(`--hub '${values.hub}' is not an http(s) URL`);
    opts = {
      sets: feed !== undefined ? [{ name: feed.name, feed: feed.feed }] : positionals.map((dir, i) => ({ name: names[i]!, dir })),
      baseUrl,
      outDir: values.out,
      ...shared,
      ...(values.state !== undefined ? { stateDir: values.state } : {}),
      ...(values.hub !== undefined ? { notifications: { hub: values.hub } } : {}),
    };
  } catch (err) {
    if (err instanceof UsageError || err instanceof PublishArgsError || err instanceof FeedArgsError)
      return usageError('build', err.message);
    throw err;
  }
  try {
    requireFolderOrNothing(resolve(opts.outDir), '--out');
  } catch (err) {
    return usageError('build', err);
  }
  return opts;
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
  const opts = readOptions(parsed.values, parsed.positionals);
  if (typeof opts === 'number') return opts;

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
        `Published ${result.resources} resources in ${opts.sets.length} set(s) to ${resolve(opts.outDir)} in ${(ms / 1000).toFixed(1)} s\n` +
          `Changes: ${c.created} created, ${c.updated} updated, ${c.deleted} deleted\n` +
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
