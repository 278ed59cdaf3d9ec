/**
 * What a publishing Source sends on its two notification channels per set of resources: the changes
 * recorded by one publication as Change Notifications with contiguous, non-overlapping `from`/`until`
 * windows, and the capability documents it (re)wrote as a Framework Notification. The channels (topic
 * URIs) are listed in the Capability List with their hub. Sending the payloads to a hub is the
 * caller's part (see src/notify/publisher.ts).
 * @see Change Notification §3, §4; Framework Notification §3, §5
 */
import { changeNotification, frameworkNotification, type FrameworkChange } from '../core/model/notification.js';
import type { Entry, ResourceSyncDocument } from '../core/model/types.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import { changeEntry } from './documents.js';
import type { ChangeRecord } from './snapshot-store.js';

/** Entries per Change Notification; more changes go in further notifications (Sitemaps limit). */
export const MAX_NOTIFICATION_ENTRIES = 50_000;

/** The topic URIs of a set, under its document folder `docUrl`. */
export function channelTopics(docUrl: string): { change: string; framework: string } {
  return { change: `${docUrl}change-notification/`, framework: `${docUrl}framework-notification/` };
}

/**
 * The Capability List entries that advertise both channels with their hub.
 * @see Change Notification §4 (Example 7), Framework Notification §5 (Example 8)
 */
export function channelEntries(docUrl: string, hub: string): Entry[] {
  const t = channelTopics(docUrl);
  return [
    { loc: t.change, md: { capability: 'change-notification' }, ln: [{ rel: 'hub', href: hub }] },
    { loc: t.framework, md: { capability: 'framework-notification' }, ln: [{ rel: 'hub', href: hub }] },
  ];
}

/** The notifications of one set produced by one publication. */
export interface SetNotifications {
  set: string;
  capabilityList: string;
  hub: string;
  changeTopic: string;
  frameworkTopic: string;
  /** Change Notifications, in order; empty when nothing changed. */
  change: ResourceSyncDocument[];
  /** The Framework Notification, when a capability document was created or changed. */
  framework: ResourceSyncDocument | undefined;
}

/**
 * Change Notifications for the changes of `[from, until]`: one per {@link MAX_NOTIFICATION_ENTRIES}
 * changes; the first covers the window, the others `[until, until]`, so that windows stay contiguous
 * and never overlap.
 * @see Change Notification §3
 */
export function changeNotifications(
  resBase: string,
  capabilityList: string,
  from: number,
  until: number,
  changes: readonly ChangeRecord[],
): ResourceSyncDocument[] {
  const out: ResourceSyncDocument[] = [];
  for (let i = 0; i < changes.length; i += MAX_NOTIFICATION_ENTRIES) {
    const start = i === 0 ? from : until;
    out.push(
      changeNotification({
        from: formatW3CDatetime(start),
        until: formatW3CDatetime(until),
        up: capabilityList,
        entries: changes.slice(i, i + MAX_NOTIFICATION_ENTRIES).map((c) => changeEntry(resBase, c)),
      }),
    );
  }
  return out;
}

/** The Framework Notification of the capability documents written by a publication (none: undefined). */
export function frameworkChanges(up: string, changes: readonly FrameworkChange[]): ResourceSyncDocument | undefined {
  return changes.length === 0 ? undefined : frameworkNotification({ up, changes });
}
