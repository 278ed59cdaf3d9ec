import { mkdirSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import type { Entry, ResourceSyncDocument } from '../core/model/types.js';
import { createAuthority, originOf, type Authority } from './authority.js';
import { loadDocument, resolveLoc, type DocumentContext, type RemoteDocument } from './documents.js';
import { Engine, runPool, type SyncFailure, type SyncProgress } from './engine.js';
import { baseline } from './baseline.js';
import { incremental } from './incremental.js';
import { createHttpClient } from './http-client.js';
import type { HttpGet } from './http.js';
import { createMapper, type Mapping } from './mapper.js';
import { StateStore, acquireLock, type SyncLock } from './state-store.js';
import { cleanTemp } from './verified-write.js';

export type { SyncProgress, SyncFailure } from './engine.js';

/** Options of {@link sync}. */
export interface SyncOptions {
  /** Where to start: a Capability List, Resource List (Index), Change List (Index) or Source Description URL. */
  source: string;
  /** The destination directory (created if needed). */
  dest: string;
  /** Apply deletions (otherwise they are only reported). Default false. */
  delete?: boolean;
  /** Resources fetched at once. Default 16. */
  concurrency?: number;
  /** Plan only: nothing is fetched but documents, nothing is written, state included. */
  dryRun?: boolean;
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
  /** HTTP retries on 5xx/429/network errors. Default 3. */
  retries?: number;
  /** Extra attempts after a failed verification or a broken body. Default 2. */
  verifyRetries?: number;
  /** fsync each file before renaming it into place. Default true. */
  fsync?: boolean;
  /** Authorization header values per origin (see `createHttpClient`). */
  auth?: Record<string, string>;
}

/** The outcome of a sync. */
export interface SyncReport {
  /** 'baseline' when any capability set was (re)built from a Resource List, else 'incremental'. */
  mode: 'baseline' | 'incremental';
  source: string;
  dest: string;
  dryRun: boolean;
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  failed: SyncFailure[];
  /** Deletions reported but not applied (no `delete` option); at most 1,000 listed. */
  deletionsSkipped: string[];
  deletionsSkippedCount: number;
  bytes: number;
  warnings: string[];
  /** Capability sets processed, with what was done for each. */
  sets: { key: string; mode: 'baseline' | 'incremental'; documents: string[] }[];
  durationMs: number;
}

/** The documents of one capability set, as found from the starting URL. */
export interface CapabilitySet {
  /** Identifies the set in the state (the Capability List URL, or the list given directly). */
  key: string;
  resourceList?: string;
  changeList?: string;
  resourceDump?: string;
  changeDump?: string;
}

const CAPS: Record<string, keyof Omit<CapabilitySet, 'key'>> = {
  resourcelist: 'resourceList',
  changelist: 'changeList',
  resourcedump: 'resourceDump',
  changedump: 'changeDump',
};

function setFromCapabilityList(url: string, doc: ResourceSyncDocument): CapabilitySet {
  const set: CapabilitySet = { key: url };
  for (const e of doc.entries) {
    const field = CAPS[e.md?.capability ?? ''];
    if (field !== undefined && set[field] === undefined) set[field] = resolveLoc(e.loc, url);
  }
  return set;
}

/**
 * Finds the capability sets from a starting document given directly: a Source Description, a Capability
 * List, a Resource List (Index) or a Change List (Index).
 * @see Z39.99 §6.2 (navigation), §8, §9
 */
export async function resolveSets(ctx: DocumentContext, url: string, only?: string): Promise<{ sets: CapabilitySet[]; warnings: string[] }> {
  const warnings: string[] = [];
  const doc = await loadDocument(ctx, url);
  switch (doc.kind?.id) {
    case 'capability-list':
      return { sets: [setFromCapabilityList(url, doc)], warnings };
    case 'source-description': {
      const sets: CapabilitySet[] = [];
      for (const e of doc.entries) {
        const capUrl = resolveLoc(e.loc, doc.finalUrl);
        if (only !== undefined && capUrl !== only) continue;
        try {
          const cap = await loadDocument(ctx, capUrl);
          if (cap.kind?.id === 'capability-list') sets.push(setFromCapabilityList(capUrl, cap));
          else warnings.push(`Source Description '${url}' lists '${capUrl}', which is not a Capability List; skipped.`);
        } catch (err) {
          if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
          warnings.push(`Capability List '${capUrl}' could not be read: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      if (only !== undefined && sets.length === 0) {
        throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Source Description '${url}' does not list Capability List '${only}'.`, { data: { url, only } });
      }
      return { sets, warnings };
    }
    case 'resource-list':
    case 'resource-list-index':
      return { sets: [{ key: url, resourceList: url }], warnings };
    case 'change-list':
    case 'change-list-index':
      return { sets: [{ key: url, changeList: url }], warnings };
    default:
      throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${url}' is not a starting point for a sync (${doc.kind?.name ?? 'unknown kind'}).`, { data: { url } });
  }
}

async function isEmptyDir(dir: string): Promise<boolean> {
  try {
    const names = await readdir(dir);
    return names.every((n) => n === '.resourcesync');
  } catch {
    return true;
  }
}

/**
 * Synchronizes a destination directory with a Source: a baseline from the Resource List when the destination
 * has no state for a capability set (or when changes were missed), incremental from the Change List afterwards.
 * Every resource is verified (length, hashes) while it streams to a temporary file and renamed into place;
 * the state (SQLite) records what is held and where incremental sync stands; a lock keeps a second sync out.
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
  const sourceOrigin = originOf(options.source);
  if (sourceOrigin === undefined) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Source '${options.source}' is not an http(s) URL.`, { data: { source: options.source } });
  }
  const origins = [sourceOrigin, ...(options.allowOrigins ?? [])];
  for (const m of options.maps ?? []) {
    const o = originOf(m.url);
    if (o !== undefined) origins.push(o);
  }
  const authority: Authority = createAuthority({ origins });
  const concurrency = options.concurrency ?? 16;
  const ownHttp =
    options.http === undefined
      ? createHttpClient({
          authority,
          concurrency,
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          ...(options.retries !== undefined ? { retries: options.retries } : {}),
          ...(options.signal !== undefined ? { signal: options.signal } : {}),
          ...(options.auth !== undefined ? { auth: options.auth } : {}),
        })
      : undefined;
  const http: HttpGet = options.http ?? ownHttp!;
  const mapper = createMapper({ base: options.base ?? `${sourceOrigin}/`, ...(options.maps ? { maps: options.maps } : {}) });

  let lock: SyncLock | undefined;
  let store: StateStore | undefined;
  try {
    if (!dryRun) {
      mkdirSync(dest, { recursive: true });
      lock = acquireLock(dest);
      await cleanTemp(dest);
    }
    store = StateStore.open(dest, { readonly: dryRun });
    const fresh = store.count() === 0 && (await isEmptyDir(dest));
    const pendingUrls = new Set<string>();
    const engine = new Engine({
      dest,
      http,
      authority,
      mapper,
      store,
      dryRun,
      applyDeletes: options.delete ?? false,
      fsync: options.fsync ?? true,
      verifyRetries: options.verifyRetries ?? 2,
      adopt: !fresh,
      fresh,
      hasPending: (u) => pendingUrls.has(u),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    });
    const ctx: DocumentContext = { http, authority, ...(options.signal ? { signal: options.signal } : {}) };
    engine.phase('discover');
    const { sets, warnings } = await resolveSets(ctx, options.source, options.capabilityList);
    for (const w of warnings) engine.warn(w);

    const report: SyncReport = {
      mode: 'incremental',
      source: options.source,
      dest,
      dryRun,
      created: 0,
      updated: 0,
      deleted: 0,
      unchanged: 0,
      failed: [],
      deletionsSkipped: [],
      deletionsSkippedCount: 0,
      bytes: 0,
      warnings: [],
      sets: [],
      durationMs: 0,
    };
    const st = store;
    const seenAll = new Set<string>();
    let baselineComplete = true;
    let anyBaseline = false;
    const onDocument = (doc: RemoteDocument): AsyncIterable<Entry> => doc.entries;

    for (const set of sets) {
      engine.setKey = set.key;
      const pendingBefore = st.pending(set.key);
      pendingUrls.clear();
      for (const e of pendingBefore) pendingUrls.add(e.loc);
      const metaKey = `baseline:${set.key}`;
      const baselineAt = st.getMeta(metaKey);
      const cursor = st.getCursor(set.key);
      let mode: 'baseline' | 'incremental' | undefined;
      const documents: string[] = [];
      if (baselineAt !== undefined && set.changeList !== undefined) {
        const inc = await incremental(
          {
            ...ctx,
            engine,
            concurrency,
            cursor: cursor ?? { datetime: baselineAt },
            ...(dryRun ? {} : { saveCursor: (c) => st.setCursor(set.key, c) }),
          },
          set.changeList,
        );
        if (inc.gap === undefined) {
          mode = 'incremental';
          documents.push(set.changeList, ...inc.processed.filter((u) => u !== set.changeList));
          // resources that failed in earlier runs and that no change mentioned since: try them again
          engine.flush();
          const still = dryRun ? pendingBefore : st.pending(set.key).filter((e) => pendingUrls.has(e.loc));
          if (still.length > 0) {
            engine.phase('incremental', still.length, 'resources that failed before');
            await runPool(still, concurrency, (e) => engine.apply(e));
            engine.flush();
          }
        } else {
          engine.warn(`${inc.gap} Falling back to a baseline.`);
        }
      }
      if (mode === undefined && set.resourceList !== undefined) {
        if (!dryRun) st.clearPending(set.key);
        const b = await baseline({ ...ctx, engine, concurrency, onDocument }, set.resourceList);
        mode = 'baseline';
        anyBaseline = true;
        documents.push(...b.documents);
        for (const u of b.seen) seenAll.add(u);
        if (!b.complete) baselineComplete = false;
        if (!dryRun) {
          engine.flush();
          const at = b.at ?? new Date(started).toISOString();
          st.setMeta(metaKey, at);
          st.setCursor(set.key, { datetime: at });
        }
      }
      if (mode === undefined && set.changeList !== undefined) {
        engine.warn(`Capability set '${set.key}' offers no Resource List: every change on offer is applied.`);
        const inc = await incremental({ ...ctx, engine, concurrency, cursor, ...(dryRun ? {} : { saveCursor: (c) => st.setCursor(set.key, c) }) }, set.changeList);
        mode = 'incremental';
        documents.push(set.changeList, ...inc.processed.filter((u) => u !== set.changeList));
      }
      if (mode === undefined) {
        engine.warn(`Capability set '${set.key}' offers neither a Resource List nor a Change List; nothing to do.`);
        continue;
      }
      report.sets.push({ key: set.key, mode, documents });
    }

    // Resources held but no longer in any Resource List read in full: deletions (§5.2).
    if (anyBaseline) {
      if (!baselineComplete) {
        engine.warn('A Resource List could not be read in full: no deletions were inferred.');
      } else if (report.sets.every((s) => s.mode === 'baseline')) {
        const gone: string[] = [];
        for (const u of st.urls()) if (!seenAll.has(u)) gone.push(u);
        engine.phase('baseline', gone.length);
        await runPool(gone, concurrency, (u) => engine.remove(u));
      }
    }
    engine.flush();
    if (!dryRun) await rm(`${dest}/.resourcesync/tmp`, { recursive: true, force: true });
    const c = engine.counts;
    engine.progress(true);
    Object.assign(report, {
      mode: anyBaseline ? 'baseline' : 'incremental',
      created: c.created,
      updated: c.updated,
      deleted: c.deleted,
      unchanged: c.unchanged,
      failed: c.failed,
      deletionsSkipped: c.deletionsSkipped,
      deletionsSkippedCount: c.deletionsSkippedCount,
      bytes: c.bytes,
      warnings: c.warnings,
      durationMs: Date.now() - started,
    });
    return report;
  } finally {
    store?.close();
    lock?.release();
    await ownHttp?.close();
  }
}
