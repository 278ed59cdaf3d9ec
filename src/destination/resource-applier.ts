import { ResourceSyncError, isResourceSyncError, type ErrorCode, messageOf } from '../core/errors.js';
import type { HashValue } from '../core/hash.js';
import type { Entry, Ln } from '../core/model/types.js';
import type { Authority } from '../client/authority.js';
import type { Mapper } from './mapper.js';
import type { DestinationNote } from './notes.js';
import { planEntry, planGone, sourceFacts, type LocalLookup, type PlanAction, type PlanItem, type SourceFacts } from './plan.js';
import type { DestinationState, ResourceRecord, StateBatch } from './state.js';
import { adoptable, localFacts, recordHolds } from './local-copy.js';
import type { SeenSet } from '../core/fingerprint-set.js';
import { ResourceFetcher, keptLinks, toRecord, withLinks, type ResourceFetchOptions } from './resource-fetch.js';
import { CountOnce, emptyCounts, type AppliedElsewhere, type Counted, type SyncCounts, type SyncFailure, type SyncProgress } from './sync-counts.js';

export { emptyCounts, type SyncCounts, type SyncFailure, type SyncProgress } from './sync-counts.js';

/** What the applier needs; built by `sync()`. */
export interface ResourceApplierOptions extends ResourceFetchOptions {
  authority: Authority;
  mapper: Mapper;
  /** Read-only in a dry run. */
  store: DestinationState;
  dryRun: boolean;
  applyDeletes: boolean;
  onProgress?: (p: SyncProgress) => void;
  /** True when `url` is remembered as pending (failed in an earlier run). */
  hasPending?: (url: string) => boolean;
  /** The destination held nothing when the sync started: no state to look up. */
  fresh?: boolean;
  /** Check files on disk that the state does not know (resuming, or a pre-filled directory). */
  adopt: boolean;
  /** Read every file held instead of trusting the state's record of it (a forced baseline, a repair). */
  rehash?: boolean;
  /**
   * Called with each plan item before it is applied (in a dry run, instead). A promise it returns holds the
   * resource's slot until it settles: a slow consumer slows the plan down instead of letting items pile up.
   */
  onPlan?: (item: PlanItem) => void | Promise<void>;
  /** True for a resource to mirror (the sync's `urlPrefixes`); the others are left alone and counted. Default every one. */
  include?: (url: string) => boolean;
}

/**
 * What each resource of a chunk of changes became, by URL, as another process applied them (a job queue's worker);
 * its failures are listed apart (`AppliedElsewhere.failed`).
 */
export interface ChangeResults {
  created: string[];
  updated: string[];
  unchanged: string[];
  /** Deleted: the copy and its record removed. */
  deleted: string[];
  /** A deletion not applied (deletions off): remembered in the state as skipped. */
  skipped: string[];
  /** A deletion of a resource not held: nothing to do. */
  absent: string[];
}

const STATE_BATCH = 256;
const MAX_LISTED = 1000;

/** What the applier found for a resource: the plan's lookup, and what applying the item needs. */
interface Found extends LocalLookup {
  record?: ResourceRecord;
}

/**
 * Applies decisions to the destination: fetches and verifies resources, deletes, keeps the state (batched
 * transactions) and the counters. One applier serves one sync.
 */
export class ResourceApplier {
  readonly counts: SyncCounts = emptyCounts();
  readonly #options: ResourceApplierOptions;
  #pending: ResourceRecord[] = [];
  #pendingDeletes: string[] = [];
  #retry: { entry: Entry; code: string }[] = [];
  /** Deletions not applied (no `delete`), to remember in the state; `#skippedHeld`: the state remembers some. */
  #skipped: string[] = [];
  #skippedHeld: boolean | undefined;
  /** Whether the state remembered skipped deletions when the applier was made (asked once, at the first flush). */
  readonly #skippedHeldAtStart: Promise<boolean>;
  /** The last batch written: the next one waits for it, so that batches land in the order they were made. */
  #writing: Promise<void> = Promise.resolve();
  #resolved: string[] = [];
  /** Failures of this run by URL: a later success for the same URL (a newer change applied) resolves one. */
  readonly #failures = new Map<string, SyncFailure>();
  /** The capability set being synchronized (failed entries are remembered under it). */
  setKey = '';
  /** Entries left alone because their URL is outside the filter (`include`). */
  outside = 0;
  #done = 0;
  #lastProgress = 0;
  #phase: SyncProgress['phase'] = 'baseline';
  #total: number | undefined;
  #estimate: number | undefined;
  #phaseStart = 0;
  #document: string | undefined;
  readonly #warned = new Set<string>();
  /** No state to look up: the destination held nothing when the sync started, and no baseline was recorded yet. */
  #fresh: boolean;
  /** Counts each resource once in a run. */
  readonly #once = new CountOnce(this.counts);
  /** Fetches and writes resources; each copy written is counted and recorded by {@link #written}. */
  readonly #fetcher: ResourceFetcher;

  constructor(options: ResourceApplierOptions) {
    this.#options = options;
    this.#fetcher = new ResourceFetcher(options, (r) => this.#written(r));
    this.#fresh = options.fresh === true;
    this.#skippedHeldAtStart = this.#fresh ? Promise.resolve(false) : Promise.resolve().then(() => options.store.hasSkippedDeletions()).catch(() => true);
    // the failures not resolved so far, listed when read (a report), not rebuilt on every failure
    const failures = this.#failures;
    Object.defineProperty(this.counts, 'failed', { enumerable: true, get: () => [...failures.values()] });
  }

  /**
   * The baseline of this run is done and recorded: the changes after it are planned against the state, and a
   * resource the baseline counted is not counted again, only moved from `unchanged` to `updated` when it changed.
   */
  async endBaseline(seen: SeenSet): Promise<void> {
    await this.flush();
    this.#once.endBaseline(seen, this.#fresh);
    this.#fresh = false;
  }

  /** Counts a resource brought in line, once per run (see {@link endBaseline}). */
  #count(url: string, kind: Counted, failedBefore: boolean): void {
    this.#once.count(url, kind, failedBefore, this.#phase === 'incremental');
  }

  /** Starts a phase of the sync (for progress). */
  phase(phase: SyncProgress['phase'], total?: number, document?: string): void {
    this.#phase = phase;
    // the total counts on from what the run has done: `done` never passes it, and a phase with nothing to do ends at done/done
    this.#phaseStart = this.#done;
    this.#total = total === undefined ? undefined : this.#done + total;
    this.#estimate = undefined;
    this.#document = document;
    this.progress(true);
  }

  /** Adds `n` resources to the phase's total (a Resource List once it has been read through). */
  addTotal(n: number): void {
    this.#total = (this.#total ?? this.#phaseStart) + n;
    this.#estimate = undefined;
  }

  /** Estimates the phase's total (resources still to be counted by {@link addTotal}) while it is unknown. */
  estimateTotal(n: number): void {
    if (this.#total === undefined) this.#estimate = this.#phaseStart + n;
  }

  /** Adds a warning to the report, once: the same code with the same data is not repeated. */
  warn(n: DestinationNote): void {
    const key = `${n.code} ${JSON.stringify(n.data)}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.counts.warnings.push(n);
  }

  fail(url: string, err: unknown): void {
    const code: ErrorCode = isResourceSyncError(err) ? err.code : 'RS_IO';
    const f: SyncFailure = { url, code, message: messageOf(err) };
    const status = isResourceSyncError(err) ? err.data['status'] : undefined;
    if (typeof status === 'number') f.status = status;
    this.#failures.set(url, f);
  }

  /**
   * Takes back a failure of this run that later changes at the Source explain (the resource changed or went away
   * after it was listed): not reported, its entry stays pending for the next run.
   */
  excuse(url: string): void {
    this.#failures.delete(url);
  }

  /**
   * Counts what another process applied for this run (a job queue's chunk): its counts, bytes, failures and notes,
   * as if this applier had done it; their state records are that process's. A chunk of changes says what each
   * resource became, and each is counted once in the run, as {@link apply} counts a change.
   */
  absorb(outcome: AppliedElsewhere & { changes?: ChangeResults }): void {
    if (outcome.changes !== undefined) this.#absorbChanges(outcome.changes);
    else for (const k of ['created', 'updated', 'deleted', 'unchanged'] as const) this.counts[k] += outcome[k];
    this.counts.bytes += outcome.bytes;
    for (const f of outcome.failed) this.#failures.set(f.url, f);
    for (const w of outcome.warnings) this.warn(w);
    this.#done += outcome.done;
    this.progress();
  }

  /** What each resource of a chunk of changes became, counted as {@link apply} counts it: once per run. */
  #absorbChanges(c: ChangeResults): void {
    for (const url of [...c.absent, ...c.deleted, ...c.skipped]) this.#failures.delete(url);
    this.counts.deleted += c.deleted.length;
    for (const url of c.skipped) this.#countSkipped(url);
    for (const kind of ['created', 'updated', 'unchanged'] as const) for (const url of c[kind]) this.#count(url, kind, this.#failures.delete(url));
  }

  /** URLs that failed in this run and are not resolved yet. */
  get failedUrls(): ReadonlySet<string> {
    return new Set(this.#failures.keys());
  }

  /** A resource is now in line with the Source: an earlier failure of this run (and its pending entry) is resolved. */
  #succeeded(url: string): void {
    if (this.#failures.delete(url) && !this.#options.dryRun) this.#resolved.push(url);
  }

  progress(force = false): void {
    const cb = this.#options.onProgress;
    if (cb === undefined) return;
    const now = Date.now();
    if (!force && now - this.#lastProgress < 100) return;
    this.#lastProgress = now;
    const p: SyncProgress = { phase: this.#phase, done: this.#done, bytes: this.counts.bytes, failed: this.#failures.size };
    if (this.#total !== undefined) p.total = this.#total;
    else if (this.#estimate !== undefined && this.#estimate > 0) p.estimate = Math.max(this.#estimate, this.#done);
    if (this.#document !== undefined) p.document = this.#document;
    cb(p);
  }

  #tick(): void {
    this.#done++;
    this.progress();
  }

  async #record(r: ResourceRecord): Promise<void> {
    this.#succeeded(r.url);
    if (this.#skipped.length > 0) this.#skipped = this.#skipped.filter((u) => u !== r.url); // on offer again
    if (this.#options.dryRun) return;
    if (this.#options.hasPending?.(r.url)) this.#resolved.push(r.url);
    this.#pending.push(r);
    if (this.#pending.length >= STATE_BATCH) await this.flush();
  }

  /**
   * Writes the batched state changes as one atomic batch; resolves once it (and every batch before it) is written.
   */
  async flush(): Promise<void> {
    if (this.#options.dryRun) return;
    if (this.#skippedHeld === undefined) {
      const held = await this.#skippedHeldAtStart;
      this.#skippedHeld ??= held; // another flush may have learnt more meanwhile
    }
    const puts = this.#pending;
    const dels = this.#pendingDeletes;
    this.#pending = [];
    this.#pendingDeletes = [];
    const retry = this.#retry;
    const resolved = this.#resolved;
    const skipped = this.#skipped;
    this.#retry = [];
    this.#resolved = [];
    this.#skipped = [];
    if (puts.length === 0 && dels.length === 0 && retry.length === 0 && resolved.length === 0 && skipped.length === 0) return this.#writing;
    const done = new Set(resolved);
    const batch: StateBatch = { put: puts, delete: dels, removePending: resolved };
    if (this.#skippedHeld) batch.forgetSkipped = [...puts.map((r) => r.url), ...dels];
    if (skipped.length > 0) {
      this.#skippedHeld = true;
      batch.skipDeletions = { setKey: this.setKey, urls: skipped };
    }
    const failed = retry.filter((r) => !done.has(r.entry.loc));
    if (failed.length > 0) batch.addPending = { setKey: this.setKey, entries: failed };
    const state = this.#options.store;
    const write = this.#writing.then(() => state.apply(batch));
    this.#writing = write.catch(() => undefined);
    return write;
  }

  /**
   * What the destination holds for a resource: the state's record and the file, or a file that the state does not
   * know but that matches (adopted). For a resource on offer (`source`) the URL must be on the authority and map to a
   * safe path (else it throws); for a deletion (`source` undefined) whatever is held is found, mapped or not.
   */
  async #find(url: string, source: SourceFacts | undefined): Promise<Found> {
    const record = this.#fresh ? undefined : await this.#options.store.get(url);
    if (source === undefined) {
      let relPath = record?.path;
      if (relPath === undefined && this.#options.authority.allows(url)) relPath = this.#options.mapper.tryPath(url);
      const found: Found = { held: record !== undefined };
      if (record !== undefined) found.record = record;
      if (relPath === undefined) return found;
      found.path = relPath;
      const st = await this.#options.storage.stat(relPath);
      if (st !== undefined) found.local = record !== undefined && record.path === relPath ? localFacts(record) : { length: st.size, hashes: {}, lastmod: st.mtimeMs };
      return found;
    }
    this.#options.authority.check(url);
    const relPath = this.#options.mapper.toPath(url);
    const found: Found = { path: relPath, held: record !== undefined };
    if (record !== undefined) found.record = record;
    if (record !== undefined && record.path === relPath && this.#options.rehash !== true) {
      const st = await this.#options.storage.stat(relPath);
      if (st !== undefined && st.size === record.length) found.local = localFacts(record);
    } else if (this.#options.adopt || this.#options.rehash === true) {
      const local = await adoptable(this.#options.storage, relPath, source.hashes, source.length, source.lastmod);
      if (local !== undefined) found.local = local;
    }
    return found;
  }

  /**
   * Brings one resource in line with an entry of a Resource List or a change of a Change List: finds what is held,
   * plans it (`planEntry`: create, update, delete or unchanged, with the reason) and applies the plan item: fetch
   * (conditionally when only an ETag can tell), verify, write, record; or delete. A dry run stops at the plan.
   * Never throws for a per-resource problem: it is counted in `failed`.
   * @param release called once the resource no longer needs its slot of the concurrency limit: downloaded and
   *   verified, only waiting for the disk (a group commit's batch; see `runPool`)
   * @returns the action taken ('unchanged' also after a 304), or undefined when it failed
   */
  async apply(entry: Entry, release?: () => void): Promise<PlanAction | undefined> {
    const url = entry.loc;
    const deletion = entry.md?.change === 'deleted';
    if (!this.includes(url)) return 'unchanged';
    try {
      if (this.#options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', `Sync of '${url}' aborted.`, { data: { url } });
      const source = sourceFacts(entry);
      const found = await this.#find(url, deletion ? undefined : source);
      return await this.#applyItem(planEntry(entry, found, { delete: this.#options.applyDeletes }, source), found, entry, release);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      this.fail(url, err);
      if (!this.#options.dryRun && !deletion) this.#retry.push({ entry, code: isResourceSyncError(err) ? err.code : 'RS_IO' });
      return undefined;
    } finally {
      this.#tick();
    }
  }

  /**
   * A resource the Source no longer has (held, but in no Resource List read in full): planned with `planGone` and
   * removed (file, empty parent folders, record) with `applyDeletes`, otherwise listed in `deletionsSkipped`.
   */
  async remove(url: string): Promise<boolean> {
    try {
      const found = await this.#find(url, undefined);
      await this.#applyItem(planGone(url, found, { delete: this.#options.applyDeletes }), found, undefined);
      return true;
    } catch (err) {
      this.fail(url, err);
      return false;
    } finally {
      this.#tick();
    }
  }

  /**
   * True when `url` is inside the sync's filter; a URL outside is counted (an entry left alone) and the resource
   * progresses all the same.
   */
  includes(url: string): boolean {
    const include = this.#options.include;
    if (include === undefined || include(url)) return true;
    this.outside++;
    this.#tick();
    return false;
  }

  /** True when `url` is inside the sync's filter (nothing counted): a held resource outside it is to be removed. */
  wanted(url: string): boolean {
    return this.#options.include?.(url) ?? true;
  }

  /** A deletion not applied: reported, and remembered in the state for a later run with `delete`. */
  async #skipDeletion(url: string): Promise<void> {
    this.#countSkipped(url);
    if (this.#options.dryRun) return;
    this.#skipped.push(url);
    if (this.#skipped.length >= STATE_BATCH) await this.flush();
  }

  #countSkipped(url: string): void {
    this.counts.deletionsSkippedCount++;
    if (this.counts.deletionsSkipped.length < MAX_LISTED) this.counts.deletionsSkipped.push(url);
  }

  /** Applies one plan item (in a dry run: reports it and counts it, nothing else). */
  async #applyItem(item: PlanItem, found: Found, entry: Entry | undefined, release?: () => void): Promise<PlanAction> {
    const heard = this.#options.onPlan?.(item);
    if (heard !== undefined) await heard;
    const { url, action } = item;
    const record = found.record;
    const failedBefore = this.#failures.has(url);
    if (action === 'delete' || item.reason === 'absent') {
      // the Source no longer has it: whatever failed for it in this run, or in an earlier one, is settled
      this.#succeeded(url);
      if (this.#options.hasPending?.(url) && !this.#options.dryRun) this.#resolved.push(url);
      if (action !== 'delete') return action; // never held (or never ours)
      if (item.kept === true) {
        await this.#skipDeletion(url);
        return action;
      }
      if (!this.#options.dryRun) {
        if (found.path !== undefined && found.local !== undefined) await this.#options.storage.remove(found.path);
        this.#pendingDeletes.push(url);
        if (this.#pendingDeletes.length >= STATE_BATCH) await this.flush();
      }
      this.counts.deleted++;
      return action;
    }
    const relPath = item.path!;
    const local = item.local;
    if (action === 'unchanged') {
      if (this.#options.hasPending?.(url) && !this.#options.dryRun) this.#resolved.push(url);
      this.#succeeded(url);
      if (record === undefined || record.path !== relPath || record.lastmod !== entry!.lastmod || (local && record.hashes !== local.hashes)) {
        await this.#record({ ...toRecord(url, relPath, entry!, local!), ...(record?.etag ? { etag: record.etag } : {}) });
      } else if (JSON.stringify(record.links) !== JSON.stringify(keptLinks(entry!)) || record.type !== entry!.md?.type) {
        await this.#record(withLinks(record, entry!)); // the same bytes with other §14 links or type: the state keeps the new ones
      }
      this.#count(url, 'unchanged', failedBefore);
      return action;
    }
    if (this.#options.dryRun) {
      this.#succeeded(url);
      this.#count(url, action === 'create' ? 'created' : 'updated', failedBefore);
      return action;
    }
    const present = local !== undefined;
    const etag = present && item.reason !== 'hash' && item.reason !== 'length' ? record?.etag : undefined;
    const outcome = await this.#fetcher.fetch(entry!, item.source!, relPath, etag, present, release);
    if (outcome === 'not-modified') {
      if (this.#options.hasPending?.(url)) this.#resolved.push(url);
      await this.#record({ ...withLinks(record!, entry!), ...(entry!.lastmod !== undefined ? { lastmod: entry!.lastmod } : {}) });
      this.#count(url, 'unchanged', failedBefore);
      return 'unchanged';
    }
    this.#count(url, action === 'create' ? 'created' : 'updated', failedBefore);
    return action;
  }

  /** A copy the fetcher wrote: its bytes counted, its record batched (a promise, no extra await). */
  #written(r: ResourceRecord): Promise<void> {
    this.counts.bytes += r.length;
    return this.#record(r);
  }

  /**
   * Records a resource written by someone else (a Resource Dump or Change Dump package), or a deletion seen
   * there, in the state and the counters.
   */
  async recordExternal(r: { url: string; relPath: string; change: 'created' | 'updated' | 'deleted'; applied: boolean; unchanged?: true; length?: number; hashes?: Record<string, string>; lastmod?: string; links?: Ln[] }): Promise<void> {
    this.#succeeded(r.url);
    if (r.unchanged === true) {
      this.counts.unchanged++; // held already: the record stays as it is
    } else if (r.change === 'deleted') {
      if (!r.applied) {
        await this.#skipDeletion(r.url);
      } else {
        this.counts.deleted++;
        if (!this.#options.dryRun) this.#pendingDeletes.push(r.url);
      }
    } else {
      const existed = !this.#fresh && (await this.#options.store.get(r.url)) !== undefined;
      this.counts[existed ? 'updated' : 'created']++;
      this.counts.bytes += r.length ?? 0;
      const rec: ResourceRecord = { url: r.url, path: r.relPath, length: r.length ?? 0, hashes: r.hashes ?? {} };
      if (r.lastmod !== undefined) rec.lastmod = r.lastmod;
      if (r.links !== undefined) rec.links = r.links; // a dump manifest's §14 links, kept as a Resource List's are
      await this.#record(rec);
    }
    this.#tick();
  }

  /**
   * True when the state's record of `url` at `relPath` has every hash given (and the length, when given) and the
   * file has the recorded length: a dump's bitstream with these facts need not be written again.
   */
  async holds(url: string, relPath: string, expected: { length?: number; hashes: HashValue[] }): Promise<boolean> {
    const r = this.#fresh ? undefined : await this.#options.store.get(url);
    return r !== undefined && r.path === relPath && recordHolds(r, this.#options.storage, relPath, expected, this.#options.rehash === true);
  }
}
