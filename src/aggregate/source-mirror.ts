/**
 * One Source of an aggregate on disk, and one sync of it: its folder `<out>/sources/<id>/` holds the mirror
 * (`mirror/`, with the Destination state in `mirror/.resourcesync/`), the state of each chosen capability set when
 * the configuration names some (`sets/<n>/`), and the aggregate's snapshots of it (`source.sqlite`), so that a
 * Source can be re-baselined or removed alone.
 * @see Z39.99 §14.8 (the `via` link to the original)
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { formatHashes } from '../core/hash.js';
import type { Entry, Ln } from '../core/model/types.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { originOf } from '../client/authority.js';
import type { Pace } from '../client/origin-pace.js';
import { createMapper } from '../destination/mapper.js';
import { openSqliteDestinationState, openSqliteDestinationStateSync } from '../destination/sqlite-state.js';
import type { PlanItem } from '../destination/plan.js';
import type { DestinationState, ResourceRecord } from '../destination/state.js';
import { sync, type SyncOptions, type SyncReport } from '../destination/sync.js';
import type { SyncCounts } from '../destination/sync-counts.js';
import type { AggregateSource, SourceCredentials } from './config.js';
import type { AggregateStateEngine } from './engines.js';
import type { MirrorStorage } from '../destination/mirror-storage.js';
import { ViaRecords, type ViaRecordsOptions } from './via-records.js';

/** The folder of a Source in the aggregate. */
function sourceDir(out: string, id: string): string {
  return join(out, 'sources', id);
}

/** The mirror of a Source in the aggregate. */
export function mirrorDir(out: string, id: string): string {
  return join(sourceDir(out, id), 'mirror');
}

/** Folders holding a Destination state for the Source: the mirror's own, or one per chosen capability set. */
export function stateDirs(out: string, source: Pick<AggregateSource, 'id' | 'capabilitySets'>): string[] {
  const sets = source.capabilitySets;
  return sets === undefined ? [mirrorDir(out, source.id)] : sets.map((_, i) => join(sourceDir(out, source.id), 'sets', String(i)));
}

/** The capability sets of a Source with a state each: one, undefined, without `capability-sets`. */
function setIndexes(source: Pick<AggregateSource, 'capabilitySets'>): (number | undefined)[] {
  return source.capabilitySets === undefined ? [undefined] : source.capabilitySets.map((_, i) => i);
}

/** What one sync of a Source did, all its capability sets together. */
export interface SourceSyncResult {
  mode: SyncReport['mode'];
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  failed: number;
  /** The first resources that failed, with their codes. */
  failures: { url: string; code: string }[];
  /** Resources held after the sync. */
  resources: number;
  durationMs: number;
  /**
   * The mirror's paths the sync created, updated or deleted, in the order it applied them (its plan's order: the
   * Source's Change List order for an incremental sync; a path changed twice comes twice); undefined past
   * {@link MAX_APPLIED} paths. A dump's bitstreams are not in it: the publication records those by path.
   */
  applied?: string[];
}

/** Most paths of one sync kept in the order applied; past it the publication records the changes in path order. */
export const MAX_APPLIED = 100_000;

/**
 * Hears a sync's plan items (`onPlan`) and keeps the paths changed, in the order applied: a Resource List's (or a
 * deletion of what no list offers) as heard, then a Change List's or a Change Notification's in the order of their
 * `datetime`s (forward chronological order, §12.1), as the sync takes them; items heard at once (resources are
 * fetched a few at a time) keep the order of their changes, not of their lookups.
 * @see Z39.99 §12.1
 */
export function appliedOrder(): { onPlan: (item: PlanItem) => void; take: () => string[] | undefined } {
  let heard: { path: string; t: number; n: number }[] | undefined = [];
  return {
    onPlan: (item) => {
      if (heard === undefined || item.path === undefined || item.action === 'unchanged' || item.kept === true) return;
      if (heard.length >= MAX_APPLIED) heard = undefined;
      else heard.push({ path: item.path, t: (item.datetime === undefined ? undefined : parseW3CDatetime(item.datetime, true)?.ms) ?? -Infinity, n: heard.length });
    },
    take: () => {
      const taken = heard;
      heard = [];
      return taken?.sort((a, b) => a.t - b.t || a.n - b.n).map((h) => h.path);
    },
  };
}

/** The `Authorization` value for a Source's credentials, read from `env`. */
function authorizationFor(credentials: SourceCredentials, env: Record<string, string | undefined>): string {
  const value = env[credentials.env];
  if (value === undefined || value === '') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Environment variable ${credentials.env} (credentials) is not set.`, { data: { env: credentials.env } });
  }
  if (credentials.scheme === 'bearer') return `Bearer ${value}`;
  if (credentials.scheme === 'basic') return `Basic ${Buffer.from(value, 'utf8').toString('base64')}`;
  return value;
}

/** How the aggregator reaches its Sources. */
export interface SourceSyncOptions {
  signal: AbortSignal;
  /** Environment the credentials are read from. */
  env: Record<string, string | undefined>;
  /** Resources fetched at once from one Source. */
  concurrency?: number;
  /** HTTP timeout, ms. */
  timeoutMs?: number;
  /** The pace shared by every Source on an origin (`origin-rate`), if any. */
  originPace?: (origin: string) => Pace | undefined;
  /** Where the Destination states are (PostgreSQL); default SQLite in the mirror (or in `sets/<n>/`). */
  engine?: AggregateStateEngine;
  /** Where the copies of a Source go when not in its mirror folder (a bucket); the caller of the factory closes it. */
  storageFor?: (id: string) => MirrorStorage & { close(): void };
}

/**
 * Syncs a Source into its mirror (deletions applied), each chosen capability set with its own state.
 * @throws what `sync` throws (the Source is down, answers garbage, …)
 */
export async function syncSource(out: string, source: AggregateSource, options: SourceSyncOptions): Promise<SourceSyncResult> {
  const started = performance.now();
  const dirs = stateDirs(out, source);
  const total = emptyResult();
  const order = appliedOrder();
  const engine = options.engine;
  const storage = options.storageFor?.(source.id);
  try {
    for (const [i, dir] of dirs.entries()) {
      const set = source.capabilitySets === undefined ? undefined : i;
      const state = engine !== undefined ? await engine.openState(source, set, { readonly: false }) : set === undefined ? undefined : await openSqliteDestinationState(dir);
      try {
        const report = await sync({
          ...sourceSyncOptions(out, source, options),
          onPlan: order.onPlan,
          ...(storage === undefined ? {} : { storage }),
          ...(source.capabilitySets === undefined ? {} : { capabilityList: source.capabilitySets[i]! }),
          ...(state === undefined ? {} : { state }),
        });
        addCounts(total, report);
      } finally {
        await state?.close();
      }
    }
  } finally {
    storage?.close();
  }
  total.resources = await countResources(out, source, engine);
  total.durationMs = Math.round(performance.now() - started);
  const applied = order.take();
  if (applied !== undefined) total.applied = applied;
  return total;
}

/**
 * How the aggregator syncs a Source into its mirror (deletions applied), without the capability set: for `sync`,
 * and for the follower of a Source followed by push.
 */
export function sourceSyncOptions(out: string, source: AggregateSource, options: SourceSyncOptions): SyncOptions {
  const origin = originOf(source.url)!;
  const auth = source.credentials === undefined ? undefined : { [origin]: authorizationFor(source.credentials, options.env) };
  return {
    source: source.url,
    dest: mirrorDir(out, source.id),
    delete: true,
    // a dump-only Source's packages are read again only when it offers a new dump (the mirror is the aggregator's own)
    skipSameDump: true,
    // and a Source without changes is read again only when its Resource List answers other than 304 Not Modified
    skipSameList: true,
    signal: options.signal,
    retries: 1,
    concurrency: options.concurrency ?? 4,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(auth === undefined ? {} : { auth }),
    ...(source.rate === undefined ? {} : { rate: source.rate }),
    ...(options.originPace === undefined ? {} : { originPace: options.originPace }),
    ...(source.urlPrefixes === undefined ? {} : { urlPrefixes: source.urlPrefixes }),
  };
}

/** A result with nothing done yet. */
export function emptyResult(): SourceSyncResult {
  return { mode: 'none', created: 0, updated: 0, deleted: 0, unchanged: 0, failed: 0, failures: [], resources: 0, durationMs: 0 };
}

/** Adds what a sync (or a batch of the follower) did to `total`. */
export function addCounts(total: SourceSyncResult, r: SyncCounts & { mode: SourceSyncResult['mode'] | 'notification' }): void {
  total.mode = total.mode === 'baseline' || r.mode === 'baseline' ? 'baseline' : r.mode === 'incremental' || r.mode === 'notification' ? 'incremental' : total.mode;
  total.created += r.created;
  total.updated += r.updated;
  total.deleted += r.deleted;
  total.unchanged += r.unchanged;
  total.failed += r.failed.length;
  for (const f of r.failed.slice(0, 10 - total.failures.length)) total.failures.push({ url: f.url, code: f.code });
}

/** Resources held in the Source's state(s). */
export async function countResources(out: string, source: AggregateSource, engine?: AggregateStateEngine): Promise<number> {
  let n = 0;
  if (engine !== undefined) {
    for (const set of setIndexes(source)) {
      const state = await engine.openState(source, set, { readonly: true });
      try {
        n += await state.count();
      } finally {
        await state.close();
      }
    }
    return n;
  }
  for (const dir of stateDirs(out, source)) {
    if (!existsSync(join(dir, '.resourcesync', 'state.sqlite'))) continue;
    const state = await openSqliteDestinationState(dir, { readonly: true });
    try {
      n += await state.count();
    } finally {
      await state.close();
    }
  }
  return n;
}

/**
 * The `via` links of a Source's copies, read from its Destination state(s) while the aggregate is published: for
 * the copy at a path of the mirror, the original's URL with the original's `modified`, `hash`, `length` and `type`.
 * A copy whose Source gave a `via` keeps that one (a chain conveys the origin, not the intermediary).
 * `type` is the type the Source listed for the original (kept in the state; for a record kept before types were,
 * the type listed for the copy). A Change List entry whose bytes are no longer those held (a later change) gets the `href` alone.
 * The states are opened at the first link asked for and closed by `release` (opened again when asked again), so
 * that a publication of many Sources holds the states of the set it is writing only, not of every Source at once.
 * @see Z39.99 §14.8
 */
export interface ViaLinks {
  links(path: string, entry: Entry): Ln[] | undefined;
  /** Closes the states until the next link asked for. */
  release(): void;
  close(): Promise<void>;
}

/**
 * The {@link ViaLinks} of a Source: its SQLite states opened read-only on demand; states in `engine` (PostgreSQL),
 * which answer with promises, read whole first, a page at a time (the links are asked synchronously).
 */
export async function openViaLinks(out: string, source: Pick<AggregateSource, 'id' | 'url' | 'capabilitySets'>, engine?: AggregateStateEngine, spill: ViaRecordsOptions = {}): Promise<ViaLinks> {
  let states: DestinationState[] | undefined;
  const open = (): DestinationState[] => {
    if (engine !== undefined) return [];
    states ??= stateDirs(out, source)
      .filter((dir) => existsSync(join(dir, '.resourcesync', 'state.sqlite')))
      .map((dir) => openSqliteDestinationStateSync(dir, { readonly: true }));
    return states;
  };
  const release = (): void => {
    for (const s of states ?? []) void s.close();
    states = undefined;
  };
  const loaded = engine === undefined ? undefined : await loadRecords(source, engine, spill);
  const mapper = createMapper({ base: `${originOf(source.url)!}/` });
  const record = (url: string): ResourceRecord | undefined => {
    if (loaded !== undefined) return loaded.get(url);
    for (const s of open()) {
      const r = s.get(url);
      if (r !== undefined && !(r instanceof Promise)) return r;
    }
    return undefined;
  };
  return Promise.resolve({
    links: (path, entry) => {
      const url = mapper.toUrl(path);
      if (url === undefined) return undefined;
      const r = record(url);
      const kept = r?.links?.filter((l) => l.rel === 'via');
      if (kept !== undefined && kept.length > 0) return kept.map((l) => ({ ...l }));
      const md = entry.md ?? {};
      const hash = r === undefined ? '' : formatHashes(r.hashes);
      if (r === undefined || md.change === 'deleted' || (md.hash !== undefined && !sameHashes(md.hash, hash))) return [{ rel: 'via', href: url }];
      const ln: Ln = { rel: 'via', href: r.url };
      if (r.lastmod !== undefined) ln.modified = r.lastmod;
      if (hash !== '') ln.hash = hash;
      ln.length = String(r.length);
      // the type the Source listed for the original; a record kept before types were kept: the copy's
      const type = r.type ?? md.type;
      if (type !== undefined) ln.type = type;
      return [ln];
    },
    release,
    close: () => {
      release();
      loaded?.close();
      return Promise.resolve();
    },
  });
}

/**
 * The records of every state of a Source, by URL, with what a `via` link needs: bounded in memory, the rest in a
 * temporary file ({@link ViaRecords}).
 */
async function loadRecords(source: Pick<AggregateSource, 'id' | 'capabilitySets'>, engine: AggregateStateEngine, options: ViaRecordsOptions): Promise<ViaRecords> {
  const byUrl = new ViaRecords(options);
  try {
    for (const set of setIndexes(source)) {
      const state = await engine.openState(source, set, { readonly: true });
      try {
        for await (const r of state.records()) {
          const { etag: _etag, links, ...kept } = r;
          const via = links?.filter((l) => l.rel === 'via');
          byUrl.add(via === undefined || via.length === 0 ? kept : { ...kept, links: via });
        }
      } finally {
        await state.close();
      }
    }
  } catch (error) {
    byUrl.close();
    throw error;
  }
  return byUrl;
}

/** True when two `hash` attribute values share an algorithm and agree on every shared one. */
function sameHashes(a: string, b: string): boolean {
  const parse = (v: string): Map<string, string> => new Map(v.split(/\s+/).filter((t) => t.includes(':')).map((t) => [t.slice(0, t.indexOf(':')), t.slice(t.indexOf(':') + 1)]));
  const x = parse(a);
  const y = parse(b);
  let shared = 0;
  for (const [alg, d] of x) {
    const e = y.get(alg);
    if (e === undefined) continue;
    if (e !== d) return false;
    shared++;
  }
  return shared > 0;
}
