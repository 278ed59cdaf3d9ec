/**
 * A Destination that follows a Source by its Change Notifications: it keeps its HTTP client, state
 * and lease between notifications and applies each notification's entries directly (a Change
 * Notification's entries are the changes: created/updated are fetched and verified against the entry's
 * hash and length and written atomically, deleted are removed when deletions were asked for), without
 * reading the Change List. The `from`/`until` windows are tracked ({@link WindowTracker}); a gap, an
 * unreadable notification or a change that failed is caught up by an incremental `sync()` from the
 * Change List, which the state's cursor keeps consistent with: a plain `sync` after following finds
 * nothing new.
 *
 * A Source may announce a change before its Change List lists it (this project's Source does: the
 * notification goes out as soon as the change is recorded, the documents follow within a second). So a
 * gap is filled only once the Change List reaches the `from` of the notification that revealed it: until
 * then the entries of the notifications after the gap wait (they are newer than what the Change List will
 * bring, and applying them first would make its older entries fail verification), and the Change List is
 * read again with a growing delay. After `holdMs` (5 s) they are applied anyway; the stored cursor then
 * stays before the gap, and reading the Change List goes on, until it holds the gap's changes.
 * @see Change Notification §3 (payload, from/until), §4 (delivery); Z39.99 §5.2 (incremental synchronization)
 */
import { resolve } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import type { NotificationWindow } from '../core/model/notification.js';
import { formatW3CDatetime, parseW3CDatetime } from '../core/w3c-datetime.js';
import type { MirrorStorage } from './mirror-storage.js';
import { connect, type Connection } from './connection.js';
import { note, type DestinationNote } from './notes.js';
import type { ResourceApplier, SyncCounts } from './resource-applier.js';
import { changeTime, lastChangePerResource, orderChanges } from './plan.js';
import { runPool } from './run-pool.js';
import type { DestinationState } from './state.js';
import { openSqliteDestinationState } from './sqlite-state.js';
import { holdLease, type HeldLease } from './lease.js';
import { sync, type SyncOptions, type SyncReport } from './sync.js';
import { applierFor, storageFor } from './sync-run.js';
import { WindowTracker } from './notification-windows.js';
import { readChangeChannel, type ChangeChannel } from './change-channel.js';
import { readNotifications, type FollowReason } from './notification-batch.js';

/** What one applied batch did. */
export interface FollowBatch extends SyncCounts {
  /**
   * How the changes were applied: `notification` from the notifications' own entries; otherwise the mode
   * of the `sync()` that read them from the Change List (a gap, a change that failed, an unreadable
   * notification, or {@link Follower.catchUp}).
   */
  mode: 'notification' | SyncReport['mode'];
  /** Why the Change List was read, when it was. */
  reason?: FollowReason;
  /** Notifications in the batch (several arrive together while one is applied). */
  notifications: number;
  /** The span of their windows. */
  window?: NotificationWindow;
  /** Notifications whose window did not continue the one before (missed, out of order or overlapping). */
  gaps: number;
  durationMs: number;
}

/**
 * Options of {@link Follower.start}: those of `sync()`, the first run included. A `state` given is the caller's
 * (the follower does not close it); without one the follower opens the default state and closes it in `close()`.
 */
export interface FollowerOptions extends SyncOptions {
  /** Called after each batch, in order. */
  onBatch?: (batch: FollowBatch) => void;
  /** Problems that do not stop following (a Change List catch-up that threw). */
  onError?: (error: unknown) => void;
  /**
   * Longest wait (ms) of the entries of notifications after a gap for a Change List that does not hold the
   * gap's changes yet; then they are applied. Default 5,000.
   */
  holdMs?: number;
}

const ms = (v: string | undefined): number | undefined => (v === undefined ? undefined : parseW3CDatetime(v, true)?.ms);

/** Longest wait of notification entries for a Change List that does not hold a gap yet, ms (`holdMs`). */
const HOLD_MS = 5000;
/** Most entries held while waiting; past it the earliest go (the Change List brings them). */
const MAX_HELD = 10_000;
/** First and longest delay between two readings of a Change List that does not hold a gap yet, ms. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 30_000;

/**
 * Follows one capability set of a Source.
 * @example
 * const { follower, first } = await Follower.start({ source: 'http://example.com/', dest: './mirror', onBatch: (b) => log(b) });
 * subscriber = new Subscriber({ hub, topic, callbackUrl, onNotification: (bytes) => void follower.receive(bytes) });
 * // …
 * await follower.close();
 */
export class Follower {
  /** The Capability List of the followed set (the key of its state), when the Source has one. */
  readonly capabilityList: string | undefined;
  readonly #options: FollowerOptions;
  readonly #dest: string;
  readonly #connection: Connection;
  /** The state: the caller's (`state`) or the default one, opened at the first batch and closed in `close()`. */
  #store: DestinationState | undefined;
  /** The destination's lease, held between notifications and let go while a `sync()` runs. */
  #lock: HeldLease | undefined;
  /** The mirror: the caller's (`storage`), or the folder with the durability `sync()` would choose. */
  readonly #storage: MirrorStorage;
  #tracker: WindowTracker;
  /** Delivered notifications, with the time each was received (ms). */
  #queue: { bytes: Uint8Array; at: number }[] = [];
  #syncWanted = false;
  /**
   * Set at a gap: the time (ms) the Change List must reach (the `from` of the notification after the gap)
   * before the stored cursor may pass the gap and held entries are applied.
   */
  #needed: number | undefined;
  /** Entries of notifications after a gap, waiting for the Change List; since when (ms). */
  #held: Entry[] = [];
  #heldSince: number | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelay = RETRY_FIRST_MS;
  #retryWanted = false;
  #running: Promise<void> | undefined;
  #closed = false;

  private constructor(options: FollowerOptions, first: SyncReport) {
    this.#options = options;
    this.#dest = resolve(options.dest);
    this.capabilityList = first.sets.map((s) => s.key).find((k) => /^https?:/.test(k));
    this.#connection = connect({ ...options, concurrency: options.concurrency ?? 16 });
    this.#storage = storageFor(options, this.#dest);
    this.#tracker = new WindowTracker();
  }

  /**
   * Runs the first `sync()` (a baseline or catch-up), then holds the destination (its lease and state)
   * for the notifications to come.
   * @throws what `sync()` throws
   */
  static async start(options: FollowerOptions): Promise<{ follower: Follower; first: SyncReport }> {
    if (options.dryRun === true) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'A dry run cannot follow a Source.');
    const first = await sync(options);
    const follower = new Follower(options, first);
    try {
      await follower.#open();
    } catch (e) {
      if (options.state === undefined) await follower.#store?.close();
      await follower.#connection.close();
      throw e;
    }
    return { follower, first };
  }

  /** The end of the last notification window applied (or of the changes read from the Change List), ms. */
  get until(): number | undefined {
    return this.#tracker.until;
  }

  /**
   * Queues a delivered Change Notification (the bytes as received) and resolves once it has been applied
   * (with the others that arrived meanwhile, in order).
   */
  receive(bytes: Uint8Array): Promise<void> {
    this.#queue.push({ bytes, at: Date.now() });
    return this.#kick();
  }

  /**
   * The change channel the followed Capability List advertises, read through the follower's HTTP client (its
   * authority, credentials, timeouts and `signal`), within a deadline of `timeoutMs` (default 30 s) for the whole read.
   * A hub on an origin the authority does not allow is returned as `refusedHub`, never as `hub`.
   * @throws ResourceSyncError as {@link readChangeChannel}
   */
  changeChannel(): Promise<ChangeChannel | undefined> {
    if (this.capabilityList === undefined) return Promise.resolve(undefined);
    const { http, authority } = this.#connection;
    const signal = this.#options.signal;
    const deadlineMs = this.#options.timeoutMs ?? 30_000;
    return readChangeChannel({ http, authority, ...(signal ? { signal } : {}), deadlineMs }, this.capabilityList);
  }

  /** Queues a catch-up from the Change List (a poll, or after the hub was unreachable). */
  catchUp(): Promise<void> {
    this.#syncWanted = true;
    return this.#kick();
  }

  /** Waits for the batch in progress, then lets the destination go (lease, state, HTTP client). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#queue = [];
    this.#syncWanted = false;
    this.#retryWanted = false;
    if (this.#retryTimer !== undefined) clearTimeout(this.#retryTimer);
    this.#retryTimer = undefined;
    await this.#running;
    await this.#release();
    if (this.#options.state === undefined) await this.#store?.close();
    this.#store = undefined;
    await this.#connection.close();
  }

  async #open(): Promise<void> {
    this.#store ??= this.#options.state ?? (await openSqliteDestinationState(this.#dest));
    this.#lock = await holdLease(this.#store);
    try {
      await this.#storage.discardStaged();
    } catch (e) {
      await this.#release();
      throw e;
    }
    const key = this.capabilityList;
    const cursor = key === undefined ? undefined : ms((await this.#store.getCursor(key))?.datetime);
    const known = this.#tracker.until;
    this.#tracker = new WindowTracker(cursor === undefined ? known : Math.max(cursor, known ?? cursor));
  }

  /** Lets the lease go (the state stays open for the `sync()` that reads the Change List meanwhile). */
  async #release(): Promise<void> {
    const lock = this.#lock;
    this.#lock = undefined;
    await lock?.release();
  }

  #kick(): Promise<void> {
    if (this.#running !== undefined) return this.#running.then(() => (this.#pendingWork() ? this.#kick() : undefined));
    this.#running = (async () => {
      while (this.#pendingWork() && !this.#closed) {
        const batch = this.#queue;
        this.#queue = [];
        const wanted: FollowBatch['reason'] = this.#retryWanted ? 'gap' : this.#syncWanted ? 'requested' : undefined;
        this.#syncWanted = false;
        this.#retryWanted = false;
        try {
          await this.#batch(batch, wanted);
        } catch (e) {
          if (this.#options.signal?.aborted === true || this.#closed) return;
          this.#options.onError?.(e);
        }
      }
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  #pendingWork(): boolean {
    return this.#queue.length > 0 || this.#syncWanted || this.#retryWanted;
  }

  /** Reads the Change List again later (a gap it did not hold yet), each time after a longer delay. */
  #retryLater(): void {
    if (this.#retryTimer !== undefined || this.#closed) return;
    const delay = this.#retryDelay;
    this.#retryDelay = Math.min(RETRY_MAX_MS, delay * 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#retryWanted = true;
      void this.#kick();
    }, delay);
    this.#retryTimer.unref();
  }

  async #batch(payloads: { bytes: Uint8Array; at: number }[], wanted: FollowBatch['reason']): Promise<void> {
    const started = Date.now();
    if (this.#lock === undefined) await this.#open(); // a catch-up that failed left the destination
    const read = await readNotifications(payloads, wanted, {
      tracker: this.#tracker,
      connection: this.#connection,
      base: this.capabilityList ?? this.#options.source,
      onGap: (from) => {
        this.#needed = Math.max(this.#needed ?? from, from);
      },
    });
    const common = { notifications: read.notifications, gaps: read.gaps, ...(read.window ? { window: read.window } : {}) };
    if (read.reason !== undefined || this.#needed !== undefined || this.capabilityList === undefined) {
      await this.#changeListThenHeld(started, read.reason ?? 'gap', common, read.warnings, read.entries);
      return;
    }
    await this.#apply(read.entries, started, common, read.warnings);
  }

  /**
   * The Change List first; then the notifications' own `entries` that it does not hold yet, with those held
   * before. While a gap is not filled they are held (up to `holdMs`) and the Change List is read again later.
   */
  async #changeListThenHeld(
    started: number,
    reason: NonNullable<FollowBatch['reason']>,
    common: Pick<FollowBatch, 'notifications' | 'gaps' | 'window'>,
    warnings: DestinationNote[],
    entries: Entry[],
  ): Promise<void> {
    const cursor = await this.#changeList(started, reason, common, warnings);
    if (this.capabilityList === undefined) return;
    this.#held.push(...entries);
    if (this.#held.length > MAX_HELD) this.#held.splice(0, this.#held.length - MAX_HELD);
    const filled = this.#needed === undefined || (cursor !== undefined && cursor >= this.#needed);
    const later: DestinationNote[] = [];
    if (filled) {
      this.#needed = undefined;
      this.#retryDelay = RETRY_FIRST_MS;
    } else {
      this.#heldSince ??= started;
      if (started - this.#heldSince < (this.#options.holdMs ?? HOLD_MS)) {
        this.#retryLater();
        return;
      }
      later.push(note('change-list-behind', { needed: formatW3CDatetime(this.#needed!), ...(cursor !== undefined ? { cursor: formatW3CDatetime(cursor) } : {}), heldMs: started - this.#heldSince }));
      this.#retryLater();
    }
    const held = this.#held.filter((e) => cursor === undefined || (changeTime(e) ?? Infinity) > cursor);
    this.#held = [];
    this.#heldSince = undefined;
    if (held.length > 0 || later.length > 0) await this.#apply(held, Date.now(), { notifications: 0, gaps: 0 }, later);
  }

  /**
   * Applies Change Notification entries directly (each resource's last change), then moves the stored cursor
   * to the end of the last window, unless a gap before it is not filled yet.
   */
  async #apply(entries: Entry[], started: number, common: Pick<FollowBatch, 'notifications' | 'gaps' | 'window'>, warnings: DestinationNote[]): Promise<void> {
    const base = this.capabilityList ?? this.#options.source;
    const pending = new Set((await this.#store!.pending(this.capabilityList!)).map((e) => e.loc));
    const applier = this.#applier(pending);
    for (const w of warnings) applier.warn(w);
    const { entries: ordered } = orderChanges(entries);
    const last = lastChangePerResource(ordered);
    applier.phase('incremental', last.length, 'a Change Notification');
    await runPool(last, this.#options.concurrency ?? 16, async (e, release) => {
      const change = e.md?.change;
      if (change !== undefined && change !== 'created' && change !== 'updated' && change !== 'deleted') {
        applier.warn(note('change-unknown', { url: base, loc: e.loc, change }));
      }
      await applier.apply(e, release); // a deletion is planned like a Change List's (deleted-at-source, kept without --delete)
    });
    await this.#storage.settle();
    await applier.flush();
    if (applier.outside > 0) applier.warn(note('outside-url-prefixes', { count: applier.outside, prefixes: this.#options.urlPrefixes ?? [] }));
    const counts = applier.counts;
    if (applier.failedUrls.size > 0) {
      // the cursor stays: the Change List from there brings what failed (or its newer changes). What a notification
      // alone named is not kept as pending: only the Change List, the Source's own word, makes a failure stick
      await this.#store!.apply({ removePending: [...applier.failedUrls].filter((u) => !pending.has(u)) });
      await this.#changeList(started, 'failed', common, [], counts);
      return;
    }
    const until = this.#tracker.until;
    const store = this.#store!;
    const key = this.capabilityList!;
    const cursor = ms((await store.getCursor(key))?.datetime);
    if (this.#needed === undefined && until !== undefined && (cursor === undefined || until > cursor)) {
      await store.setCursor(key, { datetime: formatW3CDatetime(until) });
    }
    this.#options.onBatch?.({ ...counts, mode: 'notification', ...common, durationMs: Date.now() - started });
  }

  /**
   * An incremental `sync()` from the Change List, the destination let go meanwhile; resolves with the stored
   * cursor after it (ms).
   */
  async #changeList(
    started: number,
    reason: NonNullable<FollowBatch['reason']>,
    common: Pick<FollowBatch, 'notifications' | 'gaps' | 'window'>,
    warnings: DestinationNote[],
    before?: SyncCounts,
  ): Promise<number | undefined> {
    await this.#release();
    let report: SyncReport;
    try {
      report = await sync({ ...this.#options, ...(this.#store !== undefined ? { state: this.#store } : {}) });
    } finally {
      await this.#open();
    }
    const sum: SyncCounts = {
      created: report.created + (before?.created ?? 0),
      updated: report.updated + (before?.updated ?? 0),
      deleted: report.deleted + (before?.deleted ?? 0),
      unchanged: report.unchanged + (before?.unchanged ?? 0),
      failed: report.failed,
      deletionsSkipped: [...(before?.deletionsSkipped ?? []), ...report.deletionsSkipped],
      deletionsSkippedCount: report.deletionsSkippedCount + (before?.deletionsSkippedCount ?? 0),
      bytes: report.bytes + (before?.bytes ?? 0),
      warnings: [...warnings, ...(before?.warnings ?? []), ...report.warnings],
    };
    this.#options.onBatch?.({ ...sum, mode: report.mode, reason, ...common, durationMs: Date.now() - started });
    return this.capabilityList === undefined ? undefined : ms((await this.#store?.getCursor(this.capabilityList))?.datetime);
  }

  /** A fresh applier (its counters are the batch's) over the open store and HTTP client. */
  #applier(pending: ReadonlySet<string>): ResourceApplier {
    const parts = { connection: this.#connection, store: this.#store!, storage: this.#storage, options: this.#options };
    const onPlan = this.#options.onPlan;
    const applier = applierFor(parts, { dryRun: false, adopt: true, hasPending: (u) => pending.has(u), ...(onPlan ? { onPlan } : {}) });
    applier.setKey = this.capabilityList!;
    return applier;
  }
}
