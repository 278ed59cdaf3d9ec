/**
 * A live Source: publishes directories as sets of resources, serves them with discovery over `node:http`,
 * and by default watches them and re-publishes as soon as a changed file has settled (see
 * ../source/watch/watch.ts), so that a change shows in the open Change List within tens of milliseconds. With
 * push, Change and Framework Notifications go to a WebSub hub (embedded at `<base-url>/hub`, or elsewhere)
 * and optionally an XMPP PubSub service; the explorer page can be mounted at `<base-url>/.resourcesync/ui/`.
 * Until the first publication is done every request gets 503 with `Retry-After: 1`. What happens is reported
 * through `onEvent`; nothing is printed.
 * @see Z39.99 §6.3 (discovery), §12 (Change List); Change Notification §4
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ResourceSyncError, messageOf, toError } from '../core/errors.js';
import type { ResponderHandler, ResponderResponse } from '../server/request-response.js';
import { createSourceResponder, type SourceResponder } from '../server/source-responder.js';
import { serve, type ServeOptions } from '../server/node-adapter.js';
import { watchSources, type SourceWatcher } from '../source/watch/watch.js';
import type { PublishOptions, PublishResult } from '../source/publish.js';
import type { RecordResult } from '../source/record-changes.js';
import type { SetNotifications } from '../source/notifications.js';
import { DOCUMENTS_PREFIX } from '../source/url-path.js';
import { startPush, type Push } from './push.js';
import { mountExplorer, type ExplorerMount } from './explorer-mount.js';
import { LivePublication, SETTLE_MS } from './publication.js';
import { RESOURCESYNC_DIR } from '../core/constants.js';
import { watchFeedFile, type FeedFileWatch } from './feed-watch.js';
import type { LiveFeedSet, LivePushOptions, LiveSet, LiveSource, LiveSourceEvent, LiveSourceOptions } from './live-source-types.js';

export type { LiveFeedSet, LivePublishOptions, LivePushOptions, LiveSet, LiveSource, LiveSourceEvent, LiveSourceOptions } from './live-source-types.js';

/** A folder that holds nothing (made when missing). */
function emptyFolder(dir: string): string {
  mkdirSync(dir, { recursive: true });
  return dir;
}

const isFeed = (s: LiveSet): s is LiveFeedSet => 'feed' in s;
const folders = (sets: readonly LiveSet[]): Array<{ name: string; dir: string }> => sets.flatMap((s) => (isFeed(s) ? [] : [s]));

const SERVICE_UNAVAILABLE: ResponderResponse = {
  status: 503,
  headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '1', 'content-length': '24' },
  body: { type: 'bytes', bytes: Buffer.from('503 Service Unavailable\n') },
};

// the hub's, the explorer's and the topics' routes are looked at only for targets that can be theirs (a cheap
// test), so that a plain GET of a resource or document goes straight to the responder
const maybeTopic = (target: string): boolean => target.includes('-notification/');
const maybeMounted = (target: string): boolean => target.includes('/hub') || target.includes(`/${DOCUMENTS_PREFIX}/ui`);

class RunningLiveSource implements LiveSource {
  url = '';
  baseUrl = '';
  closed: Promise<void> = Promise.resolve();
  readonly #options: LiveSourceOptions;
  readonly #controller = new AbortController();
  readonly #emit: (event: LiveSourceEvent) => void;
  #responder: SourceResponder | undefined;
  #push: Push | undefined;
  #explorer: ExplorerMount | undefined;
  #watcher: SourceWatcher | undefined;
  #feedWatches: Array<FeedFileWatch | { close(): void }> = [];
  #publication: LivePublication | undefined;
  #firstPublication: Promise<PublishResult> | undefined;
  /** The publications asked for with `publishNow()` without the watcher, one after the other. */
  #publishing: Promise<unknown> = Promise.resolve();

  constructor(options: LiveSourceOptions) {
    this.#options = options;
    this.#emit = options.onEvent ?? (() => undefined);
    const signal = options.signal;
    if (signal?.aborted === true) this.#controller.abort();
    else signal?.addEventListener('abort', () => this.#controller.abort(), { once: true });
  }

  readonly handler: ResponderHandler = (req) =>
    (this.#push !== undefined && maybeTopic(req.target) ? this.#push.topic(req) : undefined) ??
    (this.#responder === undefined ? SERVICE_UNAVAILABLE : this.#responder(req));

  /** Listens (answering 503 until the first publication); rejects when the address cannot be bound. */
  async listen(): Promise<void> {
    const options = this.#options;
    const port = options.port ?? 8080;
    const host = options.host ?? '127.0.0.1';
    const server = await serve(this.handler, this.#serveOptions(port, host)).catch((error: unknown) => {
      throw new ResourceSyncError('RS_NETWORK', `cannot listen on ${host}:${port}: ${messageOf(error)}`, {
        cause: error,
        data: { host, port },
      });
    });
    this.url = server.url;
    this.baseUrl = (options.baseUrl ?? server.url).replace(/\/+$/, '');
    this.closed = server.closed.then(() => this.#shutDown());
  }

  #serveOptions(port: number, host: string): ServeOptions {
    const options = this.#options;
    const mounts = options.push !== undefined || options.explorer === true;
    return {
      port,
      host,
      signal: this.#controller.signal,
      onError: (error) => this.#emit({ type: 'error', error }),
      ...(mounts
        ? {
            intercept: (req, res) =>
              maybeMounted(req.url ?? '/') && ((this.#push?.intercept(req, res) ?? false) || (this.#explorer?.intercept(req, res) ?? false)),
          }
        : {}),
      ...(options.onResponse === undefined ? {} : { onResponse: options.onResponse }),
    };
  }

  /** True once push runs (its hub's store is then closed with it). */
  get pushStarted(): boolean { return this.#push !== undefined; }

  /** Starts push, the explorer, the watcher and the first publication. */
  start(): void {
    const options = this.#options;
    const firstFolder = folders(options.sets)[0];
    if (options.stateDir === undefined && (firstFolder === undefined || options.sets.some(isFeed))) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'A live Source with a feed needs stateDir (where its snapshots are kept).');
    }
    const stateRoot = options.stateDir ?? join(firstFolder!.dir, RESOURCESYNC_DIR);
    if (options.push !== undefined) this.#push = this.#startPush(options.push, stateRoot);
    const push = this.#push;
    if (options.explorer === true) {
      this.#explorer = mountExplorer({
        baseUrl: this.baseUrl,
        origin: this.url,
        ...(options.host === undefined ? {} : { host: options.host }),
        signal: this.#controller.signal,
        onError: (error) => this.#emit({ type: 'explorer-error', error }),
        ...(push === undefined ? {} : { channels: () => push.channels() }),
      });
    }
    const publication = new LivePublication(this.#publishOptions(stateRoot), (warning) => this.#emit({ type: 'warning', warning }));
    this.#publication = publication;
    // The watcher starts before the first publication, which it runs itself: a change made meanwhile is
    // never lost, and two publications never run at once.
    this.#watcher = options.watch === false || folders(options.sets).length === 0 ? undefined : this.#startWatcher(publication);
    publication.watcher = this.#watcher;
    if (options.watch !== false) this.#watchFeeds();
    const firstRun = this.#watcher !== undefined ? this.#watcher.flush() : publication.publish().then(() => undefined, () => undefined);
    this.#firstPublication = firstRun.then(() => this.#serveFirst(publication));
    this.#firstPublication.catch(() => undefined); // told through ready()
  }

  #startPush(push: LivePushOptions, stateRoot: string): Push {
    return startPush({
      baseUrl: this.baseUrl,
      origin: this.url,
      ...(push.hub === undefined ? { hubDir: push.hubDir ?? join(stateRoot, 'hub') } : { hub: push.hub }),
      ...(push.hubStore === undefined ? {} : { hubStore: push.hubStore }),
      allowCallback: push.allowCallback ?? [],
      ...(push.hubBounds === undefined ? {} : { hubBounds: push.hubBounds }),
      ...(push.publishSecret === undefined ? {} : { publishSecret: push.publishSecret }),
      ...(push.xmpp === undefined ? {} : { xmpp: push.xmpp.publisher }),
      onEvent: this.#emit,
    });
  }

  #publishOptions(stateRoot: string): PublishOptions {
    const options = this.#options;
    const push = this.#push;
    const xmppService = options.push?.xmpp?.service;
    return {
      ...options.publish,
      sets: options.sets.map((s) => (isFeed(s) ? { name: s.name, feed: s.feed } : { name: s.name, dir: s.dir })),
      baseUrl: this.baseUrl,
      outDir: options.outDir ?? join(stateRoot, 'publish'),
      ...(options.htmlDiscoveryLink === true ? { htmlDiscoveryLink: true } : {}),
      signal: this.#controller.signal,
      ...(options.stateDir === undefined ? {} : { stateDir: options.stateDir }),
      // push: Change Notifications go out as soon as changes are recorded, before the documents are written; the
      // documents that follow rewrite a long Resource List less often (the Change List carries the rest)
      ...(push
        ? {
            notifications: { hub: push.hubUrl, ...(xmppService === undefined ? {} : { xmpp: xmppService }) },
            onRecorded: (n: SetNotifications) => push.send([n]),
            resourceListEveryMs: 'auto' as const,
          }
        : {}),
    };
  }

  /**
   * The watcher: with push, a settled file is recorded (and announced) on its own at once; the documents
   * follow within a second; the sets are rescanned at the start, when a recording could not judge its files,
   * and every five minutes.
   */
  #startWatcher(publication: LivePublication): SourceWatcher {
    const push = this.#push;
    const signal = this.#controller.signal;
    return watchSources({
      dirs: folders(this.#options.sets).map((s) => s.dir),
      settleMs: SETTLE_MS,
      run: (o) => publication.publish(o),
      ...(push
        ? { record: (files: string[]) => publication.record(files), followUp: (r: unknown) => (r as PublishResult).resourceListDueInMs }
        : {}),
      signal,
      onEvent: () => this.#responder?.invalidate(),
      onRun: (result, action) => {
        this.#responder?.invalidate();
        if (action !== 'record') this.#sendFramework(result as PublishResult);
        const changes = (result as PublishResult | RecordResult).changes;
        this.#emit({ type: 'run', action, changes, ms: publication.runMs });
      },
      onError: (error) => {
        if (!signal.aborted && publication.first?.error !== error) this.#emit({ type: 'publish-failed', error });
      },
    });
  }

  /** A publication's Framework Notifications (its Change Notifications went out through `onRecorded`). */
  #sendFramework(result: PublishResult): void {
    this.#push?.send(result.notifications?.map((n) => ({ ...n, change: [] })));
  }

  /** After the first publication: serves what it published, or throws what it failed with. */
  #serveFirst(publication: LivePublication): PublishResult {
    const result = publication.first?.result;
    if (result === undefined) throw toError(publication.first?.error ?? new ResourceSyncError('RS_ABORTED', 'no result'));
    if (this.#watcher === undefined) this.#sendFramework(result); // (the watcher's runs send their own)
    const options = this.#options;
    // the resources of a feed are where their loc says: its set is served from an empty folder of the state
    this.#responder = createSourceResponder({
      sets: options.sets.map((s, i) => {
        const served = isFeed(s) ? { name: s.name, dir: emptyFolder(join(options.stateDir!, s.name, 'no-resources')) } : s;
        const capabilityList = result.capabilityLists[i];
        return capabilityList === undefined ? served : { ...served, capabilityList };
      }),
      outDir: publication.options.outDir,
      baseUrl: this.baseUrl,
      ...(options.htmlDiscoveryLink === true ? { htmlDiscoveryLink: true } : {}),
      onError: (error) => this.#emit({ type: 'error', error }),
    });
    return result;
  }

  ready(): Promise<PublishResult> {
    return this.#firstPublication ?? Promise.reject(new ResourceSyncError('RS_INVALID_ARGUMENT', 'The live Source is not started.'));
  }

  async publishNow(): Promise<PublishResult> {
    const publication = this.#publication!;
    const watcher = this.#watcher;
    if (watcher !== undefined) {
      await watcher.flush();
      return publication.latest ?? (await this.ready());
    }
    const run = this.#publishing.then(async () => {
      try {
        const result = await publication.publish();
        this.#sendFramework(result);
        return result;
      } finally {
        this.invalidate();
      }
    });
    this.#publishing = run.catch(() => undefined);
    return run;
  }

  async publishFiles(files: readonly string[]): Promise<PublishResult> {
    const publication = this.#publication!;
    if (this.#watcher !== undefined) return this.publishNow();
    const run = this.#publishing.then(async () => {
      try {
        const recorded = await publication.record([...files]);
        const written = await publication.publish({ rescan: !recorded.complete });
        this.#sendFramework(written);
        // the documents run scanned nothing: the changes are those recorded
        return recorded.complete ? { ...written, changes: recorded.changes } : written;
      } finally {
        this.invalidate();
      }
    });
    this.#publishing = run.catch(() => undefined);
    return run;
  }

  invalidate(): void {
    this.#responder?.invalidate();
  }

  close(): Promise<void> {
    this.#controller.abort();
    return this.closed;
  }

  /** A feed read from a file is published again when the file changes, and the run reported as the watcher's are. */
  #watchFeeds(): void {
    for (const set of this.#options.sets) {
      if (!isFeed(set) || (set.file === undefined && set.everyMs === undefined)) continue;
      const onChange = (): void => {
        const t0 = performance.now();
        this.publishNow().then(
          (result) => this.#emit({ type: 'run', action: 'rescan', changes: result.changes, ms: performance.now() - t0 }),
          (error: unknown) => {
            if (!this.#controller.signal.aborted) this.#emit({ type: 'publish-failed', error });
          },
        );
      };
      if (set.file !== undefined) this.#feedWatches.push(watchFeedFile(set.file, onChange, { signal: this.#controller.signal }));
      if (set.everyMs !== undefined) {
        const timer = setInterval(onChange, Math.max(1000, set.everyMs));
        this.#feedWatches.push({ close: () => clearInterval(timer) });
      }
    }
  }

  async #shutDown(): Promise<void> {
    for (const w of this.#feedWatches) w.close();
    await this.#watcher?.close();
    // a publication in flight without the watcher (aborted with the rest) ends before the Source is closed
    await Promise.all([this.#firstPublication?.catch(() => undefined), this.#publishing]);
    await this.#push?.close();
    await this.#explorer?.close();
  }
}

/**
 * Starts a live Source: listens (answering 503), then publishes the sets, and serves them once published
 * (`ready()`). Rejects with `RS_NETWORK` when it cannot listen (`cannot listen on <host>:<port>: <why>`), and
 * with what failed when push cannot start (its hub's store cannot be opened); nothing is left running then.
 * @example
 * const source = await createLiveSource({ sets: [{ name: 'data', dir: '/srv/data' }], port: 0, onEvent: (e) => log(e) });
 * await source.ready();
 * console.log(`listening on ${source.url}`);
 * // …later
 * await source.close();
 */
export async function createLiveSource(options: LiveSourceOptions): Promise<LiveSource> {
  const source = new RunningLiveSource(options);
  try {
    await source.listen();
    source.start();
  } catch (error) {
    await source.close();
    if (!source.pushStarted) await options.push?.hubStore?.close(); // the hub's store goes with the Source
    throw error;
  }
  return source;
}
