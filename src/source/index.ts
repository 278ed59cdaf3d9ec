/**
 * The Source side of ResourceSync: publish directories as a Source (document tree + snapshot store),
 * map URLs to files, and the building blocks (inventory, compare, store, dumps).
 * @example
 * import { publish, resolveResource } from 'resourcesync/source';
 * const r = await publish({ sets: [{ name: 'data', dir: '/srv/data' }], baseUrl: 'https://example.com/', outDir: '/var/www' });
 * @see Z39.99 §5.1, §6, §8–13
 */
export { publish, storeFile, type PublishOptions, type PublishResult, type PublishProgress, type ResourceLinksFn } from './publish.js';
export type { PublishWarning, PublishSet } from './publish-context.js';
export { jsonLinesFeed, type InventoryFeed, type FeedItem } from './inventory-feed.js';
export { postgresFeed, type PostgresFeedOptions } from './pg-inventory.js';
export { recordChanges, type RecordResult } from './record-changes.js';
export { channelTopics, channelEntries, type SetNotifications } from './notifications.js';
export {
  resolveResource,
  pathToUrl,
  urlToPath,
  normalizeBaseUrl,
  setBaseUrl,
  setDocumentsPath,
  isValidSetName,
  type ResourceSet,
  type ResolvedResource,
} from './url-path.js';
export type {
  StoredResource,
  ListedResource,
  ChangeRecord,
  ChangePeriod,
  DumpRecord,
  ChangeListBoundary,
  RebuildOptions,
  RebuildResult,
} from './snapshot-rows.js';
export {
  holdingLease,
  DEFAULT_LEASE_MS,
  type SourceSnapshots,
  type SnapshotCursor,
  type SnapshotLease,
  type SnapshotLeaseName,
  type LeaseOptions,
  type SnapshotsOpener,
} from './source-snapshots.js';
export { openSqliteSnapshots } from './sqlite-snapshots.js';
export { openPostgresSnapshots, type PostgresSnapshotsOptions } from './postgres-snapshots.js';
export type { DocumentSink, SinkResult } from './document-sink.js';
export { createS3Documents, type S3Documents, type S3DocumentsOptions } from './s3-documents.js';
export { writeZipPackage, type PackageItem, type PackageResult } from './zip-package.js';
export { writeDumpPackage, bitstreamPath, PACKAGE_MEDIA_TYPES, PACKAGE_EXTENSIONS, type DumpFormat, type DumpItem } from './warc-package.js';
export { inventory, type InventoryEntry, type InventoryOptions, type InventoryProgress, type PreviousState, type Hashes } from '../node/inventory.js';
export { watchSources, type SourceWatcher, type WatchOptions, type WatchAction } from './watch/watch.js';
