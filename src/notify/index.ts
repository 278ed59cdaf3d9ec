/**
 * Push for ResourceSync: a WebSub hub that relays Change Notifications and Framework Notifications
 * to subscribers, with subscriptions and undelivered notifications kept in SQLite (or PostgreSQL, shared by
 * several hub processes: `openPostgresHubStore`).
 * @see ResourceSync Change Notification 1.0.1, Framework Notification 1.0.1, WebSub
 * @example
 * import { openSqliteHubStore, createHub, listen } from 'resourcesync/notify';
 * const store = openSqliteHubStore('./hub/hub.sqlite');
 * const ref = {};
 * const server = await listen((r) => ref.hub.handle(r), { port: 8090 });
 * ref.hub = createHub({ store, hubUrl: `${server.url}/` });
 */
export {
  createHub,
  LEASE,
  HUB_LIMITS,
  HUB_DEFAULT_LIMITS,
  HUB_DEFAULT_GIVE_UP,
  type Hub,
  type HubEvent,
  type HubOptions,
  type HubLimits,
  type HubTimers,
  type GiveUp,
  type PendingVerification,
} from './hub.js';
export type {
  HubStore,
  HubStoreCounts,
  Subscription,
  VerifiedSubscription,
  PendingDelivery,
  ClaimOptions,
  QueueLimits,
  PublishOutcome,
} from './hub-store.js';
export { openSqliteHubStore } from './sqlite-hub-store.js';
export { openPostgresHubStore, type PostgresHubStoreOptions } from './postgres-hub-store.js';
export { listen, nodeListener, type FetchHandler, type Listener } from './node-listener.js';
export { Subscriber, type SubscriberOptions, type SubscriberEvent } from './subscriber.js';
export { publishNotification, type Notification, type SendRequest } from './publisher.js';
export { signBody, verifySignature, SIGNATURE_METHODS, MAX_SECRET_BYTES, type SignatureMethod } from './signature.js';
export { createUrlPolicy, isLoopbackHost, type UrlPolicy } from './callback-policy.js';
export { XmppConnection, XMPP_LIMITS, type XmppConnectOptions, type XmppConnectionEvent } from './xmpp-client.js';
export type { XmppAccount } from './xmpp-pubsub.js';
export { XmppPublisher, type XmppPublisherOptions, type XmppPublisherEvent } from './xmpp-publisher.js';
export { XmppSubscriber, type XmppSubscriberOptions, type XmppSubscriberEvent } from './xmpp-subscriber.js';
