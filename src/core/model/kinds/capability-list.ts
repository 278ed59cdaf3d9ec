/**
 * The Capability List (§9): what a set of resources offers, each capability once (`CAPABILITY_LIST_ENTRIES`
 * in src/core/constants.ts, plus the notification channels), with `up` to the Source Description. A
 * Capability List Index is not part of the standard (the validator says so); it needs no `up` link.
 * @see Z39.99 §9, §6.2; Change Notification §4, Framework Notification §5
 */
import { kind, type DocumentKind } from './rules.js';

export const CAPABILITY_LIST_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'capability-list',
    name: 'Capability List',
    root: 'urlset',
    capability: 'capabilitylist',
    section: '9',
    citation: 'Z39.99 §9',
    time: 'none',
    family: 'capability',
    entry: { lastmod: 'discouraged', capability: 'advertised' },
    links: {
      up: 'required',
      upTo: 'source-description',
      describedby: 'its set of resources',
      index: 'capability-list-index',
    },
  }),
  kind({
    id: 'capability-list-index',
    name: 'Capability List Index',
    root: 'sitemapindex',
    capability: 'capabilitylist',
    section: '9',
    citation: 'Z39.99 §9',
    time: 'none',
    family: 'capability',
    links: { up: 'optional' },
  }),
];
