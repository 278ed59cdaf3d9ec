/**
 * The Change List (§12.1): changes of a period (`from` on the top level, Table 4), each with `change`, in
 * forward chronological order of their time (`datetime` in 1.1, `<lastmod>` in 1.0, where it is mandatory);
 * and the Change List Index (§12.2), its lists in forward order of `from` (recommended on each).
 * @see Z39.99 §12, Appendix A (Table 4); ResourceSync 1.1 (`datetime`)
 */
import { INTERVAL_TOP, kind, type DocumentKind } from './rules.js';

export const CHANGE_LIST_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'change-list',
    name: 'Change List',
    root: 'urlset',
    capability: 'changelist',
    section: '12.1',
    citation: 'Z39.99 §12.1',
    time: 'from',
    family: 'list',
    top: INTERVAL_TOP,
    entry: { at: 'forbidden', from: 'forbidden', lastmod: 'required-1.0', change: 'required', datetime: true },
    links: { up: 'required', upTo: 'capability-list', index: 'change-list-index', archives: 'change-list-archive' },
    order: 'change',
  }),
  kind({
    id: 'change-list-index',
    name: 'Change List Index',
    root: 'sitemapindex',
    capability: 'changelist',
    section: '12.2',
    citation: 'Z39.99 §12.2',
    time: 'from',
    family: 'list',
    top: INTERVAL_TOP,
    entry: { at: 'forbidden', from: 'recommended' },
    order: 'index',
  }),
];
