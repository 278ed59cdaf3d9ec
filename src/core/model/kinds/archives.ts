/**
 * The archives of ResourceSync Archives: past Resource Lists and Resource Dumps (each entry with its `at`),
 * past Change Lists and Change Dumps (each with its `from`, in forward order), and their indexes.
 * @see ResourceSync Archives §3–6
 */
import { kind, type DocumentKind, type DocumentKindId } from './rules.js';

function archive(
  id: DocumentKindId,
  name: string,
  root: 'urlset' | 'sitemapindex',
  capability: string,
  n: number,
  entry: { at?: 'allowed'; from?: 'allowed' },
  order?: 'archive',
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
    entry,
    ...(order === undefined ? {} : { order }),
  });
}

export const ARCHIVE_KINDS: readonly DocumentKind[] = [
  archive('resource-list-archive', 'Resource List Archive', 'urlset', 'resourcelist-archive', 3, { at: 'allowed' }),
  archive('resource-list-archive-index', 'Resource List Archive Index', 'sitemapindex', 'resourcelist-archive', 3, {}),
  archive('resource-dump-archive', 'Resource Dump Archive', 'urlset', 'resourcedump-archive', 4, { at: 'allowed' }),
  archive('resource-dump-archive-index', 'Resource Dump Archive Index', 'sitemapindex', 'resourcedump-archive', 4, {}),
  archive(
    'change-list-archive',
    'Change List Archive',
    'urlset',
    'changelist-archive',
    5,
    { from: 'allowed' },
    'archive',
  ),
  archive('change-list-archive-index', 'Change List Archive Index', 'sitemapindex', 'changelist-archive', 5, {}),
  archive(
    'change-dump-archive',
    'Change Dump Archive',
    'urlset',
    'changedump-archive',
    6,
    { from: 'allowed' },
    'archive',
  ),
  archive('change-dump-archive-index', 'Change Dump Archive Index', 'sitemapindex', 'changedump-archive', 6, {}),
];
