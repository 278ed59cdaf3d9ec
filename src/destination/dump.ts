import { rm } from 'node:fs/promises';
import { isResourceSyncError } from '../core/errors.js';
import { knownHashes, parseLength } from '../core/hash.js';
import { isPartOf } from '../core/model/document-kinds.js';
import type { Entry } from '../core/model/types.js';
import { formatW3CDatetime, parseW3CDatetime } from '../core/w3c-datetime.js';
import { readDocument } from '../core/xml/read-document.js';
import { downloadToFile } from '../client/download-to-file.js';
import { gapNote, note } from './notes.js';
import {
  DEFAULT_MAX_TOTAL,
  DOC_LIMITS,
  DUMP_KIND,
  checkAuthority,
  fail,
  rsError,
  throwIfAborted,
  type ApplyDumpOptions,
  type DumpReport,
  type Flavor,
  type Run,
} from './dump-run.js';
import { extractPackage } from './dump-extract.js';

/**
 * Applying Resource Dumps (baseline) and Change Dumps (incremental): download each ZIP package,
 * verify it, check its manifest, and write every bitstream to the mirror's storage under the key of its `loc`.
 * The copy of the manifest a `rel="contents"` link points to is never fetched: the manifest inside
 * the package is the one applied.
 * @see Z39.99 §11, §13
 */

export type { ApplyDumpOptions, DumpFailure, DumpProgress, DumpReport, DumpResource } from './dump-run.js';

/**
 * Applies a Resource Dump: every package's bitstreams are written to `storage` under `mapPath(loc)`, verified
 * against the manifest's `length` and `hash`.
 * @example
 * const report = await applyResourceDump({ dumpUrl, http, authority, storage: createLocalDirectory('/mirror'), mapPath: (loc) => mapper.toPath(loc) });
 * @see Z39.99 §11
 */
export function applyResourceDump(options: ApplyDumpOptions): Promise<DumpReport> {
  return applyDump(options, 'resource');
}

/**
 * Applies a Change Dump: packages in forward chronological order, each manifest's changes in order;
 * `created`/`updated` bitstreams are extracted, `deleted` ones removed only with `delete: true`.
 * @example
 * const report = await applyChangeDump({ dumpUrl, http, authority, storage, mapPath, delete: true, after: cursor });
 * @see Z39.99 §13
 */
export function applyChangeDump(options: ApplyDumpOptions): Promise<DumpReport> {
  return applyDump(options, 'change');
}

async function applyDump(opts: ApplyDumpOptions, flavor: Flavor): Promise<DumpReport> {
  const report: DumpReport = {
    packages: 0,
    extracted: 0,
    patched: 0,
    created: 0,
    updated: 0,
    deleted: 0,
    unchanged: 0,
    bytes: 0,
    packageBytes: 0,
    failures: [],
    unverified: [],
    ignoredEntries: [],
    deletionsNotApplied: [],
    skippedBeforeCursor: 0,
    notes: [],
    timings: { downloadMs: 0, extractMs: 0 },
  };
  const run: Run = {
    opts,
    flavor,
    report,
    storage: opts.storage,
    extractedTotal: 0,
    maxTotal: opts.maxTotalBytes ?? DEFAULT_MAX_TOTAL,
    afterMs: opts.after === undefined ? undefined : parseW3CDatetime(opts.after, true)?.ms,
  };
  const packages = await listPackages(run, opts.dumpUrl, 0);
  if (flavor === 'change') orderChangePackages(run, packages);
  const after = run.afterMs;
  if (flavor === 'change' && after !== undefined && packages.length > 0) {
    // §13.1 from/until: the earliest package must reach back to the cursor, or changes in between are missing
    const froms = packages
      .map((p) => parseW3CDatetime(p.md?.from ?? '', true)?.ms)
      .filter((t): t is number => t !== undefined);
    const earliest = froms.length === packages.length ? Math.min(...froms) : undefined;
    if (earliest !== undefined && earliest > after) {
      report.gap = gapNote({
        url: opts.dumpUrl,
        start: formatW3CDatetime(earliest),
        cursor: opts.after ?? '',
        dumps: true,
      });
      return report;
    }
  }
  for (const pkg of packages) {
    throwIfAborted(opts.signal);
    if (flavor === 'change' && after !== undefined) {
      const until = parseW3CDatetime(pkg.md?.until ?? pkg.lastmod ?? '', true)?.ms;
      if (until !== undefined && until <= after) {
        report.notes.push(note('package-before-cursor', { url: pkg.loc }));
        continue;
      }
    }
    await applyPackage(run, pkg);
  }
  await run.storage.settle();
  return report;
}

/** Reads a dump (or dump index) and returns its package entries with absolute `loc`s. */
async function listPackages(run: Run, url: string, depth: number): Promise<Entry[]> {
  const { opts, flavor } = run;
  checkAuthority(opts.authority, url);
  const res = await (opts.documents ?? opts.http)(url, opts.signal ? { signal: opts.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw rsError('RS_HTTP_STATUS', `Dump '${url}' answered HTTP ${res.status}.`, { url, status: res.status });
  }
  const reader = await readDocument(res.body, { limits: DOC_LIMITS, ...(opts.signal ? { signal: opts.signal } : {}) });
  const dump = DUMP_KIND[flavor];
  const kind = reader.kind;
  const base = res.url || url;
  const entries: Entry[] = [];
  for await (const e of reader.entries) {
    let loc: string;
    try {
      loc = new URL(e.loc, base).href;
    } catch {
      run.report.notes.push(note('dump-loc-invalid', { url, loc: e.loc }));
      continue;
    }
    entries.push({ ...e, loc });
  }
  if (isPartOf(dump, kind)) {
    // a Resource Dump Index or Change Dump Index (§11.1, §13.1): its parts are dumps of its flavor
    if (depth > 0) throw rsError('RS_INVALID_DOCUMENT', `Dump index '${url}' is nested in another index.`, { url });
    const out: Entry[] = [];
    for (const e of entries) out.push(...(await listPackages(run, e.loc, depth + 1)));
    return out;
  }
  if (kind?.id !== dump.id) {
    throw rsError(
      'RS_INVALID_DOCUMENT',
      `Document '${url}' is not a ${dump.name} (capability '${reader.header.md?.capability ?? ''}').`,
      { url },
    );
  }
  return entries;
}

/** Change Dump packages should be in forward chronological order (§13.1); tolerate others by sorting on `from`. */
function orderChangePackages(run: Run, packages: Entry[]): void {
  const key = (e: Entry) => parseW3CDatetime(e.md?.from ?? e.lastmod ?? '', true)?.ms;
  const keys = packages.map(key);
  const sorted = keys.every((k, i) => i === 0 || k === undefined || keys[i - 1] === undefined || keys[i - 1]! <= k);
  if (sorted) return;
  const indexed = packages.map((e, i) => ({ e, i, k: keys[i] ?? Number.NEGATIVE_INFINITY }));
  indexed.sort((a, b) => a.k - b.k || a.i - b.i);
  packages.splice(0, packages.length, ...indexed.map((x) => x.e));
  run.report.notes.push(note('packages-out-of-order', { url: run.opts.dumpUrl }));
}

async function applyPackage(run: Run, pkg: Entry): Promise<void> {
  const { opts, report } = run;
  const tmp = await run.storage.scratchFile();
  try {
    try {
      checkAuthority(opts.authority, pkg.loc);
    } catch (err) {
      fail(run, pkg.loc, err);
      return;
    }
    report.packages++;
    const t0 = performance.now();
    try {
      report.packageBytes += await download(run, pkg, tmp);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      fail(run, pkg.loc, err);
      return;
    } finally {
      report.timings.downloadMs += performance.now() - t0;
    }
    const t1 = performance.now();
    try {
      await extractPackage(run, pkg.loc, tmp);
    } catch (err) {
      if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
      fail(run, pkg.loc, err);
    } finally {
      report.timings.extractMs += performance.now() - t1;
    }
    if (run.flavor === 'change') {
      const until = pkg.md?.until ?? pkg.lastmod;
      const ms = until === undefined ? undefined : parseW3CDatetime(until, true)?.ms;
      const cur = report.until === undefined ? undefined : parseW3CDatetime(report.until, true)?.ms;
      if (until !== undefined && ms !== undefined && (cur === undefined || ms > cur)) report.until = until;
    }
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Streams a package to `tmp`, checking its `length` and `hash` from the dump. Returns the byte count. */
async function download(run: Run, pkg: Entry, tmp: string): Promise<number> {
  const { opts } = run;
  const res = await opts.http(pkg.loc, opts.signal ? { signal: opts.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw rsError('RS_HTTP_STATUS', `Package '${pkg.loc}' answered HTTP ${res.status}.`, {
      url: pkg.loc,
      status: res.status,
    });
  }
  const length = parseLength(pkg.md?.length);
  const hashes = knownHashes(pkg.md?.hash);
  if (length === undefined && hashes.length === 0) run.report.notes.push(note('package-unverified', { url: pkg.loc }));
  const { bytes } = await downloadToFile(res, tmp, {
    url: pkg.loc,
    hashes,
    ...(length === undefined ? {} : { length }),
    ...(opts.signal ? { signal: opts.signal } : {}),
    onBytes: (n) => opts.onProgress?.({ phase: 'download', package: pkg.loc, bytes: n, files: 0 }),
  });
  return bytes;
}
