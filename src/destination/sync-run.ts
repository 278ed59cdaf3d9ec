/**
 * One run of `sync()` as data: what it holds on the mirror ({@link RunHold}: the connection, the lock, the state
 * store) and what its steps share ({@link SyncRun}: the applier, the report, the resources seen by every baseline,
 * the catch-ups owed). The steps themselves are functions over a run (`sync-steps.ts`, `sync-changes.ts`).
 */
import { resolve } from 'node:path';
import type { Entry, ResourceSyncDocument } from '../core/model/types.js';
import type { SeenSet } from '../core/fingerprint-set.js';
import { SpillingSet } from '../node/spilling-set.js';
import { durabilityFor } from '../node/durability-for.js';
import type { CapabilitySet } from './capability-sets.js';
import { connect, type Connection } from './connection.js';
import { makeDestination, undoFirstRun } from './dest-folder.js';
import { checkDocument, validating, type DocumentContext, type RemoteDocument } from './documents.js';
import { linkFetcher } from './links.js';
import { countPlanItem, emptyPlanSummary, type PlanItem, type PlanSummary } from './plan.js';
import { ResourceApplier, emptyCounts, type ResourceApplierOptions } from './resource-applier.js';
import type { DestinationState, SyncCursor } from './state.js';
import { openSqliteDestinationState } from './sqlite-state.js';
import { holdLease, type HeldLease } from './lease.js';
import { LocalDirectory } from './local-directory.js';
import type { MirrorStorage } from './mirror-storage.js';
import type { SyncOptions, SyncReport } from './sync-options.js';
import { urlFilter } from './url-filter.js';

/** `{ [key]: value }`, or nothing when the value is undefined (for `exactOptionalPropertyTypes`). */
function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * The run's mirror: the caller's `storage`, else the folder `dest` as a `LocalDirectory` with the caller's
 * `durability` (default: a group commit).
 */
export function storageFor(options: Pick<SyncOptions, 'storage' | 'durability'>, dest: string): MirrorStorage {
  return options.storage ?? new LocalDirectory(dest, { durability: options.durability ?? durabilityFor() });
}

/** What an applier is made of: the run's connection, state and storage, and the options they share. */
export interface ApplierParts {
  connection: Pick<Connection, 'http' | 'authority' | 'mapper'>;
  store: DestinationState;
  storage: MirrorStorage;
  options: Pick<SyncOptions, 'delete' | 'verifyRetries' | 'preferMirrors' | 'signal' | 'archive' | 'urlPrefixes'>;
}

/** What differs between the applier of a sync and the one of a follower's batch. */
export type ApplierOverrides = Pick<ResourceApplierOptions, 'dryRun' | 'adopt'> &
  Partial<Pick<ResourceApplierOptions, 'fresh' | 'rehash' | 'hasPending' | 'onPlan' | 'onProgress'>>;

/** The applier of a sync or a follower's batch: the parts of the run, with the options that differ between them. */
export function applierFor(parts: ApplierParts, overrides: ApplierOverrides): ResourceApplier {
  const { http, authority, mapper } = parts.connection;
  const { storage, options } = parts;
  return new ResourceApplier({
    http,
    authority,
    mapper,
    store: parts.store,
    storage,
    applyDeletes: options.delete ?? false,
    verifyRetries: options.verifyRetries ?? 2,
    preferMirrors: options.preferMirrors ?? false,
    fetchViaLinks: linkFetcher({ http, authority, storage, signal: options.signal }),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.archive ? { archive: options.archive } : {}),
    ...optional('include', urlFilter(options.urlPrefixes)),
    ...overrides,
  });
}

/**
 * What a run takes on the mirror and gives back: the connection to the Source and the mirror's storage (made at
 * once), then, once opened, the state and its lease. A run that fails holding nothing is undone
 * ({@link RunHold.abandon}). A state the caller passed is the caller's: the run takes its lease but never closes it.
 */
export class RunHold {
  readonly dest: string;
  readonly dryRun: boolean;
  readonly concurrency: number;
  readonly connection: Connection;
  readonly storage: MirrorStorage;
  lease: HeldLease | undefined;
  /**
   * Leave what is staged in the storage at the start (a job queue's run: workers of the run resumed may be writing);
   * settling discards it all the same.
   */
  keepStaged = false;
  store: DestinationState | undefined;
  readonly ownsState: boolean;
  readonly #undo: (() => Promise<void>) | undefined;

  /** @throws ResourceSyncError RS_INVALID_ARGUMENT when `source` is not an http(s) URL */
  constructor(options: SyncOptions) {
    this.dest = resolve(options.dest);
    this.dryRun = options.dryRun ?? false;
    this.concurrency = options.concurrency ?? 16;
    this.connection = connect({ ...options, concurrency: this.concurrency });
    this.storage = storageFor(options, this.dest);
    this.store = options.state;
    this.ownsState = options.state === undefined;
    this.#undo = this.dryRun ? undefined : undoFirstRun(this.dest);
  }

  /**
   * Makes the mirror ready for a run that writes: the folder created when missing, the state opened and its lease
   * taken (a second run is refused), what an interrupted run left staged discarded.
   */
  async prepare(): Promise<void> {
    makeDestination(this.dest);
    this.store ??= await openSqliteDestinationState(this.dest);
    this.lease = await holdLease(this.store);
    if (!this.keepStaged) await this.storage.discardStaged();
  }

  /** After a failure: a run that holds nothing (a first run, or one whose state was empty) leaves dest as found. */
  async abandon(): Promise<void> {
    const { store, lease } = this;
    if (this.#undo === undefined || lease === undefined || !this.ownsState) return;
    if (store !== undefined && (await store.count()) !== 0) return;
    await lease.release();
    this.lease = undefined;
    await store?.close();
    this.store = undefined;
    await this.#undo();
  }

  /** Lets go of the lease, the state (when the run opened it) and the connection. */
  async release(): Promise<void> {
    // a lease that cannot be given back (its database gone) expires on its own: the run's outcome, or its error, stands
    await this.lease?.release().catch(() => undefined);
    this.lease = undefined;
    if (this.ownsState) await this.store?.close();
    this.store = undefined;
    await this.connection.close();
  }
}

/**
 * Where a run hands the resources of its Resource Lists when other processes fetch them (a job queue's workers):
 * `baselineFromList` hands each list's entries on, then waits for them to be applied before recording the baseline;
 * `changesFromList` hands on each Change List's changes and waits for them before the cursor moves past them.
 */
export interface ResourceDispatch {
  /** Hands on the entries of one Resource List of the set in hand; resolves once every one is handed on. */
  enqueue(run: SyncRun, setRun: SetRun, entries: AsyncIterable<Entry>): Promise<void>;
  /** Resolves once everything handed on is applied and counted by the run's applier (`absorb`). */
  settled(run: SyncRun): Promise<void>;
  /**
   * Hands on the changes of one Change List of the set in hand (at most one per resource) and waits until every one
   * is applied and counted by the run's applier; resolves with the URLs that failed. Absent: the run applies them.
   */
  applyChanges?(run: SyncRun, setRun: SetRun, changes: readonly Entry[], changeList: string): Promise<ReadonlySet<string>>;
}

/** Catching up a capability set from its snapshot to the Source's present, owed once deletions are inferred. */
export interface CatchUp {
  setRun: SetRun;
  /** The snapshot's time (`at`), where the changes start. */
  snapshot: string;
}

/** One capability set within a run: what the state says of it, and what the run did with it so far. */
export interface SetRun {
  readonly set: CapabilitySet;
  /** The resources that failed in earlier runs. */
  readonly pendingBefore: Entry[];
  /** The state's key of the set's baseline time. */
  readonly metaKey: string;
  /** The time of the set's last baseline; undefined when there is none or a new one is asked for. */
  readonly baselineAt: string | undefined;
  readonly cursor: SyncCursor | undefined;
  /** Documents read for the set, in order (the report's). */
  readonly documents: string[];
  /** A Resource Dump is the baseline: asked for, or no Resource List on offer (§11). */
  readonly dumpBaseline: boolean;
  /** Change Dumps bring the changes: asked for, or no Change List on offer (§13). */
  readonly dumpChanges: boolean;
  mode: 'baseline' | 'incremental' | undefined;
  /** The time of the snapshot a baseline of this run took. */
  snapshotAt: string | undefined;
}

/**
 * What the steps of one sync share. Each step is a function over a run: `openRun`, `discover`, then per capability
 * set `syncSet`, then `requireUsableSets`, `inferDeletions`, `catchUpSet` for each of `catchUps`, `settle`. The units
 * a job queue can run one by one are the steps of a set, between `beginSet` and `endSet`: `changesFromCursor`
 * (changes since the cursor, then earlier failures retried), `baselineFromList` (or `baselineFromDump`, beside it),
 * then `recordBaseline` (`sync-steps.ts`), and `changesFromList`, `changesFromDumps` (`sync-changes.ts`); and each
 * catch-up. Each leaves the state consistent when it returns (what the applier holds back is flushed by the next
 * step that records a cursor, and by `settle`). What every baseline saw (`seenAll`) is held here, in memory up to a
 * bound and in a temporary file beyond: deletions are inferred from it once every set is done.
 */
export class SyncRun {
  readonly options: SyncOptions;
  /** When the run started (ms): the snapshot time of a list without `at`. */
  readonly started: number;
  readonly dest: string;
  readonly dryRun: boolean;
  readonly concurrency: number;
  readonly connection: Connection;
  /** The Destination's state (every call awaited). */
  readonly state: DestinationState;
  /** Where the mirror's copies are. */
  readonly storage: MirrorStorage;
  readonly applier: ResourceApplier;
  readonly context: DocumentContext;
  /** The destination held nothing when the run started. */
  readonly fresh: boolean;
  readonly report: SyncReport;
  /** A dry run's plan in figures. */
  readonly planned: PlanSummary = emptyPlanSummary();
  /** The resources that failed before in the set at hand (their state record says so). */
  readonly pendingUrls = new Set<string>();
  /**
   * The resources on offer in every Resource List read in full, to infer deletions (fingerprints: see baseline);
   * past `seenInMemory` of them, in a temporary file. Closed by {@link close}.
   */
  readonly seenAll: SeenSet;
  /** False once a baseline could not read its whole list: then no deletion is inferred. */
  baselineComplete = true;
  anyBaseline = false;
  /** Capability sets that offer nothing this run can use. */
  readonly unusable: { set: string; offered: string[] }[] = [];
  readonly catchUps: CatchUp[] = [];
  /** Where the resources of Resource Lists go when other processes fetch them; undefined: this run fetches them. */
  dispatch: ResourceDispatch | undefined;

  constructor(hold: RunHold, options: SyncOptions, started: number, state: DestinationState, fresh: boolean) {
    this.options = options;
    this.started = started;
    this.dest = hold.dest;
    this.dryRun = hold.dryRun;
    this.concurrency = hold.concurrency;
    this.connection = hold.connection;
    this.state = state;
    this.storage = hold.storage;
    this.fresh = fresh;
    this.seenAll = new SpillingSet({
      ...(options.seenInMemory !== undefined ? { inMemory: options.seenInMemory } : {}),
      ...(options.seenDir !== undefined ? { dir: options.seenDir } : {}),
    });
    this.applier = applierFor({ connection: hold.connection, store: state, storage: hold.storage, options }, this.#overrides());
    const { documents, authority } = hold.connection;
    this.context = { http: documents, authority, ...(options.signal ? { signal: options.signal } : {}) };
    this.report = { mode: 'incremental', source: options.source, dest: hold.dest, dryRun: this.dryRun, ...emptyCounts(), sets: [], durationMs: 0 };
  }

  #overrides(): ApplierOverrides {
    const { options, dryRun, fresh, planned } = this;
    const onPlan = options.onPlan;
    const pendingUrls = this.pendingUrls;
    return {
      dryRun,
      adopt: !fresh,
      fresh,
      rehash: options.baseline === true && !fresh,
      hasPending: (u) => pendingUrls.has(u),
      ...(dryRun || onPlan !== undefined
        ? {
            onPlan: (item: PlanItem) => {
              if (dryRun) countPlanItem(planned, item);
              return onPlan?.(item);
            },
          }
        : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    };
  }

  /** Lets go of what the run holds apart from its {@link RunHold}: the set of resources seen (its temporary file). */
  close(): void {
    this.seenAll.close?.();
  }

  /** Writes what the applier holds back to the state. */
  flush(): Promise<void> {
    return this.applier.flush();
  }

  /** Each document opened for streaming, validated leniently; its issues become notes. */
  readonly onDocument = (doc: RemoteDocument): AsyncIterable<Entry> => validating(doc, (w) => this.applier.warn(w));
  /** Each document read whole, checked leniently; its issues become notes. */
  readonly onWholeDocument = (url: string, doc: ResourceSyncDocument): void => checkDocument(url, doc, (w) => this.applier.warn(w));
}

/**
 * Opens a run on what `hold` holds: the mirror made ready and its state's lease taken (not for a dry run), the
 * state opened (read-only for a dry run), and whether the destination holds anything yet.
 */
export async function openRun(hold: RunHold, options: SyncOptions, started: number): Promise<SyncRun> {
  if (!hold.dryRun) await hold.prepare();
  hold.store ??= await openSqliteDestinationState(hold.dest, { readonly: true });
  const state = hold.store;
  const fresh = (await state.count()) === 0 && (await hold.storage.isEmpty());
  return new SyncRun(hold, options, started, state, fresh);
}
