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

export type {
  DocumentKind,
  DocumentKindId,
  EntryOrder,
  EntryRules,
  LinkRules,
  TimeAttribute,
  TopTimes,
  Use,
} from './kinds/rules.js';

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
byKey.set(
  'urlset changelist-notification',
  kinds.find((k) => k.id === 'change-notification')!,
);

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

/** Each index kind with the kind whose `index` link names it; each archive kind with the kind it archives. */
const listedIn = new Map<DocumentKindId, DocumentKind>(
  kinds.flatMap((k) => (k.links.index === undefined ? [] : [[k.links.index, k] as const])),
);
const archivedIn = new Map<DocumentKindId, DocumentKind>(
  kinds.flatMap((k) => (k.links.archives === undefined ? [] : [[k.links.archives, k] as const])),
);

/**
 * True for an index: a `<sitemapindex>` that lists documents of the kind it groups (its parts), under their
 * capability, when one document would be too long.
 * @see Z39.99 §6.1, §6.2, §10.2, §12.2
 * @example isIndex(documentKindById('change-list-index')) // true
 */
export function isIndex(kind: DocumentKind): boolean {
  return kind.root === 'sitemapindex';
}

/**
 * The kind of the documents an index lists: the kind whose `index` link names the index's kind (a Resource List
 * Index lists Resource Lists, a Change Dump Index Change Dumps, a Change List Archive Index Change List
 * Archives); undefined for a kind that is no index.
 * @see Z39.99 §6.2, §10.2, §11.1, §12.2, §13.1; ResourceSync Archives §3–6
 * @example indexedKind(documentKindById('resource-list-index'))?.id // 'resource-list'
 */
export function indexedKind(index: DocumentKind): DocumentKind | undefined {
  return listedIn.get(index.id);
}

/**
 * True when a document of kind `part` may be a part of an index of kind `index`: the index lists documents of
 * that kind. False when either kind is unknown.
 * @see Z39.99 §6.2
 * @example isPartOf(documentKindById('change-list'), documentKindById('resource-list-index')) // false
 */
export function isPartOf(part: DocumentKind | undefined, index: DocumentKind | undefined): boolean {
  return part !== undefined && index !== undefined && part.links.index === index.id;
}

/**
 * The kind of the past documents an archive lists: the kind whose `archives` link names the archive's kind (a
 * Change List Archive lists Change Lists); undefined for a kind that is no archive of documents (an index of
 * archives lists archives: see {@link indexedKind}).
 * @see ResourceSync Archives §2–6
 * @example archivedKind(documentKindById('change-list-archive'))?.id // 'change-list'
 */
export function archivedKind(archive: DocumentKind): DocumentKind | undefined {
  return archivedIn.get(archive.id);
}

/**
 * The kind of the manifest (`manifest.xml`) at the top of each package of a dump: a Resource Dump's packages
 * carry a Resource Dump Manifest, a Change Dump's a Change Dump Manifest; undefined for a kind that is no dump.
 * @see Z39.99 §11.2, §13.2
 * @example manifestKind(documentKindById('change-dump'))?.id // 'change-dump-manifest'
 */
export function manifestKind(dump: DocumentKind): DocumentKind | undefined {
  return dump.manifest === undefined ? undefined : documentKindById(dump.manifest);
}
