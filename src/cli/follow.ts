/**
 * `resourcesync sync <source-url> <dest> --follow`: a baseline or catch-up first, then it subscribes to
 * the set's change channel (Capability List entry `change-notification` with its hub) and applies the
 * changes as notifications arrive; without a channel, or while the hub cannot be reached, it polls the
 * Change List every `--interval` seconds and goes back to push when the hub answers again.
 *
 * Each notification (or run of notifications arriving together) is applied by an incremental `sync()`
 * from the Change List: verified and atomic like any sync, and a gap between notification windows
 * (missed notifications) is filled by the same run. One line per applied batch on stdout (`--json`: one
 * JSON object per line). SIGINT/SIGTERM unsubscribe and end with exit 0, the state saved.
 * @see Change Notification §4, §3 (from/until windows)
 */
import { stdout } from 'node:process';
import { sync, type SyncOptions, type SyncReport } from '../destination/sync.js';
import { readDocument } from '../core/xml/read-document.js';
import { notificationWindow } from '../core/model/notification.js';
import { listen, type Listener } from '../notify/node-listener.js';
import { Subscriber } from '../notify/subscriber.js';
import { WindowTracker, type WindowOrder } from '../notify/windows.js';

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

/** Runs the follow loop until `signal` aborts; resolves with the exit code. */
export async function follow(o: FollowOptions): Promise<number> {
  const tracker = new WindowTracker();
  let running: Promise<void> | undefined;
  let again = false;
  let notes: { order: WindowOrder; from: string; until: string }[] = [];
  let mode: 'push' | 'poll' = 'poll';

  const print = (report: SyncReport, via: string): void => {
    const window = notes.length > 0 ? { from: notes[0]!.from, until: notes[notes.length - 1]!.until } : undefined;
    const gaps = notes.filter((n) => n.order === 'gap' || n.order === 'overlap').length;
    if (o.json) {
      stdout.write(
        `${JSON.stringify({ time: new Date().toISOString(), via, mode: report.mode, created: report.created, updated: report.updated, deleted: report.deleted, failed: report.failed.length, durationMs: report.durationMs, notifications: notes.length, ...(window ? { window } : {}), gaps })}\n`,
      );
    } else {
      stdout.write(
        `${new Date().toISOString()} ${via}: ${report.mode} created ${report.created}, updated ${report.updated}, deleted ${report.deleted}, failed ${report.failed.length}` +
          `${window ? ` (window ${window.from} .. ${window.until}${gaps > 0 ? `, ${gaps} gap(s) filled from the Change List` : ''})` : ''}\n`,
      );
    }
  };

  const runSync = (via: string): Promise<void> => {
    if (running !== undefined) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        const taken = notes;
        try {
          const report = await sync({ ...o.syncOptions, signal: o.signal });
          if (
            report.created + report.updated + report.deleted + report.failed.length > 0 ||
            taken.length > 0 ||
            via === 'start'
          )
            print(report, via);
          notes = notes.slice(taken.length);
        } catch (e) {
          if (o.signal.aborted) return;
          o.log(`resourcesync sync: ${e instanceof Error ? e.message : String(e)}`);
        }
      } while (again && !o.signal.aborted);
    })().finally(() => {
      running = undefined;
    });
    return running;
  };

  // 1. Baseline or catch-up
  const first = await sync({ ...o.syncOptions, signal: o.signal });
  print(first, 'start');
  const capabilityList = first.sets.map((s) => s.key).find((k) => /^https?:/.test(k));

  // 2. The callback endpoint
  const ref: { sub?: Subscriber } = {};
  let listener: Listener | undefined;
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
      onNotification: (bytes) => {
        void readDocument(bytes)
          .then(async (doc) => {
            const w = notificationWindow(doc.header);
            await doc.close();
            if (w !== undefined) notes.push({ order: tracker.accept(w.from, w.until), ...w });
            return runSync('push');
          })
          .catch((e: unknown) =>
            o.log(`resourcesync sync: a notification was not readable: ${e instanceof Error ? e.message : String(e)}`),
          );
      },
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
      await runSync('catch-up'); // changes between the first sync and the subscription
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
      if (mode === 'poll') void runSync('poll').then(trySubscribe);
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

  // 4. Stop: unsubscribe (bounded), wait for the sync in flight
  if (ref.sub?.subscribed === true) {
    await ref.sub
      .unsubscribe()
      .catch((e: unknown) =>
        o.log(`resourcesync sync: unsubscribe failed: ${e instanceof Error ? e.message : String(e)}`),
      );
  }
  ref.sub?.close();
  await running;
  await listener?.close();
  return 0;
}
