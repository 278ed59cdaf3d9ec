/**
 * The two notification payloads of ResourceSync: the Change Notification (changes to resources) and
 * the Framework Notification (changes to the capability documents themselves). Both are `<urlset>`
 * documents read, written and validated like every other kind (see ./document-kinds.ts); this
 * module holds what is particular to them: Table 2 of the Framework Notification specification,
 * the 1.0 name of the Change Notification capability, and builders for the payloads a Source
 * publishes.
 *
 * @see ResourceSync Change Notification 1.0.1 §3
 * @see ResourceSync Framework Notification 1.0.1 §2.1, §3
 */
import type { ChangeType } from '../constants.js';
import type { DocumentHeader, Entry, Ln, ResourceSyncDocument } from './types.js';

/** The capability of a Change Notification payload and channel. @see Change Notification §3, §4 */
export const CHANGE_NOTIFICATION = 'change-notification';
/** The capability of a Framework Notification payload and channel. @see Framework Notification §3, §5 */
export const FRAMEWORK_NOTIFICATION = 'framework-notification';
/** The name ResourceSync 1.0 gave the Change Notification capability; read leniently. */
export const LEGACY_CHANGE_NOTIFICATION = 'changelist-notification';

/**
 * The changes a Framework Notification may announce per capability (Table 2). Capabilities not in
 * the table (the archives, those of other specifications) are not constrained here; a
 * notification about a notification channel is never sent (Framework Notification §2.1).
 * @see Framework Notification §2.1, Table 2
 */
export const FRAMEWORK_CHANGES: Readonly<Record<string, readonly ChangeType[]>> = {
  'framework-notification': [],
  'change-notification': [],
  resourcelist: ['created', 'updated'],
  resourcedump: ['created'],
  changelist: ['created', 'updated'],
  changedump: ['created', 'updated'],
  capabilitylist: ['created', 'updated', 'deleted'],
  description: ['created', 'updated', 'deleted'],
};

/**
 * Whether a Framework Notification may announce `change` for a document of `capability`.
 * @example frameworkChangeAllowed('resourcedump', 'updated') === false
 */
export function frameworkChangeAllowed(capability: string, change: string): boolean {
  const allowed = FRAMEWORK_CHANGES[capability];
  return allowed === undefined || (allowed as readonly string[]).includes(change);
}

/** The interval a Change Notification covers: all changes after `from` up to `until`. */
export interface NotificationWindow {
  from: string;
  until: string;
}

/**
 * The `from`/`until` window of a Change Notification header, or undefined when either is missing.
 * @see Change Notification §3 (both attributes are mandatory)
 */
export function notificationWindow(header: DocumentHeader): NotificationWindow | undefined {
  const from = header.md?.from;
  const until = header.md?.until;
  return from === undefined || until === undefined ? undefined : { from, until };
}

/** What a Change Notification carries. */
export interface ChangeNotificationInit {
  /** Start of the window (W3C datetime); must equal the `until` of the previous notification. */
  from: string;
  until: string;
  /** Entries in forward chronological order, each with `md.change` (and `md.datetime`). */
  entries: Entry[];
  /** The Capability List of the set (`rs:ln rel="up"`). */
  up?: string;
}

/**
 * A Change Notification payload, ready for `writeDocumentString`.
 * @example changeNotification({ from: '2013-01-03T00:00:00Z', until: '2013-01-03T00:10:00Z',
 *   entries: [{ loc: 'http://example.com/res1', md: { change: 'created', datetime: '2013-01-03T00:07:22Z' } }] })
 * @see Change Notification §3
 */
export function changeNotification(init: ChangeNotificationInit): ResourceSyncDocument {
  const ln: Ln[] = init.up === undefined ? [] : [{ rel: 'up', href: init.up }];
  return {
    root: 'urlset',
    md: { capability: CHANGE_NOTIFICATION, from: init.from, until: init.until },
    ln,
    entries: init.entries,
  };
}

/** One change to the framework: a capability document created, updated or deleted. */
export interface FrameworkChange {
  loc: string;
  capability: string;
  change: ChangeType;
  datetime?: string;
  /** The index the changed document resides under (`rs:ln rel="index"`). */
  index?: string;
}

/**
 * A Framework Notification payload.
 * @example frameworkNotification({ up: 'http://example.com/dataset1/capabilitylist.xml',
 *   changes: [{ loc: 'http://example.com/dataset1/changelist.xml', capability: 'changelist', change: 'updated' }] })
 * @see Framework Notification §3
 */
export function frameworkNotification(init: {
  changes: readonly FrameworkChange[];
  up?: string;
}): ResourceSyncDocument {
  const entries = init.changes.map((c): Entry => {
    const entry: Entry = { loc: c.loc, md: { change: c.change, capability: c.capability } };
    if (c.datetime !== undefined) entry.md!.datetime = c.datetime;
    if (c.index !== undefined) entry.ln = [{ rel: 'index', href: c.index }];
    return entry;
  });
  const ln: Ln[] = init.up === undefined ? [] : [{ rel: 'up', href: init.up }];
  return { root: 'urlset', md: { capability: FRAMEWORK_NOTIFICATION }, ln, entries };
}
