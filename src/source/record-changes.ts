/**
 * The fast path of a live Source: record the changes of files a watcher saw settle, without scanning the
 * sets or writing any document, and announce them at once as Change Notifications. A later {@link publish}
 * writes the documents (it counts the changes recorded here as changes since its last documents) and, by
 * scanning the whole set, reconciles anything a watcher missed.
 * @see Z39.99 §12.1 (Change List), Change Notification §3
 */
import { relative, resolve, sep } from 'node:path';
import { HTML_LINK_MAX_BYTES } from '../core/html-discovery.js';
import { inventoryFiles, type InventoryEntry } from '../node/inventory.js';
import { announceChanges, changeRecorder, publishContext, setPaths, type Context, type PublishOptions } from './publish-context.js';
import { htmlRewrite } from './publish-html.js';
import { bitstreamDir, openSetSnapshots, setConfig, storeFile } from './publish-set-store.js';
import type { SetNotifications } from './notifications.js';
import { holdingLease, type SourceSnapshots } from './source-snapshots.js';

/** What `recordChanges` did. */
export interface RecordResult {
  changes: { created: number; updated: number; deleted: number };
  /** With `options.notifications`: the Change Notifications of each set that changed. */
  notifications?: SetNotifications[];
  /**
   * False when some files need a full publication: a set not published yet or published with other options,
   * or a path that is now a folder. The sets recorded before that one are in this result.
   */
  complete: boolean;
}

/**
 * Records the changes of `files` (absolute paths, under the sets' folders as given in `options.sets`; others
 * are ignored) in their sets' snapshot stores, each file judged as {@link publish}'s scan judges it, and
 * returns their Change Notifications (also given to `options.onRecorded`). Holds the set's `recording` lease:
 * runs after the recordings and scans of the set that came before and before later ones. The sets must have been published with the same options.
 * The changes of a set are recorded in path order, or with `order: 'given'` in the order of `files` (a file named
 * more than once at its last place): the order a Destination applied them in, for an aggregator whose Change List
 * records the changes in the order applied (the changes of one call share one `datetime`).
 * @see Z39.99 §12.1 (forward chronological order), §14.8
 * @example
 * const r = await recordChanges(options, ['/srv/data/a.txt']);
 * if (!r.complete) await publish(options);
 */
export async function recordChanges(options: PublishOptions, files: readonly string[], how: { order?: 'path' | 'given' } = {}): Promise<RecordResult> {
  const ctx = publishContext(options);
  const result: RecordResult = { changes: { created: 0, updated: 0, deleted: 0 }, complete: true };
  const notifications: SetNotifications[] = [];
  for (const given of options.sets) {
    if (given.feed !== undefined) continue; // a feed's changes are recorded by publishing it
    const set = { ...given, dir: resolve(given.dir) };
    const dir = set.dir.endsWith(sep) ? set.dir : set.dir + sep;
    const mine = files.map((f) => resolve(f)).filter((f) => f.startsWith(dir) || f === set.dir);
    if (mine.includes(set.dir)) {
      result.complete = false; // the folder itself changed (an event without a name)
      break;
    }
    const named = mine.map((f) => relative(set.dir, f).split(sep).join('/'));
    const paths = how.order === 'given' ? lastPlaces(named) : [...new Set(named)].sort();
    if (paths.length === 0) continue;
    const file = storeFile(set, ctx.stateDir);
    const snapshots = await openSetSnapshots(ctx, set, file);
    let done: boolean;
    try {
      done = await holdingLease(snapshots, 'recording', () => recordSetChanges(ctx, set, snapshots, file, paths, { result, notifications }));
    } finally {
      await snapshots.close();
    }
    if (!done) {
      result.complete = false;
      break;
    }
  }
  if (ctx.notifications) result.notifications = notifications;
  return result;
}

/**
 * Records the changes of `paths` in one set's snapshots, holding its `recording` lease. False when they need
 * a full publication (see `RecordResult.complete`).
 */
async function recordSetChanges(
  ctx: Context,
  set: { name: string; dir: string },
  snapshots: SourceSnapshots,
  file: string,
  paths: readonly string[],
  into: { result: RecordResult; notifications: SetNotifications[] },
): Promise<boolean> {
  if ((await snapshots.snapshotAt()) === undefined || (await snapshots.getMeta('published_config')) !== setConfig(ctx, set)) return false;
  const docs = setPaths(ctx, set);
  const states: Array<{ path: string; entry: InventoryEntry | undefined }> = [];
  const read = inventoryFiles(set.dir, paths, {
    hashes: ctx.hashes,
    previous: (path) => snapshots.resource(path),
    exclude: ctx.exclude,
    settleMs: ctx.settleMs,
    ...(ctx.htmlDiscoveryLink ? { rewrite: htmlRewrite(docs.capUrl), rewriteLimit: HTML_LINK_MAX_BYTES } : {}),
  });
  for await (const s of read) {
    // a folder, or a path gone with the files of a folder: only a scan knows its files
    if (s.kind === 'folder' || (s.kind === 'absent' && (await snapshots.holdsUnder(s.path)))) return false;
    states.push({ path: s.path, entry: s.kind === 'file' ? s.entry : undefined });
  }
  const { onChange, recorded } = changeRecorder(ctx, set.dir, bitstreamDir(file));
  const r = await snapshots.update(states, { now: ctx.now, ...ctx.changeList, ...(onChange ? { onChange } : {}) });
  into.result.changes.created += r.created;
  into.result.changes.updated += r.updated;
  into.result.changes.deleted += r.deleted;
  if (ctx.notifications && recorded && recorded.length > 0) {
    into.notifications.push(await announceChanges({ ...ctx, notifications: ctx.notifications }, snapshots, set.name, docs, r.at, recorded));
  }
  return true;
}

/** The distinct values of `list`, each at its last place. */
function lastPlaces(list: readonly string[]): string[] {
  const last = new Map<string, number>();
  list.forEach((v, i) => last.set(v, i));
  return list.filter((v, i) => last.get(v) === i);
}
