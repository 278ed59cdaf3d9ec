import { RunHold, openRun, type ResourceDispatch, type SyncRun } from './sync-run.js';
import { allowListSkip, storeListValidators } from './list-validators.js';
import { catchUpSet, discover, inferDeletions, requireUsableSets, settle, syncSet } from './sync-steps.js';
import type { SyncOptions, SyncReport } from './sync-options.js';
import { checkUrlPrefixes } from './url-filter.js';

export type { SyncProgress, SyncFailure } from './resource-applier.js';
export type { MirrorTarget, SyncBehaviour, SyncOptions, SyncReport } from './sync-options.js';

/**
 * Synchronizes a destination directory with a Source: a baseline from the Resource List when the destination
 * has no state for a capability set (or when changes were missed), incremental from the Change List afterwards.
 * Every resource is verified (length, hashes) while it streams to a temporary file and renamed into place;
 * the state (SQLite) records what is held and where incremental sync stands; a lock keeps a second sync out.
 * Problems with single resources are collected in `failed`; problems that stop the sync throw.
 *
 * The run is a sequence of steps over a {@link SyncRun} (see `sync-steps.ts`): `openRun`, `discover`, `syncSet` for
 * each capability set, `requireUsableSets`, `inferDeletions`, `catchUpSet` for each baseline taken, `settle`.
 * @see Z39.99 §5.2
 * @example
 * const report = await sync({ source: 'http://example.com/capabilitylist.xml', dest: './mirror', delete: true });
 * console.log(report.mode, report.created, report.failed.length);
 */
export async function sync(options: SyncOptions): Promise<SyncReport> {
  return runSync(options, undefined);
}

/**
 * The steps of {@link sync}; `dispatchFor` (a job queue's coordinator) says where the run hands the resources of its
 * Resource Lists once it is open, instead of fetching them itself.
 */
export async function runSync(options: SyncOptions, dispatchFor: ((run: SyncRun) => Promise<ResourceDispatch>) | undefined): Promise<SyncReport> {
  const started = Date.now();
  if (options.urlPrefixes !== undefined) checkUrlPrefixes(options.urlPrefixes);
  const hold = new RunHold(options);
  hold.keepStaged = dispatchFor !== undefined;
  let run: SyncRun | undefined;
  try {
    run = await openRun(hold, options, started);
    if (dispatchFor !== undefined) run.dispatch = await dispatchFor(run);
    const sets = await discover(run);
    allowListSkip(run, sets.length);
    for (const set of sets) await syncSet(run, set);
    requireUsableSets(run);
    await inferDeletions(run);
    for (const catchUp of run.catchUps) await catchUpSet(run, catchUp);
    const report = await settle(run);
    await storeListValidators(run);
    return report;
  } catch (err) {
    await hold.abandon();
    throw err;
  } finally {
    run?.close();
    await hold.release();
  }
}
