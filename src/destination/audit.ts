import { closeSync, fstatSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import type { HashAlgorithm } from '../core/constants.js';
import { documentKindById, isPartOf } from '../core/model/document-kinds.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { FingerprintSet } from '../core/fingerprint-set.js';
import { digestHex } from '../node/digest.js';
import { loadDocument, openDocument, resolveLoc, type DocumentContext, type RemoteDocument } from './documents.js';
import { connect, type ConnectionOptions } from './connection.js';
import type { MirrorTarget } from './sync-options.js';
import { changeTime, countPlanItem, emptyPlanSummary, orderChanges, planBatches, planGone, type LocalFacts, type LocalLookup, type PlanItem, type PlanSummary, type SourceFacts } from './plan.js';
import type { Entry } from '../core/model/types.js';
import { requireFolderOrNothing } from '../node/folder.js';
import { StateStore, STATE_DIR } from './state-store.js';
import { resolveSets } from './capability-sets.js';
import { note, type DestinationNote } from './notes.js';
import { hashFile } from '../node/hash-file.js';
import { changeDumpInventory, dumpInventory, RESOURCE_DUMP_MANIFEST } from './audit-dump.js';

/** What an audit does, beyond reaching the Source and naming the mirror. */
export interface AuditBehaviour {
  /** Compare with the state store instead of reading and hashing the local files. */
  trustState?: boolean;
  /** With a Source Description (or several Capability Lists), audit only this Capability List. */
  capabilityList?: string;
  /** Called every few hundred resources. */
  onProgress?: (p: { checked: number }) => void;
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

/** The files under `dest` (relative paths with `/`), one at a time, outside `.resourcesync*` folders; none when it is missing. */
function* walkFiles(dest: string): Generator<string> {
  function* walk(dir: string, rel: string): Generator<string> {
    for (const d of readdirSync(dir, { withFileTypes: true })) {
      const r = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.isDirectory()) {
        if (rel === '' && d.name.startsWith(STATE_DIR)) continue; // the state, and trees beside it such as .resourcesync-describedby
        yield* walk(`${dir}${sep}${d.name}`, r);
      } else if (d.isFile() || d.isSymbolicLink()) {
        yield r;
      }
    }
  }
  try {
    yield* walk(dest, '');
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
  }
}

const READ_BUFFER = Buffer.allocUnsafe(1024 * 1024);

/**
 * Local facts of a file for the algorithms the Source offers, read with synchronous calls into one reused
 * buffer (open, fstat, read, close: the fastest way to hash many small files here). Undefined when the file is
 * missing; `'large'` when it does not fit the buffer (the caller streams it).
 */
function localFile(full: string, source: SourceFacts): LocalFacts | undefined | 'large' {
  let fd: number;
  try {
    fd = openSync(full, 'r');
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return undefined;
    throw err;
  }
  try {
    if (source.hashes.length === 0) {
      const st = fstatSync(fd);
      return st.isFile() ? { length: st.size, hashes: {}, lastmod: st.mtimeMs } : undefined;
    }
    // With hashes to check, the bytes decide: read them (a file that fills the buffer is streamed instead).
    // A read that returns less than asked for has met the end of a regular file: no second read to see 0.
    let n = 0;
    try {
      for (;;) {
        const want = READ_BUFFER.length - n;
        const got = readSync(fd, READ_BUFFER, n, want, null);
        n += got;
        if (n === READ_BUFFER.length) return 'large';
        if (got === 0 || got < want) break;
      }
    } catch (err) {
      if ((err as { code?: string }).code === 'EISDIR') return undefined;
      throw err;
    }
    const facts: LocalFacts = { length: n, hashes: {} };
    if (source.length !== undefined && source.length !== n) return facts;
    const data = READ_BUFFER.subarray(0, n);
    for (const h of source.hashes) facts.hashes[h.algorithm] ??= digestHex(h.algorithm as HashAlgorithm, data);
    return facts;
  } finally {
    closeSync(fd);
  }
}

/**
 * Audit: compares the local copy with the Source's current state, compiled from the Resource List plus the
 * changes listed after its `at` (§5.2): what is missing, extra, changed (by length or hash, or by `lastmod`
 * when the Source gives neither) and unchanged. Local files are read and hashed whenever the Source offers
 * hashes; with `trustState` the state store stands in for them (and the report says so). Changes nothing.
 * @see Z39.99 §5.2 (Audit)
 * @example const r = await audit({ source: 'http://example.com/capabilitylist.xml', dest: './mirror' }); r.inSync
 */
export async function audit(options: AuditOptions): Promise<AuditReport> {
  const started = Date.now();
  const dest = resolve(options.dest);
  requireFolderOrNothing(dest, 'Destination');
  const connection = connect(options);
  const { authority, documents, mapper } = connection;
  const ctx: DocumentContext = { http: documents, authority, ...(options.signal ? { signal: options.signal } : {}) };
  const trust = options.trustState ?? false;
  const store = StateStore.open(dest, { readonly: true });
  const report: AuditReport = {
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
  // What is on offer, to find the extra: by URL against the state store (trustState), else by path against the
  // files. Fingerprints, not strings: 16 bytes a resource at most, where a string (a slice of the list that
  // pins it) cost about 200.
  const onOffer = new FingerprintSet();
  let checked = 0;

  /** True for an entry that can be held here; the others (unsafe names, other origins) are failures, not planned. */
  const holdable = (e: Entry): boolean => {
    try {
      authority.check(e.loc);
      onOffer.add(trust ? e.loc : mapper.toPath(e.loc));
      return true;
    } catch (err) {
      if (e.md?.change === 'deleted') return false; // a deletion of what cannot be held here: nothing to audit
      report.total++;
      report.counts.failed++;
      if (report.failed.length < MAX_LISTED) report.failed.push({ url: e.loc, code: isResourceSyncError(err) ? err.code : 'RS_IO', message: messageOf(err) });
      return false;
    }
  };

  /** What is held: the state's record (trustState), else the file, read and hashed for the algorithms the Source offers. */
  const lookup = (url: string, source: SourceFacts | undefined): LocalLookup | Promise<LocalLookup> => {
    if (trust) {
      const r = store.get(url);
      if (r === undefined) return {};
      const local: LocalFacts = { length: r.length, hashes: r.hashes };
      const t = r.lastmod === undefined ? undefined : parseW3CDatetime(r.lastmod, true);
      if (t !== undefined) local.lastmod = t.ms;
      return { path: r.path, local };
    }
    const path = mapper.toPath(url);
    const full = sep === '/' ? `${dest}/${path}` : join(dest, ...path.split('/'));
    const got = localFile(full, source ?? { url, hashes: [] });
    if (got === 'large') {
      return hashFile(full, (source?.hashes ?? []).map((x) => x.algorithm)).then((h) => ({ path, local: { length: h.length, hashes: h.hashes, lastmod: statSync(full).mtimeMs } }));
    }
    return got === undefined ? { path } : { path, local: got };
  };

  /** Counts one plan item into the report. */
  const count = (item: PlanItem): void => {
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
    if (++checked % 500 === 0) options.onProgress?.({ checked });
  };

  const audited = async (batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>): Promise<void> => {
    for await (const items of planBatches(batches, lookup, { delete: true })) for (const item of items) count(item);
  };

  try {
    const { sets, warnings } = await resolveSets(ctx, options.source, options.capabilityList);
    report.warnings.push(...warnings);
    for (const set of sets) {
      if (set.resourceList === undefined && set.resourceDump === undefined) {
        if (set.changeDump === undefined) {
          report.warnings.push(note('set-not-auditable', { set: set.key }));
          continue;
        }
        // §13: a Source whose only inventory is its Change Dumps: the last change of each resource is what it offers
        const inv = await changeDumpInventory(ctx, set.changeDump);
        for (const u of inv.unreadable) {
          report.counts.failed++;
          if (report.failed.length < MAX_LISTED) report.failed.push(u);
        }
        await audited([[...inv.last.values()].filter(holdable)]);
        continue;
      }
      const docs: RemoteDocument[] = [];
      let parts: string[] = [];
      let at: string | undefined;
      // what a part must be: a Resource List of the index, or the manifest of a dump-only Source's package
      let partOk: (part: RemoteDocument) => boolean = (part) => part.kind?.id === RESOURCE_DUMP_MANIFEST.id;
      if (set.resourceList === undefined) {
        // §11: a Source whose only inventory is a Resource Dump: its packages' manifests are the Resource List
        const inv = await dumpInventory(ctx, set.resourceDump!);
        parts = inv.manifests;
        at = inv.at;
        for (const u of inv.unreadable) {
          report.counts.failed++;
          if (report.failed.length < MAX_LISTED) report.failed.push(u);
        }
      } else {
        // The Resource List (or its parts), opened first for its `at`.
        const top = await openDocument(ctx, set.resourceList);
        partOk = (part) => isPartOf(part.kind, top.kind);
        at = top.header.md?.at;
        if (isPartOf(RESOURCE_LIST, top.kind)) {
          for await (const e of top.entries) parts.push(resolveLoc(e.loc, top.finalUrl));
        } else if (top.kind?.id === RESOURCE_LIST.id) {
          docs.push(top);
        } else {
          await top.discard();
          throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${set.resourceList}' is not a Resource List.`, { data: { url: set.resourceList } });
        }
      }
      const atMs = at === undefined ? undefined : parseW3CDatetime(at, true)?.ms;
      // Later changes overlay the list: the last change of each resource after `at` wins.
      const overlay = new Map<string, Entry>();
      if (set.changeList !== undefined && atMs !== undefined) {
        try {
          const cl = await loadDocument(ctx, set.changeList);
          const lists = isPartOf(CHANGE_LIST, cl.kind) ? cl.entries.filter((e) => {
            const until = e.md?.until === undefined ? undefined : parseW3CDatetime(e.md.until, true)?.ms;
            return until === undefined || until >= atMs;
          }).map((e) => resolveLoc(e.loc, cl.finalUrl)) : [];
          const docsCl = cl.kind?.id === CHANGE_LIST.id ? [cl] : await Promise.all(lists.map((u) => loadDocument(ctx, u)));
          for (const d of docsCl) {
            if (d !== cl && !isPartOf(d.kind, cl.kind)) {
              // §12.2: an index lists Change Lists; the entries of another document are no changes
              report.warnings.push(note('index-part-not-change-list', { url: set.changeList, part: d.url }));
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
          report.warnings.push(note('change-list-unreadable', { url: set.changeList, error: messageOf(err), ...(isResourceSyncError(err) ? { errorCode: err.code } : {}) }));
        }
      }
      const each = async (doc: RemoteDocument): Promise<void> => {
        async function* listed(): AsyncGenerator<Entry[]> {
          for await (const batch of doc.batches) yield batch.filter((e) => !overlay.has(e.loc) && holdable(e));
        }
        await audited(listed());
      };
      for (const d of docs) await each(d);
      for (const p of parts) {
        try {
          const part = await openDocument(ctx, p);
          if (!partOk(part)) {
            // §10.2: an index lists Resource Lists; the entries of another document are not on offer
            const index = set.resourceList ?? set.resourceDump;
            await part.discard();
            throw new ResourceSyncError('RS_INVALID_DOCUMENT', `Document '${p}', listed by '${index}', is not a ${set.resourceList === undefined ? 'Resource Dump Manifest' : 'Resource List'} (${part.kind?.name ?? 'unknown kind'}).`, { data: { url: p, index } });
          }
          await each(part);
        } catch (err) {
          if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
          report.counts.failed++;
          report.failed.push({ url: p, code: isResourceSyncError(err) ? err.code : 'RS_IO', message: messageOf(err) });
        }
      }
      parts = [];
      // the changes: created and updated are compared like list entries; a deletion of a held copy is extra
      await audited([[...overlay.values()].filter(holdable)]);
    }
    // Extra: held but not on offer, planned as deletions ('gone').
    if (trust) {
      for (const r of store.records()) if (!onOffer.has(r.url)) count(planGone(r.url, { path: r.path, held: true }, { delete: true }));
    } else {
      for (const p of walkFiles(dest)) {
        // a file that no mapping covers is named by its path
        if (!onOffer.has(p)) count(planGone(mapper.toUrl(p) ?? p, { path: p, held: true }, { delete: true }));
      }
    }
    if (trust) report.warnings.push(note('store-trusted', {}));
    report.inSync = report.counts.missing === 0 && report.counts.extra === 0 && report.counts.changed === 0 && report.counts.failed === 0;
    report.durationMs = Date.now() - started;
    return report;
  } finally {
    store.close();
    await connection.close();
  }
}
