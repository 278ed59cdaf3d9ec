/**
 * The archives of ResourceSync Archives: past Resource Lists and Resource Dumps (each entry with its `at`),
 * past Change Lists and Change Dumps (each with its `from`, in forward order), and their indexes, which list
 * archives. A document names its archive with an `archives` link (its kind's `links.archives`).
 * @see ResourceSync Archives §2–6
 */
import { kind, type DocumentKind, type DocumentKindId, type EntryOrder, type EntryRules } from './rules.js';

function archive(
  id: DocumentKindId,
  name: string,
  root: 'urlset' | 'sitemapindex',
  capability: string,
  n: number,
  rules: { entry: Partial<EntryRules>; order?: EntryOrder; index?: DocumentKindId },
): DocumentKind {
  return kind({
    id,
    name,
    root,
    capability,
    section: `Archives §${n}`,
    citation: `ResourceSync Archives §${n}`,
    time: 'none',
    family: 'archive',
    entry: rules.entry,
    links: { up: 'required', upTo: 'capability-list', ...(rules.index === undefined ? {} : { index: rules.index }) },
    ...(rules.order === undefined ? {} : { order: rules.order }),
  });
}

export const ARCHIVE_KINDS: readonly DocumentKind[] = [
  archive('resource-list-archive', 'Resource List Archive', 'urlset', 'resourcelist-archive', 3, {
    entry: { at: 'allowed' },
    index: 'resource-list-archive-index',
  }),
  archive('resource-list-archive-index', 'Resource List Archive Index', 'sitemapindex', 'resourcelist-archive', 3, {
    entry: {},
  }),
  archive('resource-dump-archive', 'Resource Dump Archive', 'urlset', 'resourcedump-archive', 4, {
    entry: { at: 'allowed' },
    index: 'resource-dump-archive-index',
  }),
  archive('resource-dump-archive-index', 'Resource Dump Archive Index', 'sitemapindex', 'resourcedump-archive', 4, {
    entry: {},
  }),
  archive('change-list-archive', 'Change List Archive', 'urlset', 'changelist-archive', 5, {
    entry: { from: 'allowed' },
    order: 'archive',
    index: 'change-list-archive-index',
  }),
  archive('change-list-archive-index', 'Change List Archive Index', 'sitemapindex', 'changelist-archive', 5, {
    entry: {},
  }),
  archive('change-dump-archive', 'Change Dump Archive', 'urlset', 'changedump-archive', 6, {
    entry: { from: 'allowed' },
    order: 'archive',
    index: 'change-dump-archive-index',
  }),
  archive('change-dump-archive-index', 'Change Dump Archive Index', 'sitemapindex', 'changedump-archive', 6, {
    entry: {},
  }),
];
