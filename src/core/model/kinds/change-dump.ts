/**
 * The Change Dump (§13.1): packages of the changes of periods, each with its type and length and (recommended)
 * the period it covers, in forward order; its index; and the Change Dump Manifest inside each package (§13.2):
 * changes as in a Change List, each bitstream named by `path` (deletions have none).
 * @see Z39.99 §13, Appendix A (Table 4)
 */
import { INTERVAL_TOP, kind, type DocumentKind } from './rules.js';

export const CHANGE_DUMP_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'change-dump',
    name: 'Change Dump',
    root: 'urlset',
    capability: 'changedump',
    section: '13.1',
    citation: 'Z39.99 §13.1',
    time: 'from',
    family: 'dump',
    top: INTERVAL_TOP,
    entry: { at: 'forbidden', from: 'recommended', packageMetadata: true },
    links: { up: 'required', upTo: 'capability-list', index: 'change-dump-index', archives: 'change-dump-archive' },
    order: 'package',
    manifest: 'change-dump-manifest',
  }),
  kind({
    id: 'change-dump-index',
    name: 'Change Dump Index',
    root: 'sitemapindex',
    capability: 'changedump',
    section: '13.1',
    citation: 'Z39.99 §13.1',
    time: 'from',
    family: 'dump',
    top: INTERVAL_TOP,
    entry: { at: 'forbidden', from: 'recommended' },
  }),
  kind({
    id: 'change-dump-manifest',
    name: 'Change Dump Manifest',
    root: 'urlset',
    capability: 'changedump-manifest',
    section: '13.2',
    citation: 'Z39.99 §13.2',
    time: 'from',
    family: 'manifest',
    top: INTERVAL_TOP,
    entry: {
      at: 'forbidden',
      from: 'forbidden',
      lastmod: 'required-1.0',
      change: 'required',
      datetime: true,
      path: 'not-deleted',
      typeRecommended: true,
    },
    order: 'change',
  }),
];
