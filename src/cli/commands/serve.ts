/**
 * `resourcesync serve <dir>... [--port N] [--host H] [--base-url URL] [--no-watch] [--state DIR] [--verbose]`
 * and the publication options of `build` (`--hashes`, `--max-entries`, `--dumps`, `--gzip`…, see `../publish-options.ts`):
 * publishes the directories as a ResourceSync Source (one set of resources per directory), serves the
 * resources and documents over HTTP, and by default re-publishes as soon as a changed file has settled
 * (see ../../live/live-source.ts, which runs it all), so that a change shows up in the open Change List within tens of milliseconds. Prints
 * `listening on <url>` on stdout once ready; the explorer page (src/web) is at `<base-url>/.resourcesync/ui/`; SIGINT/SIGTERM
 * shut it down cleanly (exit 0).
 * @see Z39.99 §6.3 (discovery), §12 (Change List)
 */
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { stat } from 'node:fs/promises';
import { basename, isAbsolute, relative, resolve, sep } from 'node:path';
import { createLiveSource, type LivePublishOptions, type LivePushOptions, type LiveSource, type LiveSourceEvent } from '../../live/live-source.js';
import { PUBLISH_ARGS, PUBLISH_HELP, PublishArgsError, publishArgs, type PublishArgsResult } from '../publish-options.js';
import { SNAPSHOTS_ARGS, SNAPSHOTS_HELP, snapshotsOpener } from '../snapshots-options.js';
import { PUBLISH_SECRET_ENV } from '../serve-push.js';
import { HUB_LIMIT_ARGS, hubLimitGiven, hubLimitHelp, hubLimitOptions } from '../hub-limit-options.js';
import { XMPP_PASSWORD_ENV, xmppAccount } from '../xmpp-options.js';
import { XmppPublisher } from '../../notify/xmpp-publisher.js';
import type { HubEvent } from '../../notify/hub.js';
import type { HubStore } from '../../notify/hub-store.js';
import { hubStoreChoice, openHubStoreChoice, type HubStoreChoice } from '../hub-store-option.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import type { LiveSet } from '../../live/live-source.js';
import { FEED_ARGS, FEED_HELP, FeedArgsError, feedFromArgs } from '../feed-options.js';

const HELP = `Usage: resourcesync serve <dir>... [options]
       resourcesync serve --jsonl <file> --state <dir> [options]
       resourcesync serve --pg-inventory <postgres-url> --pg-query <sql> --state <dir> [options]

Publishes each directory as a set of resources of a ResourceSync Source and serves it over HTTP:
resources at their relative paths (with several directories, under /<name>/), the Source Description at
/.well-known/resourcesync, the other documents under /.resourcesync/, and robots.txt. The explorer page
(the Source's documents, entries, time line, check, notification channels) is at /.resourcesync/ui/. HTML pages (up to
1 MiB) are served, and listed, with <link rel="resourcesync"> to their Capability List in their <head>.

Options:
  --port N                TCP port (default 8080; 0 picks a free one)
  --host H                interface to listen on (default 127.0.0.1)
  --base-url URL          public base URL of the resources (default http://<host>:<port>)
  --state DIR             state and published documents (default: each <dir>/.resourcesync, documents
                          in the first one's publish/ folder)
${SNAPSHOTS_HELP}  --no-watch              publish once; do not track changes
  --hub URL               publish change and framework notifications to this WebSub hub (default:
                          an embedded hub at <base-url>/hub, state in <state>/hub)
  --no-hub                no notification channels
  --allow-callback PATTERN  the embedded hub may also contact callbacks matching PATTERN: a host
                          ('*.example.org') or a URL ('https://example.org/hooks/*'); loopback is
                          always allowed; repeatable. The embedded hub takes subscriptions for
                          this Source's channels only and relays only what serve publishes; a
                          publisher elsewhere needs the secret in ${PUBLISH_SECRET_ENV}
                          (sent as Authorization: Bearer), which --hub sends to its hub too
  --hub-store WHERE       keep the embedded hub's subscriptions and outbox in PostgreSQL
                          (postgres://USER@HOST:PORT/DB, the password in the URL or in
                          PGPASSWORD; every serve of this Source given the same URL and key
                          shares them) or in the SQLite file WHERE (default <state>/hub/hub.sqlite)
  --hub-store-key NAME    with --hub-store postgres://: the hub's key there (default: the base URL)
  The embedded hub's limits, as for resourcesync hub (not with --hub or --no-hub):
${hubLimitHelp(26)}  --xmpp URI              also publish the notifications to an XMPP PubSub service (XEP-0060):
                          xmpp://USER@DOMAIN[:PORT]/SERVICE[?server=HOST], e.g.
                          xmpp://source@example.org/pubsub.example.org; the password comes from
                          the environment variable ${XMPP_PASSWORD_ENV}. One node per
                          channel, named by its topic URI, created (open to subscribers) when
                          missing; each channel in the Capability Lists names its node
  --name NAME             the set name of a feed (default: the file's name, or 'resources')
${FEED_HELP}                          A feed's file is published again when it changes (not with
                          --no-watch)
  --pg-interval S         run the query of --pg-inventory again every S seconds (default 60;
                          not with --no-watch)
${PUBLISH_HELP}  --verbose               log every request on stderr
  -h, --help              show this help
`;

/** A set name that is a valid URL segment (`[A-Za-z0-9_-][A-Za-z0-9._-]*`), from a folder name. */
function setName(folder: string): string {
  const name = folder.normalize('NFKD').replace(/[\u0300-\u036f]/g, '').replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^[.]+/, '');
  return name === '' ? 'data' : name;
}

function insideVisibly(child: string, parent: string): boolean {
  const rel = relative(parent, child);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return rel === '';
  return !rel.split(sep).some((s) => s.startsWith('.'));
}

const ARGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  'base-url': { type: 'string' },
  state: { type: 'string' },
  'no-watch': { type: 'boolean' },
  ...SNAPSHOTS_ARGS,
  name: { type: 'string' },
  'pg-interval': { type: 'string' },
  ...FEED_ARGS,
  ...PUBLISH_ARGS,
  hub: { type: 'string' },
  'no-hub': { type: 'boolean' },
  'allow-callback': { type: 'string', multiple: true },
  'hub-store': { type: 'string' },
  'hub-store-key': { type: 'string' },
  ...HUB_LIMIT_ARGS,
  xmpp: { type: 'string' },
  verbose: { type: 'boolean' },
} as const;

type ServeValues = ParsedCommandArgs<typeof ARGS>['values'];

/** What the options ask for, once checked. */
interface ServeConfig {
  port: number;
  host: string;
  sets: LiveSet[];
  stateDir: string | undefined;
  shared: PublishArgsResult & Pick<LivePublishOptions, 'snapshots'>;
  /** Push, without the XMPP publisher (made once the options are checked), or undefined with --no-hub. */
  push: LivePushOptions | undefined;
  xmpp: { account: XmppAccount; service: string } | undefined;
  /** `--hub-store`: where the embedded hub keeps its state, when not in the state folder. */
  hubStore: HubStoreChoice | undefined;
}

type XmppAccount = ConstructorParameters<typeof XmppPublisher>[0]['account'];

/** The sets, one per directory, named for their folders; or the usage error's exit code. */
async function readSets(positionals: string[], stateDir: string | undefined): Promise<Array<{ name: string; dir: string }> | number> {
  const sets: Array<{ name: string; dir: string }> = [];
  for (const dir of positionals.map((d) => resolve(d))) {
    const st = await stat(dir).catch(() => undefined);
    if (st?.isDirectory() !== true) {
      return usageError('serve', `'${dir}' is not a directory.`);
    }
    const name = setName(basename(dir));
    if (sets.some((s) => s.name === name)) {
      return usageError('serve', `'${dir}' gives the set name '${name}', which is already used.`);
    }
    sets.push({ name, dir });
  }
  // Default state: each set's store in <dir>/.resourcesync/source.sqlite, documents in <first dir>/.resourcesync/publish.
  for (const { dir } of sets) {
    if (stateDir !== undefined && insideVisibly(stateDir, dir)) {
      return usageError('serve', `--state '${stateDir}' would be published inside '${dir}'; use a hidden folder or one outside.`);
    }
  }
  return sets;
}

/** Push as --hub, --no-hub, --allow-callback and the hub's limits ask for; or the usage error's exit code (also `oai-pmh`'s). */
export function readPush(values: Pick<ServeValues, 'hub' | 'no-hub' | 'allow-callback' | keyof typeof HUB_LIMIT_ARGS>, command = 'serve'): LivePushOptions | undefined | number {
  if (values.hub !== undefined && (!URL.canParse(values.hub) || !/^https?:$/.test(new URL(values.hub).protocol))) {
    return usageError(command, `--hub '${values.hub}' is not an http(s) URL.`);
  }
  if (values.hub !== undefined && values['no-hub'] === true) return usageError(command, '--hub and --no-hub exclude each other.');
  const allowCallback = values['allow-callback'] ?? [];
  if (allowCallback.length > 0 && (values.hub !== undefined || values['no-hub'] === true)) {
    return usageError(command, '--allow-callback applies to the embedded hub: not with --hub or --no-hub.');
  }
  const hubBounds = hubLimitOptions(values);
  if (typeof hubBounds === 'string') return usageError(command, hubBounds);
  const limitGiven = hubLimitGiven(values);
  if (limitGiven !== undefined && (values.hub !== undefined || values['no-hub'] === true)) {
    return usageError(command, `${limitGiven} applies to the embedded hub: not with --hub or --no-hub.`);
  }
  if (values['no-hub'] === true) return undefined;
  const publishSecret = process.env[PUBLISH_SECRET_ENV];
  return {
    ...(values.hub === undefined ? {} : { hub: values.hub }),
    allowCallback,
    hubBounds,
    ...(publishSecret ? { publishSecret } : {}),
  };
}

/** Checks the options; returns what they ask for, or the usage error's exit code. */
async function readConfig(values: ServeValues, positionals: string[]): Promise<ServeConfig | number> {
  let feed: ReturnType<typeof feedFromArgs>;
  try {
    feed = feedFromArgs(values, values.name === undefined ? {} : { name: values.name });
  } catch (error) {
    if (error instanceof FeedArgsError) return usageError('serve', `${error.message}.`);
    throw error;
  }
  if (feed === undefined && values.name !== undefined) return usageError('serve', '--name names a feed (--jsonl, --pg-inventory); a folder is named by its name.');
  if (feed === undefined && positionals.length === 0) return usageError('serve', 'a directory is needed.');
  if (feed !== undefined) {
    if (positionals.length > 0) return usageError('serve', 'give directories or a feed (--jsonl, --pg-inventory), not both.');
    if (values.state === undefined) return usageError('serve', 'a feed needs --state DIR (its snapshots and documents are kept there).');
    if (values.dumps === true) return usageError('serve', '--dumps is not for a feed: its resources are held elsewhere.');
    if (feed.file !== undefined && (await stat(feed.file).catch(() => undefined))?.isFile() !== true) return usageError('serve', `--jsonl '${values.jsonl}' is not a file.`);
  }
  const interval = values['pg-interval'];
  if (interval !== undefined && (values['pg-inventory'] === undefined || !/^\d+$/.test(interval) || Number(interval) < 1)) {
    return usageError('serve', `--pg-interval '${interval}' is not a number of seconds (>= 1) for --pg-inventory.`);
  }
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usageError('serve', `--port '${values.port}' is not a port number.`);
  let shared: ServeConfig['shared'];
  try {
    shared = publishArgs(values);
  } catch (error) {
    if (error instanceof PublishArgsError) return usageError('serve', `${error.message}.`);
    throw error;
  }
  if (values['base-url'] !== undefined) {
    try {
      const u = new URL(values['base-url']);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      return usageError('serve', `--base-url '${values['base-url']}' is not an http(s) URL.`);
    }
  }
  const stateDir = values.state === undefined ? undefined : resolve(values.state);
  const sets: ServeConfig['sets'] | number =
    feed === undefined
      ? await readSets(positionals, stateDir)
      : [{ name: feed.name, feed: feed.feed, ...(feed.file === undefined ? { everyMs: Number(interval ?? 60) * 1000 } : { file: feed.file }) }];
  if (typeof sets === 'number') return sets;
  const push = readPush(values);
  if (typeof push === 'number') return push;
  // the Source's key: its public base URL, else the listening URL (unknown before listening with port 0)
  const listening = port === 0 ? undefined : `http://${values.host ?? '127.0.0.1'}:${port}/`;
  const snapshots = snapshotsOpener(values, values['base-url'] ?? listening, sets.length);
  if (typeof snapshots === 'string') return usageError('serve', `${snapshots}.`);
  if (snapshots !== undefined) shared = { ...shared, snapshots };
  const xmpp = values.xmpp === undefined ? undefined : xmppAccount(values.xmpp, 'source');
  if (typeof xmpp === 'string') return usageError('serve', xmpp);
  if (xmpp !== undefined && values['no-hub'] === true) return usageError('serve', '--xmpp publishes beside the WebSub hub: not with --no-hub.');
  const hubStore = readHubStore(values, push, values['base-url'] ?? listening);
  if (typeof hubStore === 'string') return usageError('serve', hubStore);
  return { port, host: values.host ?? '127.0.0.1', sets, stateDir, shared, push, xmpp, hubStore };
}

/** The embedded hub's store as `--hub-store` and `--hub-store-key` name it, or what is wrong with them. */
function readHubStore(values: Pick<ServeValues, 'hub-store' | 'hub-store-key' | 'hub'>, push: LivePushOptions | undefined, baseUrl: string | undefined): HubStoreChoice | undefined | string {
  const where = values['hub-store'];
  const key = values['hub-store-key'];
  if (where === undefined) return key === undefined ? undefined : '--hub-store-key goes with --hub-store postgres://…';
  if (push === undefined || values.hub !== undefined) return '--hub-store is the embedded hub\'s store: not with --hub or --no-hub.';
  return hubStoreChoice(where, key, baseUrl?.replace(/\/+$/, ''), { store: '--hub-store', key: '--hub-store-key' });
}

/**
 * XMPP (XEP-0060): the account is tried before anything is served, so that a wrong password or server stops
 * here (exit 1); a server that cannot be reached yet is tried again for the next notification.
 */
async function connectXmpp(
  xmpp: NonNullable<ServeConfig['xmpp']>,
  verbose: boolean,
  log: (line: string) => void,
): Promise<XmppPublisher | number> {
  const publisher = new XmppPublisher({
    account: xmpp.account,
    service: xmpp.service,
    onEvent: (e) => {
      if (e.type === 'connected' && verbose) log(`xmpp: connected as ${e.jid}${e.secure ? ' (TLS)' : ''}`);
      else if (e.type === 'node-created' && verbose) log(`xmpp: created node ${e.node} at ${xmpp.service}`);
      else if (e.type === 'disconnected') log(`resourcesync serve: XMPP connection lost${e.error ? ` (${e.error.message})` : ''}; it is made again for the next notification`);
    },
  });
  try {
    await publisher.connect();
  } catch (error) {
    if (!isResourceSyncError(error, 'RS_NETWORK')) {
      process.stderr.write(`resourcesync serve: --xmpp: ${messageOf(error)}\n`);
      return 1;
    }
    log(`resourcesync serve: --xmpp: ${messageOf(error)} Notifications are published there once it can be reached.`);
  }
  return publisher;
}

const describeHubEvent = (e: HubEvent): string =>
  `hub: ${e.type}${'mode' in e ? ` ${e.mode}` : ''} ${'callback' in e ? e.callback : ''} ${e.topic}`;

const RUN_WORDS = { record: 'recorded', rescan: 'published', documents: 'published (documents)' } as const;

/** The line (on stderr) for what the live Source reports, if any. */
function eventLine(e: LiveSourceEvent, verbose: boolean): string | undefined {
  switch (e.type) {
    case 'error':
      return `resourcesync serve: ${messageOf(e.error)}`;
    case 'hub-error':
      return `resourcesync serve: hub: ${messageOf(e.error)}`;
    case 'explorer-error':
      return `resourcesync serve: explorer: ${messageOf(e.error)}`;
    case 'hub':
      return verbose ? describeHubEvent(e.event) : undefined;
    case 'notification-failed':
      return `resourcesync serve: notification on ${e.topic} not published${e.xmpp ? ' over XMPP' : ''}: ${messageOf(e.error)}`;
    case 'warning':
      return `resourcesync serve: warning ${e.warning.code}: set '${e.warning.set}': ${e.warning.message}`;
    case 'publish-failed':
      return `resourcesync serve: publishing failed: ${messageOf(e.error)}`;
    case 'run': {
      const { created, updated, deleted } = e.changes;
      return verbose ? `${RUN_WORDS[e.action]}: ${created} created, ${updated} updated, ${deleted} deleted in ${e.ms.toFixed(0)} ms` : undefined;
    }
  }
}

/** Runs `resourcesync serve`; resolves with the exit code once the server has shut down. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('serve', args, ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const config = await readConfig(values, positionals);
  if (typeof config === 'number') return config;
  const verbose = values.verbose === true;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  let hubStore: HubStore | undefined;
  try {
    hubStore = config.hubStore === undefined ? undefined : await openHubStoreChoice(config.hubStore);
  } catch (error) {
    process.stderr.write(`resourcesync serve: --hub-store: ${messageOf(error)}\n`);
    return 3;
  }
  const xmpp = config.xmpp === undefined ? undefined : await connectXmpp(config.xmpp, verbose, log);
  if (typeof xmpp === 'number') {
    await hubStore?.close();
    return xmpp;
  }
  const push = config.push === undefined ? undefined : { ...config.push, ...(hubStore === undefined ? {} : { hubStore }) };
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  const stopped = async (code: number, source?: LiveSource): Promise<number> => {
    await source?.close();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    return code;
  };
  let source: LiveSource;
  try {
    source = await createLiveSource({
      sets: config.sets,
      port: config.port,
      host: config.host,
      ...(values['base-url'] === undefined ? {} : { baseUrl: values['base-url'] }),
      ...(config.stateDir === undefined ? {} : { stateDir: config.stateDir }),
      publish: config.shared,
      htmlDiscoveryLink: true,
      watch: values['no-watch'] !== true,
      ...(push === undefined ? {} : { push: { ...push, ...(xmpp && config.xmpp ? { xmpp: { publisher: xmpp, service: config.xmpp.service } } : {}) } }),
      explorer: true,
      signal: ac.signal,
      onEvent: (e) => {
        const line = eventLine(e, verbose);
        if (line !== undefined) log(line);
      },
      ...(verbose ? { onResponse: (r) => log(`${r.method} ${r.target} ${r.status} ${r.ms.toFixed(1)}ms`) } : {}),
    });
  } catch (error) {
    if (!isResourceSyncError(error, 'RS_NETWORK')) throw error;
    process.stderr.write(`resourcesync serve: ${error.message}\n`);
    await xmpp?.close();
    return stopped(1);
  }
  try {
    const result = await source.ready();
    if (verbose) log(`published ${result.resources} resources (${result.documents.length} documents)`);
  } catch (error) {
    // a signal during the first publication is a clean stop, not a failure
    const aborted = ac.signal.aborted;
    if (!aborted) log(`resourcesync serve: publishing failed: ${messageOf(error)}`);
    return stopped(aborted ? 0 : 1, source);
  }
  if (!ac.signal.aborted) process.stdout.write(`listening on ${source.url}\n`);
  await source.closed;
  return stopped(0);
}
