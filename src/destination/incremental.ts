import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { archivedKind, documentKindById, indexedKind, isPartOf, type DocumentKind } from '../core/model/document-kinds.js';
import type { Entry, ResourceSyncDocument } from '../core/model/types.js';
import { formatW3CDatetime, parseW3CDatetime } from '../core/w3c-datetime.js';
import { isAbsoluteLoc, loadDocument, resolveLoc, type DocumentContext } from './documents.js';
import type { ResourceApplier } from './resource-applier.js';
import { runPool } from './run-pool.js';
import { changeTime, lastChangePerResource, orderChanges } from './plan.js';
import type { SyncCursor } from './state.js';
import { gapNote, note, type GapNote } from './notes.js';

/** Options of {@link incremental}. */
export interface IncrementalOptions extends DocumentContext {
  applier: ResourceApplier;
  concurrency?: number;
  /** Where the previous run stopped; undefined processes every change on offer. */
  cursor: SyncCursor | undefined;
  /** Persists the cursor after each Change List (not called in a dry run by the caller's choice). */
  saveCursor?: (cursor: SyncCursor) => void | Promise<void>;
  /** Reports the issues of each document loaded (lenient validation). */
  onDocument?: (url: string, doc: ResourceSyncDocument) => void;
  /** Where the changes of each Change List are applied when not by `applier` here (a job queue's workers). */
  applyChanges?: ApplyChanges;
}

/**
 * Applies the changes of one Change List elsewhere (a job queue's workers), at most one per resource (each one's last
 * in the list's order), and counts them through the run's applier; resolves once every one is applied (or failed),
 * with the URLs that failed.
 */
export type ApplyChanges = (changes: readonly Entry[], changeList: string) => Promise<ReadonlySet<string>>;

/** What an incremental run did. */
export interface IncrementalResult {
  /** Set when the changes on offer start after the cursor: the caller falls back to a baseline. */
  gap?: GapNote;
  cursor: SyncCursor | undefined;
  /** Change Lists processed (closed ones before the cursor are skipped without being fetched). */
  processed: string[];
  skipped: string[];
  /** Changes applied after de-duplication. */
  changes: number;
  /** Where the cursor would stand had nothing failed: after every change of the lists processed. */
  end?: SyncCursor;
  /** The last Change List processed, as read: where a Source that changes under the sync is watched. */
  newest?: { url: string; base: string; doc: ResourceSyncDocument };
}

interface ListRef {
  url: string;
  from?: number;
  until?: number;
}

const ms = (v: string | undefined): number | undefined => (v === undefined ? undefined : parseW3CDatetime(v, true)?.ms);

const CHANGE_LIST = documentKindById('change-list');

type LoadedDocument = Awaited<ReturnType<typeof loadDocument>>;

/** True for an index of Change Lists (§12.2) or an archive of them (ResourceSync Archives §5): its entries are Change Lists. */
const listsChangeLists = (kind: DocumentKind | undefined): boolean =>
  isPartOf(CHANGE_LIST, kind) || (kind !== undefined && archivedKind(kind)?.id === CHANGE_LIST.id);

/**
 * The Change Lists of the archives an index of Change List Archives lists (ResourceSync Archives §5); a part of
 * another kind is skipped with a warning. None when an archive cannot be read: its Change Lists may be the
 * earliest, and the cursor must not pass them (the caller falls back to a baseline).
 */
async function archivedLists(options: IncrementalOptions, url: string, index: LoadedDocument, kind: DocumentKind, archives: DocumentKind): Promise<ListRef[]> {
  const lists: ListRef[] = [];
  for (const e of index.entries) {
    const part = resolveLoc(e.loc, index.finalUrl);
    let archive: LoadedDocument;
    try {
      archive = await loadDocument(options, part);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
      options.applier.fail(part, err);
      return [];
    }
    options.onDocument?.(part, archive);
    if (!isPartOf(archive.kind, kind)) {
      const data = { url, index: kind.name, part, expected: archives.name };
      options.applier.warn(note('index-part-unexpected', archive.kind === undefined ? data : { ...data, kind: archive.kind.name }));
      continue;
    }
    lists.push(...listRefs(archive));
  }
  return lists;
}

/** The Change Lists an index or archive lists, with the period each covers. */
function listRefs(doc: { entries: readonly Entry[]; finalUrl: string }): ListRef[] {
  return doc.entries.map((e) => {
    const r: ListRef = { url: resolveLoc(e.loc, doc.finalUrl) };
    const f = ms(e.md?.from);
    const u = ms(e.md?.until);
    if (f !== undefined) r.from = f;
    if (u !== undefined) r.until = u;
    return r;
  });
}

function earliestChange(entries: readonly Entry[]): number | undefined {
  let min: number | undefined;
  for (const e of entries) {
    const t = changeTime(e);
    if (t !== undefined && (min === undefined || t < min)) min = t;
  }
  return min;
}

/** True when the change at `time`, position `index` of list `url`, was processed before. */
function done(cursor: SyncCursor | undefined, cursorMs: number | undefined, time: number | undefined, url: string, index: number): boolean {
  if (cursor === undefined || cursorMs === undefined || time === undefined) return false;
  if (time < cursorMs) return true;
  if (time > cursorMs) return false;
  return cursor.changeList === url && cursor.position !== undefined && index < cursor.position;
}

/**
 * The Change Lists a document offers, in `from` order (a list out of order is sorted with a warning): itself for a
 * Change List (then `first` is the document, not read again), the entries of an index or archive of Change Lists,
 * or the Change Lists of the archives an index of Change List Archives lists.
 */
async function changeListsOf(options: IncrementalOptions, url: string, top: LoadedDocument): Promise<{ lists: ListRef[]; first?: LoadedDocument }> {
  const kind = top.kind;
  const archives = kind === undefined ? undefined : indexedKind(kind);
  let lists: ListRef[];
  let first: LoadedDocument | undefined;
  if (kind?.id === CHANGE_LIST.id) {
    const r: ListRef = { url };
    // a Change List without `from` (tolerated) is read as starting at the earliest change it lists
    const f = ms(top.md?.from) ?? earliestChange(top.entries);
    const u = ms(top.md?.until);
    if (f !== undefined) r.from = f;
    if (u !== undefined) r.until = u;
    lists = [r];
    first = top;
  } else if (listsChangeLists(kind)) {
    // an index of Change Lists, or an archive of them (ResourceSync Archives §5: same entries, `from`/`until` each)
    lists = listRefs(top);
  } else if (kind !== undefined && archives !== undefined && listsChangeLists(archives)) {
    // an index of Change List Archives: each archive read for its Change Lists
    lists = await archivedLists(options, url, top, kind, archives);
  } else {
    throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${url}' is not a Change List or Change List Index (${top.kind?.name ?? 'unknown kind'}).`, { data: { url } });
  }
  if (lists.some((l, i) => i > 0 && l.from !== undefined && lists[i - 1]!.from !== undefined && l.from < lists[i - 1]!.from!)) {
    options.applier.warn(note('change-lists-out-of-order', { url }));
    lists = [...lists].sort((a, b) => (a.from ?? 0) - (b.from ?? 0));
  }
  return first === undefined ? { lists } : { lists, first };
}

/** The gap when the earliest change on offer starts after the cursor (§12.1 from/until semantics), else undefined. */
function gapBefore(options: IncrementalOptions, url: string, top: LoadedDocument, lists: readonly ListRef[], cursorMs: number): GapNote | undefined {
  // the period the document itself covers (`from` of a Change List Index, §12.2), then its lists'
  const froms = [isPartOf(CHANGE_LIST, top.kind) ? ms(top.md?.from) : undefined, ...lists.map((l) => l.from)].filter((x): x is number => x !== undefined);
  const earliest = froms.length > 0 ? Math.min(...froms) : undefined;
  if (earliest === undefined || earliest <= cursorMs) return undefined;
  return gapNote({ url, start: formatW3CDatetime(earliest), cursor: options.cursor!.datetime });
}

/**
 * Reads one Change List an index or archive lists, filling its `from` when the entry gave none. `failed` when it
 * cannot be read (reported to the applier), `not-change-list` when it is another kind (warned).
 */
async function readChangeList(options: IncrementalOptions, url: string, list: ListRef): Promise<LoadedDocument | 'failed' | 'not-change-list'> {
  let doc: LoadedDocument;
  try {
    doc = await loadDocument(options, list.url);
    options.onDocument?.(list.url, doc);
  } catch (err) {
    if (isResourceSyncError(err, 'RS_ABORTED') || options.signal?.aborted) throw err;
    options.applier.fail(list.url, err);
    return 'failed';
  }
  if (doc.kind?.id !== CHANGE_LIST.id) {
    options.applier.warn(note('index-part-not-change-list', { url, part: list.url }));
    return 'not-change-list';
  }
  if (list.from === undefined) {
    const f = ms(doc.md?.from) ?? earliestChange(doc.entries);
    if (f !== undefined) list.from = f;
  }
  return doc;
}

/** What applying one Change List did. */
interface ListApplied {
  /** Its changes in change order, absolute. */
  ordered: Entry[];
  /** Changes applied after de-duplication. */
  changes: number;
  /** The earliest change (by position) that failed: where the cursor stops. */
  firstFailed?: { index: number; time: number | undefined };
}

/**
 * Applies the changes of one Change List not processed before (per the cursor), each resource's last change, through
 * the applier's pool; resolves once the applier has flushed.
 */
async function applyChangeList(options: IncrementalOptions, list: ListRef, doc: LoadedDocument, cursorMs: number | undefined): Promise<ListApplied> {
  const { applier } = options;
  const base = doc.finalUrl;
  const { entries: ordered, sorted } = orderChanges(doc.entries.map((e) => (isAbsoluteLoc(e.loc) ? e : { ...e, loc: resolveLoc(e.loc, base) })));
  if (sorted) applier.warn(note('changes-out-of-order', { url: list.url }));
  const pending: { entry: Entry; index: number; time: number | undefined }[] = [];
  ordered.forEach((entry, index) => {
    const time = changeTime(entry);
    if (time === undefined) applier.warn(note('change-time-missing', { url: list.url, loc: entry.loc }));
    if (!done(options.cursor, cursorMs, time, list.url, index)) pending.push({ entry, index, time });
  });
  const last = lastChangePerResource(pending.map((p) => ({ loc: p.entry.loc, p })));
  applier.phase('incremental', last.length, list.url);
  let firstFailed: ListApplied['firstFailed'];
  const failedAt = (p: (typeof pending)[number]): void => {
    if (firstFailed === undefined || p.index < firstFailed.index) firstFailed = { index: p.index, time: p.time };
  };
  const unknown = (p: (typeof pending)[number]): void => {
    const change = p.entry.md?.change;
    if (change !== undefined && change !== 'created' && change !== 'updated' && change !== 'deleted') {
      applier.warn(note('change-unknown', { url: list.url, loc: p.entry.loc, change }));
    }
  };
  if (options.applyChanges !== undefined) {
    // one change per resource: the chunks elsewhere may run in any order; the cursor waits for all of them
    const failed = await options.applyChanges(last.map(({ p }) => p.entry), list.url);
    for (const { p } of last) {
      unknown(p);
      if (failed.has(p.entry.loc)) failedAt(p);
    }
  } else {
    await runPool(last, options.concurrency ?? 16, async ({ p }, release) => {
      const ok = (await applier.apply(p.entry, release)) !== undefined; // a deletion too: the plan item says delete
      unknown(p);
      if (!ok) failedAt(p);
    });
  }
  await applier.flush();
  return firstFailed === undefined ? { ordered, changes: last.length } : { ordered, changes: last.length, firstFailed };
}

/**
 * Where the cursor stands after every change of a list: its latest change time or, for a closed list, its `until`
 * when later (a closed list covers every change up to it, §12.1); undefined when before the cursor or unknown.
 */
function listEnd(list: ListRef, ordered: readonly Entry[], cursorMs: number | undefined): SyncCursor | undefined {
  const times = ordered.map(changeTime).filter((t): t is number => t !== undefined);
  if (list.until !== undefined) times.push(list.until);
  const lastTime = times.length > 0 ? Math.max(...times) : list.from;
  return lastTime !== undefined && (cursorMs === undefined || lastTime >= cursorMs) ? { datetime: formatW3CDatetime(lastTime), changeList: list.url, position: ordered.length } : undefined;
}

/**
 * Incremental synchronization from a Change List, a Change List Index, or a Change List Archive (or an index of
 * archives, when catching up after a gap): closed lists whose `until` lies before
 * the cursor are skipped unfetched; the others are processed from their first unprocessed change (by change
 * time, `rs:md datetime` in 1.1 or `lastmod` in 1.0, and position); several changes to one resource collapse to
 * the last; created/updated are fetched and verified, deleted are removed (or reported) by the applier. A list in
 * reverse order is sorted with a warning. When the earliest `from` on offer is later than the cursor, changes
 * were missed: nothing is applied and `gap` says why (the caller falls back to a baseline).
 * The cursor never passes a change that failed: the next run starts there again.
 * @see Z39.99 §5.2 (Incremental Synchronization), §12.1, §12.2; ResourceSync Archives §5
 */
export async function incremental(options: IncrementalOptions, url: string): Promise<IncrementalResult> {
  const result: IncrementalResult = { cursor: options.cursor, processed: [], skipped: [], changes: 0 };
  const cursorMs = ms(options.cursor?.datetime);
  const top = await loadDocument(options, url);
  options.onDocument?.(url, top);
  const { lists, first } = await changeListsOf(options, url, top);
  const gap = cursorMs === undefined ? undefined : gapBefore(options, url, top, lists, cursorMs);
  if (gap !== undefined) {
    result.gap = gap;
    return result;
  }

  let cursor = options.cursor;
  let blocked = false; // a failure holds the cursor where it is
  for (const list of lists) {
    if (cursorMs !== undefined && list.until !== undefined && list.until < cursorMs) {
      result.skipped.push(list.url);
      continue;
    }
    const doc = first ?? (await readChangeList(options, url, list));
    if (doc === 'failed') break; // later lists would move the cursor past what this one holds
    if (doc === 'not-change-list') continue;
    result.processed.push(list.url);
    result.newest = { url: list.url, base: doc.finalUrl, doc };
    const { ordered, changes, firstFailed } = await applyChangeList(options, list, doc, cursorMs);
    result.changes += changes;
    const end = listEnd(list, ordered, cursorMs);
    if (end !== undefined) result.end = end;
    if (!blocked) {
      if (firstFailed !== undefined) {
        blocked = true;
        if (firstFailed.time !== undefined) cursor = { datetime: formatW3CDatetime(firstFailed.time), changeList: list.url, position: firstFailed.index };
      } else if (end !== undefined) cursor = end;
      if (cursor !== undefined && cursor !== options.cursor) await options.saveCursor?.(cursor);
    }
  }
  result.cursor = cursor;
  if (result.end === undefined && cursor !== undefined) result.end = cursor;
  return result;
}
