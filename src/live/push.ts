/**
 * Push for a live Source: the embedded WebSub hub at `<base-url>/hub` (or an external one), the topics'
 * HEAD/GET answers with `Link` rel=self and rel=hub, and the sending of each publication's notifications, in
 * order, to the hub, and with an XMPP publisher to an XMPP PubSub service too. The embedded hub relays only what
 * this Source publishes (in process): it takes subscriptions for the Source's own topics only, fetches no topic,
 * and refuses a publish from the network unless the operator set a publish secret, which is sent to an external
 * hub too.
 * @see Change Notification §4, Framework Notification §4–5, WebSub §4 (discovery)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import type { ResponderRequest, ResponderResponse } from '../server/request-response.js';
import { createHub, type Hub, type HubEvent } from '../notify/hub.js';
import type { GiveUp } from '../notify/hub-delivery.js';
import type { HubLimits } from '../notify/hub-options.js';
import type { HubStore, Subscription } from '../notify/hub-store.js';
import { openSqliteHubStore } from '../notify/sqlite-hub-store.js';
import { nodeListener } from '../notify/node-listener.js';
import { publishNotification, type SendRequest } from '../notify/publisher.js';
import type { XmppPublisher } from '../notify/xmpp-publisher.js';
import type { ChannelSummary } from '../web/explorer.js';
import type { SetNotifications } from '../source/notifications.js';
import { DOCUMENTS_PREFIX } from '../source/url-path.js';

/** What push reports: an error of the embedded hub, the hub's events, a notification that could not be sent. */
export type PushEvent =
  | { type: 'hub-error'; error: unknown }
  | { type: 'hub'; event: HubEvent }
  | { type: 'notification-failed'; topic: string; xmpp: boolean; error: unknown };

/** Options of {@link startPush}. */
export interface PushOptions {
  /** Base URL of the Source (no trailing slash). */
  baseUrl: string;
  /** Origin of the listening server (`http://host:port`). */
  origin: string;
  /** The embedded hub's state folder (`hub.sqlite` in it); used when neither `hub` nor `hubStore` is given. */
  hubDir?: string;
  /**
   * The embedded hub's store, opened by the caller (`openPostgresHubStore` to keep subscriptions and outbox in
   * PostgreSQL, shared with other processes); closed with push. Default: SQLite in `hubDir`.
   */
  hubStore?: HubStore;
  /** An external hub's URL: notifications go there, no hub is embedded. */
  hub?: string;
  /** Non-loopback callbacks the embedded hub may contact (patterns, see ../notify/callback-policy.ts). */
  allowCallback?: readonly string[];
  /** The embedded hub's limits and give-up rule (default: the hub's). */
  hubBounds?: { limits: Partial<HubLimits>; giveUp: Partial<GiveUp> };
  /** The publish secret: the embedded hub takes publishes from the network that carry it; an external hub is sent it. */
  publishSecret?: string;
  /** Also publishes every notification to the XMPP PubSub node named by its topic URI. */
  xmpp?: XmppPublisher;
  /** What happens, for the caller to report. */
  onEvent: (event: PushEvent) => void;
}

/** Push as a live Source runs it. */
export interface Push {
  hubUrl: string;
  /** The answer to HEAD/GET of a topic URI, or undefined for other requests. */
  topic(req: ResponderRequest): ResponderResponse | undefined;
  /** Takes the requests to the embedded hub; false for all others. */
  intercept(req: IncomingMessage, res: ServerResponse): boolean;
  /** Queues a publication's notifications for the hub (sent in order, one after the other). */
  send(notifications: readonly SetNotifications[] | undefined): void;
  /** Waits for queued notifications, then stops the embedded hub. */
  close(): Promise<void>;
  /** The channels notifications were sent on and, with the embedded hub, their subscriptions (for the explorer page). */
  channels(): Promise<ChannelSummary>;
}

/** Sends to a hub elsewhere with `fetch`, with `Authorization: Bearer <publishSecret>` when there is a secret. */
export function sendToHub(publishSecret: string | undefined): SendRequest {
  if (publishSecret === undefined || publishSecret === '') return (r) => fetch(r);
  const bearer = `Bearer ${publishSecret}`;
  return (r) => {
    r.headers.set('authorization', bearer);
    return fetch(r);
  };
}

/** A callback as the explorer shows it: scheme, host, port and path; never its credentials or query. */
function redactCallback(callback: string): string {
  if (!URL.canParse(callback)) return '(not a URL)';
  const u = new URL(callback);
  return `${u.protocol}//${u.host}${u.pathname}${u.search === '' ? '' : '?…'}`;
}

const TOPIC = new RegExp(
  `^${DOCUMENTS_PREFIX.replace('.', '\\.')}/([A-Za-z0-9_-][A-Za-z0-9._-]*)/(change|framework)-notification/$`,
);

/** The embedded hub, its store and its `node:http` listener. */
interface EmbeddedHub {
  hub: Hub;
  store: HubStore;
  listener: (req: IncomingMessage, res: ServerResponse) => void;
  /** With a store given by the caller (maybe shared with other processes): the timer that looks for deliveries. */
  look: NodeJS.Timeout | undefined;
}

/**
 * How often a hub over a store given by the caller looks for deliveries it was not told of: queued by another
 * process sharing the store, or let go by one that stopped (as `resourcesync hub --store postgres://…` does).
 */
const SHARED_STORE_LOOK_MS = 2000;

/** Opens the embedded hub at `hubUrl`: this Source's channels only, published from this process; nothing fetched for anyone. */
function embedHub(options: PushOptions, hubUrl: string): EmbeddedHub {
  const store = options.hubStore ?? openSqliteHubStore(join(options.hubDir!, 'hub.sqlite'));
  const prefix = `${options.baseUrl}/`;
  const hub = createHub({
    store,
    hubUrl,
    allowCallback: options.allowCallback ?? [],
    ...(options.hubBounds === undefined ? {} : { limits: options.hubBounds.limits, giveUp: options.hubBounds.giveUp }),
    topics: (t) => t.startsWith(prefix) && TOPIC.test(t.slice(prefix.length)),
    openPublish: false,
    fetchTopics: false,
    ...(options.publishSecret === undefined ? {} : { publishSecret: options.publishSecret }),
    onEvent: (event: HubEvent) => options.onEvent({ type: 'hub', event }),
  });
  const listener = nodeListener(
    (r) => hub.handle(r),
    options.origin,
    (error) => options.onEvent({ type: 'hub-error', error }),
  );
  const look = options.hubStore === undefined ? undefined : setInterval(() => hub.kick(), SHARED_STORE_LOOK_MS).unref();
  return { hub, store, listener, look };
}

class SourcePush implements Push {
  readonly hubUrl: string;
  readonly #options: PushOptions;
  readonly #basePath: string;
  readonly #hubPath: string;
  readonly #embedded: EmbeddedHub | undefined;
  readonly #sendRequest: SendRequest;
  /** The notifications sent so far, in order: each waits for the one before. */
  #queue: Promise<void> = Promise.resolve();
  /** The topics notifications were sent on. */
  readonly #topics = new Set<string>();

  constructor(options: PushOptions) {
    if (options.hub !== undefined && options.hubStore !== undefined) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', "hubStore is the embedded hub's store: not with hub (a hub elsewhere).");
    }
    this.#options = options;
    this.hubUrl = options.hub ?? `${options.baseUrl}/hub`;
    this.#basePath = new URL(`${options.baseUrl}/`).pathname;
    this.#hubPath = new URL(this.hubUrl).pathname;
    this.#embedded = options.hub === undefined ? embedHub(options, this.hubUrl) : undefined;
    const embedded = this.#embedded;
    this.#sendRequest = embedded === undefined ? sendToHub(options.publishSecret) : (r) => embedded.hub.handleLocal(r);
  }

  topic(req: ResponderRequest): ResponderResponse | undefined {
    if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
    const path = req.target.split('?')[0]!;
    if (!path.startsWith(this.#basePath)) return undefined;
    const m = TOPIC.exec(decodeURIComponent(path.slice(this.#basePath.length)));
    if (!m) return undefined;
    const topicUrl = `${this.#options.baseUrl}/${m[0]}`;
    const body = Buffer.from(`ResourceSync ${m[2]} notification channel of set '${m[1]}'; subscribe at ${this.hubUrl}\n`);
    return {
      status: 200,
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        'content-length': String(body.byteLength),
        link: `<${topicUrl}>; rel="self", <${this.hubUrl}>; rel="hub"`,
      },
      ...(req.method === 'GET' ? { body: { type: 'bytes' as const, bytes: body } } : {}),
    };
  }

  intercept(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.#embedded === undefined) return false;
    if ((req.url ?? '/').split('?')[0] !== this.#hubPath) return false;
    this.#embedded.listener(req, res);
    return true;
  }

  send(notifications: readonly SetNotifications[] | undefined): void {
    if (notifications === undefined) return;
    const xmpp = this.#options.xmpp;
    for (const n of notifications) {
      // the nodes exist before the first notification, for Destinations to subscribe to (a failure shows in the
      // publications, which fail the same way)
      for (const node of [n.changeTopic, n.frameworkTopic]) xmpp?.ensureNode(node).catch(() => undefined);
      const items = [
        ...n.change.map((payload) => ({ topic: n.changeTopic, payload })),
        ...(n.framework ? [{ topic: n.frameworkTopic, payload: n.framework }] : []),
      ];
      for (const item of items) {
        this.#topics.add(item.topic);
        xmpp
          ?.publish(item.topic, item.payload)
          .catch((error: unknown) => this.#options.onEvent({ type: 'notification-failed', topic: item.topic, xmpp: true, error }));
        const notification = { hub: this.hubUrl, topic: item.topic, capabilityList: n.capabilityList, payload: item.payload };
        this.#queue = this.#queue.then(() =>
          publishNotification(notification, this.#sendRequest).catch((error: unknown) =>
            this.#options.onEvent({ type: 'notification-failed', topic: item.topic, xmpp: false, error }),
          ),
        );
      }
    }
  }

  async channels(): Promise<ChannelSummary> {
    const embedded = this.#embedded;
    const subscriptions = embedded === undefined ? [] : await embedded.store.subscriptions();
    const live = (s: Subscription): boolean => s.state === 'verified';
    const all = new Set([...this.#topics, ...subscriptions.map((s) => s.topic)]);
    const pending: Array<{ topic: string; callback: string; state: 'pending'; failures: number }> = [];
    for (const p of embedded?.hub.pending() ?? []) {
      if (p.mode !== 'subscribe' || (await embedded!.store.getSubscription(p.topic, p.callback)) !== undefined) continue;
      pending.push({ topic: p.topic, callback: redactCallback(p.callback), state: 'pending', failures: 0 });
    }
    return {
      hub: this.hubUrl,
      channels: [...all].sort().map((topic) => ({
        topic,
        subscribers: subscriptions.filter((s) => s.topic === topic && live(s)).length,
      })),
      ...(embedded === undefined
        ? {}
        : {
            subscriptions: [
              ...subscriptions.map((s) => ({
                topic: s.topic,
                callback: redactCallback(s.callback),
                state: s.state,
                expiresAt: s.expiresAt,
                failures: s.failures,
                ...(s.lastDeliveryAt === undefined ? {} : { lastDeliveryAt: s.lastDeliveryAt }),
              })),
              ...pending,
            ],
          }),
    };
  }

  async close(): Promise<void> {
    await this.#queue;
    await this.#options.xmpp?.close();
    clearInterval(this.#embedded?.look);
    await this.#embedded?.hub.close();
    await this.#embedded?.store.close();
  }
}

/** Starts push for a Source served at `baseUrl` (no trailing slash) by a server listening at `origin`. */
export function startPush(options: PushOptions): Push {
  return new SourcePush(options);
}
