/**
 * The notification payloads: a Change Notification carries the changes of a period (`from` and `until`
 * mandatory), timed by `datetime` in forward order; a Framework Notification carries changes of capability
 * documents, each with a capability and a change its Table 2 allows. Neither needs an `up` link.
 * @see ResourceSync Change Notification §3, Framework Notification §2.1, §3
 */
import { kind, type DocumentKind } from './rules.js';

export const NOTIFICATION_KINDS: readonly DocumentKind[] = [
  kind({
    id: 'change-notification',
    name: 'Change Notification',
    root: 'urlset',
    capability: 'change-notification',
    section: 'Notification §3',
    citation: 'ResourceSync Change Notification §3',
    time: 'none',
    family: 'notification',
    top: { required: ['from', 'until'], forbidden: ['at', 'completed'], toleratedMissing: [] },
    entry: { change: 'required', datetime: true },
    links: { up: 'optional' },
    order: 'change',
  }),
  kind({
    id: 'framework-notification',
    name: 'Framework Notification',
    root: 'urlset',
    capability: 'framework-notification',
    section: 'Notification §3',
    citation: 'ResourceSync Framework Notification §3',
    time: 'none',
    family: 'notification',
    entry: { change: 'required', datetime: true, capability: 'framework' },
    links: { up: 'optional' },
  }),
];
