/**
 * The Resource Dump (§11.1): ZIP packages of a snapshot, each entry a package with its type and length; its
 * index; and the Resource Dump Manifest inside each package (§11.2), whose entries name their bitstream by
 * `path` and are each listed once.
 * @see Z39.99 §11, Appendix A (Table 4)
 */
import { kind, SNAPSHOT_TOP, type DocumentKind } from './rules.js';

export const RESOURCE_DUMP_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'resource-dump',
    name: 'Resource Dump',
    root: 'urlset',
    capability: 'resourcedump',
    section: '11.1',
    citation: 'Z39.99 §11.1',
    time: 'at',
    family: 'dump',
    top: SNAPSHOT_TOP,
    entry: { at: 'allowed', from: 'forbidden', packageMetadata: true },
    links: { up: 'required', upTo: 'capability-list', index: 'resource-dump-index', archives: 'resource-dump-archive' },
    manifest: 'resource-dump-manifest',
  }),
  kind({
    id: 'resource-dump-index',
    name: 'Resource Dump Index',
    root: 'sitemapindex',
    capability: 'resourcedump',
    section: '11.1',
    citation: 'Z39.99 §11.1',
    time: 'at',
    family: 'dump',
    top: SNAPSHOT_TOP,
    entry: { at: 'allowed', from: 'forbidden' },
  }),
  kind({
    id: 'resource-dump-manifest',
    name: 'Resource Dump Manifest',
    root: 'urlset',
    capability: 'resourcedump-manifest',
    section: '11.2',
    citation: 'Z39.99 §11.2',
    time: 'at',
    family: 'manifest',
    top: SNAPSHOT_TOP,
    entry: { at: 'forbidden', from: 'forbidden', path: 'all', typeRecommended: true, uniqueLocs: true },
  }),
];
