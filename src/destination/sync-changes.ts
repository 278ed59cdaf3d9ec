/**
 * The steps of a sync that bring a capability set's changes since a time: from the Change List (converging on a
 * Change List that moves meanwhile) or from Change Dump packages, caught up through the Change Dump Archive.
 * @see Z39.99 §12 (Change List), §13 (Change Dump); Archives §6
 */
import { ResourceSyncError } from '../core/errors.js';
import type { SeenSet } from '../core/fingerprint-set.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { changesSince } from './converge.js';
import { loadDocument, resolveLoc } from './documents.js';
import { applyChangeDump, type ApplyDumpOptions, type DumpReport } from './dump.js';
import { gapNote, note, type GapNote } from './notes.js';
import type { SyncCursor } from './state.js';
import type { SetRun, SyncRun } from './sync-run.js';

/** The cursor of a set that has none yet: before every change. */
export const NO_CURSOR = '0001-01-01T00:00:00Z';

/**
 * Applies the set's Change List changes after `from` (§12), converging on a Change List that moves meanwhile; the
 * documents read are added to the set's. With a dispatch (a job queue), each Change List's changes are applied by its
 * workers. Returns the gap when changes were missed.
 */
export function changesFromList(run: SyncRun, setRun: SetRun, from: SyncCursor | undefined): Promise<{ gap?: GapNote }> {
  const { applier, concurrency, dryRun, state } = run;
  const dispatch = dryRun ? undefined : run.dispatch;
  const elsewhere = dispatch?.applyChanges === undefined ? {} : { applyChanges: dispatch.applyChanges.bind(dispatch, run, setRun) };
  return changesSince({ ...run.context, applier, concurrency, dryRun, store: state, onDocument: run.onWholeDocument, ...elsewhere }, setRun.set, from, setRun.documents);
}

/** The options of a Resource Dump or Change Dump read in this run; what each resource became goes to the applier. */
export function dumpOptionsFor(run: SyncRun, dumpUrl: string, after: string | undefined, seen?: SeenSet): ApplyDumpOptions {
  const { http, documents, authority, mapper } = run.connection;
  const { applier, options } = run;
  return {
    dumpUrl,
    http,
    documents,
    authority,
    storage: run.storage,
    mapPath: (loc) => mapper.toPath(loc),
    delete: options.delete ?? false,
    current: (loc, relPath, expected) => applier.holds(loc, relPath, expected),
    include: (loc) => applier.includes(loc),
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
        ...(r.ln !== undefined ? { links: r.ln } : {}),
      });
    },
  };
}

/** A dump's failures and notes, as the run's. */
export function absorbDump(run: SyncRun, report: DumpReport): void {
  const { applier } = run;
  for (const f of report.failures) {
    const data = { package: f.package, ...(f.path !== undefined ? { path: f.path } : {}) };
    applier.fail(f.loc ?? f.package, new ResourceSyncError(f.code, f.message, { data, recoverable: true }));
  }
  for (const n of report.notes) applier.warn(n);
}

/** Applies the Change Dump at `url` after `from`; unless it leaves a gap it is the run's (a read document). */
async function applyChangeDumpAt(run: SyncRun, setRun: SetRun, url: string, from: string | undefined): Promise<DumpReport> {
  const report = await applyChangeDump(dumpOptionsFor(run, url, from));
  if (report.gap === undefined) {
    absorbDump(run, report);
    await run.flush();
    setRun.documents.push(url);
  }
  return report;
}

/**
 * Applies the Change Dumps of the earlier periods the `changedump-archive` lists, in forward order (Archives §6),
 * the cursor moved after each. Returns where they end, or what stops the catch-up (a gap, or a package that failed).
 */
async function changesFromDumpArchive(run: SyncRun, setRun: SetRun, from: string, gap: GapNote): Promise<{ from: string } | { stopped: { gap?: GapNote } }> {
  const { set } = setRun;
  const archiveUrl = set.changeDumpArchive!;
  run.applier.warn(gapNote({ ...gap.data, archive: archiveUrl }, 'archive'));
  const archive = await loadDocument(run.context, archiveUrl);
  run.onWholeDocument(archiveUrl, archive);
  const at = (v: string | undefined): number => (v === undefined ? 0 : (parseW3CDatetime(v, true)?.ms ?? 0));
  const periods = [...archive.entries].sort((a, b) => at(a.md?.from) - at(b.md?.from));
  let reached = from;
  for (const p of periods) {
    if (p.md?.until !== undefined && at(p.md.until) <= at(reached)) continue;
    const r = await applyChangeDumpAt(run, setRun, resolveLoc(p.loc, archive.finalUrl), reached);
    if (r.gap !== undefined || r.failures.length > 0) return { stopped: r.gap !== undefined ? { gap: r.gap } : {} };
    reached = r.until ?? p.md?.until ?? reached;
    await run.state.setCursor(set.key, { datetime: reached });
  }
  return { from: reached };
}

/**
 * Applies the Change Dump packages after `after` (§13), caught up through the `changedump-archive` when the current
 * Change Dump starts later. Returns the new cursor time (undefined when a package failed: the cursor stays), or the
 * gap when changes were missed.
 */
export async function changesFromDumps(run: SyncRun, setRun: SetRun, after: string): Promise<{ until?: string; gap?: GapNote }> {
  const { set } = setRun;
  const changeDump = set.changeDump!;
  run.applier.phase('incremental', undefined, changeDump);
  let from = after;
  let report = await applyChangeDumpAt(run, setRun, changeDump, from);
  if (report.gap !== undefined && set.changeDumpArchive !== undefined) {
    const through = await changesFromDumpArchive(run, setRun, from, report.gap);
    if ('stopped' in through) return through.stopped;
    from = through.from;
    report = await applyChangeDumpAt(run, setRun, changeDump, from);
  }
  // no cursor yet (a set without Resource List or Resource Dump): every package on offer is applied
  if (report.gap !== undefined && after === NO_CURSOR) report = await applyChangeDumpAt(run, setRun, changeDump, undefined);
  if (report.gap !== undefined) return { gap: report.gap };
  if (report.failures.length > 0) {
    run.applier.warn(note('change-dump-failures', { url: changeDump, cursor: from }));
    return {};
  }
  const until = report.until ?? from;
  await run.state.setCursor(set.key, { datetime: until });
  return { until };
}
