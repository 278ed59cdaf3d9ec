/**
 * `resourcesync sync <source-url> <dest> --follow`: a baseline or catch-up first, then it subscribes to
 * the set's change channel (Capability List entry `change-notification` with its hub) and applies the
 * changes as notifications arrive; without a channel, or while the hub cannot be reached, it polls the
 * Change List every `--interval` seconds and goes back to push when the hub answers again.
 *
 * Each notification (or run of notifications arriving together) is applied from its own entries by the
 * library's {@link Follower} (verified and atomic like any sync, the state store kept open); a gap between
 * notification windows (missed notifications) or a change that failed is filled from the Change List. One
 * line per applied batch on stdout (`--json`: one JSON object per line). SIGINT/SIGTERM unsubscribe and
 * end with exit 0, the state saved.
 *
 * With `--xmpp`, the notifications come from the XMPP PubSub node the channel names (`rs:ln` with an `xmpp:` URI,
 * see ../source/notifications.ts) or the one given, instead of the hub; a lost XMPP connection falls back to
 * polling, and it is made again after 1 s, 2 s, 4 s… (at most `--interval`) and at each poll.
 * @see Change Notification §4, §3 (from/until windows); XEP-0060
 */
import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import { stderr, stdout } from 'node:process';
import type { SyncOptions } from '../destination/sync.js';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { originOf } from '../client/authority.js';
import { Follower, type FollowBatch } from '../destination/follower.js';
import { listen, type Listener } from '../notify/node-listener.js';
import { Subscriber } from '../notify/subscriber.js';
import { loadSubscription, saveSubscription, type SavedSubscription } from '../destination/saved-subscription.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';
import { XmppSubscriber } from '../notify/xmpp-subscriber.js';

/** Options of {@link follow}. */
export interface FollowOptions {
  syncOptions: SyncOptions;
  /** `host:port` of the callback listener. Default 127.0.0.1:0. */
  listen: { host: string; port: number };
  /** The callback URL the hub is given; default `http://<listen>/callback`. */
  callbackUrl?: string;
  intervalMs: number;
  /**
   * While subscribed, the Change List is read every this many ms all the same (changes whose notification was lost,
   * a hub that was down), and after each renewal of the subscription. Default 300,000.
   */
  reconcileMs?: number;
  json: boolean;
  signal: AbortSignal;
  log: (line: string) => void;
  /**
   * Push over XMPP PubSub instead of WebSub: the account, and the service and node when not the advertised ones
   * (both or neither).
   */
  xmpp?: { account: XmppAccount; service?: string | undefined; node?: string | undefined };
}

/** A subscription that delivers notifications: WebSub (through a hub) or XMPP PubSub. */
interface Push {
  /** Where, for the log: `TOPIC at HUB`, `node NODE at SERVICE`. */
  readonly where: string;
  readonly subscribed: boolean;
  subscribe(): Promise<void>;
  unsubscribe(): Promise<void>;
  close(): Promise<void>;
}

type Via = 'start' | 'push' | 'poll' | 'catch-up' | 'reconcile' | 'retry';

function printBatch(json: boolean, via: Via, b: Omit<FollowBatch, 'notifications' | 'gaps'> & Partial<FollowBatch>): void {
  const failed = b.failed.length;
  const warnings = b.warnings.slice(0, 20).map((w) => ({ code: w.code, message: w.message }));
  if (json) {
    stdout.write(
      `${JSON.stringify({ time: new Date().toISOString(), via, mode: b.mode, created: b.created, updated: b.updated, deleted: b.deleted, failed, durationMs: b.durationMs, notifications: b.notifications ?? 0, ...(b.window ? { window: b.window } : {}), gaps: b.gaps ?? 0, ...(b.reason !== undefined && via === 'push' ? { changeList: b.reason } : {}), ...(warnings.length > 0 ? { warnings } : {}) })}\n`,
    );
  } else {
    for (const w of warnings) stderr.write(`resourcesync sync: warning: ${w.message}\n`);
    const gaps = b.gaps ?? 0;
    stdout.write(
      `${new Date().toISOString()} ${via}: ${b.mode} created ${b.created}, updated ${b.updated}, deleted ${b.deleted}, failed ${failed}` +
        `${b.window ? ` (window ${b.window.from} .. ${b.window.until}${gaps > 0 ? `, ${gaps} gap(s) filled from the Change List` : ''})` : ''}\n`,
    );
  }
}

/** Listens where a previous run did (`again`, when `wanted` leaves the port open and that one is free), else at `wanted`. */
async function listenAgain(
  handler: (r: Request) => Promise<Response>,
  wanted: FollowOptions['listen'],
  again: FollowOptions['listen'] | undefined,
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
async function endSubscription(saved: SavedSubscription, log: (line: string) => void): Promise<void> {
  const ref: { s?: Subscriber } = {};
  let l: Listener;
  try {
    l = await listen((r) => ref.s!.handle(r), saved.listen);
  } catch {
    log(`resourcesync sync: the subscription of a previous run (${saved.callbackUrl}) cannot be ended (port in use)`);
    return;
  }
  ref.s = new Subscriber({
    hub: saved.hub,
    topic: saved.topic,
    callbackUrl: saved.callbackUrl,
    secret: saved.secret,
    verifyTimeoutMs: 5000,
    onNotification: () => undefined,
  });
  try {
    await ref.s.unsubscribe();
    log(`resourcesync sync: the subscription of a previous run (${saved.callbackUrl}) was ended`);
  } catch (e) {
    const why = messageOf(e);
    log(`resourcesync sync: the subscription of a previous run (${saved.callbackUrl}) was not ended (${why})`);
  } finally {
    await l.close();
  }
}

/** Runs the follow loop until `signal` aborts; resolves with the exit code. */
export async function follow(o: FollowOptions): Promise<number> {
  let mode: 'push' | 'poll' = 'poll';
  let requested: Via = 'catch-up';
  const reconcileMs = o.reconcileMs ?? 300_000;
  // resources that failed: the Change List (which retries them) is read again after 1 s, 2 s, 4 s… at most the
  // reconcile interval, until a batch has no failure
  let retryFailed: NodeJS.Timeout | undefined;
  let failedDelay = 1000;
  const afterBatch = (failed: number): void => {
    if (failed === 0) {
      failedDelay = 1000;
      return;
    }
    if (retryFailed !== undefined || o.signal.aborted) return;
    retryFailed = setTimeout(() => {
      retryFailed = undefined;
      void catchUp('retry');
    }, failedDelay);
    failedDelay = Math.min(failedDelay * 2, reconcileMs);
  };

  // 1. Baseline or catch-up; the follower then holds the destination
  const { follower, first } = await Follower.start({
    ...o.syncOptions,
    signal: o.signal,
    onBatch: (b) => {
      const via: Via = b.notifications > 0 ? 'push' : requested;
      if (b.created + b.updated + b.deleted + b.failed.length + b.warnings.length > 0 || b.notifications > 0) printBatch(o.json, via, b);
      afterBatch(b.failed.length);
    },
    onError: (e) => o.log(`resourcesync sync: ${messageOf(e)}`),
  });
  printBatch(o.json, 'start', first);
  afterBatch(first.failed.length);
  const catchUp = (via: Via): Promise<void> => {
    requested = via;
    return follower.catchUp();
  };

  // 2. The channel: a WebSub subscription (with its callback endpoint) or an XMPP PubSub one
  const ref: { push?: Push } = {};
  let listener: Listener | undefined;
  const polling = `polling every ${o.intervalMs / 1000} s`;
  const channel = await follower.changeChannel().catch((e: unknown) => {
    const why = messageOf(e);
    if (!o.signal.aborted) o.log(`resourcesync sync: the change channel could not be read (${why}); ${polling}`);
    return undefined;
  });
  if (channel?.refusedHub !== undefined && o.xmpp === undefined) {
    o.log(
      `resourcesync sync: the change channel's hub '${channel.refusedHub}' is on an origin this Destination may not contact; not subscribing ` +
        `(allow it with --allow-origin ${originOf(channel.refusedHub) ?? channel.refusedHub}); ${polling}`,
    );
  }
  if (o.xmpp !== undefined) {
    const { service, node } = o.xmpp;
    if ((service === undefined) !== (node === undefined)) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'An XMPP PubSub service and node are given both, or neither (to follow the advertised one).');
    }
    const given = service !== undefined && node !== undefined ? { service, node } : undefined;
    const target = given ?? channel?.xmpp;
    if (target === undefined) {
      o.log(`resourcesync sync: the Source advertises no XMPP node for its change channel (name one: --xmpp xmpp://user@domain/SERVICE?node=NODE); ${polling}`);
    } else {
      // one resource per host and destination folder: a follower started again after it was killed subscribes the
      // same full JID again, rather than leaving a subscription behind for one that is gone
      const resource = `resourcesync-${createHash('sha256').update(`${hostname()}\0${resolve(o.syncOptions.dest)}`).digest('hex').slice(0, 12)}`;
      const sub = new XmppSubscriber({
        account: { resource, ...o.xmpp.account },
        service: target.service,
        node: target.node,
        signal: o.signal, // SIGINT/SIGTERM stop a connection or subscription under way
        onNotification: (bytes) => void follower.receive(bytes),
        onEvent: (e) => {
          if (e.type === 'lost') {
            mode = 'poll';
            o.log(`resourcesync sync: the XMPP connection was lost${e.error ? ` (${e.error.message})` : ''}; ${polling} until it is back`);
            retrySoon();
          } else if (e.type === 'oversized') {
            o.log(`resourcesync sync: an XMPP stanza of about ${e.bytes} bytes was refused (too large); reading the Change List`);
            void catchUp('catch-up');
          }
        },
      });
      ref.push = {
        where: `node ${target.node} at ${target.service}`,
        get subscribed() {
          return sub.subscribed;
        },
        subscribe: () => sub.subscribe(),
        unsubscribe: () => sub.unsubscribe(),
        close: () => sub.close(),
      };
    }
  } else if (channel?.hub !== undefined) {
    const hub = channel.hub;
    const holder: { websub?: Subscriber } = {};
    // the subscription a run killed before left in the state: taken over (same callback, port and secret) when it
    // is for this channel and its port is free, otherwise ended at the hub
    const dest = o.syncOptions.dest;
    const key = follower.capabilityList!;
    const saved = await loadSubscription(dest, key);
    const same =
      saved?.hub === hub && saved.topic === channel.topic && (o.callbackUrl ?? saved.callbackUrl) === saved.callbackUrl
        ? saved
        : undefined;
    const keep = async (sub: SavedSubscription | undefined): Promise<void> => {
      try {
        await saveSubscription(dest, key, sub);
      } catch (e) {
        const why = messageOf(e);
        o.log(`resourcesync sync: the subscription could not be kept in the state (${why})`);
      }
    };
    const handler = (r: Request): Promise<Response> =>
      holder.websub?.handle(r) ?? Promise.resolve(new Response(null, { status: 404 }));
    listener = await listenAgain(handler, o.listen, same?.listen);
    const callbackUrl = o.callbackUrl ?? `${listener.url}/callback`;
    if (saved !== undefined && saved.callbackUrl !== callbackUrl) await endSubscription(saved, o.log);
    const websub = new Subscriber({
      hub,
      topic: channel.topic,
      callbackUrl,
      ...(same !== undefined && same.callbackUrl === callbackUrl ? { secret: same.secret } : {}),
      onNotification: (bytes) => void follower.receive(bytes),
      onEvent: (e) => {
        if (e.type === 'renew-failed') {
          mode = 'poll';
          o.log(`resourcesync sync: lease renewal failed; ${polling}`);
        } else if (e.type === 'verified' && e.mode === 'subscribe' && mode === 'push') {
          void catchUp('reconcile'); // a renewal: what a hub that was away meanwhile did not deliver
        } else if (e.type === 'bad-signature')
          o.log('resourcesync sync: a notification with a bad signature was ignored');
      },
    });
    holder.websub = websub;
    ref.push = {
      where: `${channel.topic} at ${hub}`,
      get subscribed() {
        return websub.subscribed;
      },
      subscribe: async () => {
        await websub.subscribe();
        const listen = { host: o.listen.host, port: listener!.port };
        await keep({ hub, topic: channel.topic, callbackUrl, listen, secret: websub.secret });
      },
      unsubscribe: async () => {
        await websub.unsubscribe();
        await keep(undefined);
      },
      close: () => Promise.resolve(websub.close()),
    };
  } else if (channel?.refusedHub === undefined) {
    o.log(`resourcesync sync: the Source offers no change notification channel; ${polling}`);
  }

  let subscribing: Promise<void> | undefined;
  // after a lost XMPP connection (or a failed attempt), subscribing again after 1 s, 2 s, 4 s… up to the interval,
  // not only at the next poll
  let retry: NodeJS.Timeout | undefined;
  let delay = 1000;
  const retrySoon = (): void => {
    if (o.xmpp === undefined || retry !== undefined || o.signal.aborted) return;
    retry = setTimeout(() => {
      retry = undefined;
      void trySubscribe().then(() => {
        if (mode === 'push' && ref.push?.subscribed === true) delay = 1000;
        else retrySoon(); // (an attempt already under way when this one was due, and the connection lost since)
      });
    }, Math.min(delay, o.intervalMs));
    delay *= 2;
  };
  const trySubscribe = (): Promise<void> =>
    (subscribing ??= (async () => {
      const push = ref.push;
      if (push === undefined || o.signal.aborted || (mode === 'push' && push.subscribed)) return;
      try {
        await push.subscribe();
        if (mode === 'poll') o.log(`resourcesync sync: subscribed to ${push.where}`);
        mode = 'push';
        await catchUp('catch-up'); // changes between the first sync (or the loss) and the subscription
      } catch (e) {
        if (mode === 'push' || push.subscribed || o.signal.aborted) return;
        o.log(`resourcesync sync: subscription failed (${messageOf(e)}); ${polling}`);
        retrySoon();
      }
    })().finally(() => (subscribing = undefined)));
  await trySubscribe();

  // 3. Polling while not pushed to; retry the subscription at each tick
  await new Promise<void>((resolve) => {
    if (o.signal.aborted) {
      resolve(); // (while subscribing: the signal came before this listener)
      return;
    }
    const tick = setInterval(() => {
      if (mode === 'poll') void catchUp('poll').then(trySubscribe);
    }, o.intervalMs);
    // while pushed to: the Change List all the same, for what no notification brought
    const reconcile = setInterval(() => {
      if (mode === 'push') void catchUp('reconcile');
    }, reconcileMs);
    o.signal.addEventListener(
      'abort',
      () => {
        clearInterval(tick);
        clearInterval(reconcile);
        clearTimeout(retry);
        clearTimeout(retryFailed);
        resolve();
      },
      { once: true },
    );
  });

  // 4. Stop: unsubscribe (bounded), wait for the batch in flight, let the destination go
  await subscribing;
  if (ref.push?.subscribed === true) {
    await ref.push
      .unsubscribe()
      .catch((e: unknown) =>
        o.log(`resourcesync sync: unsubscribe failed: ${messageOf(e)}`),
      );
  }
  await ref.push?.close();
  await follower.close();
  await listener?.close();
  return 0;
}
