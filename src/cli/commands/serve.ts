/**
 * `resourcesync serve <dir>... [--port N] [--host H] [--base-url URL] [--no-watch] [--state DIR] [--verbose]`
 * and the publication options of `build` (`--hashes`, `--max-entries`, `--dumps`, `--gzip`…, see `../publish-options.ts`):
 * publishes the directories as a ResourceSync Source (one set of resources per directory), serves the
 * resources and documents over HTTP, and by default re-publishes as soon as a changed file has settled
 * (see ../../source/watch/watch.ts), so that a change shows up in the open Change List within tens of milliseconds. Prints
 * `listening on <url>` on stdout once ready; the explorer page (src/web) is at `<base-url>/.resourcesync/ui/`; SIGINT/SIGTERM
 * shut it down cleanly (exit 0).
 * @see Z39.99 §6.3 (discovery), §12 (Change List)
 */
import { parseCommandArgs, usageError } from '../command-args.js';
import { stat } from 'node:fs/promises';
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { ResponderHandler, ResponderResponse } from '../../server/request-response.js';
import { createSourceResponder, type SourceResponder } from '../../server/source-responder.js';
import { serve, type RunningServer } from '../../server/node-adapter.js';
import { watchSources, type SourceWatcher } from '../../source/watch/watch.js';
import { publish, type PublishOptions, type PublishResult } from '../../source/publish.js';
import { recordChanges, type RecordResult } from '../../source/record-changes.js';
import type { SetNotifications } from '../../source/notifications.js';
import { PUBLISH_ARGS, PUBLISH_HELP, PublishArgsError, publishArgs, type PublishArgsResult } from '../publish-options.js';
import { PUBLISH_SECRET_ENV, startPush, type Push } from '../serve-push.js';
import { HUB_LIMIT_ARGS, hubLimitGiven, hubLimitHelp, hubLimitOptions } from '../hub-limit-options.js';
import { XMPP_PASSWORD_ENV, xmppAccount } from '../xmpp-options.js';
import { XmppPublisher } from '../../notify/xmpp-publisher.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import { startUi, type ServeUi } from '../serve-ui.js';
import { DOCUMENTS_PREFIX } from '../../source/url-path.js';

const HELP = `Usage: resourcesync serve <dir>... [options]

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
  --no-watch              publish once; do not track changes
  --hub URL               publish change and framework notifications to this WebSub hub (default:
                          an embedded hub at <base-url>/hub, state in <state>/hub)
  --no-hub                no notification channels
  --allow-callback PATTERN  the embedded hub may also contact callbacks matching PATTERN: a host
                          ('*.example.org') or a URL ('https://example.org/hooks/*'); loopback is
                          always allowed; repeatable. The embedded hub takes subscriptions for
                          this Source's channels only and relays only what serve publishes; a
                          publisher elsewhere needs the secret in ${PUBLISH_SECRET_ENV}
                          (sent as Authorization: Bearer), which --hub sends to its hub too
  The embedded hub's limits, as for resourcesync hub (not with --hub or --no-hub):
${hubLimitHelp(26)}  --xmpp URI              also publish the notifications to an XMPP PubSub service (XEP-0060):
                          xmpp://USER@DOMAIN[:PORT]/SERVICE[?server=HOST], e.g.
                          xmpp://source@example.org/pubsub.example.org; the password comes from
                          the environment variable ${XMPP_PASSWORD_ENV}. One node per
                          channel, named by its topic URI, created (open to subscribers) when
                          missing; each channel in the Capability Lists names its node
${PUBLISH_HELP}  --verbose               log every request on stderr
  -h, --help              show this help
`;

const SERVICE_UNAVAILABLE: ResponderResponse = {
  status: 503,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1', 'content-length': '24' },
  body: { type: 'bytes', bytes: Buffer.from('503 Service Unavailable\n') },
};

/** A changed file is settled (recorded, listed) once it has had no change for this long, ms. */
const SETTLE_MS = 25;

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

/** Runs `resourcesync serve`; resolves with the exit code once the server has shut down. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs(
    'serve',
    args,
    {
      port: { type: 'string' },
      host: { type: 'string' },
      'base-url': { type: 'string' },
      state: { type: 'string' },
      'no-watch': { type: 'boolean' },
      ...PUBLISH_ARGS,
      hub: { type: 'string' },
      'no-hub': { type: 'boolean' },
      'allow-callback': { type: 'string', multiple: true },
      ...HUB_LIMIT_ARGS,
      xmpp: { type: 'string' },
      verbose: { type: 'boolean' },
    },
    HELP,
  );
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  if (positionals.length === 0) return usageError('serve', 'a directory is needed.');
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usageError('serve', `--port '${values.port}' is not a port number.`);
  const host = values.host ?? '127.0.0.1';
  let shared: PublishArgsResult;
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

  const dirs = positionals.map((d) => resolve(d));
  const sets: Array<{ name: string; dir: string }> = [];
  for (const dir of dirs) {
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
  const stateDir = values.state === undefined ? undefined : resolve(values.state);
  const outDir = join(stateDir ?? join(dirs[0]!, '.resourcesync'), 'publish');
  for (const dir of dirs) {
    if (stateDir !== undefined && insideVisibly(stateDir, dir)) {
      return usageError('serve', `--state '${stateDir}' would be published inside '${dir}'; use a hidden folder or one outside.`);
    }
  }

  if (values.hub !== undefined && (!URL.canParse(values.hub) || !/^https?:$/.test(new URL(values.hub).protocol))) {
    return usageError('serve', `--hub '${values.hub}' is not an http(s) URL.`);
  }
  if (values.hub !== undefined && values['no-hub'] === true) return usageError('serve', '--hub and --no-hub exclude each other.');
  const allowCallback = values['allow-callback'] ?? [];
  if (allowCallback.length > 0 && (values.hub !== undefined || values['no-hub'] === true)) {
    return usageError('serve', '--allow-callback applies to the embedded hub: not with --hub or --no-hub.');
  }
  const hubBounds = hubLimitOptions(values);
  if (typeof hubBounds === 'string') return usageError('serve', hubBounds);
  const limitGiven = hubLimitGiven(values);
  if (limitGiven !== undefined && (values.hub !== undefined || values['no-hub'] === true)) {
    return usageError('serve', `${limitGiven} applies to the embedded hub: not with --hub or --no-hub.`);
  }

  const xmppArgs = values.xmpp === undefined ? undefined : xmppAccount(values.xmpp, 'source');
  if (typeof xmppArgs === 'string') return usageError('serve', xmppArgs);
  if (xmppArgs !== undefined && values['no-hub'] === true) return usageError('serve', '--xmpp publishes beside the WebSub hub: not with --no-hub.');

  const verbose = values.verbose === true;
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  // XMPP (XEP-0060): the account is tried before anything is served, so that a wrong password or server stops here
  let xmpp: XmppPublisher | undefined;
  if (xmppArgs !== undefined) {
    xmpp = new XmppPublisher({
      account: xmppArgs.account,
      service: xmppArgs.service,
      onEvent: (e) => {
        if (e.type === 'connected' && verbose) log(`xmpp: connected as ${e.jid}${e.secure ? ' (TLS)' : ''}`);
        else if (e.type === 'node-created' && verbose) log(`xmpp: created node ${e.node} at ${xmppArgs.service}`);
        else if (e.type === 'disconnected') log(`resourcesync serve: XMPP connection lost${e.error ? ` (${e.error.message})` : ''}; it is made again for the next notification`);
      },
    });
    try {
      await xmpp.connect();
    } catch (error) {
      if (!isResourceSyncError(error, 'RS_NETWORK')) {
        process.stderr.write(`resourcesync serve: --xmpp: ${messageOf(error)}\n`);
        return 1;
      }
      log(`resourcesync serve: --xmpp: ${messageOf(error)} Notifications are published there once it can be reached.`);
    }
  }
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);

  // Until the first publication is done, requests get 503 (the listening line is printed after it).
  const live: { core?: SourceResponder; push?: Push; ui?: ServeUi } = {};
  // the hub's, the explorer's and the topics' routes are looked at only for targets that can be theirs (a cheap
  // test), so that a plain GET of a resource or document goes straight to the core
  const maybeTopic = (target: string): boolean => target.includes('-notification/');
  const maybeMounted = (target: string): boolean => target.includes('/hub') || target.includes(`/${DOCUMENTS_PREFIX}/ui`);
  const front: ResponderHandler = (req) =>
    (live.push !== undefined && maybeTopic(req.target) ? live.push.topic(req) : undefined) ??
    (live.core === undefined ? SERVICE_UNAVAILABLE : live.core(req));
  let running: RunningServer;
  try {
    running = await serve(front, {
      port,
      host,
      signal: ac.signal,
      onError: (e) => log(`resourcesync serve: ${messageOf(e)}`),
      intercept: (req, res) =>
        maybeMounted(req.url ?? '/') && ((live.push?.intercept(req, res) ?? false) || (live.ui?.intercept(req, res) ?? false)),
      ...(verbose ? { onResponse: (r) => log(`${r.method} ${r.target} ${r.status} ${r.ms.toFixed(1)}ms`) } : {}),
    });
  } catch (error) {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    process.stderr.write(`resourcesync serve: cannot listen on ${host}:${port}: ${messageOf(error)}\n`);
    await xmpp?.close();
    return 1;
  }

  const baseUrl = (values['base-url'] ?? running.url).replace(/\/+$/, '');
  // Push (Change Notification §4): an embedded hub at <base-url>/hub unless --hub or --no-hub.
  if (values['no-hub'] !== true) {
    live.push = startPush({
      baseUrl,
      origin: running.url,
      ...(values.hub === undefined ? { hubDir: join(stateDir ?? join(dirs[0]!, '.resourcesync'), 'hub') } : { hub: values.hub }),
      allowCallback,
      hubBounds,
      ...(process.env[PUBLISH_SECRET_ENV] ? { publishSecret: process.env[PUBLISH_SECRET_ENV] } : {}),
      ...(xmpp === undefined ? {} : { xmpp }),
      log,
      verbose,
    });
  }
  // The explorer page at <base-url>/.resourcesync/ui/, with the channels when push is on.
  const push = live.push;
  live.ui = startUi({
    baseUrl,
    origin: running.url,
    host,
    signal: ac.signal,
    log,
    ...(push === undefined ? {} : { channels: () => push.channels() }),
  });
  // HTML is served with its discovery link (§6.3.3) and published as served, so listed and served bytes agree.
  const publishOptions: PublishOptions = {
    ...shared,
    sets,
    baseUrl,
    outDir,
    htmlDiscoveryLink: true,
    signal: ac.signal,
    ...(stateDir === undefined ? {} : { stateDir }),
    // push: Change Notifications go out as soon as changes are recorded, before the documents are written; the
    // documents that follow rewrite a long Resource List less often (the Change List carries the rest)
    ...(push
      ? {
          notifications: { hub: push.hubUrl, ...(xmppArgs ? { xmpp: xmppArgs.service } : {}) },
          onRecorded: (n: SetNotifications) => push.send([n]),
          resourceListEveryMs: 'auto' as const,
        }
      : {}),
  };
  // The watcher starts before the first publication, which it runs itself: a change made meanwhile is
  // never lost, and two publications never run at once.
  let first: { result?: PublishResult; error?: unknown } | undefined;
  const held: { watcher?: SourceWatcher } = {};
  let runMs = 0;
  // each name that cannot be published is logged once, with its code (a rescan finds it again)
  const warned = new Set<string>();
  const logWarnings = (r: PublishResult): void => {
    for (const w of r.warnings) {
      const key = `${w.set}\n${w.path}`;
      if (warned.has(key) || warned.size >= 10_000) continue;
      warned.add(key);
      log(`resourcesync serve: warning ${w.code}: set '${w.set}': ${w.message}`);
    }
  };
  /** A publication's Framework Notifications (its Change Notifications went out through `onRecorded`). */
  const sendFramework = (r: PublishResult): void => push?.send(r.notifications?.map((n) => ({ ...n, change: [] })));
  const publishOnce = async ({ rescan }: { rescan: boolean } = { rescan: true }): Promise<PublishResult> => {
    const t0 = performance.now();
    try {
      // a file still being written keeps its previous state until the watcher has seen it settle
      const w = held.watcher;
      const result = await publish({
        ...publishOptions,
        scan: rescan,
        ...(w === undefined ? {} : { hold: (f: string) => w.hold(f), settleMs: SETTLE_MS }),
      });
      first ??= { result };
      runMs = performance.now() - t0;
      logWarnings(result);
      return result;
    } catch (error) {
      first ??= { error };
      throw error;
    }
  };
  // push: a settled file is recorded (and announced) on its own at once; the documents follow within a
  // second, written from the snapshot store; the sets are rescanned at the start, when a recording could not
  // judge its files, and every five minutes
  const recordOnce = async (files: string[]): Promise<RecordResult> => {
    const t0 = performance.now();
    const result = await recordChanges(publishOptions, files);
    runMs = performance.now() - t0;
    return result;
  };
  const watching = values['no-watch'] !== true;
  const watcher: SourceWatcher | undefined = watching
    ? watchSources({
        dirs,
        settleMs: SETTLE_MS,
        run: publishOnce,
        ...(push ? { record: recordOnce, followUp: (r: unknown) => (r as PublishResult).resourceListDueInMs } : {}),
        signal: ac.signal,
        onEvent: () => live.core?.invalidate(),
        onRun: (r, action) => {
          live.core?.invalidate();
          if (action !== 'record') sendFramework(r as PublishResult);
          if (verbose) {
            const ch = (r as PublishResult | RecordResult).changes;
            const what = action === 'record' ? 'recorded' : action === 'rescan' ? 'published' : 'published (documents)';
            log(`${what}: ${ch.created} created, ${ch.updated} updated, ${ch.deleted} deleted in ${runMs.toFixed(0)} ms`);
          }
        },
        onError: (e) => {
          if (!ac.signal.aborted && first?.error !== e) log(`resourcesync serve: publishing failed: ${messageOf(e)}`);
        },
      })
    : undefined;
  if (watcher !== undefined) held.watcher = watcher;
  if (watcher !== undefined) await watcher.flush();
  else await publishOnce().catch(() => undefined);
  if (first?.result === undefined) {
    // a signal during the first publication is a clean stop, not a failure
    const stopped = ac.signal.aborted;
    if (!stopped) log(`resourcesync serve: publishing failed: ${messageOf(first?.error ?? 'no result')}`);
    ac.abort();
    await running.closed;
    await watcher?.close();
    await live.push?.close();
    await live.ui.close();
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    return stopped ? 0 : 1;
  }
  const result = first.result;
  if (watcher === undefined) sendFramework(result); // (the watcher's runs send their own)
  if (verbose) log(`published ${result.resources} resources (${result.documents.length} documents)`);
  live.core = createSourceResponder({
    sets: sets.map((s, i) => {
      const cap = result.capabilityLists[i];
      return cap === undefined ? s : { ...s, capabilityList: cap };
    }),
    outDir,
    baseUrl,
    htmlDiscoveryLink: true,
    onError: (e) => log(`resourcesync serve: ${messageOf(e)}`),
  });

  if (!ac.signal.aborted) process.stdout.write(`listening on ${running.url}\n`);
  await running.closed;
  await watcher?.close();
  await live.push?.close();
  await live.ui.close();
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  return 0;
}
