/**
 * The Resource List (§10.1) and the Resource List Index it is split into when long (§10.2): a snapshot, so
 * `at` on the top level (Table 4); each resource once; `up` to the Capability List, `index` to the index.
 * @see Z39.99 §10, Appendix A (Table 4)
 */
import { kind, SNAPSHOT_TOP, type DocumentKind } from './rules.js';

export const RESOURCE_LIST_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'resource-list',
    name: 'Resource List',
    root: 'urlset',
    capability: 'resourcelist',
    section: '10.1',
    citation: 'Z39.99 §10.1',
    time: 'at',
    family: 'list',
    top: SNAPSHOT_TOP,
    entry: { at: 'forbidden', from: 'forbidden', uniqueLocs: true },
    links: { up: 'required', upTo: 'capability-list', index: 'resource-list-index', archives: 'resource-list-archive' },
  }),
  kind({
    id: 'resource-list-index',
    name: 'Resource List Index',
    root: 'sitemapindex',
    capability: 'resourcelist',
    section: '10.2',
    citation: 'Z39.99 §10.2',
    time: 'at',
    family: 'list',
    top: SNAPSHOT_TOP,
    entry: { at: 'allowed', from: 'forbidden' },
  }),
];
