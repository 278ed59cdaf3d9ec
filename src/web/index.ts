/**
 * The explorer page: a Source's document tree, its documents' entries (paged, searchable by URL), the
 * Change Lists as a time line, dump packages and their manifests, and `check`, as a web-standard handler
 * that `resourcesync explore --web` serves and `resourcesync serve` mounts at `/.resourcesync/ui/`.
 * @example
 * import { createExplorerHandler } from 'resourcesync/web';
 * const handler = createExplorerHandler({ source: 'https://example.com/', http, authority });
 * @see Z39.99 §6–13
 */
export { createExplorerHandler, type ExplorerHandler, type ExplorerOptions, type ChannelSummary } from './explorer.js';
export type { AggregateStatusView, AggregateSourceRow, QueueStatusView, QueueRunRow } from './status-views.js';
export { readEntriesPage, type EntriesPage, type EntryRow } from './entries.js';
export { readTimeline, type TimelinePage, type TimelineEntry } from './timeline.js';
export type { PackagePage } from './packages.js';
export { decodablePath, hostCheck } from '../node/request-guard.js';
