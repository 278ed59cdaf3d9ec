import { makeDestination, undoFirstRun } from './dest-folder.js';
import { resolve } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry, ResourceSyncDocument } from '../core/model/types.js';
import { FingerprintSet } from '../core/fingerprint-set.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { checkDocument, loadDocument, resolveLoc, validating, type DocumentContext, type RemoteDocument } from './documents.js';
import { resolveSets, type CapabilitySet } from './capability-sets.js';
import { applyChangeDump, applyResourceDump, type DumpReport } from './dump.js';
import { linkFetcher } from './links.js';
import { ResourceApplier, emptyCounts, type SyncCounts, type SyncProgress } from './resource-applier.js';
import { runPool } from './run-pool.js';
import { applySkippedDeletions } from './skipped-deletions.js';
import { gapNote, note, type GapNote } from './notes.js';
import { countPlanItem, emptyPlanSummary, type PlanItem, type PlanSummary } from './plan.js';
import { baseline } from './baseline.js';
import { changesSince as convergeChanges } from './converge.js';
import type { HttpGet } from '../client/http.js';
import type { Mapping } from './mapper.js';
import { connect } from './connection.js';
import type { DestinationState, SyncCursor } from './state.js';
import { openSqliteDestinationState } from './sqlite-state.js';
import { holdLease, type HeldLease } from './lease.js';

import { GroupCommit } from '../node/group-commit.js';
import { FsyncEach, RenameOnly, type Durability, type SmallFileCalls } from '../node/durability.js';
import { LocalDirectory } from './local-directory.js';
import type { MirrorStorage } from './mirror-storage.js';

export type { SyncProgress, SyncFailure } from './resource-applier.js';

/** The cursor of a set that has none yet: before every change. */
const NO_CURSOR = '0001-01-01T00:00:00Z';

/** Options of {@link sync}. */
export interface SyncOptions {
  /** Where to start: a Capability List, Resource List (Index), Change List (Index) or Source Description URL. */
  source: string;
  /** The destination directory (created if needed). */
  dest: string;
  /** Apply deletions (otherwise they are only reported). Default false. */
  delete?: boolean;
  /**
   * Take a new baseline even when the state could go on incrementally: every file held is read and kept when it
   * matches the Resource List, the rest fetched again, and the cursor starts over at the list's `at`. Default false.
   */
  baseline?: boolean;
  /** Resources fetched at once. Default 16. */
  concurrency?: number;
  /**
   * Plan only: nothing is fetched but documents, nothing is written, state included. The report's `plan` counts
   * the items by action and reason and lists the first 1,000 that change something; `onPlan` hears every item.
   */
  dryRun?: boolean;
  /**
   * Called with each plan item (create, update, delete or unchanged, with its reason) as it is decided. A promise
   * it returns holds that resource until it settles, so that a slow consumer (a pipe, a file) slows the sync down
   * instead of letting items pile up in memory.
   */
  onPlan?: (item: PlanItem) => void | Promise<void>;
  /** The HTTP effect; default an undici client built from the options below. */
  http?: HttpGet;
  signal?: AbortSignal;
  onProgress?: (p: SyncProgress) => void;
  /** Origins besides the Source's own that may be contacted (mirrors, other hosts of the set). */
  allowOrigins?: string[];
  /** With a Source Description (or several Capability Lists), sync only this Capability List. */
  capabilityList?: string;
  /** Use a Resource Dump / Change Dump when offered. Default false. */
  preferDump?: boolean;
  /** Try `duplicate` mirrors before the primary URL. Default false (mirrors only when the primary fails). */
  preferMirrors?: boolean;
  /** The URL whose path maps to the destination root. Default the origin of `source`. */
  base?: string;
  /** Further `URL=DIR` mappings. */
  maps?: Mapping[];
  /** HTTP timeout (connect, headers, body idle), ms. Default 30,000. */
  timeoutMs?: number;
  /**
   * Most time for one ResourceSync document (head and whole body, spent waiting on the Source), ms: past it the
   * read ends with `RS_HTTP_TIMEOUT`. Resources and dump packages are bound by `timeoutMs` between bytes only.
   * Default 600,000.
   */
  deadlineMs?: number;
  /** HTTP retries on 5xx/429/network errors. Default 3. */
  retries?: number;
  /** Extra attempts after a failed verification or a broken body. Default 2. */
  verifyRetries?: number;
  /** Make each file durable before renaming it into place. Default true. */
  fsync?: boolean;
  /**
   * How files are made durable (with `fsync`): `'batch'` (default) the files of about 50 ms fsynced together,
   * then renamed (`GroupCommit`), `'file'` an fsync of each file before its rename (`FsyncEach`).
   */
  fsyncMethod?: 'batch' | 'file';
  /** Makes files durable instead of `fsync` and `fsyncMethod`: a `Durability` of the caller's (settled by the sync). */
  durability?: Durability;
  /**
   * Where the mirror's copies go, instead of the folder `dest` (whose `.resourcesync` still holds the state):
   * a {@link MirrorStorage} of the caller's, settled by the sync. `durability`, `fsync` and `fsyncMethod` are
   * then not used for resources. Default: `createLocalDirectory(dest)` with the durability they choose.
   */
  storage?: MirrorStorage;
  /** Authorization header values per origin (see `createHttpClient`). */
  auth?: Record<string, string>;
  /** At most this many requests per second to each origin. Default: no limit. */
  rate?: number;
  /**
   * The Destination's state; default the SQLite state in `<dest>/.resourcesync/`. The caller owns a state it
   * passes (the sync does not close it); the sync takes its lease for the run either way.
   */
  state?: DestinationState;
}

/** The outcome of a sync. */
export interface SyncReport extends SyncCounts {
  /**
   * 'baseline' when any capability set was (re)built from a Resource List or Resource Dump, 'incremental' when
   * every set was brought up to date from changes, 'none' when nothing was done.
   */
  mode: 'baseline' | 'incremental' | 'none';
  source: string;
  dest: string;
  dryRun: boolean;
  /** Capability sets processed, with what was done for each. */
  sets: { key: string; mode: 'baseline' | 'incremental'; documents: string[] }[];
  /**
   * A dry run: the plan in figures, the count of each action and reason and the first 1,000 items that change
   * something, in the order decided. Its size does not grow with the number of resources: every item goes to
   * `onPlan`.
   */
  plan?: PlanSummary;
  durationMs: number;
}

/**
 * The run's {@link Durability} for the `fsync` and `fsyncMethod` options: a group commit (the default), an fsync
 * of each file, or a rename only; with `thread`, the calls of small files are made there.
 */
export function durabilityFor(fsync: boolean, method: 'batch' | 'file', thread?: SmallFileCalls): Durability {
  const o = thread === undefined ? {} : { thread };
  if (!fsync) return new RenameOnly(o);
  return method === 'file' ? new FsyncEach(o) : new GroupCommit(o);
}

/**
 * The run's mirror: the caller's `storage`, else the folder `dest` as a `LocalDirectory` with the durability
 * that `durability`, `fsync` and `fsyncMethod` choose.
 */
export function storageFor(options: Pick<SyncOptions, 'storage' | 'durability' | 'fsync' | 'fsyncMethod'>, dest: string): MirrorStorage {
  if (options.storage !== undefined) return options.storage;
  return new LocalDirectory(dest, { durability: options.durability ?? durabilityFor(options.fsync ?? true, options.fsyncMethod ?? 'batch') });
}

/**
 * Synchronizes a destination directory with a Source: a baseline from the Resource List when the destination
 * has no state for a capability set (or when changes were missed), incremental from the Change List afterwards.
 * Every resource is verified (length, hashes) while it streams to a temporary file and renamed into place;
 * the state (SQLite unless `state` is given) records what is held and where incremental sync stands; its lease
 * keeps a second sync out.
 * Problems with single resources are collected in `failed`; problems that stop the sync throw.
 * @see Z39.99 §5.2
 * @example
 * const report = await sync({ source: 'http://example.com/capabilitylist.xml', dest: './mirror', delete: true });
 * console.log(report.mode, report.created, report.failed.length);
 */
export async function sync(options: SyncOptions): Promise<SyncReport> {
  const started = Date.now();
  const dest = resolve(options.dest);
  const dryRun = options.dryRun ?? false;
  const concurrency = options.concurrency ?? 16;
  const connection = connect({ ...options, concurrency });
  const { authority, http, documents, mapper } = connection;

  let lock: HeldLease | undefined;
  let store: DestinationState | undefined = options.state;
  const ownsState = options.state === undefined;
  const storage = storageFor(options, dest);
  const undo = dryRun ? undefined : undoFirstRun(dest);
  try {
    if (!dryRun) {
      makeDestination(dest);
      store ??= await openSqliteDestinationState(dest);
      lock = await holdLease(store);
      await storage.discardStaged();
    }
    store ??= await openSqliteDestinationState(dest, { readonly: dryRun });
    const fresh = (await store.count()) === 0 && (await storage.isEmpty());
    const pendingUrls = new Set<string>();
    const planned = emptyPlanSummary();
    const onPlan = options.onPlan;
    const applier = new ResourceApplier({
      http,
      authority,
      mapper,
      store,
      dryRun,
      applyDeletes: options.delete ?? false,
      storage,
      verifyRetries: options.verifyRetries ?? 2,
      adopt: !fresh,
      fresh,
      rehash: options.baseline === true && !fresh,
      hasPending: (u) => pendingUrls.has(u),
      preferMirrors: options.preferMirrors ?? false,
      ...(dryRun || onPlan !== undefined
        ? {
            onPlan: (item: PlanItem) => {
              if (dryRun) countPlanItem(planned, item);
              return onPlan?.(item);
            },
          }
        : {}),
      fetchViaLinks: linkFetcher({ http, authority, storage, signal: options.signal }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    const ctx: DocumentContext = { http: documents, authority, ...(options.signal ? { signal: options.signal } : {}) };
    applier.phase('discover');
    const { sets, warnings } = await resolveSets(ctx, options.source, options.capabilityList);
    for (const w of warnings) applier.warn(w);

    const report: SyncReport = {
      mode: 'incremental',
      source: options.source,
      dest,
      dryRun,
      ...emptyCounts(),
      sets: [],
      durationMs: 0,
    };
    const st = store;
    // the resources on offer in every Resource List read in full, to infer deletions (fingerprints: see baseline)
    const seenAll = new FingerprintSet();
    let baselineComplete = true;
    let anyBaseline = false;
    const unusable: { set: string; offered: string[] }[] = [];
    const catchUps: (() => Promise<void>)[] = [];
    const onDocument = (doc: RemoteDocument): AsyncIterable<Entry> => validating(doc, (w) => applier.warn(w));
    const onWholeDocument = (url: string, doc: ResourceSyncDocument): void => checkDocument(url, doc, (w) => applier.warn(w));
    const dumpOptions = (dumpUrl: string, after: string | undefined, seen?: FingerprintSet): Parameters<typeof applyResourceDump>[0] => ({
      dumpUrl,
      http,
      documents,
      authority,
      storage,
      mapPath: (loc) => mapper.toPath(loc),
      delete: options.delete ?? false,
      current: (loc, relPath, expected) => applier.holds(loc, relPath, expected),
      ...(after !== undefined ? { after } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      onResource: (r) => {
        seen?.add(r.loc);
        return applier.recordExternal({
          url: r.loc,
          relPath: r.relPath,
          change: r.change,
          applied: r.applied,
          ...(r.unchanged === true ? { unchanged: true as const } : {}),
          ...(r.length !== undefined ? { length: r.length } : {}),
          ...(r.hashes !== undefined ? { hashes: r.hashes } : {}),
          ...(r.lastmod !== undefined ? { lastmod: r.lastmod } : {}),
        });
      },
    });
    const absorb = (rep: DumpReport): void => {
      for (const f of rep.failures) {
        applier.fail(f.loc ?? f.package, new ResourceSyncError(f.code, f.message, { data: { package: f.package, ...(f.path !== undefined ? { path: f.path } : {}) }, recoverable: true }));
      }
      for (const n of rep.notes) applier.warn(n);
    };

    const changesSince = (set: CapabilitySet, from: SyncCursor | undefined, documents: string[]): Promise<{ gap?: GapNote }> =>
      convergeChanges({ ...ctx, applier, concurrency, dryRun, store: st, onDocument: onWholeDocument }, set, from, documents);

    for (const set of sets) {
      applier.setKey = set.key;
      const pendingBefore = await st.pending(set.key);
      pendingUrls.clear();
      for (const e of pendingBefore) pendingUrls.add(e.loc);
      const metaKey = `baseline:${set.key}`;
      const baselineAt = options.baseline === true ? undefined : await st.getMeta(metaKey);
      const cursor = await st.getCursor(set.key);
      let mode: 'baseline' | 'incremental' | undefined;
      const documents: string[] = [];
      // Dumps are used when asked for, or when the set offers no list for that purpose (§11, §13).
      const dumpBaseline = set.resourceDump !== undefined && ((options.preferDump ?? false) || set.resourceList === undefined);
      const dumpChanges = set.changeDump !== undefined && ((options.preferDump ?? false) || set.changeList === undefined);

      /**
       * Applies the Change Dump packages after `after` (§13), caught up through the `changedump-archive` when the
       * current Change Dump starts later. Returns the new cursor time (undefined when a package failed: the cursor
       * stays), or the gap when changes were missed.
       */
      const fromChangeDumps = async (after: string): Promise<{ until?: string; gap?: GapNote }> => {
        applier.phase('incremental', undefined, set.changeDump);
        const apply = async (url: string, from: string | undefined): Promise<DumpReport> => {
          const rep = await applyChangeDump(dumpOptions(url, from));
          if (rep.gap === undefined) {
            absorb(rep);
            await applier.flush();
            documents.push(url);
          }
          return rep;
        };
        let from = after;
        let rep = await apply(set.changeDump!, from);
        if (rep.gap !== undefined && set.changeDumpArchive !== undefined) {
          // Archives §6: the Change Dumps of earlier periods, in forward order
          applier.warn(gapNote({ ...rep.gap.data, archive: set.changeDumpArchive }, 'archive'));
          const archive = await loadDocument(ctx, set.changeDumpArchive);
          onWholeDocument(set.changeDumpArchive, archive);
          const at = (v: string | undefined): number => (v === undefined ? 0 : (parseW3CDatetime(v, true)?.ms ?? 0));
          const periods = [...archive.entries].sort((a, b) => at(a.md?.from) - at(b.md?.from));
          for (const p of periods) {
            if (p.md?.until !== undefined && at(p.md.until) <= at(from)) continue;
            const r = await apply(resolveLoc(p.loc, archive.finalUrl), from);
            if (r.gap !== undefined || r.failures.length > 0) return r.gap !== undefined ? { gap: r.gap } : {};
            from = r.until ?? p.md?.until ?? from;
            await st.setCursor(set.key, { datetime: from });
          }
          rep = await apply(set.changeDump!, from);
        }
        // no cursor yet (a set without Resource List or Resource Dump): every package on offer is applied
        if (rep.gap !== undefined && after === NO_CURSOR) rep = await apply(set.changeDump!, undefined);
        if (rep.gap !== undefined) return { gap: rep.gap };
        if (rep.failures.length > 0) {
          applier.warn(note('change-dump-failures', { url: set.changeDump!, cursor: from }));
          return {};
        }
        const until = rep.until ?? from;
        await st.setCursor(set.key, { datetime: until });
        return { until };
      };

      if (baselineAt !== undefined) {
        let at: string | undefined = cursor?.datetime ?? baselineAt;
        let missed = false;
        if (dumpChanges && !dryRun) {
          const got = await fromChangeDumps(at);
          if (got.gap !== undefined) {
            applier.warn(gapNote(got.gap.data, 'baseline'));
            missed = true;
          } else mode = 'incremental';
          at = got.until;
        }
        if (set.changeList !== undefined && at !== undefined && !missed) {
          const c = at === cursor?.datetime ? cursor : { datetime: at };
          const got = await changesSince(set, c, documents);
          if (got.gap === undefined) {
            mode = 'incremental';
            // resources that failed in earlier runs and that no change mentioned since: try them again
            await applier.flush();
            const still = dryRun ? pendingBefore : (await st.pending(set.key)).filter((e) => pendingUrls.has(e.loc));
            if (still.length > 0) {
              applier.phase('incremental', still.length, 'resources that failed before');
              await runPool(still, concurrency, (e, release) => applier.apply(e, release));
              await applier.flush();
            }
            // deletions earlier runs skipped (without `delete`) and that no change took back since
            if (options.delete === true) await applySkippedDeletions(applier, st, set.key, concurrency);
          } else {
            applier.warn(gapNote(got.gap.data, mode === undefined ? 'baseline' : 'partial'));
          }
        } else if (set.changeList === undefined && !dumpChanges && (set.resourceList !== undefined || set.resourceDump !== undefined)) {
          applier.warn(note('no-change-list', { set: set.key }));
        }
      }
      let snapshotAt: string | undefined;
      if (mode === undefined && dumpBaseline && !dryRun) {
        // §11: baseline from the Resource Dump's packages
        await st.clearPending(set.key);
        applier.phase('baseline', undefined, set.resourceDump);
        const head = await loadDocument(ctx, set.resourceDump!);
        const rep = await applyResourceDump(dumpOptions(set.resourceDump!, undefined, seenAll));
        absorb(rep);
        await applier.flush();
        mode = 'baseline';
        documents.push(set.resourceDump!);
        if (rep.failures.length > 0) baselineComplete = false;
        snapshotAt = head.md?.at ?? new Date(started).toISOString();
      } else if (mode === undefined && dumpBaseline && set.resourceList === undefined) {
        applier.warn(note('dry-run-without-dumps', { set: set.key, planned: false }));
      } else if (mode === undefined && (options.preferDump ?? false) && set.resourceDump !== undefined) {
        applier.warn(note('dry-run-without-dumps', { set: set.key, planned: true }));
      }
      if (mode === undefined && set.resourceList !== undefined) {
        if (!dryRun) await st.clearPending(set.key);
        const b = await baseline({ ...ctx, applier, concurrency, onDocument, seen: seenAll }, set.resourceList);
        mode = 'baseline';
        documents.push(...b.documents);
        if (!b.complete) baselineComplete = false;
        snapshotAt = b.at ?? new Date(started).toISOString();
      }
      if (mode === 'baseline') {
        anyBaseline = true;
        if (!dryRun) {
          await applier.flush();
          await st.setMeta(metaKey, snapshotAt);
          await st.setCursor(set.key, { datetime: snapshotAt! });
        }
        // The snapshot is as of its `at` (§10, §11); the changes since then bring the mirror to the Source's present,
        // once deletions have been inferred from every snapshot read (resources created since are in no snapshot).
        if (!dryRun) {
          const snapshot = snapshotAt!;
          catchUps.push(async () => {
            let at: string | undefined = snapshot;
            if (dumpChanges) {
              const got = await fromChangeDumps(snapshot);
              if (got.gap !== undefined) applier.warn(gapNote({ ...got.gap.data, snapshot }, 'lag'));
              at = got.until;
            }
            if (set.changeList !== undefined && at !== undefined) {
              applier.phase('incremental', undefined, set.changeList);
              const got = await changesSince(set, { datetime: at }, documents);
              if (got.gap !== undefined) applier.warn(gapNote({ ...got.gap.data, snapshot }, 'lag'));
            }
          });
        }
      }
      if (mode === undefined && set.changeList !== undefined) {
        applier.warn(note('no-resource-list', { set: set.key, dumps: false }));
        const got = await changesSince(set, cursor, documents);
        if (got.gap !== undefined) applier.warn(got.gap);
        mode = 'incremental';
      } else if (mode === undefined && dumpChanges && !dryRun) {
        applier.warn(note('no-resource-list', { set: set.key, dumps: true }));
        const got = await fromChangeDumps(cursor?.datetime ?? NO_CURSOR);
        if (got.gap !== undefined) applier.warn(got.gap);
        mode = 'incremental';
      }
      if (mode === undefined) {
        unusable.push({ set: set.key, offered: set.offered });
        continue;
      }
      report.sets.push({ key: set.key, mode, documents });
    }
    if (report.sets.length === 0) {
      const offers = unusable.map((u) => `'${u.set}' offers ${u.offered.length > 0 ? u.offered.join(', ') : 'nothing'}`);
      throw new ResourceSyncError('RS_NOT_RESOURCESYNC', `Source '${options.source}' offers nothing to synchronize from: ${offers.join('; ')} (a Destination needs a Resource List, Resource Dump, Change List or Change Dump).`, {
        data: { url: options.source, sets: offers },
      });
    }
    for (const u of unusable) applier.warn(note('set-unusable', u));

    // Resources held but no longer in any Resource List read in full: deletions (§5.2).
    if (anyBaseline) {
      if (!baselineComplete) {
        applier.warn(note('deletions-not-inferred', {}));
      } else if (report.sets.every((s) => s.mode === 'baseline')) {
        const gone: string[] = [];
        if (!fresh) for await (const u of st.urls()) if (!seenAll.has(u)) gone.push(u); // fresh: every record is from the lists just read
        applier.phase('baseline', gone.length);
        await runPool(gone, concurrency, (u) => applier.remove(u));
      }
    }
    if (anyBaseline && !dryRun) await applier.endBaseline(seenAll);
    for (const catchUp of catchUps) await catchUp();
    await storage.settle();
    await applier.flush();
    if (!dryRun) await storage.discardStaged();
    const c = applier.counts;
    applier.progress(true);
    Object.assign(report, c, { mode: anyBaseline ? 'baseline' : report.sets.length > 0 ? 'incremental' : 'none', durationMs: Date.now() - started });
    if (dryRun) report.plan = planned;
    return report;
  } catch (err) {
    // a run that fails holding nothing (a first run, or one whose state was empty) leaves dest as it found it
    if (undo !== undefined && lock !== undefined && ownsState && (store === undefined || (await store.count()) === 0)) {
      await lock.release();
      lock = undefined;
      await store?.close();
      store = undefined;
      await undo();
    }
    throw err;
  } finally {
    await lock?.release();
    if (ownsState) await store?.close();
    await connection.close();
  }
}
