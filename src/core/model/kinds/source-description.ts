/**
 * The Source Description (§8): the Source's Capability Lists, one per set of resources, at the well-known URI
 * (§6.3.2); a Source Description Index when it is split. The top of the tree: it has no `up` link.
 * @see Z39.99 §8, §6.2
 */
import { kind, type DocumentKind } from './rules.js';

export const SOURCE_DESCRIPTION_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'source-description',
    name: 'Source Description',
    root: 'urlset',
    capability: 'description',
    section: '8',
    citation: 'Z39.99 §8',
    time: 'none',
    family: 'description',
    entry: { lastmod: 'discouraged', capability: 'capabilitylist' },
    links: { up: 'forbidden', describedby: 'the Source', index: 'source-description-index' },
  }),
  kind({
    id: 'source-description-index',
    name: 'Source Description Index',
    root: 'sitemapindex',
    capability: 'description',
    section: '8',
    citation: 'Z39.99 §8',
    time: 'none',
    family: 'description',
    links: { up: 'forbidden' },
  }),
];
