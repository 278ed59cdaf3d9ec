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
 * @see Change Notification §4, §3 (from/until windows)
 */
import { stderr, stdout } from 'node:process';
import type { SyncOptions } from '../destination/sync.js';
import { readDocument } from '../core/xml/read-document.js';
import { Follower, type FollowBatch } from '../notify/follower.js';
import { listen, type Listener } from '../notify/node-listener.js';
import { Subscriber } from '../notify/subscriber.js';

/** Options of {@link follow}. */
export interface FollowOptions {
  syncOptions: SyncOptions;
  /** `host:port` of the callback listener. Default 127.0.0.1:0. */
  listen: { host: string; port: number };
  /** The callback URL the hub is given; default `http://<listen>/callback`. */
  callbackUrl?: string;
  intervalMs: number;
  json: boolean;
  signal: AbortSignal;
  log: (line: string) => void;
}

interface Channel {
  hub: string;
  topic: string;
}

/** The change channel advertised by a Capability List, if any. @see Change Notification §4 (Example 7) */
async function changeChannel(capabilityList: string, signal: AbortSignal): Promise<Channel | undefined> {
  const res = await fetch(capabilityList, { signal, redirect: 'error' });
  if (res.status !== 200) {
    await res.body?.cancel();
    return undefined;
  }
  const reader = await readDocument(new Uint8Array(await res.arrayBuffer()));
  for await (const e of reader.entries) {
    const cap = e.md?.capability;
    if (cap === 'change-notification' || cap === 'changelist-notification') {
      const hub = e.ln?.find((l) => l.rel === 'hub')?.href;
      if (hub !== undefined) return { hub, topic: e.loc };
    }
  }
  return undefined;
}

type Via = 'start' | 'push' | 'poll' | 'catch-up';

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

/** Runs the follow loop until `signal` aborts; resolves with the exit code. */
export async function follow(o: FollowOptions): Promise<number> {
  let mode: 'push' | 'poll' = 'poll';
  let requested: Via = 'catch-up';

  // 1. Baseline or catch-up; the follower then holds the destination
  const { follower, first } = await Follower.start({
    ...o.syncOptions,
    signal: o.signal,
    onBatch: (b) => {
      const via: Via = b.notifications > 0 ? 'push' : requested;
      if (b.created + b.updated + b.deleted + b.failed.length + b.warnings.length > 0 || b.notifications > 0) printBatch(o.json, via, b);
    },
    onError: (e) => o.log(`resourcesync sync: ${e instanceof Error ? e.message : String(e)}`),
  });
  printBatch(o.json, 'start', first);
  const catchUp = (via: Via): Promise<void> => {
    requested = via;
    return follower.catchUp();
  };

  // 2. The callback endpoint
  const ref: { sub?: Subscriber } = {};
  let listener: Listener | undefined;
  const capabilityList = follower.capabilityList;
  const channel =
    capabilityList === undefined ? undefined : await changeChannel(capabilityList, o.signal).catch(() => undefined);
  if (channel !== undefined) {
    listener = await listen(
      (r) => ref.sub?.handle(r) ?? Promise.resolve(new Response(null, { status: 404 })),
      o.listen,
    );
    ref.sub = new Subscriber({
      hub: channel.hub,
      topic: channel.topic,
      callbackUrl: o.callbackUrl ?? `${listener.url}/callback`,
      onNotification: (bytes) => void follower.receive(bytes),
      onEvent: (e) => {
        if (e.type === 'renew-failed') {
          mode = 'poll';
          o.log(`resourcesync sync: lease renewal failed; polling every ${o.intervalMs / 1000} s`);
        } else if (e.type === 'bad-signature')
          o.log('resourcesync sync: a notification with a bad signature was ignored');
      },
    });
  } else {
    o.log(
      `resourcesync sync: the Source offers no change notification channel; polling every ${o.intervalMs / 1000} s`,
    );
  }

  const trySubscribe = async (): Promise<void> => {
    if (ref.sub === undefined) return;
    try {
      await ref.sub.subscribe();
      if (mode === 'poll') o.log(`resourcesync sync: subscribed to ${channel!.topic} at ${channel!.hub}`);
      mode = 'push';
      await catchUp('catch-up'); // changes between the first sync and the subscription
    } catch (e) {
      if (mode === 'push' || ref.sub.subscribed) return;
      o.log(
        `resourcesync sync: subscription failed (${e instanceof Error ? e.message : String(e)}); polling every ${o.intervalMs / 1000} s`,
      );
    }
  };
  await trySubscribe();

  // 3. Polling while not pushed to; retry the subscription at each tick
  await new Promise<void>((resolve) => {
    const tick = setInterval(() => {
      if (mode === 'poll') void catchUp('poll').then(trySubscribe);
    }, o.intervalMs);
    o.signal.addEventListener(
      'abort',
      () => {
        clearInterval(tick);
        resolve();
      },
      { once: true },
    );
  });

  // 4. Stop: unsubscribe (bounded), wait for the batch in flight, let the destination go
  if (ref.sub?.subscribed === true) {
    await ref.sub
      .unsubscribe()
      .catch((e: unknown) =>
        o.log(`resourcesync sync: unsubscribe failed: ${e instanceof Error ? e.message : String(e)}`),
      );
  }
  ref.sub?.close();
  await follower.close();
  await listener?.close();
  return 0;
}
