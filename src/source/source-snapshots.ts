/**
 * The Source's snapshots of one set of resources, behind an interface: the snapshot of its inventory, the
 * changes recorded between snapshots, the Change List periods (open and closed), the published dumps, a few
 * values of the publication's own bookkeeping, and the leases that serialise the work on the set between
 * processes and machines sharing its history. The embedded implementation is SQLite (`openSqliteSnapshots`,
 * src/source/sqlite-snapshots.ts), the default of `publish` and `recordChanges`; another database implements
 * this interface and passes `test/contracts/source-snapshots.ts`.
 *
 * Every method may answer asynchronously; callers always `await`. Streams are `AsyncIterable`s, read lazily:
 * a snapshot of millions of resources is never held whole.
 * @see Z39.99 §5.1, §12.1 (Change List: from/until, open and closed), §12.2 (Change List Index)
 */
import { ResourceSyncError } from '../core/errors.js';
import type { InventoryEntry, PreviousState } from '../node/inventory.js';
import type { ChangePeriod, ChangeRecord, DumpRecord, ListedResource, RebuildOptions, RebuildResult, StoredResource } from './snapshot-rows.js';
import { RenewedLease } from '../node/renewed-lease.js';

/**
 * The work on a set that must not overlap: `recording` changes in the snapshots (a scan, `recordChanges`), and
 * writing the set's `documents`. A publication that scans holds `documents` first, then `recording`, so that a
 * recording never waits for documents being written.
 */
export type SnapshotLeaseName = 'recording' | 'documents';

/** A lease held on a set's snapshots: no other holder gets the same name until it is released or expires. */
export interface SnapshotLease {
  readonly name: SnapshotLeaseName;
  /** Who holds it: unique to this acquisition (host, process and a counter for the embedded implementation). */
  readonly holder: string;
  /** When it lapses unless renewed (ms since the epoch). */
  readonly expiresAt: number;
  /**
   * Extends the lease by its time to live from now.
   * @throws ResourceSyncError RS_LOCKED when it lapsed and another holder took it
   */
  renew(): Promise<void>;
  /** Gives the lease up (once; later calls and a lease another holder took meanwhile do nothing). */
  release(): Promise<void>;
}

/** How {@link SourceSnapshots.acquireLease} takes a lease. */
export interface LeaseOptions {
  /** How long the lease lasts unless renewed (ms). Default {@link DEFAULT_LEASE_MS}. */
  ttlMs?: number;
  /** Stops waiting (RS_ABORTED). */
  signal?: AbortSignal;
}

/** A lease lasts this long unless renewed: a holder that died frees its set after at most this long. */
export const DEFAULT_LEASE_MS = 60_000;

/** A forward cursor over the snapshot, for `inventory`'s `previous` option. */
export interface SnapshotCursor {
  /** What the snapshot holds at `path`; paths must be given in non-decreasing UTF-8 byte order. */
  get(path: string): PreviousState | undefined | Promise<PreviousState | undefined>;
  /** Ends the cursor (once). */
  close(): Promise<void>;
}

/** The snapshots of one set of resources. */
export interface SourceSnapshots {
  /** Where they are kept, for messages (a file, a URL without credentials). */
  readonly location: string;
  /** Ends the use of the snapshots; the leases this instance holds should be released first. */
  close(): Promise<void>;

  /** Time of the latest rebuild, or undefined before the first. */
  snapshotAt(): Promise<number | undefined>;
  /** Time of the latest recording that changed something (or of the baseline). */
  changedAt(): Promise<number | undefined>;
  /**
   * The snapshots' clock: `now()`, but later than the latest recorded change and not earlier than the snapshot,
   * so that each recording has a time of its own and times go forward even if the system clock steps back.
   * @see Z39.99 §12.1 (forward chronological order)
   */
  clock(now?: () => number): Promise<number>;
  /** A bookkeeping value of the publication, undefined when never set. */
  getMeta(key: string): Promise<string | undefined>;
  /** Sets a bookkeeping value; visible to every later read, of this instance or another. */
  setMeta(key: string, value: string): Promise<void>;

  /** Number of resources in the snapshot. */
  count(): Promise<number>;
  /** The snapshot in path order (UTF-8 byte order), streamed. */
  resources(): AsyncIterable<StoredResource>;
  /** The snapshot in path order with the fixity as attribute text (`md5:… sha-256:…`): the Resource List's fast path. */
  listing(): AsyncIterable<ListedResource>;
  /** True when the snapshot holds a resource under the folder `path` (relative, no trailing `/`). */
  holdsUnder(path: string): Promise<boolean>;
  /** One resource of the snapshot, undefined when it holds none at `path`. */
  resource(path: string): Promise<StoredResource | undefined>;
  /** A forward cursor over the snapshot as it is now (a rebuild running meanwhile does not show in it). */
  lookup(): Promise<SnapshotCursor>;

  /** Every Change List period, oldest first. */
  periods(): Promise<ChangePeriod[]>;
  /** The open period (undefined before the first rebuild). */
  openPeriod(): Promise<ChangePeriod | undefined>;
  /** The changes of one period in forward chronological order (increasing `seq`), streamed. */
  changes(period: number): AsyncIterable<ChangeRecord>;
  /** Every recorded change in forward chronological order, streamed. */
  allChanges(): AsyncIterable<ChangeRecord>;
  /**
   * Drops the oldest closed periods and their changes, all in one step, so that at most `keep` closed periods
   * remain, but none that ends after `keepAfter` (ms). Returns the dropped periods.
   */
  prunePeriods(keep: number, keepAfter?: number): Promise<ChangePeriod[]>;

  /** Records a published dump; its `id` is new and greater than every earlier one. */
  addDump(dump: Omit<DumpRecord, 'id'>): Promise<DumpRecord>;
  /** Published dumps of a kind, oldest first. */
  dumps(kind: DumpRecord['kind']): Promise<DumpRecord[]>;
  /** Forgets a published dump (its files are the caller's); an unknown id does nothing. */
  removeDump(id: number): Promise<void>;

  /**
   * Compares `entries` (a new inventory in path order) with the snapshot and records the differences as changes
   * at one time, `clock(now)`, atomically: on a throw (or an abort) nothing is recorded. The first rebuild records
   * the baseline and opens the first Change List period. A period that reached `periodMs` is closed before
   * recording, one that reached `maxEntries` as soon as it is full. `onChange` hears each change in order.
   */
  rebuild(entries: AsyncIterable<InventoryEntry> | Iterable<InventoryEntry>, options?: RebuildOptions): Promise<RebuildResult>;
  /**
   * Records the changes of some paths only: each with its new entry, or undefined when it is no longer
   * published; a path whose stored state equals the entry records nothing. Same atomicity, clock and Change
   * List boundary as {@link rebuild}.
   * @throws ResourceSyncError RS_INVALID_ARGUMENT before the first rebuild
   */
  update(states: Iterable<{ path: string; entry: InventoryEntry | undefined }>, options?: RebuildOptions): Promise<RebuildResult>;

  /**
   * Takes the lease `name` of the set, waiting while another holder (of this instance, another instance, another
   * process or machine) has it and it has not expired. Waiters of one process are served in the order they came.
   * @throws ResourceSyncError RS_ABORTED when `options.signal` aborts the wait
   */
  acquireLease(name: SnapshotLeaseName, options?: LeaseOptions): Promise<SnapshotLease>;
}

/** Opens the snapshots of a set (`PublishOptions.snapshots`): `file` is where the embedded store would be. */
export type SnapshotsOpener = (set: { name: string; dir: string; file: string }) => SourceSnapshots | Promise<SourceSnapshots>;

/**
 * Runs `fn` holding the lease `name` of `snapshots`, renewing it every third of its time to live, and releases
 * it when `fn` ends (returns or throws).
 * @example
 * await holdingLease(snapshots, 'documents', async () => writeDocuments(snapshots));
 */
export async function holdingLease<T>(snapshots: SourceSnapshots, name: SnapshotLeaseName, fn: () => Promise<T>, options: LeaseOptions = {}): Promise<T> {
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_MS;
  // renewed while held; a lease lost to another holder (this process stalled past its expiry) is not renewed again
  const lease = new RenewedLease(await snapshots.acquireLease(name, { ...options, ttlMs }), ttlMs);
  try {
    return await fn();
  } finally {
    await lease.release();
  }
}

/** The error of a lease wait that was aborted. */
export function leaseAborted(location: string, name: string, signal: AbortSignal): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', `Waiting for the ${name} lease of '${location}' was aborted.`, { data: { path: location }, cause: signal.reason });
}
