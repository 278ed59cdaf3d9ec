/**
 * `resourcesync hub [--port N] [--host H] [--data DIR | --store URL|FILE] [--public-url URL] [--allow-callback PATTERN]...`:
 * runs a WebSub hub for ResourceSync Change and Framework Notifications. The hub URL is the origin's
 * `/`. Subscriptions and undelivered notifications persist in `<data>/hub.sqlite` (or in PostgreSQL with
 * `--store postgres://…`, shared by every hub process given the same URL and `--store-key`), so that a hub that
 * is restarted (even after kill -9) delivers everything it accepted, within the limits set by the
 * `--max-*` options. Publishing is open for topics on allowed hosts (loopback and `--allow-topic`), or
 * needs the secret in `RESOURCESYNC_HUB_PUBLISH_SECRET` when that is set. Prints `listening on <url>`;
 * SIGINT/SIGTERM shut it down cleanly (exit 0).
 * @see Change Notification §4, WebSub §5–7
 */
import { join, resolve } from 'node:path';
import { parseCommandArgs, usageError } from '../command-args.js';
import { createHub, type Hub, type HubEvent } from '../../notify/hub.js';
import type { HubStore } from '../../notify/hub-store.js';
import { HUB_LIMIT_ARGS, hubLimitHelp, hubLimitOptions, type HubLimitOptions } from '../hub-limit-options.js';
import { PUBLISH_SECRET_ENV } from '../serve-push.js';
import { hubStoreChoice, openHubStoreChoice, type HubStoreChoice } from '../hub-store-option.js';
import { requireFolderOrNothing } from '../../node/folder.js';
import { listen } from '../../notify/node-listener.js';
import { SIGNATURE_METHODS, type SignatureMethod } from '../../notify/signature.js';
import { messageOf } from '../../core/errors.js';

const HELP = `Usage: resourcesync hub [options]

Runs a WebSub hub for ResourceSync notifications at http://<host>:<port>/. Publishers POST a
notification with Link rel="self" (the topic) and rel="hub", or hub.mode=publish&hub.url=<topic>;
subscribers POST hub.mode=subscribe|unsubscribe with hub.topic, hub.callback and optionally
hub.secret and hub.lease_seconds.

Options:
  --port N                 TCP port (default 8090; 0 picks a free one)
  --host H                 interface to listen on (default 127.0.0.1)
  --data DIR               where subscriptions and queued notifications are kept (default ./.resourcesync-hub)
  --store URL|FILE         keep them in PostgreSQL instead (postgres://USER@HOST:PORT/DB, the password
                           in the URL or in PGPASSWORD): every hub process given the same URL and key
                           shares the subscriptions and the outbox, each delivery made by one of them;
                           or in the SQLite file FILE. Not with --data
  --store-key NAME         with --store postgres://: the hub's key in the database (default 'default');
                           several hubs share one database, each under its own key
  --public-url URL         the hub URL sent in Link rel="hub" (default http://<host>:<port>/)
  --allow-callback PATTERN also contact callbacks matching PATTERN: a host ('*.example.org', any port)
                           or a URL ('https://*.example.org/hooks/*', matched scheme, host, port and path
                           apart); loopback is always allowed; repeatable
  --allow-topic PATTERN    accept publishes (and fetch topics) for topics matching PATTERN, as above
                           (default: the --allow-callback patterns); loopback is always allowed
${hubLimitHelp(27)}  --signature METHOD       X-Hub-Signature method: sha256 (default), sha1, sha384 or sha512
  --retry-ms N             first delay before a failed delivery is retried, doubled each time (default 1000)
  --verbose                log subscriptions and deliveries on stderr
  -h, --help               show this help

Environment: ${PUBLISH_SECRET_ENV}, when set, is the secret every publisher must send
(Authorization: Bearer <secret>); publishing is then closed to everyone else.

Exit codes:
  0  stopped by SIGINT or SIGTERM
  1  cannot listen on <host>:<port>
  2  usage error
  3  the --store database cannot be reached, refused the login or does not exist
`;

function describe(e: HubEvent): string {
  switch (e.type) {
    case 'published':
      return `published ${e.topic} (${e.deliveries} deliveries queued)`;
    case 'verified':
      return `${e.mode}d ${e.callback} to ${e.topic}${e.leaseSeconds === undefined ? '' : ` for ${e.leaseSeconds} s`}`;
    case 'verification-failed':
      return `${e.mode} of ${e.callback} to ${e.topic} not verified: ${e.reason}`;
    case 'delivered':
      return `delivered message ${e.messageId} of ${e.topic} to ${e.callback} (attempt ${e.attempts})`;
    case 'delivery-failed':
      return `delivery of message ${e.messageId} to ${e.callback} failed (${e.reason}); retry in ${e.retryInMs} ms`;
    case 'gone':
      return `${e.callback} answered 410 Gone: subscription to ${e.topic} ended`;
    case 'expired':
      return `lease of ${e.callback} to ${e.topic} ended`;
    case 'given-up':
      return `gave ${e.callback} to ${e.topic} up: ${e.reason}`;
    case 'publish-refused':
      return `publish on ${e.topic} refused (${e.status}): ${e.reason}`;
  }
}

const HUB_ARGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  data: { type: 'string' },
  store: { type: 'string' },
  'store-key': { type: 'string' },
  'public-url': { type: 'string' },
  'allow-callback': { type: 'string', multiple: true },
  'allow-topic': { type: 'string', multiple: true },
  ...HUB_LIMIT_ARGS,
  signature: { type: 'string' },
  'retry-ms': { type: 'string' },
  verbose: { type: 'boolean' },
} as const;

/** What the command line asks of the hub, checked. */
interface HubSettings {
  port: number;
  host: string;
  signature: SignatureMethod;
  retryMs: number;
  bounds: HubLimitOptions;
  publicUrl: string | undefined;
  /** Where the store is: a PostgreSQL URL and key, or an SQLite file. */
  store: HubStoreChoice;
  allowCallback: string[];
  allowTopic: string[] | undefined;
  verbose: boolean;
}

/** Reads and checks the flags; returns the exit code instead when there is nothing to run (help, a usage error). */
function hubSettings(args: string[]): HubSettings | number {
  const parsed = parseCommandArgs('hub', args, HUB_ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length > 0) return usageError('hub', `unexpected argument '${positionals[0]}'.`);
  const port = values.port === undefined ? 8090 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    return usageError('hub', `--port '${values.port}' is not a port number.`);
  const signature = (values.signature ?? 'sha256') as SignatureMethod;
  if (!SIGNATURE_METHODS.includes(signature))
    return usageError('hub', `--signature '${values.signature}' is not one of ${SIGNATURE_METHODS.join(', ')}.`);
  const retryMs = values['retry-ms'] === undefined ? 1000 : Number(values['retry-ms']);
  if (!Number.isInteger(retryMs) || retryMs < 1)
    return usageError('hub', `--retry-ms '${values['retry-ms']}' is not a positive integer.`);
  const bounds = hubLimitOptions(values);
  if (typeof bounds === 'string') return usageError('hub', bounds);
  const publicUrl = values['public-url'];
  if (publicUrl !== undefined && (!URL.canParse(publicUrl) || !/^https?:$/.test(new URL(publicUrl).protocol))) {
    return usageError('hub', `--public-url '${publicUrl}' is not an absolute http(s) URL.`);
  }
  const store = storeSettings(values);
  if (typeof store === 'string') return usageError('hub', store);
  return {
    port,
    host: values.host ?? '127.0.0.1',
    signature,
    retryMs,
    bounds,
    publicUrl,
    store,
    allowCallback: values['allow-callback'] ?? [],
    allowTopic: values['allow-topic'],
    verbose: values.verbose === true,
  };
}

/** Where `--data`, `--store` and `--store-key` put the store, or what is wrong with them. */
function storeSettings(values: { data?: string | undefined; store?: string | undefined; 'store-key'?: string | undefined }): HubSettings['store'] | string {
  const { data, store, 'store-key': key } = values;
  if (store !== undefined && data !== undefined) return '--store and --data exclude each other.';
  if (store !== undefined) return hubStoreChoice(store, key, 'default', { store: '--store', key: '--store-key' });
  if (key !== undefined) return '--store-key goes with --store postgres://…';
  const dataDir = resolve(data ?? '.resourcesync-hub');
  try {
    requireFolderOrNothing(dataDir, '--data');
  } catch (err) {
    return messageOf(err);
  }
  return { kind: 'sqlite', file: join(dataDir, 'hub.sqlite') };
}

/** How often a hub over a shared (PostgreSQL) store looks for deliveries that other hub processes queued or let go. */
const SHARED_STORE_LOOK_MS = 2000;

/** A line on stderr (the hub's log). */
function log(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Resolves at the first SIGINT or SIGTERM. */
function untilStopSignal(): Promise<void> {
  return new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      done();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** The hub over `store`, answering at `hubUrl`, as the settings ask. */
function hubOf(settings: HubSettings, store: HubStore, hubUrl: string): Hub {
  const publishSecret = process.env[PUBLISH_SECRET_ENV];
  return createHub({
    store,
    hubUrl,
    allowCallback: settings.allowCallback,
    ...(settings.allowTopic === undefined ? {} : { allowTopic: settings.allowTopic }),
    ...(publishSecret ? { publishSecret } : {}),
    limits: settings.bounds.limits,
    giveUp: settings.bounds.giveUp,
    signature: settings.signature,
    retry: { baseMs: settings.retryMs },
    ...(settings.verbose ? { onEvent: (e: HubEvent) => log(describe(e)) } : {}),
  });
}

/** Runs `resourcesync hub`; resolves with the exit code once the hub has shut down. */
export async function run(args: string[]): Promise<number> {
  const settings = hubSettings(args);
  if (typeof settings === 'number') return settings;
  const { port, host } = settings;
  let store: HubStore;
  try {
    store = await openHubStoreChoice(settings.store);
  } catch (e) {
    process.stderr.write(`resourcesync hub: ${messageOf(e)}\n`);
    return 3;
  }
  const ref: { hub?: Hub } = {};
  let listener;
  try {
    listener = await listen((r) => ref.hub!.handle(r), {
      port,
      host,
      onError: (e) => log(`resourcesync hub: ${messageOf(e)}`),
    });
  } catch (e) {
    await store.close();
    process.stderr.write(
      `resourcesync hub: cannot listen on ${host}:${port}: ${messageOf(e)}\n`,
    );
    return 1;
  }
  const hub = (ref.hub = hubOf(settings, store, settings.publicUrl ?? `${listener.url}/`));
  // a shared store: other hub processes queue deliveries, or stop holding claims, without telling this one
  const look = settings.store.kind === 'postgres' ? setInterval(() => hub.kick(), SHARED_STORE_LOOK_MS).unref() : undefined;
  const stopped = untilStopSignal();
  process.stdout.write(`listening on ${listener.url}/\n`);
  await stopped;
  clearInterval(look);
  await listener.close();
  await hub.close();
  await store.close();
  return 0;
}
