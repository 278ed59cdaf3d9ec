/**
 * Push for `resourcesync serve`: the embedded WebSub hub at `<base-url>/hub` (or an external one),
 * the topics' HEAD/GET answers with `Link` rel=self and rel=hub, and the sending of each publication's
 * notifications, in order, to the hub, and with `--xmpp` to an XMPP PubSub service too. The embedded hub
 * relays only what this Source publishes (in process): it takes subscriptions for the Source's own topics
 * only, fetches no topic, and refuses a publish from the network unless the operator set a publish secret
 * (environment variable {@link PUBLISH_SECRET_ENV}), which `--hub` sends to an external hub too.
 * @see Change Notification §4, Framework Notification §4–5, WebSub §4 (discovery)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import type { ResponderRequest, ResponderResponse } from '../server/request-response.js';
import { createHub, type Hub, type HubEvent } from '../notify/hub.js';
import { openSqliteHubStore, type SqliteHubStore } from '../notify/sqlite-hub-store.js';
import { nodeListener } from '../notify/node-listener.js';
import { publishNotification, type SendRequest } from '../notify/publisher.js';
import type { Subscription } from '../notify/hub-store.js';
import type { XmppPublisher } from '../notify/xmpp-publisher.js';
import type { ChannelSummary } from '../web/explorer.js';
import type { SetNotifications } from '../source/notifications.js';
import { DOCUMENTS_PREFIX } from '../source/url-path.js';
import type { HubLimitOptions } from './hub-limit-options.js';
import { messageOf } from '../core/errors.js';

/** Push as `serve` runs it. */
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
  channels(): ChannelSummary;
}

/** The environment variable holding the secret a publisher shows the hub (`Authorization: Bearer`). */
export const PUBLISH_SECRET_ENV = 'RESOURCESYNC_HUB_PUBLISH_SECRET';

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

/** Starts push for a Source served at `baseUrl` (no trailing slash) by a server listening at `origin`. */
export function startPush(o: {
  baseUrl: string;
  origin: string;
  hubDir?: string;
  hub?: string;
  /** Non-loopback callbacks the embedded hub may contact (patterns, see ../notify/callback-policy.ts). */
  allowCallback?: readonly string[];
  /** The embedded hub's limits and give-up rule (default: the hub's). */
  hubBounds?: HubLimitOptions;
  /** The publish secret: the embedded hub takes publishes from the network that carry it; an external hub is sent it. */
  publishSecret?: string;
  /** Also publishes every notification to the XMPP PubSub node named by its topic URI. */
  xmpp?: XmppPublisher;
  log: (line: string) => void;
  verbose: boolean;
}): Push {
  const hubUrl = o.hub ?? `${o.baseUrl}/hub`;
  const basePath = new URL(`${o.baseUrl}/`).pathname;
  let hub: Hub | undefined;
  let store: SqliteHubStore | undefined;
  let listener: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let send: SendRequest;
  const hubPath = new URL(hubUrl).pathname;
  if (o.hub === undefined) {
    store = openSqliteHubStore(join(o.hubDir!, 'hub.sqlite'));
    const describe = (e: HubEvent): string =>
      `hub: ${e.type}${'mode' in e ? ` ${e.mode}` : ''} ${'callback' in e ? e.callback : ''} ${e.topic}`;
    const prefix = `${o.baseUrl}/`;
    hub = createHub({
      store,
      hubUrl,
      allowCallback: o.allowCallback ?? [],
      ...(o.hubBounds === undefined ? {} : { limits: o.hubBounds.limits, giveUp: o.hubBounds.giveUp }),
      // only this Source's channels, published from this process; nothing fetched for anyone
      topics: (t) => t.startsWith(prefix) && TOPIC.test(t.slice(prefix.length)),
      openPublish: false,
      fetchTopics: false,
      ...(o.publishSecret === undefined ? {} : { publishSecret: o.publishSecret }),
      ...(o.verbose ? { onEvent: (e: HubEvent) => o.log(describe(e)) } : {}),
    });
    const h = hub;
    listener = nodeListener(
      (r) => h.handle(r),
      o.origin,
      (e) => o.log(`resourcesync serve: hub: ${messageOf(e)}`),
    );
    send = (r) => h.handleLocal(r);
  } else {
    send = sendToHub(o.publishSecret);
  }
  let queue: Promise<void> = Promise.resolve();
  const topics = new Set<string>();

  return {
    hubUrl,
    topic(req) {
      if (req.method !== 'GET' && req.method !== 'HEAD') return undefined;
      const path = req.target.split('?')[0]!;
      if (!path.startsWith(basePath)) return undefined;
      const m = TOPIC.exec(decodeURIComponent(path.slice(basePath.length)));
      if (!m) return undefined;
      const topicUrl = `${o.baseUrl}/${m[0]}`;
      const body = Buffer.from(`ResourceSync ${m[2]} notification channel of set '${m[1]}'; subscribe at ${hubUrl}\n`);
      return {
        status: 200,
        headers: {
          'content-type': 'text/plain; charset=utf-8',
          'content-length': String(body.byteLength),
          link: `<${topicUrl}>; rel="self", <${hubUrl}>; rel="hub"`,
        },
        ...(req.method === 'GET' ? { body: { type: 'bytes' as const, bytes: body } } : {}),
      };
    },
    intercept(req, res) {
      if (listener === undefined) return false;
      if ((req.url ?? '/').split('?')[0] !== hubPath) return false;
      listener(req, res);
      return true;
    },
    send(notifications) {
      if (notifications === undefined) return;
      for (const n of notifications) {
        // the nodes exist before the first notification, for Destinations to subscribe to (a failure shows in the
        // publications, which fail the same way)
        for (const node of [n.changeTopic, n.frameworkTopic]) o.xmpp?.ensureNode(node).catch(() => undefined);
        const items = [
          ...n.change.map((payload) => ({ topic: n.changeTopic, payload })),
          ...(n.framework ? [{ topic: n.frameworkTopic, payload: n.framework }] : []),
        ];
        for (const item of items) {
          topics.add(item.topic);
          o.xmpp
            ?.publish(item.topic, item.payload)
            .catch((e: unknown) => o.log(`resourcesync serve: notification on ${item.topic} not published over XMPP: ${messageOf(e)}`));
          queue = queue.then(() =>
            publishNotification(
              { hub: hubUrl, topic: item.topic, capabilityList: n.capabilityList, payload: item.payload },
              send,
            ).catch((e: unknown) =>
              o.log(
                `resourcesync serve: notification on ${item.topic} not published: ${messageOf(e)}`,
              ),
            ),
          );
        }
      }
    },
    channels() {
      const subscriptions = store?.subscriptions() ?? [];
      const live = (s: Subscription): boolean => s.state === 'verified';
      const all = new Set([...topics, ...subscriptions.map((s) => s.topic)]);
      const pending = (hub?.pending() ?? [])
        .filter((p) => p.mode === 'subscribe' && store?.getSubscription(p.topic, p.callback) === undefined)
        .map((p) => ({ topic: p.topic, callback: redactCallback(p.callback), state: 'pending' as const, failures: 0 }));
      return {
        hub: hubUrl,
        channels: [...all].sort().map((topic) => ({
          topic,
          subscribers: subscriptions.filter((s) => s.topic === topic && live(s)).length,
        })),
        ...(store === undefined
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
    },
    async close() {
      await queue;
      await o.xmpp?.close();
      await hub?.close();
      store?.close();
    },
  };
}
