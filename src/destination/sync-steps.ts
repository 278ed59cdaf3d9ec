/**
 * The steps of a sync, each a function over the run ({@link SyncRun}): discover the capability sets; for each set,
 * the changes since its cursor, else a baseline (from its Resource Dump or Resource List) recorded with a catch-up
 * owed, else the changes alone; then deletions inferred from every baseline, the catch-ups, and settling.
 * @see Z39.99 §5.2
 */
import { ResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { baseline } from './baseline.js';
import { resolveSets, type CapabilitySet } from './capability-sets.js';
import { loadDocument } from './documents.js';
import { listUnchanged, noteListValidators } from './list-validators.js';
import { applyResourceDump } from './dump.js';
import { gapNote, note } from './notes.js';
import { runPool } from './run-pool.js';
import { applySkippedDeletions } from './skipped-deletions.js';
import { absorbDump, changesFromDumps, changesFromList, dumpOptionsFor, NO_CURSOR } from './sync-changes.js';
import type { SyncReport } from './sync-options.js';
import type { CatchUp, SetRun, SyncRun } from './sync-run.js';
import { urlFilterKey } from './url-filter.js';

/** Discovers the Source's capability sets (only `capabilityList` when given); what discovery noticed becomes notes. */
export async function discover(run: SyncRun): Promise<CapabilitySet[]> {
  run.applier.phase('discover');
  const { sets, warnings } = await resolveSets(run.context, run.options.source, run.options.capabilityList);
  for (const w of warnings) run.applier.warn(w);
  return sets;
}

/**
 * Makes `set` the one the applier files failures and skipped deletions under, once what it holds back (filed under
 * the set before, read at flush time) is written.
 */
async function enterSet(run: SyncRun, set: CapabilitySet): Promise<void> {
  if (run.applier.setKey === set.key) return;
  await run.flush();
  run.applier.setKey = set.key;
}

/** Starts on a capability set: what the state says of it (failures before, baseline time, cursor). */
export async function beginSet(run: SyncRun, set: CapabilitySet): Promise<SetRun> {
  const { options, state } = run;
  await enterSet(run, set);
  const pendingBefore = await state.pending(set.key);
  run.pendingUrls.clear();
  for (const e of pendingBefore) run.pendingUrls.add(e.loc);
  const metaKey = `baseline:${set.key}`;
  // a filter other than the one of the set's last baseline: the resources it now takes in were never fetched
  const filterChanged = ((await state.getMeta(`url-prefixes:${set.key}`)) ?? '') !== urlFilterKey(options.urlPrefixes);
  const baselineAt = options.baseline === true || filterChanged ? undefined : await state.getMeta(metaKey);
  const cursor = await state.getCursor(set.key);
  const preferDump = options.preferDump ?? false;
  return {
    set,
    pendingBefore,
    metaKey,
    baselineAt,
    cursor,
    documents: [],
    // Dumps are used when asked for, or when the set offers no list for that purpose (§11, §13).
    dumpBaseline: set.resourceDump !== undefined && (preferDump || set.resourceList === undefined),
    dumpChanges: set.changeDump !== undefined && (preferDump || set.changeList === undefined),
    mode: undefined,
    snapshotAt: undefined,
  };
}

/**
 * Brings one capability set up to date: incrementally from its cursor when it has a baseline, else by a new
 * baseline, else from its changes alone. A set that offers nothing usable is remembered as such.
 */
export async function syncSet(run: SyncRun, set: CapabilitySet): Promise<void> {
  const setRun = await beginSet(run, set);
  if (setRun.baselineAt !== undefined) await changesFromCursor(run, setRun);
  if (setRun.mode === undefined) await takeBaseline(run, setRun);
  if (setRun.mode === 'baseline') await recordBaseline(run, setRun);
  if (setRun.mode === undefined) await changesWithoutBaseline(run, setRun);
  endSet(run, setRun);
}

/** Ends a capability set: in the report with what was done, or remembered as offering nothing usable. */
export function endSet(run: SyncRun, setRun: SetRun): void {
  const { set, mode } = setRun;
  if (mode === undefined) run.unusable.push({ set: set.key, offered: set.offered });
  else run.report.sets.push({ key: set.key, mode, documents: setRun.documents });
}

/**
 * The changes since the set's cursor (or its baseline time), from Change Dumps and then the Change List; when no
 * change was missed, the set is incremental and the failures and skipped deletions of earlier runs are retried.
 */
export async function changesFromCursor(run: SyncRun, setRun: SetRun): Promise<void> {
  const { set, cursor } = setRun;
  const { applier } = run;
  let at: string | undefined = cursor?.datetime ?? setRun.baselineAt;
  let missed = false;
  if (setRun.dumpChanges && !run.dryRun) {
    const got = await changesFromDumps(run, setRun, at!);
    if (got.gap !== undefined) {
      applier.warn(gapNote(got.gap.data, 'baseline'));
      missed = true;
    } else setRun.mode = 'incremental';
    at = got.until;
  }
  if (set.changeList !== undefined && at !== undefined && !missed) {
    const from = at === cursor?.datetime ? cursor : { datetime: at };
    const got = await changesFromList(run, setRun, from);
    if (got.gap === undefined) {
      setRun.mode = 'incremental';
      await retryEarlierFailures(run, setRun);
    } else {
      applier.warn(gapNote(got.gap.data, setRun.mode === undefined ? 'baseline' : 'partial'));
    }
  } else if (set.changeList === undefined && !setRun.dumpChanges && (set.resourceList !== undefined || set.resourceDump !== undefined)) {
    applier.warn(note('no-change-list', { set: set.key }));
  }
}

/**
 * The resources that failed in earlier runs and that no change mentioned since, tried again; and, with `delete`,
 * the deletions earlier runs skipped and that no change took back since.
 */
async function retryEarlierFailures(run: SyncRun, setRun: SetRun): Promise<void> {
  const { applier, concurrency } = run;
  const key = setRun.set.key;
  await run.flush();
  const still = run.dryRun ? setRun.pendingBefore : (await run.state.pending(key)).filter((e) => run.pendingUrls.has(e.loc));
  if (still.length > 0) {
    applier.phase('incremental', still.length, 'resources that failed before');
    await runPool(still, concurrency, (e, release) => applier.apply(e, release));
    await run.flush();
  }
  if (run.options.delete === true) await applySkippedDeletions(applier, run.state, key, concurrency);
}

/** A new baseline of the set: from its Resource Dump when that is the way (not in a dry run), else its list. */
async function takeBaseline(run: SyncRun, setRun: SetRun): Promise<void> {
  const { set } = setRun;
  if (setRun.dumpBaseline && !run.dryRun) await baselineFromDump(run, setRun);
  else if (setRun.dumpBaseline && set.resourceList === undefined) {
    run.applier.warn(note('dry-run-without-dumps', { set: set.key, planned: false }));
  } else if ((run.options.preferDump ?? false) && set.resourceDump !== undefined) {
    run.applier.warn(note('dry-run-without-dumps', { set: set.key, planned: true }));
  }
  if (setRun.mode === undefined && set.resourceList !== undefined && !(await listUnchanged(run, setRun))) await baselineFromList(run, setRun);
}

/**
 * §11: a baseline from the Resource Dump's packages, as of the dump's `at`. With `skipSameDump`, a set that offers no
 * changes (no Change List, no Change Dump) and whose dump is the very one its last baseline came from, applied whole
 * (the same `at`, `completed` and packages: {@link dumpFingerprint}), has nothing new: the packages are not read
 * again and the set is in step (mode incremental).
 */
async function baselineFromDump(run: SyncRun, setRun: SetRun): Promise<void> {
  const { set } = setRun;
  const dumpUrl = set.resourceDump!;
  const head = await loadDocument(run.context, dumpUrl);
  const fingerprint = dumpFingerprint(head);
  const metaKey = `dump:${set.key}`;
  const changes = set.changeList !== undefined || setRun.dumpChanges;
  if (run.options.skipSameDump === true && !changes && setRun.baselineAt !== undefined && setRun.baselineAt === head.md?.at && setRun.pendingBefore.length === 0 && (await run.state.getMeta(metaKey)) === fingerprint) {
    setRun.mode = 'incremental';
    setRun.documents.push(dumpUrl);
    return;
  }
  await run.state.clearPending(set.key);
  run.applier.phase('baseline', undefined, dumpUrl);
  const report = await applyResourceDump(dumpOptionsFor(run, dumpUrl, undefined, run.seenAll));
  absorbDump(run, report);
  await run.flush();
  setRun.mode = 'baseline';
  setRun.documents.push(dumpUrl);
  if (report.failures.length > 0) run.baselineComplete = false;
  setRun.snapshotAt = head.md?.at ?? new Date(run.started).toISOString();
  // remembered only for a dump applied whole; its baseline time is recorded with the baseline (recordBaseline)
  await run.state.setMeta(metaKey, report.failures.length === 0 && head.md?.at !== undefined ? fingerprint : undefined);
}

/** What identifies a Resource Dump's content: its `at`, `completed` and each package's URL, hash, length and `at`. @see Z39.99 §11.1 */
function dumpFingerprint(doc: { md?: { at?: string; completed?: string }; entries: Entry[] }): string {
  return JSON.stringify([doc.md?.at, doc.md?.completed, doc.entries.map((e) => [e.loc, e.md?.hash, e.md?.length, e.md?.at, e.md?.completed, e.lastmod])]);
}

/** §5.2: a baseline from the Resource List (or Index), as of the list's `at`. */
export async function baselineFromList(run: SyncRun, setRun: SetRun): Promise<void> {
  const { applier, concurrency } = run;
  if (!run.dryRun) await run.state.clearPending(setRun.set.key);
  const dispatch = run.dryRun ? undefined : run.dispatch;
  const elsewhere = dispatch === undefined ? {} : { applyEntries: (entries: AsyncIterable<Entry>) => dispatch.enqueue(run, setRun, entries) };
  const http = await noteListValidators(run, setRun.set, run.context.http);
  const got = await baseline({ ...run.context, http, applier, concurrency, onDocument: run.onDocument, seen: run.seenAll, ...elsewhere }, setRun.set.resourceList!);
  if (dispatch !== undefined) await dispatch.settled(run);
  setRun.mode = 'baseline';
  setRun.documents.push(...got.documents);
  if (!got.complete) run.baselineComplete = false;
  setRun.snapshotAt = got.at ?? new Date(run.started).toISOString();
}

/**
 * Records a baseline in the state (its time, the cursor there) and owes the set a catch-up: the snapshot is as of
 * its `at` (§10, §11); the changes since bring the mirror to the Source's present, once deletions have been
 * inferred from every snapshot read (resources created since are in no snapshot).
 */
export async function recordBaseline(run: SyncRun, setRun: SetRun): Promise<void> {
  run.anyBaseline = true;
  if (run.dryRun) return;
  const snapshot = setRun.snapshotAt!;
  await run.flush();
  await run.state.setMeta(setRun.metaKey, snapshot);
  await run.state.setMeta(`url-prefixes:${setRun.set.key}`, urlFilterKey(run.options.urlPrefixes));
  await run.state.setCursor(setRun.set.key, { datetime: snapshot });
  run.catchUps.push({ setRun, snapshot });
}

/** A set without Resource List or Resource Dump: its changes alone, from the cursor (from the start without one). */
async function changesWithoutBaseline(run: SyncRun, setRun: SetRun): Promise<void> {
  const { set, cursor } = setRun;
  if (set.changeList !== undefined) {
    run.applier.warn(note('no-resource-list', { set: set.key, dumps: false }));
    const got = await changesFromList(run, setRun, cursor);
    if (got.gap !== undefined) run.applier.warn(got.gap);
    setRun.mode = 'incremental';
  } else if (setRun.dumpChanges && !run.dryRun) {
    run.applier.warn(note('no-resource-list', { set: set.key, dumps: true }));
    const got = await changesFromDumps(run, setRun, cursor?.datetime ?? NO_CURSOR);
    if (got.gap !== undefined) run.applier.warn(got.gap);
    setRun.mode = 'incremental';
  }
}

/**
 * Throws when no capability set offered anything to synchronize from; otherwise notes the sets that did not.
 * @throws ResourceSyncError RS_NOT_RESOURCESYNC
 */
export function requireUsableSets(run: SyncRun): void {
  const { source } = run.options;
  if (run.report.sets.length === 0) {
    const offers = run.unusable.map((u) => `'${u.set}' offers ${u.offered.length > 0 ? u.offered.join(', ') : 'nothing'}`);
    throw new ResourceSyncError('RS_NOT_RESOURCESYNC', `Source '${source}' offers nothing to synchronize from: ${offers.join('; ')} (a Destination needs a Resource List, Resource Dump, Change List or Change Dump).`, {
      data: { url: source, sets: offers },
    });
  }
  for (const u of run.unusable) run.applier.warn(note('set-unusable', u));
}

/**
 * Resources held but no longer in any Resource List read in full: deletions (§5.2), when every set took a complete
 * baseline. Then the baseline ends (the applier forgets what it held that no snapshot offered).
 */
export async function inferDeletions(run: SyncRun): Promise<void> {
  if (!run.anyBaseline) return;
  const { applier } = run;
  if (!run.baselineComplete) {
    applier.warn(note('deletions-not-inferred', {}));
  } else if (run.report.sets.every((s) => s.mode === 'baseline')) {
    applier.phase('baseline', run.fresh ? 0 : undefined);
    // fresh: every record is from the lists just read
    if (!run.fresh) await removeUnseen(run);
  }
  if (!run.dryRun) await applier.endBaseline(run.seenAll);
}

/** URLs to remove held at once: the state is read a page ahead of the removals, never all of it. */
const DELETION_BATCH = 1000;

/**
 * Removes every resource the state holds that no baseline of the run listed, in batches of {@link DELETION_BATCH}
 * (memory bounded whatever the state holds): the state is read in URL order, a page after the last URL read, so the
 * removals made meanwhile do not disturb the reading. The phase's total grows batch by batch.
 * A resource outside the filter is one the mirror should not hold, even when the Source still offers it.
 * @see Z39.99 §5.2 (a baseline's resources are the Source's; others are gone)
 */
async function removeUnseen(run: SyncRun): Promise<void> {
  const { applier } = run;
  let gone: string[] = [];
  const removeBatch = async (): Promise<void> => {
    applier.addTotal(gone.length);
    await runPool(gone, run.concurrency, (u) => applier.remove(u));
    gone = [];
  };
  for await (const u of run.state.urls()) {
    if (run.seenAll.has(u) && applier.wanted(u)) continue;
    gone.push(u);
    if (gone.length >= DELETION_BATCH) await removeBatch();
  }
  if (gone.length > 0) await removeBatch();
  else applier.addTotal(0); // the phase's total known: it ends at done/done
}

/** A set's changes since its snapshot, from Change Dumps and then the Change List; a gap is noted as lag. */
export async function catchUpSet(run: SyncRun, catchUp: CatchUp): Promise<void> {
  const { setRun, snapshot } = catchUp;
  const { set } = setRun;
  await enterSet(run, set);
  let at: string | undefined = snapshot;
  if (setRun.dumpChanges) {
    const got = await changesFromDumps(run, setRun, snapshot);
    if (got.gap !== undefined) run.applier.warn(gapNote({ ...got.gap.data, snapshot }, 'lag'));
    at = got.until;
  }
  if (set.changeList !== undefined && at !== undefined) {
    run.applier.phase('incremental', undefined, set.changeList);
    const got = await changesFromList(run, setRun, { datetime: at });
    if (got.gap !== undefined) run.applier.warn(gapNote({ ...got.gap.data, snapshot }, 'lag'));
  }
}

/** Settles the run: the files made durable, the state written, the temporary files removed, the report filled. */
export async function settle(run: SyncRun): Promise<SyncReport> {
  const { applier, report } = run;
  await run.storage.settle();
  await run.flush();
  if (!run.dryRun) await run.storage.discardStaged();
  if (applier.outside > 0) applier.warn(note('outside-url-prefixes', { count: applier.outside, prefixes: run.options.urlPrefixes ?? [] }));
  const counts = applier.counts;
  applier.progress(true);
  const mode = run.anyBaseline ? 'baseline' : report.sets.length > 0 ? 'incremental' : 'none';
  Object.assign(report, counts, { mode, durationMs: Date.now() - run.started });
  if (run.dryRun) report.plan = run.planned;
  return report;
}
