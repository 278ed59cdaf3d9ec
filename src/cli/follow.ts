/**
 * `resourcesync sync <source-url> <dest> --follow`: a baseline or catch-up first, then it subscribes to
 * the set's change channel (Capability List entry `change-notification` with its hub) and applies the
 * changes as notifications arrive; without a channel, or while the hub cannot be reached, it polls the
 * Change List every `--interval` seconds and goes back to push when the hub answers again.
 *
 * The loop is the library's {@link followSource}; this file keeps the command's output: one line per applied
 * batch on stdout (`--json`: one JSON object per line), what happened to the channel on stderr. SIGINT/SIGTERM
 * unsubscribe and end with exit 0, the state saved.
 *
 * With `--xmpp`, the notifications come from the XMPP PubSub node the channel names (`rs:ln` with an `xmpp:` URI,
 * see ../source/notifications.ts) or the one given, instead of the hub; a lost XMPP connection falls back to
 * polling, and it is made again after 1 s, 2 s, 4 s… (at most `--interval`) and at each poll.
 * @see Change Notification §4, §3 (from/until windows); XEP-0060
 */
import { stderr, stdout } from 'node:process';
import type { SyncOptions } from '../destination/sync.js';
import { messageOf } from '../core/errors.js';
import { originOf } from '../client/authority.js';
import type { FollowBatch } from '../destination/follower.js';
import { followSource, type FollowEvent, type FollowVia } from '../destination/follow.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';

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

function printBatch(json: boolean, via: FollowVia, b: Omit<FollowBatch, 'notifications' | 'gaps'> & Partial<FollowBatch>): void {
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

/** The line `sync --follow` writes to stderr for an event of the loop (none for a batch, printed on stdout). */
function eventLine(e: FollowEvent, polling: string): string | undefined {
  const why = 'error' in e ? messageOf(e.error) : '';
  switch (e.type) {
    case 'started':
    case 'batch':
      return undefined;
    case 'error':
      return why;
    case 'channel-unreadable':
      return `the change channel could not be read (${why}); ${polling}`;
    case 'hub-refused':
      return (
        `the change channel's hub '${e.hub}' is on an origin this Destination may not contact; not subscribing ` +
        `(allow it with --allow-origin ${originOf(e.hub) ?? e.hub}); ${polling}`
      );
    case 'no-xmpp-node':
      return `the Source advertises no XMPP node for its change channel (name one: --xmpp xmpp://user@domain/SERVICE?node=NODE); ${polling}`;
    case 'no-channel':
      return `the Source offers no change notification channel; ${polling}`;
    case 'subscribed':
      return `subscribed to ${e.where}`;
    case 'subscribe-failed':
      return `subscription failed (${why}); ${polling}`;
    case 'renew-failed':
      return `lease renewal failed; ${polling}`;
    case 'bad-signature':
      return 'a notification with a bad signature was ignored';
    case 'xmpp-lost':
      return `the XMPP connection was lost${e.error ? ` (${e.error.message})` : ''}; ${polling} until it is back`;
    case 'xmpp-oversized':
      return `an XMPP stanza of about ${e.bytes} bytes was refused (too large); reading the Change List`;
    case 'previous-subscription':
      if (e.ended) return `the subscription of a previous run (${e.callbackUrl}) was ended`;
      if (e.reason === 'port in use')
        return `the subscription of a previous run (${e.callbackUrl}) cannot be ended (port in use)`;
      return `the subscription of a previous run (${e.callbackUrl}) was not ended (${e.reason})`;
    case 'subscription-not-kept':
      return `the subscription could not be kept in the state (${why})`;
    case 'unsubscribe-failed':
      return `unsubscribe failed: ${why}`;
  }
}

/** Whether a batch after the first is printed: one that changed, failed, warned or carried notifications. */
function worthPrinting(b: FollowBatch): boolean {
  return b.created + b.updated + b.deleted + b.failed.length + b.warnings.length > 0 || b.notifications > 0;
}

/** Runs the follow loop until `signal` aborts; resolves with the exit code. */
export async function follow(o: FollowOptions): Promise<number> {
  const polling = `polling every ${o.intervalMs / 1000} s`;
  const onEvent = (e: FollowEvent): void => {
    if (e.type === 'started') printBatch(o.json, 'start', e.report);
    else if (e.type === 'batch') {
      if (worthPrinting(e.batch)) printBatch(o.json, e.via, e.batch);
    } else {
      const line = eventLine(e, polling);
      if (line !== undefined) o.log(`resourcesync sync: ${line}`);
    }
  };
  const following = await followSource({
    sync: o.syncOptions,
    listen: o.listen,
    callbackUrl: o.callbackUrl,
    intervalMs: o.intervalMs,
    reconcileMs: o.reconcileMs,
    xmpp: o.xmpp,
    signal: o.signal,
    onEvent,
  });
  await following.done;
  return 0;
}
