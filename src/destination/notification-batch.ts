/**
 * What a batch of delivered Change Notifications says to a follower: the entries to apply, the span of their
 * windows, how many did not continue the window before, and whether the Change List must be read instead (an
 * unreadable notification, a window from the future or out of order, a gap). Each window is tracked as it is read.
 * @see Change Notification §3 (payload, from/until)
 */
import { messageOf } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { notificationWindow, type NotificationWindow } from '../core/model/notification.js';
import { parseDocument } from '../core/xml/read-document.js';
import { formatW3CDatetime, parseW3CDatetime } from '../core/w3c-datetime.js';
import type { Connection } from './connection.js';
import { checkDocument, isAbsoluteLoc, kindOf, resolveLoc } from './documents.js';
import { note, type DestinationNote } from './notes.js';
import { changeTime } from './plan.js';
import type { WindowTracker } from './notification-windows.js';
import { screenEntries, windowFromFuture } from './notification-screen.js';

/** Why a follower reads the Change List rather than a notification's own entries. */
export type FollowReason = 'gap' | 'failed' | 'unreadable' | 'requested';

/** What a batch of delivered notifications said ({@link readNotifications}). */
export interface NotificationsRead {
  /** The entries to apply, screened, in delivery order. */
  entries: Entry[];
  warnings: DestinationNote[];
  /** Why the Change List must be read, if it must. */
  reason: FollowReason | undefined;
  /** Notifications whose window did not continue the one before. */
  gaps: number;
  /** The span of the windows read. */
  window?: NotificationWindow;
  /** Notifications whose window was tracked (the stale ones too). */
  notifications: number;
}

/** Where a batch is read: the follower's window tracker, its connection (authority, mapper), the base of relative locs. */
interface BatchContext {
  tracker: WindowTracker;
  connection: Connection;
  base: string;
  /** Called at a gap with the `from` (ms) of the notification after it: the Change List must reach it. */
  onGap: (from: number) => void;
}

/**
 * Reads a batch of delivered notifications (with the time each was received, ms): each window is tracked, the
 * entries of those that move it forward are screened and collected (an overlap's only after the window before);
 * `reason` is the one `wanted`, else the first unreadable notification or gap.
 */
export async function readNotifications(payloads: readonly { bytes: Uint8Array; at: number }[], wanted: FollowReason | undefined, context: BatchContext): Promise<NotificationsRead> {
  const read: NotificationsRead = { entries: [], warnings: [], reason: wanted, gaps: 0, notifications: 0 };
  const { warnings } = read;
  const { tracker } = context;
  for (const { bytes, at } of payloads) {
    let doc;
    try {
      doc = await parseDocument(bytes);
    } catch (e) {
      warnings.push(note('notification-unreadable', { error: messageOf(e) }));
      read.reason ??= 'unreadable';
      continue;
    }
    const kind = kindOf(doc);
    if (kind?.id !== 'change-notification') {
      warnings.push(note('notification-not-change', { kind: kind?.name ?? 'unknown' }));
      continue;
    }
    checkDocument('a Change Notification', doc, (w) => warnings.push(w));
    const w = notificationWindow(doc);
    if (windowFromFuture(w?.until, at)) {
      // not what the Source can have said (a forged or broken window): it moves nothing, the Change List is read
      const claimed = { ...(w?.from !== undefined ? { from: w.from } : {}), until: w!.until };
      warnings.push(note('notification-window-future', { ...claimed, received: formatW3CDatetime(at) }));
      read.reason ??= 'unreadable';
      continue;
    }
    const before = tracker.until;
    const order = tracker.accept(w?.from, w?.until);
    read.notifications++;
    if (order === 'stale') continue; // a redelivery or a window already read from the Change List
    if (w !== undefined) read.window = { from: read.window?.from ?? w.from, until: w.until };
    if (order === 'invalid') {
      warnings.push(note('notification-window-invalid', {}));
      read.reason ??= 'unreadable';
      continue;
    }
    if (order === 'gap' || order === 'overlap') read.gaps++;
    if (order === 'gap') {
      // the missed notifications' changes are in the Change List once it reaches this one's `from`
      const from = w!.from === undefined ? undefined : parseW3CDatetime(w!.from, true)?.ms;
      context.onGap(from!);
      read.reason ??= 'gap';
    }
    const absolute = doc.entries.map((x) => (isAbsoluteLoc(x.loc) ? x : { ...x, loc: resolveLoc(x.loc, context.base) }));
    for (const e of screenEntries(absolute, context.connection, (n) => warnings.push(n))) {
      // an overlapping window repeats changes already applied: only the later ones count
      if (order === 'overlap' && before !== undefined && (changeTime(e) ?? Infinity) <= before) continue;
      read.entries.push(e);
    }
  }
  return read;
}
