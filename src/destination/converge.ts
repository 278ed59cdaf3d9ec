/**
 * Incremental synchronization against a Source that changes while it is read: the Change List is applied, and
 * while resources failed in a way that a newer change explains (a 404 after a deletion, bytes that no longer match
 * the listed hash or length), the Change List is watched until it moves and applied again, a bounded number of
 * rounds in a bounded time. The run then stops at the newest Change List applied.
 * @see Z39.99 §5.2 (Incremental Synchronization), §12.1
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { parseDocument } from '../core/xml/read-document.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import type { CapabilitySet } from './capability-sets.js';
import { resolveLoc, type DocumentContext } from './documents.js';
import type { ResourceApplier, SyncFailure } from './resource-applier.js';
import { incremental, type ApplyChanges, type IncrementalResult } from './incremental.js';
import { gapNote, note, type GapNote } from './notes.js';
import { changeTime } from './plan.js';
import type { DestinationState, SyncCursor } from './state.js';

/** Bounds of converging on a moving Source: rounds of applying the Change List again, and the time they may take. */
const CONVERGE = {
  /** Readings of the Change List after the first. */
  rounds: 10,
  /** Time for all rounds together, ms. */
  totalMs: 60_000,
  /** How long one round waits for the Change List to move before the failures are taken as they are, ms. */
  moveWaitMs: 10_000,
  /** The same while no change since the run's starting point was seen (a Source that may well be still), ms. */
  stillWaitMs: 2_000,
  /** First pause between two looks at the Change List (doubling up to a second), ms. */
  pollMs: 100,
};

/** What {@link changesSince} needs from the sync. */
export interface ChangesSinceOptions extends DocumentContext {
  applier: ResourceApplier;
  concurrency: number;
  dryRun: boolean;
  store: DestinationState;
  /** Reports the issues of each document loaded. */
  onDocument: (url: string, doc: ResourceSyncDocument) => void;
  /** Where each Change List's changes are applied when not by `applier` here (a job queue's workers). */
  applyChanges?: ApplyChanges;
}

/** A failure that a change made after the resource was listed explains: gone (404, 410) or other bytes. */
function maybeMoved(f: SyncFailure): boolean {
  if (f.code === 'RS_HASH_MISMATCH' || f.code === 'RS_LENGTH_MISMATCH') return true;
  return f.code === 'RS_HTTP_STATUS' && (f.status === 404 || f.status === 410);
}

/** What tells one reading of a Change List from the next: its times, its size and its latest change. */
function markOf(doc: ResourceSyncDocument): string {
  let latest = -Infinity;
  for (const e of doc.entries) latest = Math.max(latest, changeTime(e) ?? -Infinity);
  return JSON.stringify([doc.md?.from, doc.md?.until, doc.md?.at, doc.md?.completed, doc.entries.length, latest]);
}

/**
 * Looks at the Change List `url` (conditionally once its ETag is known) until it differs from `doc`, or until
 * `deadline`. Returns the new reading, or undefined when it did not move in time.
 */
async function waitForMove(
  ctx: DocumentContext,
  url: string,
  doc: ResourceSyncDocument,
  deadline: number,
): Promise<ResourceSyncDocument | undefined> {
  const mark = markOf(doc);
  let etag: string | undefined;
  let pause = CONVERGE.pollMs;
  ctx.authority.check(url);
  while (Date.now() < deadline) {
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now()))).catch(() => undefined);
    pause = Math.min(pause * 2, 1000);
    if (ctx.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', `Watching '${url}' aborted.`, { data: { url } });
    const headers: Record<string, string> = etag === undefined ? {} : { 'if-none-match': etag };
    const now = await look(ctx, url, headers);
    if (now === undefined) continue; // 304: not moved; an error: look again later
    etag = now.etag;
    if (markOf(now.doc) !== mark) return now.doc;
  }
  return undefined;
}

/** One look at the Change List: its reading and ETag, or undefined for a 304 or a failure (only an abort throws). */
async function look(
  ctx: DocumentContext,
  url: string,
  headers: Record<string, string>,
): Promise<{ doc: ResourceSyncDocument; etag: string | undefined } | undefined> {
  try {
    const res = await ctx.http(url, { headers, ...(ctx.signal ? { signal: ctx.signal } : {}) });
    if (res.status !== 200) {
      await res.discard();
      return undefined;
    }
    return { doc: await parseDocument(res.body, ctx.signal ? { signal: ctx.signal } : {}), etag: res.headers['etag'] };
  } catch (err) {
    if (isResourceSyncError(err, 'RS_ABORTED') || ctx.signal?.aborted === true) throw err;
    return undefined;
  }
}

/**
 * Settles the failures that a newer reading of the Change List explains: each has a change there after `end`, so
 * the Source changed it after the point the run stops at. They are reported as `changed-after-list`, not as
 * failures, and stay pending for the next run. True when every failure left is settled so.
 */
function settle(applier: ResourceApplier, newer: ResourceSyncDocument, base: string, end: SyncCursor): boolean {
  const endMs = parseW3CDatetime(end.datetime, true)?.ms ?? Infinity;
  const later = new Set<string>();
  for (const e of newer.entries) if ((changeTime(e) ?? -Infinity) > endMs) later.add(resolveLoc(e.loc, base));
  let all = true;
  for (const f of applier.counts.failed) {
    if (maybeMoved(f) && later.has(f.url)) {
      applier.excuse(f.url);
      applier.warn(note('changed-after-list', { url: f.url, point: end.datetime }));
    } else all = false;
  }
  return all;
}

/**
 * The changes after `from` of the set's Change List (and, after a gap, of its archive), applied until no newer
 * change can resolve a failure: while resources failed as a change after their listing explains, the Change List
 * is watched until it moves (its times, size or ETag) and applied again, at most `CONVERGE.rounds` times within
 * `CONVERGE.totalMs`. The cursor is stored at the newest Change List applied; a failure that a later change (not
 * applied in this run) explains is settled by that change: a warning, and pending for the next run.
 */
export async function changesSince(
  o: ChangesSinceOptions,
  set: CapabilitySet,
  from: SyncCursor | undefined,
  documents: string[],
): Promise<{ gap?: GapNote }> {
  const url = set.changeList!;
  const { applier, store } = o;
  const changes = (cursor: SyncCursor | undefined, listUrl: string): Promise<IncrementalResult> =>
    incremental({ ...o, cursor, ...(o.dryRun ? {} : { saveCursor: (c) => store.setCursor(set.key, c) }) }, listUrl);
  const deadline = Date.now() + CONVERGE.totalMs;
  let cursor = from;
  let inc = await changes(cursor, url);
  if (inc.gap !== undefined && set.changeListArchive !== undefined) {
    // §5.2 / Archives §5: the Destination was away longer than the current Change Lists reach back
    applier.warn(gapNote({ ...inc.gap.data, archive: set.changeListArchive }, 'archive'));
    const arch = await changes(cursor, set.changeListArchive);
    if (arch.gap === undefined) {
      documents.push(set.changeListArchive, ...arch.processed);
      cursor = arch.cursor;
      inc = await changes(cursor, url);
    }
  }
  let moving = false; // changes after the starting point were seen: the Source changes while it is read
  for (let round = 0; ; round++) {
    if (inc.gap !== undefined) return { gap: inc.gap };
    moving ||= inc.changes > 0;
    for (const u of [url, ...inc.processed]) if (!documents.includes(u)) documents.push(u);
    cursor = inc.cursor;
    await applier.flush();
    const newest = inc.newest;
    if (o.dryRun || newest === undefined || !applier.counts.failed.some(maybeMoved)) break;
    // a resource changed or went away after it was listed: its newer change shows once the Change List moves
    const newer = await waitForMove(
      o,
      newest.url,
      newest.doc,
      Math.min(deadline, Date.now() + (moving ? CONVERGE.moveWaitMs : CONVERGE.stillWaitMs)),
    );
    if (newer === undefined) break;
    if (round + 1 >= CONVERGE.rounds || Date.now() >= deadline) {
      if (inc.end !== undefined && settle(applier, newer, newest.base, inc.end)) await store.setCursor(set.key, inc.end);
      break;
    }
    inc = await changes(cursor, url);
  }
  return {};
}
