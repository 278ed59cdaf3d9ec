/**
 * A Source of the aggregate followed by push: the follower (`followSource`, as `sync --follow` runs it) subscribes
 * to the Source's change channel (through its WebSub hub with the aggregator's callback, or to its XMPP PubSub
 * node with the configured account), applies each batch of Change Notifications to the Source's mirror and reads
 * the Change List as reconciliation; while the channel cannot be reached it polls the Change List at the Source's
 * interval and subscribes again. Each batch that changed something is published.
 *
 * A Source with `capability-sets` is followed set by set: each chosen set through its own change channel and
 * callback (`<id>~<n>`), with its own Destination state in `<out>/sources/<id>/sets/<n>/` (cursor, records and the
 * subscription kept for the next run), all of them writing into the one mirror; a set whose Capability List
 * advertises no channel is polled on its own.
 * @see Change Notification §4 (WebSub), Change Notification 1.0.1 (XMPP PubSub); Z39.99 §14.8
 */
import { ResourceSyncError } from '../core/errors.js';
import { parseXmppAccountUri } from '../core/xmpp-uri.js';
import { followSource, type CallbackMount, type FollowEvent, type FollowHandle } from '../destination/follow.js';
import { LocalDirectory } from '../destination/local-directory.js';
import { openSqliteDestinationState } from '../destination/sqlite-state.js';
import type { DestinationState } from '../destination/state.js';
import type { SyncOptions, SyncReport } from '../destination/sync.js';
import { durabilityFor } from '../node/durability-for.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';
import type { AggregateSource, XmppCredentials } from './config.js';
import { addCounts, appliedOrder, countResources, emptyResult, mirrorDir, sourceSyncOptions, stateDirs, type SourceSyncOptions, type SourceSyncResult } from './source-mirror.js';

/** What a Source followed by push reports. */
export interface PushFollowEvents {
  /** A batch applied after the first sync (a reconciliation that changed nothing included: the Source is in step). */
  onBatch(result: SourceSyncResult): void;
  /** A batch that failed, a channel that refused or was lost: following goes on (polling meanwhile). */
  onProblem(error: unknown): void;
  /** The mode in use changed (push while subscribed, every chosen set subscribed; else poll). */
  onMode(mode: 'push' | 'poll'): void;
}

/** A Source being followed. */
export interface PushFollowing {
  /** The first sync, applied (every chosen set). */
  readonly first: SourceSyncResult;
  /** False when no set of the Source advertises a change channel it may use: the follower only polls. */
  readonly channel: boolean;
  readonly mode: 'push' | 'poll';
  /** Unsubscribes and stops (the batch in flight ends first). */
  stop(): Promise<void>;
}

/** How the aggregator follows a Source. */
export interface PushFollowOptions extends Omit<SourceSyncOptions, 'signal'> {
  /** The callback endpoint for a key: the Source's id, then `~<n>` for its n-th chosen set. */
  mount: (suffix: string) => CallbackMount;
  reconcileMs?: number;
  /** Ends the first sync (and subscription): a timeout, the aggregator closing. Following does not end with it. */
  startSignal?: AbortSignal;
}

/** Whether a Source is followed through the follower (push, or auto), its chosen capability sets included. */
export function followable(source: AggregateSource): boolean {
  return source.mode !== 'poll';
}

/**
 * The XMPP account of `credentials`, read from `env` (at each attempt, never written anywhere).
 * @throws ResourceSyncError RS_INVALID_ARGUMENT: a variable unset, or an account that is not one
 */
function xmppAccountFor(credentials: XmppCredentials, env: Record<string, string | undefined>): XmppAccount {
  const value = (name: string, what: string): string => {
    const v = env[name];
    if (v === undefined || v === '') {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Environment variable ${name} (xmpp ${what}) is not set.`, { data: { env: name } });
    }
    return v;
  };
  const jid = value(credentials.jid, 'jid');
  const password = value(credentials.password, 'password');
  const u = parseXmppAccountUri(jid.startsWith('xmpp://') ? jid : `xmpp://${jid}`);
  if (u.service !== undefined) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The XMPP account in ${credentials.jid} names a PubSub service: the node followed is the one each Source advertises.`, { data: { env: credentials.jid } });
  }
  return { jid: u.jid, password, host: u.host, port: u.port };
}

/** The mirror as one set's follower writes it: staged files are discarded once for all the sets, not by each. */
class SharedMirror extends LocalDirectory {
  override discardStaged(): Promise<void> {
    return Promise.resolve();
  }
}

/** One followed part of a Source: the Source whole, or one chosen set. */
interface Part {
  first: SyncReport;
  /** The paths the first sync changed, in the order applied (undefined: too many to keep). */
  firstApplied: string[] | undefined;
  channel: boolean;
  readonly mode: 'push' | 'poll';
  stop(): Promise<void>;
}

/**
 * Starts following `source` (each chosen set in turn): resolves once the first sync is applied and the channels
 * subscribed to (or polling began: `mode` says which); rejects as `sync` does when a first sync fails.
 */
export async function followByPush(out: string, source: AggregateSource, options: PushFollowOptions, events: PushFollowEvents): Promise<PushFollowing> {
  const startedAt = performance.now();
  const xmpp = source.xmpp === undefined ? undefined : xmppAccountFor(source.xmpp, options.env);
  const parts: Part[] = [];
  let mode: 'push' | 'poll' = 'poll';
  let started = false; // the mode is the Source's once every set is followed
  const modeNow = (): 'push' | 'poll' => (parts.length > 0 && parts.every((p) => p.mode === 'push') ? 'push' : 'poll');
  const hooks: PartHooks = {
    onModeChange: () => {
      if (!started) return;
      const m = modeNow();
      if (m === mode) return;
      mode = m;
      events.onMode(m);
    },
    onBatch: (batch, ms, applied) => {
      const r = emptyResult();
      addCounts(r, batch);
      if (applied !== undefined) r.applied = applied;
      void countResources(out, source, options.engine).then(
        (n) => events.onBatch({ ...r, resources: n, durationMs: ms }),
        (error: unknown) => events.onProblem(error),
      );
    },
    onProblem: (error) => events.onProblem(error),
  };
  const sets = source.capabilitySets;
  try {
    if (sets === undefined) parts.push(await followPart(out, source, undefined, { ...options, xmpp }, hooks));
    else {
      await new LocalDirectory(mirrorDir(out, source.id)).discardStaged(); // what a killed run left staged
      for (const i of sets.keys()) parts.push(await followPart(out, source, i, { ...options, xmpp }, hooks));
    }
  } catch (error) {
    await Promise.all(parts.map((p) => p.stop()));
    throw error;
  }
  mode = modeNow();
  started = true;
  const first = emptyResult();
  for (const p of parts) addCounts(first, p.first);
  const applied = parts.map((p) => p.firstApplied);
  if (applied.every((a) => a !== undefined)) first.applied = applied.flat();
  first.resources = await countResources(out, source, options.engine);
  first.durationMs = Math.round(performance.now() - startedAt);
  return {
    first,
    channel: parts.some((p) => p.channel),
    get mode() {
      return modeNow();
    },
    stop: async () => {
      await Promise.all(parts.map((p) => p.stop()));
    },
  };
}

/** What each part tells the Source's following. */
interface PartHooks {
  onModeChange(): void;
  onBatch(batch: Parameters<typeof addCounts>[1], ms: number, applied: string[] | undefined): void;
  onProblem(error: unknown): void;
}

/**
 * Follows the Source whole (`set` undefined) or its set `set` with that set's state. With an XMPP account and a
 * channel that names no XMPP node, follows again through the WebSub hub.
 */
async function followPart(
  out: string,
  source: AggregateSource,
  set: number | undefined,
  options: PushFollowOptions & { xmpp: XmppAccount | undefined },
  hooks: PartHooks,
): Promise<Part> {
  // a state in PostgreSQL (the Source whole or a set), or a set's own SQLite file; the Source whole: its mirror's
  const state: DestinationState | undefined =
    options.engine !== undefined ? await options.engine.openState(source, set, { readonly: false }) : set === undefined ? undefined : await openSqliteDestinationState(stateDirs(out, source)[set]!);
  // the copies in a bucket (out: s3://…), else in the mirror folder, shared by the sets
  const bucket = options.storageFor?.(source.id);
  const storage = bucket ?? (set === undefined ? undefined : new SharedMirror(mirrorDir(out, source.id), { durability: durabilityFor() }));
  const release = async (): Promise<void> => {
    bucket?.close();
    await state?.close();
  };
  // the paths each batch changed, in the order applied (the first sync's, then each batch's)
  const order = appliedOrder();
  const base: SyncOptions = {
    ...sourceSyncOptions(out, source, { ...options, signal: AbortSignal.any([]) }),
    onPlan: order.onPlan,
    ...(set === undefined ? {} : { capabilityList: source.capabilitySets![set]! }),
    ...(state === undefined ? {} : { state }),
    ...(storage === undefined ? {} : { storage }),
  };
  try {
    const o = { ...options, intervalMs: source.interval * 1000 };
    const partHooks: PartHooks = { ...hooks, onBatch: (batch, ms) => hooks.onBatch(batch, ms, order.take()) };
    let run = await followOnce(base, set, o, options.xmpp, partHooks);
    if (run.noXmppNode) {
      await run.stop(); // the Source advertises no XMPP node: its WebSub hub, if any
      run = await followOnce(base, set, o, undefined, partHooks);
    }
    const r = run;
    return {
      first: r.handle.first,
      firstApplied: order.take(),
      channel: r.channel,
      get mode() {
        return r.handle.mode;
      },
      stop: async () => {
        await r.stop();
        await release();
      },
    };
  } catch (error) {
    await release();
    throw error;
  }
}

/** One run of the follower over a part. */
async function followOnce(
  base: SyncOptions,
  set: number | undefined,
  options: PushFollowOptions & { intervalMs: number },
  xmpp: XmppAccount | undefined,
  hooks: PartHooks,
): Promise<{ handle: FollowHandle; channel: boolean; noXmppNode: boolean; stop(): Promise<void> }> {
  const controller = new AbortController();
  const abortStart = (): void => controller.abort();
  options.startSignal?.addEventListener('abort', abortStart, { once: true });
  let channel = true;
  let noXmppNode = false;
  let handle: FollowHandle | undefined;
  const onEvent = (e: FollowEvent): void => {
    if (e.type === 'subscribed' || e.type === 'renew-failed' || e.type === 'xmpp-lost') queueMicrotask(() => hooks.onModeChange());
    if (e.type === 'no-channel' || e.type === 'hub-refused') channel = false;
    else if (e.type === 'no-xmpp-node') noXmppNode = true;
    else if (e.type === 'error' || e.type === 'subscribe-failed' || e.type === 'channel-unreadable') hooks.onProblem(e.error);
    else if (e.type === 'batch') hooks.onBatch(e.batch, Math.round(e.batch.durationMs), undefined);
  };
  try {
    handle = await followSource({
      sync: { ...base, signal: controller.signal },
      listen: { host: '127.0.0.1', port: 0 },
      callbackMount: options.mount(set === undefined ? '' : `~${set}`),
      intervalMs: options.intervalMs,
      ...(options.reconcileMs === undefined ? {} : { reconcileMs: options.reconcileMs }),
      ...(xmpp === undefined ? {} : { xmpp: { account: xmpp } }),
      signal: controller.signal,
      onEvent,
    });
  } catch (error) {
    controller.abort();
    throw error;
  } finally {
    options.startSignal?.removeEventListener('abort', abortStart);
  }
  const h = handle;
  return {
    handle: h,
    channel,
    noXmppNode,
    stop: async () => {
      controller.abort();
      await h.done;
    },
  };
}
