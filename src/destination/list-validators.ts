/**
 * Conditional requests for a capability set that offers no changes (no Change List, no Change Dump), with
 * `skipSameList`: the validators (`ETag`, else `Last-Modified`) of its Resource List (and of a Resource List Index's
 * parts) are remembered in the Destination state's meta once a baseline from them is settled; the next run asks for
 * them again conditionally (`If-None-Match`, else `If-Modified-Since`), and when every one answers 304 the set is in
 * step without reading the list. A document that came without a validator is never asked for conditionally: a 304
 * is trusted only for what was stored.
 * @see RFC 9110 §13.1.1, §13.1.3 (conditional requests); Z39.99 §5.2 (baseline), §10.1, §10.2
 */
import type { HttpGet, HttpResponse } from '../client/http.js';
import type { CapabilitySet } from './capability-sets.js';
import type { SetRun, SyncRun } from './sync-run.js';

/** What a document's answer said of its version. */
interface Validators {
  url: string;
  etag?: string;
  lastModified?: string;
}

/** At most this many documents (an index and its parts) remembered for one set; a larger index is read each run. */
const MAX_REMEMBERED = 1000;

/** The runs that may skip a set (the option on, one capability set: another set's baseline infers no deletions then). */
const allowed = new WeakSet<SyncRun>();
/** The validators seen by each run's baselines, by set key, stored once the run is settled. */
const seenByRun = new WeakMap<SyncRun, Map<string, Validators[] | undefined>>();

const metaKey = (set: CapabilitySet): string => `list-validators:${set.key}`;

/** Called once the sets are known: the run may skip an unchanged list only with `skipSameList` and a single set. */
export function allowListSkip(run: SyncRun, sets: number): void {
  if (run.options.skipSameList === true && !run.dryRun && sets === 1) allowed.add(run);
}

/** The remembered validators of the set's lists, or undefined (none, or one without a validator). */
async function remembered(run: SyncRun, set: CapabilitySet): Promise<Validators[] | undefined> {
  const raw = await run.state.getMeta(metaKey(set));
  if (raw === undefined) return undefined;
  try {
    const v = JSON.parse(raw) as Validators[];
    return Array.isArray(v) && v.length > 0 && v.every((d) => typeof d.url === 'string' && (typeof d.etag === 'string' || typeof d.lastModified === 'string')) ? v : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when the set's Resource List (and each part of its index) answers 304 to a conditional request with the
 * validators remembered: nothing changed since the last baseline, which stays (mode incremental). Stops at the first
 * other answer (its body thrown away). Only for a set that offers no changes, with a baseline and nothing pending.
 */
export async function listUnchanged(run: SyncRun, setRun: SetRun): Promise<boolean> {
  const { set } = setRun;
  if (!allowed.has(run) || set.resourceList === undefined || set.changeList !== undefined || setRun.dumpChanges) return false;
  if (setRun.baselineAt === undefined || setRun.pendingBefore.length > 0) return false;
  const docs = await remembered(run, set);
  if (docs === undefined || docs[0]!.url !== set.resourceList) return false;
  const { http, authority, signal } = run.context;
  for (const d of docs) {
    authority.check(d.url);
    const headers: Record<string, string> = d.etag !== undefined ? { 'if-none-match': d.etag } : { 'if-modified-since': d.lastModified! };
    const res = await http(d.url, { headers, ...(signal === undefined ? {} : { signal }) });
    await res.discard();
    if (res.status !== 304) return false;
  }
  setRun.mode = 'incremental';
  setRun.documents.push(...docs.map((d) => d.url));
  return true;
}

/**
 * The HTTP client a baseline of the set reads its lists with: it notes each document's validators (in the order
 * read) for {@link storeListValidators}; any document without one makes the set unremembered. The validators stored
 * before are forgotten now, so that a baseline cut short leaves none.
 */
export async function noteListValidators(run: SyncRun, set: CapabilitySet, http: HttpGet): Promise<HttpGet> {
  if (!allowed.has(run)) return http;
  await run.state.setMeta(metaKey(set), undefined);
  const byRun = seenByRun.get(run) ?? new Map<string, Validators[] | undefined>();
  seenByRun.set(run, byRun);
  const seen: Validators[] = [];
  byRun.set(set.key, seen);
  return async (url, init) => {
    const res: HttpResponse = await http(url, init);
    const etag = res.headers['etag'];
    const lastModified = res.headers['last-modified'];
    if (res.status !== 200 || byRun.get(set.key) === undefined) return res;
    if ((etag === undefined && lastModified === undefined) || seen.length >= MAX_REMEMBERED) byRun.set(set.key, undefined);
    else seen.push({ url, ...(etag === undefined ? {} : { etag }), ...(lastModified === undefined ? {} : { lastModified }) });
    return res;
  };
}

/** Stores the validators of the run's baselines, once it is settled; only when the baseline was complete. */
export async function storeListValidators(run: SyncRun): Promise<void> {
  const byRun = seenByRun.get(run);
  if (byRun === undefined || !run.baselineComplete) return;
  for (const [key, docs] of byRun) {
    if (docs !== undefined && docs.length > 0) await run.state.setMeta(`list-validators:${key}`, JSON.stringify(docs));
  }
}
