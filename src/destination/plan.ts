import type { Entry } from '../core/model/types.js';
import { knownHashes, parseLength, type HashValue } from '../core/hash.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';

/**
 * What the Destination should do with one resource.
 * @see Z39.99 §5.2 (baseline, incremental, audit)
 */
export type PlanAction = 'create' | 'update' | 'delete' | 'unchanged';

/** What the Source says about a resource, read from an entry's `loc`, `lastmod` and `rs:md`. */
export interface SourceFacts {
  url: string;
  length?: number;
  /** Declared hashes of known algorithms (md5, sha-1, sha-256). */
  hashes: HashValue[];
  /** `lastmod` in ms since the epoch. */
  lastmod?: number;
}

/** What the Destination holds for a resource: from the state store, or measured from the local file. */
export interface LocalFacts {
  length: number;
  hashes: Record<string, string>;
  /** The `lastmod` recorded (as written) or the file's mtime, in ms. */
  lastmod?: number;
}

/**
 * Why an action was planned:
 * - `missing`: no local copy (create; update when the state still holds a record of it);
 * - `hash`, `length`: the local copy differs (update);
 * - `lastmod`: the Source's `lastmod` is newer than the local copy's (update);
 * - `unverifiable`: the Source gives no hash, length or `lastmod` to compare with (update, fetched conditionally);
 * - `same`: the local copy matches (unchanged);
 * - `gone`: held, but on offer no more (delete);
 * - `deleted-at-source`: a Change List says deleted, and the copy is held (delete);
 * - `absent`: a Change List says deleted, and nothing is held (unchanged: nothing to do).
 */
export type PlanReason = 'missing' | 'hash' | 'length' | 'lastmod' | 'unverifiable' | 'same' | 'gone' | 'deleted-at-source' | 'absent';

/** The decision for one resource with its reason. */
export interface PlanDecision {
  action: PlanAction;
  reason: PlanReason;
}

/**
 * One item of a plan: what the Destination does with one resource, and why.
 * @example { url: 'http://example.com/a.txt', path: 'a.txt', action: 'update', reason: 'hash', source: { url, hashes: [...] }, local: { length: 3, hashes: { md5: '…' } } }
 */
export interface PlanItem extends PlanDecision {
  url: string;
  /** Where the resource lives in the destination (relative, `/`), when it can be mapped. */
  path?: string;
  /** The change of a Change List entry as written (`created`, `updated`, `deleted`, or another value, read as updated). */
  change?: string;
  /** The change's `datetime` as written (`rs:md datetime` of a Change List or Change Notification entry). */
  datetime?: string;
  /** What the Source says (absent for `gone`). */
  source?: SourceFacts;
  /** What the Destination holds (absent when nothing is). */
  local?: LocalFacts;
  /** A deletion that is not applied because deletions are off (`delete: false`): reported only. */
  kept?: true;
}

/** What the Destination knows of one resource, as a lookup finds it. */
export interface LocalLookup {
  /** The relative path the resource maps to. */
  path?: string;
  /** The local copy's facts; absent when there is no usable copy. */
  local?: LocalFacts;
  /** The state holds a record of the resource (even when its file is gone or differs). */
  held?: boolean;
}

/** Finds what the Destination holds for a resource: the state store, the file system, or both; injected. */
export type LocalLookupFn = (url: string, source: SourceFacts | undefined) => LocalLookup | Promise<LocalLookup>;

/** Options of {@link plan}. */
export interface PlanOptions {
  /** Deletions are applied; otherwise they are planned with `kept: true`. Default false. */
  delete?: boolean;
}

/**
 * Plans one entry of a Resource List or Change List against what the Destination holds. A change `deleted`
 * plans a deletion when something is held; every other entry is compared with {@link decide}. Pure. `source` is
 * the entry's facts when the caller has read them already.
 * @example planEntry({ loc: 'http://example.com/a', md: { change: 'deleted' } }, { held: true }) // { action: 'delete', reason: 'deleted-at-source', kept: true, … }
 * @see Z39.99 §5.2, §12.1
 */
export function planEntry(entry: Entry, found: LocalLookup, options: PlanOptions = {}, source: SourceFacts = sourceFacts(entry)): PlanItem {
  const change = entry.md?.change;
  let item: PlanItem;
  if (change === 'deleted') {
    const held = found.local !== undefined || found.held === true;
    item = held ? { url: entry.loc, action: 'delete', reason: 'deleted-at-source' } : { url: entry.loc, action: 'unchanged', reason: 'absent' };
    if (held && options.delete !== true) item.kept = true;
  } else {
    const d = decide(source, found.local);
    item = { url: entry.loc, action: d.action === 'create' && found.held === true ? 'update' : d.action, reason: d.reason };
  }
  if (found.path !== undefined) item.path = found.path;
  if (change !== undefined) item.change = change;
  if (entry.md?.datetime !== undefined) item.datetime = entry.md.datetime;
  item.source = source;
  if (found.local !== undefined) item.local = found.local;
  return item;
}

/**
 * Plans a resource that is held but no longer on offer (not in any Resource List read in full): a deletion,
 * `kept` when deletions are off. Pure.
 * @example planGone('http://example.com/old', { path: 'old', held: true }, { delete: true }) // { url, path: 'old', action: 'delete', reason: 'gone' }
 * @see Z39.99 §5.2 (Baseline Synchronization: resources no longer listed)
 */
export function planGone(url: string, found: LocalLookup, options: PlanOptions = {}): PlanItem {
  const held = found.local !== undefined || found.held === true;
  const item: PlanItem = held ? { url, action: 'delete', reason: 'gone' } : { url, action: 'unchanged', reason: 'absent' };
  if (held && options.delete !== true) item.kept = true;
  if (found.path !== undefined) item.path = found.path;
  if (found.local !== undefined) item.local = found.local;
  return item;
}

/**
 * The plan as a stream: one item per entry of a Resource List or Change List, in order, compared with what
 * `lookup` finds (resources held but no longer on offer are planned with {@link planGone}). Sync applies such
 * items, a dry run reports them, audit counts them. No I/O of its own: the lookup is the only effect, and it is
 * injected. {@link planBatches} is the same plan in chunks.
 * @example
 * for await (const item of plan(entries, (url) => ({ local: held.get(url) }), { delete: true })) console.log(item.action, item.url, item.reason);
 * @see Z39.99 §5.2 (baseline, incremental, audit)
 */
export async function* plan(entries: AsyncIterable<Entry> | Iterable<Entry>, lookup: LocalLookupFn, options: PlanOptions = {}): AsyncGenerator<PlanItem> {
  for await (const entry of entries) yield await planOne(entry, lookup, options);
}

/**
 * The plan of entries that come in chunks (a document's `batches`): one array of items per chunk, so that a
 * long list costs one turn of the event loop per chunk rather than per resource (audit reads 100,000 resources
 * this way). A synchronous lookup is not awaited.
 * @example for await (const items of planBatches(doc.batches, lookup)) for (const item of items) tally(item);
 */
export async function* planBatches(batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>, lookup: LocalLookupFn, options: PlanOptions = {}): AsyncGenerator<PlanItem[]> {
  for await (const batch of batches) {
    const items: PlanItem[] = [];
    for (const entry of batch) {
      const item = planOne(entry, lookup, options);
      items.push(item instanceof Promise ? await item : item);
    }
    yield items;
  }
}

function planOne(entry: Entry, lookup: LocalLookupFn, options: PlanOptions): PlanItem | Promise<PlanItem> {
  const source = sourceFacts(entry);
  const found = lookup(entry.loc, entry.md?.change === 'deleted' ? undefined : source);
  return found instanceof Promise ? found.then((f) => planEntry(entry, f, options, source)) : planEntry(entry, found, options, source);
}

/**
 * A plan in figures, whose size does not grow with the number of resources: the count of each action and of
 * each reason, and the first items that change something. A dry run and an audit report their plan this way;
 * every item goes to `onPlan` as it is decided.
 * @example { counts: { create: 1, update: 0, delete: 0, unchanged: 41 }, reasons: { missing: 1, same: 41 }, items: [{ url, action: 'create', reason: 'missing', … }] }
 */
export interface PlanSummary {
  counts: Record<PlanAction, number>;
  reasons: Partial<Record<PlanReason, number>>;
  /** Items whose action is not `unchanged`, in the order planned; at most {@link PLAN_ITEMS_LISTED}. */
  items: PlanItem[];
}

/** Most items a {@link PlanSummary} lists. */
export const PLAN_ITEMS_LISTED = 1000;

/** The summary of a plan with no item yet. */
export function emptyPlanSummary(): PlanSummary {
  return { counts: { create: 0, update: 0, delete: 0, unchanged: 0 }, reasons: {}, items: [] };
}

/**
 * Counts one item into a plan's summary (listed when it changes something and the list is not full).
 * @example const s = emptyPlanSummary(); countPlanItem(s, { url, action: 'create', reason: 'missing' }); s.counts.create // 1
 */
export function countPlanItem(summary: PlanSummary, item: PlanItem): void {
  summary.counts[item.action]++;
  summary.reasons[item.reason] = (summary.reasons[item.reason] ?? 0) + 1;
  if (item.action !== 'unchanged' && summary.items.length < PLAN_ITEMS_LISTED) summary.items.push(item);
}

/** Reads the facts of a Resource List / Change List entry. */
export function sourceFacts(entry: Entry): SourceFacts {
  // base64 digests (tolerated by lenient reading) are compared as the bytes they stand for
  const facts: SourceFacts = { url: entry.loc, hashes: knownHashes(entry.md?.hash) };
  const length = parseLength(entry.md?.length);
  if (length !== undefined) facts.length = length;
  if (entry.lastmod !== undefined) {
    const t = parseW3CDatetime(entry.lastmod, true);
    if (t !== undefined) facts.lastmod = t.ms;
  }
  return facts;
}

/**
 * Compares one resource as the Source describes it with the local copy. Hashes decide when both sides
 * have one of the same algorithm; then length; then `lastmod`. A Source that gives none of them cannot be
 * compared: the resource is planned as an update to be fetched conditionally.
 * @example decide({ url, hashes: [{ algorithm: 'md5', digest: 'ab…' }] }, undefined) // { action: 'create', reason: 'missing' }
 */
function decide(source: SourceFacts, local: LocalFacts | undefined): PlanDecision {
  if (local === undefined) return { action: 'create', reason: 'missing' };
  if (source.length !== undefined && source.length !== local.length) return { action: 'update', reason: 'length' };
  let compared = source.length !== undefined;
  for (const h of source.hashes) {
    const mine = local.hashes[h.algorithm];
    if (mine === undefined) continue;
    if (mine !== h.digest.toLowerCase()) return { action: 'update', reason: 'hash' };
    compared = true;
  }
  if (source.hashes.some((h) => local.hashes[h.algorithm] !== undefined)) return { action: 'unchanged', reason: 'same' };
  if (source.lastmod !== undefined && local.lastmod !== undefined) {
    return source.lastmod > local.lastmod ? { action: 'update', reason: 'lastmod' } : { action: 'unchanged', reason: 'same' };
  }
  return compared ? { action: 'unchanged', reason: 'same' } : { action: 'update', reason: 'unverifiable' };
}

/** The change time of a Change List entry: `rs:md datetime` (1.1) or else `lastmod` (1.0), in ms. @see Z39.99 §12.1 */
export function changeTime(entry: Entry): number | undefined {
  const v = entry.md?.datetime ?? entry.lastmod;
  return v === undefined ? undefined : parseW3CDatetime(v, true)?.ms;
}

/**
 * Orders the changes of a Change List: forward chronological order is required (§12.1) but a list in reverse
 * or mixed order is tolerated: it is sorted (stably) and `sorted` says so. Entries without a readable change
 * time keep their place relative to their neighbours' order in the document.
 */
export function orderChanges(entries: Entry[]): { entries: Entry[]; sorted: boolean } {
  let ordered = true;
  let prev = -Infinity;
  const times = entries.map((e) => changeTime(e));
  for (const t of times) {
    if (t === undefined) continue;
    if (t < prev) {
      ordered = false;
      break;
    }
    prev = t;
  }
  if (ordered) return { entries, sorted: false };
  const idx = entries.map((_, i) => i);
  idx.sort((a, b) => (times[a] ?? -Infinity) - (times[b] ?? -Infinity) || a - b);
  return { entries: idx.map((i) => entries[i]!), sorted: true };
}

/**
 * Keeps only the last change of each resource (the later change wins), in order of those last changes.
 * @see Z39.99 §12.1 ("If a resource underwent multiple changes … it will be listed multiple times")
 */
export function lastChangePerResource<T extends { loc: string }>(changes: Iterable<T>): T[] {
  const m = new Map<string, T>();
  for (const c of changes) {
    m.delete(c.loc);
    m.set(c.loc, c);
  }
  return [...m.values()];
}
