/**
 * The Destination side of ResourceSync (Z39.99 §5.2): discover a Source, baseline and incremental
 * sync into a directory, audit a mirror. Effects (HTTP, clock) are injectable; the defaults are an
 * undici connection pool per origin and the system clock.
 * @example
 * import { sync, audit } from 'resourcesync/destination';
 * const report = await sync({ source: 'https://example.org/', dest: './mirror', delete: true });
 * const check = await audit({ source: 'https://example.org/', dest: './mirror' });
 */
export { sync, type SyncOptions, type SyncReport, type SyncProgress, type SyncFailure, type MirrorTarget, type SyncBehaviour } from './sync.js';
export type { ConnectionOptions } from './connection.js';
export { audit, type AuditOptions, type AuditBehaviour, type AuditReport, type AuditDifference, type AuditPlan } from './audit.js';
export { repair, type RepairOptions, type RepairReport } from './repair.js';
export { discover, type Discovery, type DiscoverOptions, type DiscoveredCapabilityList, type StartKind, type CapabilityName } from './discover.js';
export { plan, PLAN_ITEMS_LISTED, type PlanSummary, type PlanItem, type PlanAction, type PlanReason, type PlanDecision, type PlanOptions, type SourceFacts, type LocalFacts, type LocalLookup, type LocalLookupFn } from './plan.js';
export { NOTES, NOTE_CODES, note, type DestinationNote, type NoteCode, type NoteData, type NoteSeverity, type NoteDefinition, type GapData, type GapNote, type GapRemedy } from './notes.js';
export { applyResourceDump, applyChangeDump, type ApplyDumpOptions, type DumpReport, type DumpFailure, type DumpProgress, type DumpResource } from './dump.js';
export { openWarcArchive, type WarcArchive, type WarcArchiveOptions, type WarcArchiveSummary } from './warc-archive.js';
export type { FetchArchive, FetchCapture } from './resource-fetch.js';
export { fetchResource, mirrorLinks, patchLinks, relatedLinks, type FetchResult, type FetchResourceOptions, type AuthorityCheck, type FetchAttempt, type RelatedLinks, type KeptRelation, type LinkRef, KEPT_RELATIONS } from './links.js';
export { keptLinks, type ResourceLinks } from './kept-links.js';
export { auditVia, type ViaAuditOptions, type ViaAuditReport, type ViaDifference } from './audit-via.js';
export { mirrorDescribedBy, describedByTree, type DescribedByOptions, type DescribedByReport, type DescribedByFailure } from './described-by.js';
export { createHttpClient, authFromEnv, type HttpClientOptions } from '../client/http-client.js';
export type { HttpGet, HttpResponse, HttpRequestInit } from '../client/http.js';
export { createAuthority, type Authority } from '../client/authority.js';
export { createMapper, type Mapper, type Mapping } from './mapper.js';
export type { BufferPool } from './verified-write.js';
export { RenameOnly, FsyncEach, type Durability, type DurabilityOptions, type SmallFile, type SmallFileCalls } from '../node/durability.js';
export { SmallFileThread } from '../node/small-file-thread.js';
export { GroupCommit, type GroupCommitOptions, type FlushFiles } from '../node/group-commit.js';
export type { DestinationState, ResourceRecord, SyncCursor, StateBatch, PendingEntry, Lease, LeaseOptions } from './state.js';
export { openSqliteDestinationState, type SqliteDestinationStateOptions } from './sqlite-state.js';
export { openPostgresDestinationState, type PostgresDestinationStateOptions } from './postgres-state.js';
export { holdLease, DEFAULT_LEASE_TTL_MS, type HeldLease } from './lease.js';
export { createLocalDirectory, type LocalDirectoryOptions } from './local-directory.js';
export { createS3Storage, type S3Storage, type S3StorageOptions } from './s3-storage.js';
export type { MirrorStorage, StagedWrite, StageOptions, WriteChunkOptions, ReadOptions, StoredFacts, StoredItem, StoredDigests } from './mirror-storage.js';
export { Follower, type FollowerOptions, type FollowBatch } from './follower.js';
export { readChangeChannel, type ChangeChannel, type ChangeChannelContext } from './change-channel.js';
export { followSource, type FollowSourceOptions, type FollowHandle, type FollowEvent, type FollowVia, type CallbackMount } from './follow.js';
export { syncWithQueue, type QueueSyncOptions, type QueueProgress } from './queue-sync.js';
export { runSyncWorker, type SyncWorkerOptions, type ChunkReport } from './queue-worker.js';
export type { ChunkJob, ChunkOutcome, StorageDescriptor, SharedStateName, JobConnection } from './queue-jobs.js';
export { readQueueStatus, type QueueStatus, type QueueRunStatus } from './queue-status.js';
export type { AppliedElsewhere } from './sync-counts.js';
export type { ChangeResults } from './resource-applier.js';
