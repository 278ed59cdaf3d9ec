/**
 * The push side of {@link followSource}: a subscription that delivers a Source's Change Notifications,
 * through a WebSub hub (with its callback endpoint, and the subscription a previous run left taken over or
 * ended) or an XMPP PubSub node.
 * @see Change Notification §4; WebSub §5; XEP-0060
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { messageOf } from '../core/errors.js';
import { listen, type Listener } from '../notify/node-listener.js';
import { Subscriber } from '../notify/subscriber.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';
import { XmppSubscriber } from '../notify/xmpp-subscriber.js';
import type { ChangeChannel } from './change-channel.js';
import type { FollowEvent, FollowVia } from './follow-events.js';
import type { DestinationState } from './state.js';
import { loadSubscription, saveSubscription, type SavedSubscription } from './saved-subscription.js';

/** A subscription that delivers notifications: WebSub (through a hub) or XMPP PubSub. */
export interface Push {
  /** Where, for the log: `TOPIC at HUB`, `node NODE at SERVICE`. */
  readonly where: string;
  readonly subscribed: boolean;
  subscribe(): Promise<void>;
  unsubscribe(): Promise<void>;
  close(): Promise<void>;
}

/** What a {@link Push} tells the follow loop. */
export interface PushHost {
  emit(event: FollowEvent): void;
  /** A notification arrived (the bytes as received). */
  receive(bytes: Uint8Array): void;
  /** The notifications stopped (a lost connection, a failed renewal): poll until subscribed again. */
  lost(): void;
  /** Whether notifications are coming. */
  pushing(): boolean;
  catchUp(via: FollowVia): void;
}

/** Listens where a previous run did (`again`, when `wanted` leaves the port open and that one is free), else at `wanted`. */
async function listenAgain(
  handler: (r: Request) => Promise<Response>,
  wanted: { host: string; port: number },
  again: { host: string; port: number } | undefined,
): Promise<Listener> {
  if (again !== undefined && wanted.port === 0 && again.host === wanted.host) {
    try {
      return await listen(handler, again);
    } catch {
      /* its port is taken: a new one */
    }
  }
  return listen(handler, wanted);
}

/**
 * Ends at its hub a subscription a previous run left, answering the hub's verification where that run listened; when
 * its port is taken the hub cannot verify it, and it ends there after its failed deliveries.
 */
async function endSubscription(saved: SavedSubscription, emit: (event: FollowEvent) => void): Promise<void> {
  const callbackUrl = saved.callbackUrl;
  const ref: { subscriber?: Subscriber } = {};
  let listener: Listener;
  try {
    listener = await listen((r) => ref.subscriber!.handle(r), saved.listen);
  } catch {
    emit({ type: 'previous-subscription', callbackUrl, ended: false, reason: 'port in use' });
    return;
  }
  ref.subscriber = new Subscriber({
    hub: saved.hub,
    topic: saved.topic,
    callbackUrl,
    secret: saved.secret,
    verifyTimeoutMs: 5000,
    onNotification: () => undefined,
  });
  try {
    await ref.subscriber.unsubscribe();
    emit({ type: 'previous-subscription', callbackUrl, ended: true });
  } catch (e) {
    emit({ type: 'previous-subscription', callbackUrl, ended: false, reason: messageOf(e) });
  } finally {
    await listener.close();
  }
}

/** Where the WebSub subscription listens and which channel it subscribes to. */
export interface WebSubPushOptions {
  channel: ChangeChannel & { hub: string };
  /**
   * The destination folder (its embedded state), or the state given to `sync` (PostgreSQL, say), and the Capability
   * List: where the subscription is kept for the next run.
   */
  dest: string | DestinationState;
  capabilityList: string;
  listen: { host: string; port: number };
  callbackUrl?: string | undefined;
  /** A callback endpoint served elsewhere (one server for many followers): no listener is opened. */
  mount?: CallbackMount | undefined;
}

/**
 * A WebSub callback endpoint on a server the caller runs (e.g. one per aggregator, a path per Source): `url` is
 * given to the hub; `attach` routes its requests to the handler until the returned `close`.
 */
export interface CallbackMount {
  url: string;
  attach(handler: (r: Request) => Promise<Response>): { port: number; close(): Promise<void> };
}

/**
 * A WebSub subscription with its callback endpoint. The subscription a run killed before left in the state is
 * taken over (same callback, port and secret) when it is for this channel and its port is free, otherwise ended
 * at the hub. Returns the push and the listener of its callback (the caller closes it last).
 */
export async function webSubPush(options: WebSubPushOptions, host: PushHost): Promise<{ push: Push; listener: Pick<Listener, 'port' | 'close'> }> {
  const { channel, dest, capabilityList: key } = options;
  const hub = channel.hub;
  const saved = await loadSubscription(dest, key);
  const same =
    saved?.hub === hub && saved.topic === channel.topic && (options.callbackUrl ?? saved.callbackUrl) === saved.callbackUrl
      ? saved
      : undefined;
  const keep = async (sub: SavedSubscription | undefined): Promise<void> => {
    try {
      await saveSubscription(dest, key, sub);
    } catch (e) {
      host.emit({ type: 'subscription-not-kept', error: e });
    }
  };
  const holder: { websub?: Subscriber } = {};
  const handler = (r: Request): Promise<Response> =>
    holder.websub?.handle(r) ?? Promise.resolve(new Response(null, { status: 404 }));
  const mount = options.mount;
  const listener: Pick<Listener, 'port' | 'close'> = mount !== undefined ? mount.attach(handler) : await listenAgain(handler, options.listen, same?.listen);
  const callbackUrl = mount?.url ?? options.callbackUrl ?? `${(listener as Listener).url}/callback`;
  if (saved !== undefined && saved.callbackUrl !== callbackUrl) await endSubscription(saved, (e) => host.emit(e));
  const websub = (holder.websub = new Subscriber({
    hub,
    topic: channel.topic,
    callbackUrl,
    ...(same !== undefined && same.callbackUrl === callbackUrl ? { secret: same.secret } : {}),
    onNotification: (bytes) => host.receive(bytes),
    onEvent: (e) => {
      if (e.type === 'renew-failed') {
        host.lost();
        host.emit({ type: 'renew-failed' });
      } else if (e.type === 'verified' && e.mode === 'subscribe' && host.pushing()) {
        host.catchUp('reconcile'); // a renewal: what a hub that was away meanwhile did not deliver
      } else if (e.type === 'bad-signature') host.emit({ type: 'bad-signature' });
    },
  }));
  const push: Push = {
    where: `${channel.topic} at ${hub}`,
    get subscribed() {
      return websub.subscribed;
    },
    subscribe: async () => {
      await websub.subscribe();
      const at = { host: options.listen.host, port: listener.port };
      await keep({ hub, topic: channel.topic, callbackUrl, listen: at, secret: websub.secret });
    },
    unsubscribe: async () => {
      await websub.unsubscribe();
      await keep(undefined);
    },
    close: () => Promise.resolve(websub.close()),
  };
  return { push, listener };
}

/** The XMPP PubSub node to follow and the account to follow it with. */
export interface XmppPushOptions {
  account: XmppAccount;
  service: string;
  node: string;
  /** The destination folder: it names the XMPP resource. */
  dest: string;
  signal: AbortSignal;
}

/** An XMPP PubSub subscription to `options.node`. */
export function xmppPush(options: XmppPushOptions, host: PushHost): Push {
  // one resource per host and destination folder: a follower started again after it was killed subscribes the
  // same full JID again, rather than leaving a subscription behind for one that is gone
  const digest = createHash('sha256').update(`${hostname()}\0${resolve(options.dest)}`).digest('hex');
  const resource = `resourcesync-${digest.slice(0, 12)}`;
  const sub = new XmppSubscriber({
    account: { resource, ...options.account },
    service: options.service,
    node: options.node,
    signal: options.signal, // SIGINT/SIGTERM stop a connection or subscription under way
    onNotification: (bytes) => host.receive(bytes),
    onEvent: (e) => {
      if (e.type === 'lost') {
        host.lost();
        host.emit({ type: 'xmpp-lost', ...(e.error ? { error: e.error } : {}) });
      } else if (e.type === 'oversized') {
        host.emit({ type: 'xmpp-oversized', bytes: e.bytes });
        host.catchUp('catch-up');
      }
    },
  });
  return {
    where: `node ${options.node} at ${options.service}`,
    get subscribed() {
      return sub.subscribed;
    },
    subscribe: () => sub.subscribe(),
    unsubscribe: () => sub.unsubscribe(),
    close: () => sub.close(),
  };
}
