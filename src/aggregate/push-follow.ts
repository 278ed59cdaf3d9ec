/**
 * A Source of the aggregate followed by push: the follower (`followSource`, as `sync --follow` runs it) subscribes
 * through the Source's hub with the aggregator's callback, applies each batch of Change Notifications to the
 * Source's mirror and reads the Change List as reconciliation; while the hub cannot be reached it polls the Change
 * List at the Source's interval and subscribes again. Each batch that changed something is published.
 * @see Change Notification §4; Z39.99 §14.8
 */
import { followSource, type CallbackMount, type FollowEvent, type FollowHandle } from '../destination/follow.js';
import type { AggregateSource } from './config.js';
import { addCounts, appliedOrder, countResources, emptyResult, sourceSyncOptions, type SourceSyncOptions, type SourceSyncResult } from './source-mirror.js';

/** What a Source followed by push reports. */
export interface PushFollowEvents {
  /** A batch applied after the first sync (a reconciliation that changed nothing included: the Source is in step). */
  onBatch(result: SourceSyncResult): void;
  /** A batch that failed, a hub that refused or was lost: following goes on (polling meanwhile). */
  onProblem(error: unknown): void;
  /** The mode in use changed (push while subscribed, else poll). */
  onMode(mode: 'push' | 'poll'): void;
}

/** A Source being followed. */
export interface PushFollowing {
  /** The first sync, applied. */
  readonly first: SourceSyncResult;
  /** False when the Source advertises no change channel (or only a hub it may not use): the follower only polls. */
  readonly channel: boolean;
  readonly mode: 'push' | 'poll';
  /** Unsubscribes and stops (the batch in flight ends first). */
  stop(): Promise<void>;
}

/** Whether a Source is followed through the follower (push, or auto): not when it takes some capability sets only (polled). */
export function followable(source: AggregateSource): boolean {
  return source.mode !== 'poll' && source.capabilitySets === undefined;
}

/**
 * Starts following `source`: resolves once the first sync is applied and the channel subscribed to (or polling
 * began: `mode` says which); rejects as `sync` does when the first sync fails.
 */
export async function followByPush(
  out: string,
  source: AggregateSource,
  options: Omit<SourceSyncOptions, 'signal'> & { mount: CallbackMount; reconcileMs?: number; startSignal?: AbortSignal },
  events: PushFollowEvents,
): Promise<PushFollowing> {
  const controller = new AbortController();
  // the first sync (and subscription) ends with `startSignal` (a timeout, the aggregator closing); following does not
  const abortStart = (): void => controller.abort();
  options.startSignal?.addEventListener('abort', abortStart, { once: true });
  const started = performance.now();
  let mode: 'push' | 'poll' = 'poll';
  let channel = true;
  const setMode = (m: 'push' | 'poll'): void => {
    if (m === mode) return;
    mode = m;
    events.onMode(m);
  };
  // the paths each batch changed, in the order applied (the first sync's, then each batch's)
  const order = appliedOrder();
  const onEvent = (e: FollowEvent): void => {
    if (e.type === 'subscribed') setMode('push');
    else if (e.type === 'no-channel' || e.type === 'hub-refused') channel = false;
    else if (e.type === 'renew-failed') setMode('poll');
    else if (e.type === 'error' || e.type === 'subscribe-failed' || e.type === 'channel-unreadable') events.onProblem(e.error);
    else if (e.type === 'batch') {
      const batchStarted = performance.now();
      const r = emptyResult();
      addCounts(r, e.batch);
      const applied = order.take();
      if (applied !== undefined) r.applied = applied;
      void countResources(out, source, options.engine).then(
        (n) => events.onBatch({ ...r, resources: n, durationMs: Math.round(performance.now() - batchStarted) }),
        (error: unknown) => events.onProblem(error),
      );
    }
  };
  let handle: FollowHandle;
  // a state in PostgreSQL is opened here, held while following and closed once it stopped
  const state = options.engine === undefined ? undefined : await options.engine.openState(source, undefined, { readonly: false });
  const storage = options.storageFor?.(source.id);
  const closeState = async (): Promise<void> => {
    storage?.close();
    await state?.close();
  };
  try {
    handle = await followSource({
      sync: { ...sourceSyncOptions(out, source, { ...options, signal: controller.signal }), onPlan: order.onPlan, ...(state === undefined ? {} : { state }), ...(storage === undefined ? {} : { storage }) },
      listen: { host: '127.0.0.1', port: 0 },
      callbackMount: options.mount,
      intervalMs: source.interval * 1000,
      ...(options.reconcileMs === undefined ? {} : { reconcileMs: options.reconcileMs }),
      signal: controller.signal,
      onEvent,
    });
  } catch (error) {
    controller.abort();
    await closeState();
    throw error;
  } finally {
    options.startSignal?.removeEventListener('abort', abortStart);
  }
  mode = handle.mode;
  const first = emptyResult();
  addCounts(first, handle.first);
  const applied = order.take();
  if (applied !== undefined) first.applied = applied;
  first.resources = await countResources(out, source, options.engine);
  first.durationMs = Math.round(performance.now() - started);
  return {
    first,
    channel,
    get mode() {
      return handle.mode;
    },
    stop: async () => {
      controller.abort();
      await handle.done;
      await closeState();
    },
  };
}
