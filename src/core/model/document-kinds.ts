import type { RootElement } from './types.js';

/**
 * Every ResourceSync document, named in the spec's words, with the root element and capability
 * that identify it and the time attributes Appendix A (Table 4) asks of it.
 */
export interface DocumentKind {
  /** Stable identifier in the spec's words, kebab-case. */
  id: DocumentKindId;
  /** The spec's name, e.g. "Change List Index". */
  name: string;
  root: RootElement;
  /** Value of the top-level `rs:md capability`. */
  capability: string;
  /** Section of Z39.99 (or companion spec) that defines it. */
  section: string;
  /** Which family of time attributes it uses: snapshot (`at`/`completed`) or interval (`from`/`until`). */
  time: 'at' | 'from' | 'none';
}

export type DocumentKindId =
  | 'source-description'
  | 'source-description-index'
  | 'capability-list'
  | 'capability-list-index'
  | 'resource-list'
  | 'resource-list-index'
  | 'resource-dump'
  | 'resource-dump-index'
  | 'resource-dump-manifest'
  | 'change-list'
  | 'change-list-index'
  | 'change-dump'
  | 'change-dump-index'
  | 'change-dump-manifest'
  | 'resource-list-archive'
  | 'resource-list-archive-index'
  | 'resource-dump-archive'
  | 'resource-dump-archive-index'
  | 'change-list-archive'
  | 'change-list-archive-index'
  | 'change-dump-archive'
  | 'change-dump-archive-index'
  | 'change-notification'
  | 'framework-notification';

const kinds: DocumentKind[] = [
  { id: 'source-description', name: 'Source Description', root: 'urlset', capability: 'description', section: '8', time: 'none' },
  { id: 'source-description-index', name: 'Source Description Index', root: 'sitemapindex', capability: 'description', section: '8', time: 'none' },
  { id: 'capability-list', name: 'Capability List', root: 'urlset', capability: 'capabilitylist', section: '9', time: 'none' },
  { id: 'capability-list-index', name: 'Capability List Index', root: 'sitemapindex', capability: 'capabilitylist', section: '9', time: 'none' },
  { id: 'resource-list', name: 'Resource List', root: 'urlset', capability: 'resourcelist', section: '10.1', time: 'at' },
  { id: 'resource-list-index', name: 'Resource List Index', root: 'sitemapindex', capability: 'resourcelist', section: '10.2', time: 'at' },
  { id: 'resource-dump', name: 'Resource Dump', root: 'urlset', capability: 'resourcedump', section: '11.1', time: 'at' },
  { id: 'resource-dump-index', name: 'Resource Dump Index', root: 'sitemapindex', capability: 'resourcedump', section: '11.1', time: 'at' },
  { id: 'resource-dump-manifest', name: 'Resource Dump Manifest', root: 'urlset', capability: 'resourcedump-manifest', section: '11.2', time: 'at' },
  { id: 'change-list', name: 'Change List', root: 'urlset', capability: 'changelist', section: '12.1', time: 'from' },
  { id: 'change-list-index', name: 'Change List Index', root: 'sitemapindex', capability: 'changelist', section: '12.2', time: 'from' },
  { id: 'change-dump', name: 'Change Dump', root: 'urlset', capability: 'changedump', section: '13.1', time: 'from' },
  { id: 'change-dump-index', name: 'Change Dump Index', root: 'sitemapindex', capability: 'changedump', section: '13.1', time: 'from' },
  { id: 'change-dump-manifest', name: 'Change Dump Manifest', root: 'urlset', capability: 'changedump-manifest', section: '13.2', time: 'from' },
  { id: 'resource-list-archive', name: 'Resource List Archive', root: 'urlset', capability: 'resourcelist-archive', section: 'Archives §3', time: 'none' },
  { id: 'resource-list-archive-index', name: 'Resource List Archive Index', root: 'sitemapindex', capability: 'resourcelist-archive', section: 'Archives §3', time: 'none' },
  { id: 'resource-dump-archive', name: 'Resource Dump Archive', root: 'urlset', capability: 'resourcedump-archive', section: 'Archives §4', time: 'none' },
  { id: 'resource-dump-archive-index', name: 'Resource Dump Archive Index', root: 'sitemapindex', capability: 'resourcedump-archive', section: 'Archives §4', time: 'none' },
  { id: 'change-list-archive', name: 'Change List Archive', root: 'urlset', capability: 'changelist-archive', section: 'Archives §5', time: 'none' },
  { id: 'change-list-archive-index', name: 'Change List Archive Index', root: 'sitemapindex', capability: 'changelist-archive', section: 'Archives §5', time: 'none' },
  { id: 'change-dump-archive', name: 'Change Dump Archive', root: 'urlset', capability: 'changedump-archive', section: 'Archives §6', time: 'none' },
  { id: 'change-dump-archive-index', name: 'Change Dump Archive Index', root: 'sitemapindex', capability: 'changedump-archive', section: 'Archives §6', time: 'none' },
  { id: 'change-notification', name: 'Change Notification', root: 'urlset', capability: 'change-notification', section: 'Notification §3', time: 'none' },
  { id: 'framework-notification', name: 'Framework Notification', root: 'urlset', capability: 'framework-notification', section: 'Notification §3', time: 'none' },
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
