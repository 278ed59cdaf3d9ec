/**
 * Following a Source: a baseline or catch-up first, then the set's change channel (Capability List entry
 * `change-notification` with its hub, or an XMPP PubSub node) is subscribed to and the changes are applied as
 * notifications arrive; without a channel, or while it cannot be reached, the Change List is polled every
 * `intervalMs` and push resumes when the channel answers again. While pushed to, the Change List is read every
 * `reconcileMs` all the same; resources that failed are retried from it after 1 s, 2 s, 4 s… (at most
 * `reconcileMs`).
 *
 * Each notification (or run of notifications arriving together) is applied by the {@link Follower} (verified and
 * atomic like any sync). The library prints nothing: batches and what happened to the channel are
 * {@link FollowEvent}s. Aborting `signal` unsubscribes, waits for the batch in flight and lets the destination go.
 * @see Change Notification §4, §3 (from/until windows); XEP-0060
 */
import { ResourceSyncError } from '../core/errors.js';
import type { Listener } from '../notify/node-listener.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';
import type { ChangeChannel } from './change-channel.js';
import type { FollowEvent, FollowVia } from './follow-events.js';
import { webSubPush, xmppPush, type CallbackMount, type Push, type PushHost } from './follow-push.js';
import { Follower } from './follower.js';
import type { SyncOptions, SyncReport } from './sync.js';

export type { FollowEvent, FollowVia } from './follow-events.js';
export type { CallbackMount } from './follow-push.js';

/** Options of {@link followSource}. */
export interface FollowSourceOptions {
  /** The Source, the destination and how to sync (the first run included). */
  sync: SyncOptions;
  /** `host:port` of the WebSub callback listener (port 0: any). */
  listen: { host: string; port: number };
  /** The callback URL the hub is given; default `http://<listen>/callback`. */
  callbackUrl?: string | undefined;
  /** The callback served on the caller's server instead of a listener of its own (`listen` is then unused). */
  callbackMount?: CallbackMount | undefined;
  /** Polling interval while not pushed to (ms). */
  intervalMs: number;
  /** While pushed to, the Change List is read every this many ms all the same. Default 300,000. */
  reconcileMs?: number | undefined;
  /** Push over XMPP PubSub instead of WebSub: the account, and the service and node when not the advertised ones (both or neither). */
  xmpp?: { account: XmppAccount; service?: string | undefined; node?: string | undefined } | undefined;
  /** Aborting it stops following. */
  signal: AbortSignal;
  /** Observes batches and the channel; never throws into the loop. */
  onEvent?: (event: FollowEvent) => void;
}

/** A running follow loop (see {@link followSource}). */
export interface FollowHandle {
  /** The first sync. */
  readonly first: SyncReport;
  /** Whether notifications are coming (`push`) or the Change List is polled. */
  readonly mode: 'push' | 'poll';
  /** Resolves once `signal` aborted and the loop stopped. */
  readonly done: Promise<void>;
}

/**
 * Follows a Source until `options.signal` aborts. Resolves once the first sync is applied and the channel is
 * subscribed to (or polling began); rejects when the first sync fails or the options contradict each other.
 * @example
 * const controller = new AbortController();
 * const following = await followSource({ sync: { source, dest }, listen: { host: '127.0.0.1', port: 0 },
 *   intervalMs: 60_000, signal: controller.signal, onEvent: (e) => console.log(e) });
 * // … controller.abort(); await following.done;
 */
export async function followSource(options: FollowSourceOptions): Promise<FollowHandle> {
  const { service, node } = options.xmpp ?? {};
  if ((service === undefined) !== (node === undefined)) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'An XMPP PubSub service and node are given both, or neither (to follow the advertised one).');
  }
  const loop = new FollowLoop(options);
  const first = await loop.start();
  const done = loop.run();
  return {
    first,
    get mode() {
      return loop.mode;
    },
    done,
  };
}

/** The follow loop's state: push or poll, the follower, the push channel and the timers. */
class FollowLoop implements PushHost {
  mode: 'push' | 'poll' = 'poll';
  private readonly options: FollowSourceOptions;
  private readonly reconcileMs: number;
  /** Why the next batch read the Change List (a batch with notifications is `push`). */
  private requested: FollowVia = 'catch-up';
  private follower: Follower | undefined;
  private push: Push | undefined;
  private listener: Pick<Listener, 'close'> | undefined;
  private subscribing: Promise<void> | undefined;
  /** Resources failed: the Change List (which retries them) is read again after this delay, doubled each time. */
  private retryFailed: NodeJS.Timeout | undefined;
  private failedDelay = 1000;
  /** After a lost XMPP connection (or a failed attempt): subscribing again after 1 s, 2 s, 4 s… up to the interval. */
  private retry: NodeJS.Timeout | undefined;
  private retryDelay = 1000;

  constructor(options: FollowSourceOptions) {
    this.options = options;
    this.reconcileMs = options.reconcileMs ?? 300_000;
  }

  emit(event: FollowEvent): void {
    try {
      this.options.onEvent?.(event);
    } catch {
      // an observer never breaks the loop
    }
  }

  receive(bytes: Uint8Array): void {
    void this.follower?.receive(bytes);
  }

  lost(): void {
    this.mode = 'poll';
    this.retrySoon();
  }

  pushing(): boolean {
    return this.mode === 'push';
  }

  catchUp(via: FollowVia): void {
    void this.readChangeList(via);
  }

  /** The first sync (baseline or catch-up), then the channel, subscribed to. */
  async start(): Promise<SyncReport> {
    const { follower, first } = await Follower.start({
      ...this.options.sync,
      signal: this.options.signal,
      onBatch: (batch) => {
        this.emit({ type: 'batch', via: batch.notifications > 0 ? 'push' : this.requested, batch });
        this.afterBatch(batch.failed.length);
      },
      onError: (error) => this.emit({ type: 'error', error }),
    });
    this.follower = follower;
    this.emit({ type: 'started', report: first });
    this.afterBatch(first.failed.length);
    await this.openChannel(follower);
    await this.trySubscribe();
    return first;
  }

  /** Polls while not pushed to (retrying the subscription at each tick) and reconciles while pushed to, until the signal; then stops. */
  async run(): Promise<void> {
    const { signal, intervalMs } = this.options;
    await new Promise<void>((resolve) => {
      if (signal.aborted) {
        resolve(); // (while subscribing: the signal came before this listener)
        return;
      }
      const tick = setInterval(() => {
        if (this.mode === 'poll') void this.readChangeList('poll').then(() => this.trySubscribe());
      }, intervalMs);
      const reconcile = setInterval(() => {
        if (this.mode === 'push') this.catchUp('reconcile');
      }, this.reconcileMs);
      const stop = (): void => {
        clearInterval(tick);
        clearInterval(reconcile);
        clearTimeout(this.retry);
        clearTimeout(this.retryFailed);
        resolve();
      };
      signal.addEventListener('abort', stop, { once: true });
    });
    await this.stop();
  }

  private readChangeList(via: FollowVia): Promise<void> {
    this.requested = via;
    return this.follower!.catchUp();
  }

  /** Resources failed: the Change List again after 1 s, 2 s, 4 s… at most the reconcile interval, until a batch has none. */
  private afterBatch(failed: number): void {
    if (failed === 0) {
      this.failedDelay = 1000;
      return;
    }
    if (this.retryFailed !== undefined || this.options.signal.aborted) return;
    this.retryFailed = setTimeout(() => {
      this.retryFailed = undefined;
      this.catchUp('retry');
    }, this.failedDelay);
    this.failedDelay = Math.min(this.failedDelay * 2, this.reconcileMs);
  }

  /** Reads the change channel and makes its push: a WebSub subscription with its callback endpoint, or an XMPP one. */
  private async openChannel(follower: Follower): Promise<void> {
    const { signal, xmpp } = this.options;
    const channel: ChangeChannel | undefined = await follower.changeChannel().catch((error: unknown) => {
      if (!signal.aborted) this.emit({ type: 'channel-unreadable', error });
      return undefined;
    });
    if (channel?.refusedHub !== undefined && xmpp === undefined) this.emit({ type: 'hub-refused', hub: channel.refusedHub });
    const { dest, state } = this.options.sync;
    if (xmpp !== undefined) {
      const { service, node } = xmpp;
      const target = service !== undefined && node !== undefined ? { service, node } : channel?.xmpp;
      // a state of its own (a set of the Source): a resource of its own, beside the other sets' followers
      const resourceOf = state === undefined ? dest : `${dest}\0${follower.capabilityList ?? ''}`;
      if (target === undefined) this.emit({ type: 'no-xmpp-node' });
      else this.push = xmppPush({ account: xmpp.account, ...target, dest: resourceOf, signal }, this);
    } else if (channel?.hub !== undefined) {
      const { listen, callbackUrl, callbackMount } = this.options;
      const websub = await webSubPush(
        { channel: { ...channel, hub: channel.hub }, dest: state ?? dest, capabilityList: follower.capabilityList!, listen, callbackUrl, mount: callbackMount },
        this,
      );
      this.push = websub.push;
      this.listener = websub.listener;
    } else if (channel?.refusedHub === undefined) this.emit({ type: 'no-channel' });
  }

  private retrySoon(): void {
    if (this.options.xmpp === undefined || this.retry !== undefined || this.options.signal.aborted) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.trySubscribe().then(() => {
        if (this.mode === 'push' && this.push?.subscribed === true) this.retryDelay = 1000;
        else this.retrySoon(); // (an attempt already under way when this one was due, and the connection lost since)
      });
    }, Math.min(this.retryDelay, this.options.intervalMs));
    this.retryDelay *= 2;
  }

  private trySubscribe(): Promise<void> {
    return (this.subscribing ??= this.subscribe().finally(() => (this.subscribing = undefined)));
  }

  private async subscribe(): Promise<void> {
    const push = this.push;
    if (push === undefined || this.options.signal.aborted || (this.mode === 'push' && push.subscribed)) return;
    try {
      await push.subscribe();
      if (this.mode === 'poll') this.emit({ type: 'subscribed', where: push.where });
      this.mode = 'push';
      await this.readChangeList('catch-up'); // changes between the first sync (or the loss) and the subscription
    } catch (error) {
      if (this.mode === 'push' || push.subscribed || this.options.signal.aborted) return;
      this.emit({ type: 'subscribe-failed', error });
      this.retrySoon();
    }
  }

  /** Unsubscribes (bounded), waits for the batch in flight, lets the destination go. */
  private async stop(): Promise<void> {
    await this.subscribing;
    if (this.push?.subscribed === true) {
      await this.push.unsubscribe().catch((error: unknown) => this.emit({ type: 'unsubscribe-failed', error }));
    }
    await this.push?.close();
    await this.follower?.close();
    await this.listener?.close();
  }
}
