/**
 * The Destination's state, as an interface: what it holds (a record per resource), where incremental sync stands
 * (a cursor per capability set), small metadata, the failures to retry and the deletions not applied, and a lease
 * that keeps a second run out. The embedded implementation is SQLite in the destination folder
 * (`openSqliteDestinationState`); another database plugs in by implementing {@link DestinationState} and passing
 * it as `state` to `sync`, `audit` or `Follower.start` (its contract: `test/contracts/destination-state.ts`).
 *
 * Every method may answer synchronously or with a promise; callers always `await`.
 */
import type { Entry, Ln } from '../core/model/types.js';

/** What the Destination knows about one resource it holds. */
export interface ResourceRecord {
  /** The resource's URI (`<loc>`). */
  url: string;
  /** Path relative to the destination directory, `/`-separated. */
  path: string;
  length: number;
  /** Digests of the local copy by algorithm token (`md5`, `sha-1`, `sha-256`). */
  hashes: Record<string, string>;
  /** The `lastmod` the Source gave, as written. */
  lastmod?: string;
  /** The ETag of the response that produced the local copy, for conditional GETs. */
  etag?: string;
  /**
   * The media type the Source listed for the resource (its `rs:md type`), as written: what an aggregate republishing
   * the copy gives as the original's `type` in its `via` link (§14.8).
   */
  type?: string;
  /** `rs:ln` links the Source gave for the resource (§14: alternate, canonical, memento, describedby, collection, via…). */
  links?: Ln[];
}

/**
 * Where incremental synchronization stands for one Capability List (or whatever key the caller uses).
 * @see Z39.99 §12.1 ("determine the first unprocessed change")
 */
export interface SyncCursor {
  /** Datetime (W3C, as written) of the last change processed; changes at or before it are done. */
  datetime: string;
  /** The Change List being processed, and how many of its entries were processed. */
  changeList?: string;
  position?: number;
}

/** An entry whose resource could not be brought in line (a failed fetch or verification), to try again. */
export interface PendingEntry {
  entry: Entry;
  /** The `RS_*` code of the failure. */
  code: string;
}

/**
 * State changes written together: all of them or none. Applied in this order: `put`, `delete`, `forgetSkipped`,
 * `skipDeletions`, `addPending`, `removePending` (so a URL both added to and removed from the pending entries in one
 * batch ends removed). Every member is optional; an empty batch changes nothing.
 */
export interface StateBatch {
  /** Records inserted or replaced (by URL). */
  put?: readonly ResourceRecord[];
  /** Records removed (a URL not held is ignored). */
  delete?: readonly string[];
  /** Skipped deletions forgotten (the resource was deleted, or is on offer again). */
  forgetSkipped?: readonly string[];
  /** Deletions the Source announced that were not applied (no `delete`), remembered under a capability set. */
  skipDeletions?: { setKey: string; urls: readonly string[] };
  /** Failures remembered under a capability set (by the entry's `loc`; a later one replaces an earlier one). */
  addPending?: { setKey: string; entries: readonly PendingEntry[] };
  /** Pending entries forgotten (after success, or a deletion). */
  removePending?: readonly string[];
}

/** How a lease is asked for. */
export interface LeaseOptions {
  /** Who holds it (a name that says which run on which machine). Default: host name, process id and a random part. */
  holder?: string;
  /** How long the lease lasts unless renewed, ms. */
  ttlMs: number;
}

/** An exclusive hold on a destination's state, for one run at a time. */
export interface Lease {
  readonly holder: string;
  /** When the lease expires unless renewed (ms since the epoch). */
  readonly expiresAt: number;
  /**
   * Extends the lease by its TTL from now. Throws `RS_LOCKED` when the lease was lost (it expired and another
   * holder took it, or it was released).
   */
  renew(): Promise<void>;
  /** Gives the lease up; another holder may take it at once. Releasing twice, or a lease lost, does nothing. */
  release(): Promise<void>;
}

/**
 * The Destination's state. Reads see every write that resolved before them. Single writes are atomic each;
 * {@link apply} is atomic as a whole. Writes from one caller are applied in the order their promises resolve.
 * A state opened read-only (a dry run, an audit) refuses writes and leases.
 */
export interface DestinationState {
  /** True when opened for reading only. */
  readonly readonly: boolean;

  /** The record of `url`, or undefined when none is held. */
  get(url: string): ResourceRecord | undefined | Promise<ResourceRecord | undefined>;
  /** Number of records held. */
  count(): number | Promise<number>;
  /** Every record, ordered by URL (code-point order), streamed. */
  records(): AsyncIterable<ResourceRecord>;
  /** Every URL held, in no particular order, streamed. */
  urls(): AsyncIterable<string>;
  /** Writes a batch atomically: after a throw (or a rejection) none of it is visible. */
  apply(batch: StateBatch): void | Promise<void>;

  /** The cursor stored under `key`, or undefined. */
  getCursor(key: string): SyncCursor | undefined | Promise<SyncCursor | undefined>;
  /** Stores (replaces) the cursor under `key`. */
  setCursor(key: string, cursor: SyncCursor): void | Promise<void>;
  /** A metadata value, or undefined. */
  getMeta(key: string): string | undefined | Promise<string | undefined>;
  /** Sets (or, with undefined, removes) a metadata value. */
  setMeta(key: string, value: string | undefined): void | Promise<void>;

  /** The pending entries (failures to retry) of a capability set, ordered by URL. */
  pending(setKey: string): Entry[] | Promise<Entry[]>;
  /** Forgets every pending entry of a capability set (a baseline tries everything on offer anyway). */
  clearPending(setKey: string): void | Promise<void>;

  /** True when some skipped deletion is remembered, in any capability set. */
  hasSkippedDeletions(): boolean | Promise<boolean>;
  /** The deletions skipped so far in a capability set (in every set without `setKey`), ordered by URL. */
  skippedDeletions(setKey?: string): string[] | Promise<string[]>;

  /**
   * Takes the destination's lease: exclusive among every instance opened on the same state. A lease whose holder
   * stopped renewing is taken over once it has expired. Throws `RS_LOCKED` while another holder has it (the
   * same holder asking twice included), `RS_INVALID_ARGUMENT` on a read-only state. See `holdLease` for a lease
   * renewed while held.
   */
  acquireLease(options: LeaseOptions): Promise<Lease>;

  /** Releases the leases taken through this instance, then lets the state go. Closing twice does nothing. */
  close(): void | Promise<void>;
}
