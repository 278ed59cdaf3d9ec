import { resolve } from 'node:path';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import type { HashAlgorithm } from '../core/constants.js';
import { isKnownHashAlgorithm } from '../core/hash.js';
import { documentKindById, isPartOf } from '../core/model/document-kinds.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { loadDocument, openDocument, resolveLoc, type DocumentContext, type RemoteDocument } from './documents.js';
import type { Mapper } from './mapper.js';
import { connect, type ConnectionOptions } from './connection.js';
import type { MirrorTarget } from './sync-options.js';
import { changeTime, countPlanItem, emptyPlanSummary, orderChanges, planBatches, planGone, type LocalFacts, type LocalLookup, type PlanItem, type PlanSummary, type SourceFacts } from './plan.js';
import type { Entry } from '../core/model/types.js';
import { requireFolderOrNothing } from '../node/folder.js';
import { SpillingSet } from '../node/spilling-set.js';
import { openSqliteDestinationState } from './sqlite-state.js';
import type { DestinationState } from './state.js';
import { resolveSets, type CapabilitySet } from './capability-sets.js';
import { note, type DestinationNote } from './notes.js';
import { LocalDirectory, walkFiles } from './local-directory.js';
import type { MirrorStorage } from './mirror-storage.js';
import { changeDumpInventory, dumpInventory, RESOURCE_DUMP_MANIFEST } from './audit-dump.js';
import { checkUrlPrefixes, urlFilter } from './url-filter.js';

/** What the state records of `url`, as the plan's lookup (`trustState`). */
async function recorded(store: DestinationState, url: string): Promise<LocalLookup> {
  const r = await store.get(url);
  if (r === undefined) return {};
  const local: LocalFacts = { length: r.length, hashes: r.hashes };
  const t = r.lastmod === undefined ? undefined : parseW3CDatetime(r.lastmod, true);
  if (t !== undefined) local.lastmod = t.ms;
  return { path: r.path, local };
}

/** What an audit does, beyond reaching the Source and naming the mirror. */
export interface AuditBehaviour {
  /** Compare with the state store instead of reading and hashing the local files. */
  trustState?: boolean;
  /** With a Source Description (or several Capability Lists), audit only this Capability List. */
  capabilityList?: string;
  /**
   * Only the resources whose URL starts with one of these prefixes, as `sync` mirrors them: the entries outside are
   * not audited (counted in the note `outside-url-prefixes`), and a copy held outside them is extra. Default every one.
   */
  urlPrefixes?: string[];
  /** Called every few hundred resources. */
  onProgress?: (p: { checked: number }) => void;
  /**
   * The resources on offer remembered in memory (to find the extra) before they are moved to a temporary SQLite
   * file in `seenDir`, so memory stays flat whatever the number of resources. Default 262,144 (a table of 4 MB).
   */
  seenInMemory?: number;
  /** Where that temporary file is made (and removed at the end of the audit). Default the OS temporary folder. */
  seenDir?: string;
}

/** Options of {@link audit}: how to reach the Source (as for `sync`, `rate` included), the mirror, and what to do. */
export type AuditOptions = ConnectionOptions & MirrorTarget & AuditBehaviour;

/** A resource whose local copy differs. */
export interface AuditDifference {
  url: string;
  path: string;
  reason: 'length' | 'hash' | 'lastmod';
}

/** The outcome of an audit. `inSync` when nothing is missing, extra or changed and nothing failed. */
export interface AuditReport {
  inSync: boolean;
  source: string;
  dest: string;
  /** True when the state store stood in for the files (`trustState`). */
  trustedState: boolean;
  /** Resources on offer at the Source. */
  total: number;
  unchanged: number;
  /** On offer, not held locally (at most 1,000 listed; see the counts). */
  missing: { url: string; path: string }[];
  /** Held locally, not on offer: relative paths. */
  extra: string[];
  changed: AuditDifference[];
  /** Resources on offer that cannot be held (unsafe names, other origins) or documents that could not be read. */
  failed: { url: string; code: string; message: string }[];
  counts: { missing: number; extra: number; changed: number; failed: number };
  /** Resources with no hash, length or lastmod to compare: counted as unchanged when present. */
  unverifiable: number;
  /**
   * The plan a sync would carry out (with deletions on), which the figures above summarise: the count of each
   * action and of each reason, and the items that change something (at most 1,000 listed).
   */
  plan: AuditPlan;
  /** What could not be audited or was trusted, with codes (see `NOTES`). */
  warnings: DestinationNote[];
  durationMs: number;
}

/** The plan behind an audit: the count of each action and reason, and the first 1,000 items that change something. */
export type AuditPlan = PlanSummary;

const MAX_LISTED = 1000;
const RESOURCE_LIST = documentKindById('resource-list');
const CHANGE_LIST = documentKindById('change-list');

/** Every file under `dest` (relative `/` paths), the state folder aside. */
export function listFiles(dest: string): string[] {
  return [...walkFiles(dest)];
}

/** What an audit's lookup finds in the storage: the copy's size and time, or its digests for the algorithms offered. */
async function heldCopy(storage: MirrorStorage, path: string, source: SourceFacts | undefined): Promise<LocalLookup> {
  const algorithms = (source?.hashes ?? []).map((h) => h.algorithm).filter((a): a is HashAlgorithm => isKnownHashAlgorithm(a));
  if (algorithms.length === 0) {
    const st = await storage.stat(path);
    return st === undefined ? { path } : { path, local: { length: st.size, hashes: {}, lastmod: st.mtimeMs } };
  }
  // with hashes to check, the bytes decide
  const got = await storage.hash(path, algorithms);
  if (got === undefined) return { path };
  return { path, local: { length: got.length, hashes: got.hashes } }; // the hashes decide: no time needed
}

/** An empty report of an audit of `dest`. */
function emptyReport(options: AuditOptions, dest: string, trust: boolean): AuditReport {
  return {
    inSync: false,
    source: options.source,
    dest,
    trustedState: trust,
    total: 0,
    unchanged: 0,
    missing: [],
    extra: [],
    changed: [],
    failed: [],
    counts: { missing: 0, extra: 0, changed: 0, failed: 0 },
    unverifiable: 0,
    plan: emptyPlanSummary(),
    warnings: [],
    durationMs: 0,
  };
}

/**
 * One audit under way: the report it fills, what is on offer (to find the extra), and how what is held is looked up
 * (the state's records with `trustState`, else the storage's copies).
 */
class AuditRun {
  readonly report: AuditReport;
  /**
   * What is on offer, to find the extra: by URL against the state store (trustState), else by path against the
   * copies. Fingerprints, not strings, and past `seenInMemory` of them on disk (a {@link SpillingSet}, closed by
   * {@link close}): memory stays flat whatever the number of resources.
   */
  readonly onOffer: SpillingSet;
  readonly #options: AuditOptions;
  readonly #trust: boolean;
  readonly #store: DestinationState;
  readonly #storage: MirrorStorage;
  readonly #mapper: Mapper;
  readonly #authority: { check(url: string): void };
  readonly #include: ((url: string) => boolean) | undefined;
  /** Entries outside the URL prefixes, not audited. */
  outside = 0;
  #checked = 0;

  constructor(options: AuditOptions, parts: { dest: string; store: DestinationState; storage: MirrorStorage; mapper: Mapper; authority: { check(url: string): void } }) {
    this.#options = options;
    this.onOffer = new SpillingSet({
      ...(options.seenInMemory !== undefined ? { inMemory: options.seenInMemory } : {}),
      ...(options.seenDir !== undefined ? { dir: options.seenDir } : {}),
    });
    this.#trust = options.trustState ?? false;
    this.#store = parts.store;
    this.#storage = parts.storage;
    this.#mapper = parts.mapper;
    this.#authority = parts.authority;
    this.#include = urlFilter(options.urlPrefixes);
    this.report = emptyReport(options, parts.dest, this.#trust);
  }

  /** Counts a failure (an unreadable document, a resource that cannot be held). */
  failed(failure: { url: string; code: string; message: string }): void {
    this.report.counts.failed++;
    if (this.report.failed.length < MAX_LISTED) this.report.failed.push(failure);
  }

  /** True for an entry that can be held here; the others (unsafe names, other origins) are failures, not planned. */
  readonly holdable = (e: Entry): boolean => {
    if (this.#include?.(e.loc) === false) {
      this.outside++;
      return false;
    }
    try {
      this.#authority.check(e.loc);
      this.onOffer.add(this.#trust ? e.loc : this.#mapper.toPath(e.loc));
      return true;
    } catch (err) {
      if (e.md?.change === 'deleted') return false; // a deletion of what cannot be held here: nothing to audit
      this.report.total++;
      this.failed({ url: e.loc, code: isResourceSyncError(err) ? err.code : 'RS_IO', message: messageOf(err) });
      return false;
    }
  };

  /** What is held: the state's record (trustState), else the copy, read and hashed for the algorithms the Source offers. */
  readonly #lookup = (url: string, source: SourceFacts | undefined): LocalLookup | Promise<LocalLookup> => {
    if (this.#trust) return recorded(this.#store, url);
    return heldCopy(this.#storage, this.#mapper.toPath(url), source);
  };

  /** Plans the entries (with deletions on) and counts each item. */
  async audited(batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>): Promise<void> {
    for await (const items of planBatches(batches, this.#lookup, { delete: true })) for (const item of items) this.count(item);
  }

  /** Counts one plan item into the report. */
  count(item: PlanItem): void {
    const report = this.report;
    countPlanItem(report.plan, item);
    const path = item.path ?? '';
    switch (item.reason) {
      case 'missing':
        report.counts.missing++;
        if (report.missing.length < MAX_LISTED) report.missing.push({ url: item.url, path });
        break;
      case 'hash':
      case 'length':
      case 'lastmod':
        report.counts.changed++;
        if (report.changed.length < MAX_LISTED) report.changed.push({ url: item.url, path, reason: item.reason });
        break;
      case 'unverifiable':
        report.unverifiable++;
        report.unchanged++;
        break;
      case 'same':
        report.unchanged++;
        break;
      case 'gone':
      case 'deleted-at-source':
        report.counts.extra++;
        if (report.extra.length < MAX_LISTED) report.extra.push(path);
        return;
      case 'absent':
        return;
    }
    report.total++;
    if (++this.#checked % 500 === 0) this.#options.onProgress?.({ checked: this.#checked });
  }

  /** Extra: held but not on offer, planned as deletions ('gone'). */
  async countExtras(): Promise<void> {
    if (this.#trust) {
      for await (const r of this.#store.records()) if (!this.onOffer.has(r.url)) this.count(planGone(r.url, { path: r.path, held: true }, { delete: true }));
      return;
    }
    for await (const { key } of this.#storage.list()) {
      // a copy that no mapping covers is named by its path
      if (!this.onOffer.has(key)) this.count(planGone(this.#mapper.toUrl(key) ?? key, { path: key, held: true }, { delete: true }));
    }
  }
}

/** The documents that list what a set offers: whole Resource Lists, parts still to open, the list's `at`, and what a part must be. */
interface SetInventory {
  docs: RemoteDocument[];
  parts: string[];
  at: string | undefined;
  partOk: (part: RemoteDocument) => boolean;
}

/**
 * What lists a set's resources: its Resource List (or the parts of its index), else (§11) the manifests of its
 * Resource Dump's packages.
 */
async function inventoryOf(run: AuditRun, ctx: DocumentContext, set: CapabilitySet): Promise<SetInventory> {
  if (set.resourceList === undefined) {
    // §11: a Source whose only inventory is a Resource Dump: its packages' manifests are the Resource List
    const inv = await dumpInventory(ctx, set.resourceDump!);
    for (const u of inv.unreadable) run.failed(u);
    return { docs: [], parts: inv.manifests, at: inv.at, partOk: (part) => part.kind?.id === RESOURCE_DUMP_MANIFEST.id };
  }
  // The Resource List (or its parts), opened first for its `at`.
  const top = await openDocument(ctx, set.resourceList);
  const inventory: SetInventory = { docs: [], parts: [], at: top.header.md?.at, partOk: (part) => isPartOf(part.kind, top.kind) };
  if (isPartOf(RESOURCE_LIST, top.kind)) {
    for await (const e of top.entries) inventory.parts.push(resolveLoc(e.loc, top.finalUrl));
  } else if (top.kind?.id === RESOURCE_LIST.id) {
    inventory.docs.push(top);
  } else {
    await top.discard();
    throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${set.resourceList}' is not a Resource List.`, { data: { url: set.resourceList } });
  }
  return inventory;
}

/** The last change of each resource listed after `atMs` in the set's Change List (or its parts), by URL. */
async function changesAfter(run: AuditRun, ctx: DocumentContext, changeList: string, atMs: number): Promise<Map<string, Entry>> {
  const overlay = new Map<string, Entry>();
  try {
    const cl = await loadDocument(ctx, changeList);
    const lists = isPartOf(CHANGE_LIST, cl.kind) ? cl.entries.filter((e) => {
      const until = e.md?.until === undefined ? undefined : parseW3CDatetime(e.md.until, true)?.ms;
      return until === undefined || until >= atMs;
    }).map((e) => resolveLoc(e.loc, cl.finalUrl)) : [];
    const docsCl = cl.kind?.id === CHANGE_LIST.id ? [cl] : await Promise.all(lists.map((u) => loadDocument(ctx, u)));
    for (const d of docsCl) {
      if (d !== cl && !isPartOf(d.kind, cl.kind)) {
        // §12.2: an index lists Change Lists; the entries of another document are no changes
        run.report.warnings.push(note('index-part-not-change-list', { url: changeList, part: d.url }));
        continue;
      }
      for (const e of orderChanges(d.entries).entries) {
        const t = changeTime(e);
        if (t === undefined || t <= atMs) continue;
        overlay.delete(e.loc);
        overlay.set(e.loc, e);
      }
    }
  } catch (err) {
    if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
    run.report.warnings.push(note('change-list-unreadable', { url: changeList, error: messageOf(err), ...(isResourceSyncError(err) ? { errorCode: err.code } : {}) }));
  }
  return overlay;
}

/** Audits the entries of a set's lists (those a later change does not overlay), each part opened in turn. */
async function auditLists(run: AuditRun, ctx: DocumentContext, set: CapabilitySet, inventory: SetInventory, overlay: ReadonlyMap<string, Entry>): Promise<void> {
  const each = async (doc: RemoteDocument): Promise<void> => {
    async function* listed(): AsyncGenerator<Entry[]> {
      for await (const batch of doc.batches) yield batch.filter((e) => !overlay.has(e.loc) && run.holdable(e));
    }
    await run.audited(listed());
  };
  for (const d of inventory.docs) await each(d);
  for (const p of inventory.parts) {
    try {
      const part = await openDocument(ctx, p);
      if (!inventory.partOk(part)) {
        // §10.2: an index lists Resource Lists; the entries of another document are not on offer
        const index = set.resourceList ?? set.resourceDump;
        await part.discard();
        throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${p}', listed by '${index}', is not a ${set.resourceList === undefined ? 'Resource Dump Manifest' : 'Resource List'} (${part.kind?.name ?? 'unknown kind'}).`, { data: { url: p, index } });
      }
      await each(part);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      run.failed({ url: p, code: isResourceSyncError(err) ? err.code : 'RS_IO', message: messageOf(err) });
    }
  }
}

/** Audits one capability set: its inventory, overlaid by the changes listed after the inventory's `at`. */
async function auditSet(run: AuditRun, ctx: DocumentContext, set: CapabilitySet): Promise<void> {
  if (set.resourceList === undefined && set.resourceDump === undefined) {
    if (set.changeDump === undefined) {
      run.report.warnings.push(note('set-not-auditable', { set: set.key }));
      return;
    }
    // §13: a Source whose only inventory is its Change Dumps: the last change of each resource is what it offers
    const inv = await changeDumpInventory(ctx, set.changeDump);
    for (const u of inv.unreadable) run.failed(u);
    await run.audited([[...inv.last.values()].filter(run.holdable)]);
    return;
  }
  const inventory = await inventoryOf(run, ctx, set);
  const atMs = inventory.at === undefined ? undefined : parseW3CDatetime(inventory.at, true)?.ms;
  // Later changes overlay the list: the last change of each resource after `at` wins.
  const overlay = set.changeList !== undefined && atMs !== undefined ? await changesAfter(run, ctx, set.changeList, atMs) : new Map<string, Entry>();
  await auditLists(run, ctx, set, inventory, overlay);
  // the changes: created and updated are compared like list entries; a deletion of a held copy is extra
  await run.audited([[...overlay.values()].filter(run.holdable)]);
}

/**
 * Audit: compares the local copy with the Source's current state, compiled from the Resource List plus the
 * changes listed after its `at` (§5.2): what is missing, extra, changed (by length or hash, or by `lastmod`
 * when the Source gives neither) and unchanged. Local copies are read and hashed whenever the Source offers
 * hashes; with `trustState` the state store stands in for them (and the report says so). Changes nothing.
 * @see Z39.99 §5.2 (Audit)
 * @example const r = await audit({ source: 'http://example.com/capabilitylist.xml', dest: './mirror' }); r.inSync
 */
export async function audit(options: AuditOptions): Promise<AuditReport> {
  const started = Date.now();
  const dest = resolve(options.dest);
  if (options.urlPrefixes !== undefined) checkUrlPrefixes(options.urlPrefixes);
  requireFolderOrNothing(dest, 'Destination');
  const connection = connect(options);
  const { authority, documents, mapper } = connection;
  const ctx: DocumentContext = { http: documents, authority, ...(options.signal ? { signal: options.signal } : {}) };
  const store = options.state ?? (await openSqliteDestinationState(dest, { readonly: true }));
  const storage = options.storage ?? new LocalDirectory(dest);
  const run = new AuditRun(options, { dest, store, storage, mapper, authority });
  const report = run.report;
  try {
    const { sets, warnings } = await resolveSets(ctx, options.source, options.capabilityList);
    report.warnings.push(...warnings);
    for (const set of sets) await auditSet(run, ctx, set);
    await run.countExtras();
    if (run.outside > 0) report.warnings.push(note('outside-url-prefixes', { count: run.outside, prefixes: options.urlPrefixes ?? [] }));
    if (report.trustedState) report.warnings.push(note('store-trusted', {}));
    report.inSync = report.counts.missing === 0 && report.counts.extra === 0 && report.counts.changed === 0 && report.counts.failed === 0;
    report.durationMs = Date.now() - started;
    return report;
  } finally {
    run.onOffer.close();
    if (options.state === undefined) await store.close();
    await connection.close();
  }
}
