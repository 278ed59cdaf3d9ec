/**
 * What a publishing Source sends on its two notification channels per set of resources: the changes
 * recorded by one publication as Change Notifications with contiguous, non-overlapping `from`/`until`
 * windows, and the capability documents it (re)wrote as a Framework Notification. The channels (topic
 * URIs) are listed in the Capability List with their hub. Sending the payloads to a hub is the
 * caller's part (see src/notify/publisher.ts).
 * @see Change Notification §3, §4; Framework Notification §3, §5
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { changeNotification, frameworkNotification, type FrameworkChange } from '../core/model/notification.js';
import type { Entry, Ln, ResourceSyncDocument } from '../core/model/types.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import { xmppPubsubUri } from '../core/xmpp-uri.js';
import { changeEntry } from './documents.js';
import type { ChangeRecord } from './snapshot-rows.js';

/** Entries per Change Notification; more changes go in further notifications (Sitemaps limit). */
export const MAX_NOTIFICATION_ENTRIES = 50_000;

/** The topic URIs of a set, under its document folder `docUrl`. */
export function channelTopics(docUrl: string): { change: string; framework: string } {
  return { change: `${docUrl}change-notification/`, framework: `${docUrl}framework-notification/` };
}

/**
 * The Capability List entries that advertise both channels with their hub and, when the notifications are also
 * published to an XMPP PubSub service, the node of each channel (named by its topic URI) as
 * `<rs:ln rel="alternate" href="xmpp:SERVICE?pubsub;action=subscribe;node=TOPIC">` after the hub.
 * @see Change Notification §4 (Example 7), Framework Notification §5 (Example 8), XEP-0060 §16.4 (node URIs)
 */
export function channelEntries(docUrl: string, hub: string, xmpp?: string): Entry[] {
  const t = channelTopics(docUrl);
  const ln = (topic: string): Ln[] => [{ rel: 'hub', href: hub }, ...(xmpp === undefined ? [] : [{ rel: 'alternate', href: xmppPubsubUri(xmpp, topic) }])];
  return [
    { loc: t.change, md: { capability: 'change-notification' }, ln: ln(t.change) },
    { loc: t.framework, md: { capability: 'framework-notification' }, ln: ln(t.framework) },
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
  /** Its changes: every capability document the publication created or changed. */
  frameworkChanges: FrameworkChange[];
}

/**
 * Change Notifications for the changes of `[from, until]`: one per {@link MAX_NOTIFICATION_ENTRIES}
 * changes; the first covers the window, the others `[until, until]`, so that windows stay contiguous
 * and never overlap. `linked` adds a resource's further links (`PublishOptions.resourceLinks`, e.g. `via`).
 * @see Change Notification §3
 */
export function changeNotifications(
  resBase: string,
  capabilityList: string,
  from: number,
  until: number,
  changes: readonly ChangeRecord[],
  linked: (path: string, entry: Entry) => Entry = (_path, entry) => entry,
): ResourceSyncDocument[] {
  const out: ResourceSyncDocument[] = [];
  for (let i = 0; i < changes.length; i += MAX_NOTIFICATION_ENTRIES) {
    const start = i === 0 ? from : until;
    out.push(
      changeNotification({
        from: formatW3CDatetime(start),
        until: formatW3CDatetime(until),
        up: capabilityList,
        entries: changes.slice(i, i + MAX_NOTIFICATION_ENTRIES).map((c) => linked(c.path, changeEntry(resBase, c))),
      }),
    );
  }
  return out;
}

/** The Framework Notification of the capability documents written by a publication (none: undefined). */
export function frameworkChanges(up: string, changes: readonly FrameworkChange[]): ResourceSyncDocument | undefined {
  return changes.length === 0 ? undefined : frameworkNotification({ up, changes });
}

/** What {@link documentDigests} remembers of each document it read, by name: kept by the caller from run to run. */
export type DigestMemo = Map<string, DigestRecord>;

/** A document's digest and the file identity (inode, size, mtime) it was taken at. */
export interface DigestRecord {
  ino: number;
  size: number;
  mtimeMs: number;
  digest: string;
}

/**
 * The documents of a set's document folder that Framework Notifications speak of, with a digest of each:
 * the capability documents (Resource List, Change List, Resource Dump, Change Dump and their archives),
 * the Capability List, and the closed Change Lists, per-period Change Dumps and Resource List parts, which
 * only count when new. Manifests and packages are parts of a dump, not capability documents, and the
 * archived generations of the Resource List and Resource Dump are announced through their archives.
 * A document whose inode, size and mtime are those in `memo` is not read again; `memo` is brought up to date.
 * @param x the extension of the document names (`.xml` or `.xml.gz`)
 */
export function documentDigests(docDir: string, x: string, memo: DigestMemo = new Map()): Map<string, string> {
  const out = new Map<string, string>();
  let names: string[];
  try {
    names = readdirSync(docDir);
  } catch {
    return out;
  }
  for (const name of names) {
    const role = documentRole(name, x);
    if (role === undefined) continue;
    if (role.whenNew) out.set(name, 'present');
    else {
      try {
        const st = statSync(join(docDir, name));
        const known = memo.get(name);
        if (known !== undefined && known.ino === st.ino && known.size === st.size && known.mtimeMs === st.mtimeMs) out.set(name, known.digest);
        else {
          const digest = createHash('sha256').update(readFileSync(join(docDir, name))).digest('hex');
          memo.set(name, { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs, digest });
          out.set(name, digest);
        }
      } catch {
        memo.delete(name); // removed meanwhile
      }
    }
  }
  const present = new Set(names);
  for (const name of memo.keys()) if (!present.has(name)) memo.delete(name);
  return out;
}

interface DocumentRole {
  capability: string;
  /** Announced only when created (the name is new each time). */
  whenNew: boolean;
  /** The index it resides under, by name. */
  index?: string;
  /** An index document: never announced itself (only looked for by what resides under it). */
  isIndex?: boolean;
}

function documentRole(name: string, x: string): DocumentRole | undefined {
  if (!name.endsWith(x)) return undefined;
  const base = name.slice(0, -x.length);
  switch (base) {
    case 'capabilitylist':
    case 'resourcelist':
    case 'resourcelist-archive':
    case 'changelist-archive':
    case 'resourcedump':
    case 'resourcedump-archive':
    case 'changedump':
    case 'changedump-archive':
      return { capability: base, whenNew: false };
    case 'changelist':
      return { capability: 'changelist', whenNew: false, index: `changelist-index${x}` };
    case 'changelist-index':
      return { capability: 'changelist', whenNew: true, isIndex: true };
  }
  if (/^changelist-\d+$/.test(base)) return { capability: 'changelist', whenNew: true, index: `changelist-index${x}` };
  if (/^changedump-\d+$/.test(base)) return { capability: 'changedump', whenNew: true };
  if (/^resourcelist-\d+-part\d+$/.test(base)) return { capability: 'resourcelist', whenNew: true, index: `resourcelist${x}` };
  return undefined;
}

/**
 * What a publication did to the framework, from the {@link documentDigests} before and after it: documents
 * created or changed, as Table 2 allows them (a Resource Dump is only ever `created`: a new dump; of the
 * documents removed only a Capability List may be announced `deleted`). Index documents are never announced:
 * a document under one carries `index` (the Resource List parts, the Change Lists under the Change List
 * Index); when the Resource List is split into parts, the parts are announced instead of it.
 * @see Framework Notification §2, §2.1 (Table 2), §3
 */
export function frameworkDiff(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>, docUrl: string, x: string): FrameworkChange[] {
  const out: FrameworkChange[] = [];
  const newParts = [...after.keys()].some((n) => !before.has(n) && /^resourcelist-\d+-part\d+/.test(n));
  for (const [name, digest] of after) {
    const was = before.get(name);
    if (was === digest) continue;
    const role = documentRole(name, x)!;
    if (role.isIndex === true || (role.whenNew && was !== undefined)) continue;
    if (name === `resourcelist${x}` && newParts) continue; // an index now: its new parts are announced
    const change = was === undefined || role.capability === 'resourcedump' ? 'created' : 'updated';
    const c: FrameworkChange = { loc: docUrl + name, capability: role.capability, change };
    if (role.index !== undefined && after.has(role.index) && (role.index !== `resourcelist${x}` || newParts)) c.index = docUrl + role.index;
    out.push(c);
  }
  for (const name of before.keys()) {
    if (name === `capabilitylist${x}` && !after.has(name)) out.push({ loc: docUrl + name, capability: 'capabilitylist', change: 'deleted' });
  }
  // the Capability List first, then the order of the names (stable notifications)
  return out.sort((a, b) => Number(b.capability === 'capabilitylist') - Number(a.capability === 'capabilitylist') || (a.loc < b.loc ? -1 : a.loc > b.loc ? 1 : 0));
}
