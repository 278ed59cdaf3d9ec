/**
 * Every ResourceSync document kind, gathered from the family files of `kinds/` where each states its rules
 * (root, capability, time attributes, entry attributes, links, order) with section citations.
 * @see Z39.99 §6.1, Appendix A
 */
import { ARCHIVE_KINDS } from './kinds/archives.js';
import { CAPABILITY_LIST_KINDS } from './kinds/capability-list.js';
import { CHANGE_DUMP_KINDS } from './kinds/change-dump.js';
import { CHANGE_LIST_KINDS } from './kinds/change-list.js';
import { NOTIFICATION_KINDS } from './kinds/notifications.js';
import { RESOURCE_DUMP_KINDS } from './kinds/resource-dump.js';
import { RESOURCE_LIST_KINDS } from './kinds/resource-list.js';
import type { DocumentKind, DocumentKindId } from './kinds/rules.js';
import { SOURCE_DESCRIPTION_KINDS } from './kinds/source-description.js';
import type { RootElement } from './types.js';

export type { DocumentKind, DocumentKindId, EntryOrder, EntryRules, LinkRules, TimeAttribute, TopTimes, Use } from './kinds/rules.js';

const kinds: readonly DocumentKind[] = [
  ...SOURCE_DESCRIPTION_KINDS,
  ...CAPABILITY_LIST_KINDS,
  ...RESOURCE_LIST_KINDS,
  ...RESOURCE_DUMP_KINDS,
  ...CHANGE_LIST_KINDS,
  ...CHANGE_DUMP_KINDS,
  ...ARCHIVE_KINDS,
  ...NOTIFICATION_KINDS,
];

/** All document kinds, in the order of the spec. */
export const DOCUMENT_KINDS: readonly DocumentKind[] = kinds;

const byKey = new Map<string, DocumentKind>(kinds.map((k) => [`${k.root} ${k.capability}`, k]));
/** Legacy name of the Change Notification payload (ResourceSync Change Notification 0.9). */
byKey.set('urlset changelist-notification', kinds.find((k) => k.id === 'change-notification')!);

/** The document kind identified by a root element and a top-level capability, if any. */
export function documentKind(root: RootElement, capability: string | undefined): DocumentKind | undefined {
  return capability === undefined ? undefined : byKey.get(`${root} ${capability}`);
}

/** The kind with the given id. */
export function documentKindById(id: DocumentKindId): DocumentKind {
  const k = kinds.find((x) => x.id === id);
  if (!k) throw new Error(`unknown document kind ${id}`);
  return k;
}
