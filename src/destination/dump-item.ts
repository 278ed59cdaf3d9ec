import { knownHashes, parseLength, type HashValue } from '../core/hash.js';
import type { Entry, Ln } from '../core/model/types.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { safeRelativePath } from '../node/safe-path.js';
import { applyJsonPatchBytes, singleChunk } from './apply-patch.js';
import { relatedLinks } from './links.js';
import type { MirrorStorage } from './mirror-storage.js';
import type { ItemReport } from './run-pool.js';
import { writeVerified, type ByteSource } from './verified-write.js';
import type { OpenPackage } from './dump-package.js';
import { MAX_PATCH_BYTES, fail, packageName, packagedPatch, rsError, type Run } from './dump-run.js';

/**
 * One manifest entry of a downloaded package: checked (change, mapped path, bitstream present, sizes, caps)
 * in manifest order, then extracted and verified, patched from a change description in the package, or deleted.
 * @see Z39.99 §11.2, §13.2, §14.4
 */

/** What extracting one manifest entry needs. */
export interface PackageCtx {
  run: Run;
  pkgUrl: string;
  /** The package, ZIP or WARC. */
  pkg: OpenPackage;
  /** Bitstream names (ZIP entries, WARC record ids) the manifest refers to. */
  used: Set<string>;
  progress: { files: number };
}

/**
 * The effect of one manifest entry; it returns what to report (in manifest order) once done. `staged` is
 * called when it no longer needs its extraction slot (its file only waits for a group commit).
 */
type Work = (staged: () => void) => Promise<ItemReport>;

/** A manifest entry checked: where it is (for failures), its local path (changes to one path stay in order) and its work. */
export interface PreparedItem {
  where: { loc: string; path?: string };
  relPath?: string;
  work: Work;
}

/** A created or updated entry and the local path it goes to. */
interface ItemTarget {
  ctx: PackageCtx;
  item: Entry;
  relPath: string;
  change: 'created' | 'updated';
}

/**
 * Checks one manifest entry and returns the work to do. A change at or before the cursor reports a skip; a
 * failed check (the first problem found, before anything is read or written) reports that failure in its turn.
 */
export function prepareItem(ctx: PackageCtx, item: Entry): PreparedItem {
  const where = { loc: item.loc, ...(item.md?.path === undefined ? {} : { path: item.md.path }) };
  try {
    if (ctx.run.opts.include?.(item.loc) === false) return { where, work: () => Promise.resolve(() => undefined) };
    const checked = checkItem(ctx, item);
    if (checked === undefined) {
      return { where, work: () => Promise.resolve(() => void ctx.run.report.skippedBeforeCursor++) };
    }
    return { where, ...checked };
  } catch (err) {
    // A check failed: nothing to extract; report it in its turn.
    return { where, work: () => Promise.resolve(() => fail(ctx.run, ctx.pkgUrl, err, where)) };
  }
}

/** The checks of {@link prepareItem}: undefined for a change at or before the cursor; throws the first problem. */
function checkItem(ctx: PackageCtx, item: Entry): { relPath: string; work: Work } | undefined {
  const { run } = ctx;
  const loc = item.loc;
  const change = run.flavor === 'change' ? item.md?.change : 'created';
  if (change !== 'created' && change !== 'updated' && change !== 'deleted') {
    throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has change '${change ?? ''}'.`, { loc });
  }
  if (run.flavor === 'change' && run.afterMs !== undefined) {
    // A package that straddles the cursor: changes at or before it were applied already (1.1 `datetime`, else `lastmod`).
    const at = parseW3CDatetime(item.md?.datetime ?? item.lastmod ?? '', true)?.ms;
    if (at !== undefined && at <= run.afterMs) return undefined;
  }
  const relPath = safeRelativePath(run.opts.mapPath(loc));
  if (change === 'deleted') return { relPath, work: () => applyDeletion(run, ctx.pkgUrl, item, relPath) };
  const path = item.md?.path;
  const patchLn = path === undefined ? packagedPatch(item) : undefined;
  const target: ItemTarget = { ctx, item, relPath, change };
  // Only a change description in the package (§14.4): patch the local copy, verify by hash.
  if (path === undefined && patchLn !== undefined && change === 'updated') return { relPath, work: patchWork(target, patchLn) };
  if (path === undefined) throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has no path.`, { loc });
  return { relPath, work: extractWork(target, path) };
}

/** Writes a verified bitstream to the target's path, with the entry's lastmod as mtime. */
function writeItem(
  { ctx, item, relPath }: ItemTarget,
  body: AsyncIterable<Uint8Array> | ByteSource,
  expected: { length: number; hashes?: HashValue[] },
  staged: () => void,
) {
  const lastmod = item.lastmod === undefined ? undefined : parseW3CDatetime(item.lastmod, true);
  return writeVerified({
    storage: ctx.run.storage,
    relPath,
    body,
    expected,
    onVerified: staged,
    ...(lastmod ? { mtime: new Date(lastmod.ms) } : {}),
  });
}

/** Tells the caller (the state store) what was written. */
async function applied(
  { ctx, item, relPath, change }: ItemTarget,
  result: { length: number; hashes: Record<string, string> } | 'unchanged',
): Promise<void> {
  await ctx.run.opts.onResource?.({
    loc: item.loc,
    relPath,
    change,
    applied: true,
    ...(result === 'unchanged' ? { unchanged: true } : { length: result.length, hashes: result.hashes }),
    ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
    links: relatedLinks(item),
    ...(item.ln !== undefined && item.ln.length > 0 ? { ln: item.ln } : {}),
    package: ctx.pkgUrl,
  });
}

/** An update given only as a JSON Patch in the package: checks the patch entry, returns the work that applies it. @see Z39.99 §14.4 */
function patchWork(target: ItemTarget, patchLn: Ln): Work {
  const { ctx, item, relPath } = target;
  const { pkgUrl, used, run } = ctx;
  const loc = item.loc;
  const patchName = packageName(patchLn.path!);
  const patchEntry = ctx.pkg.get(patchName);
  if (patchEntry === undefined)
    throw rsError('RS_ZIP', `Package '${pkgUrl}' lacks the patch '${patchLn.path!}' of '${loc}'.`, {
      url: pkgUrl,
      loc,
      path: patchLn.path,
    });
  used.add(patchName);
  const patchLimit = Math.min(patchEntry.size, MAX_PATCH_BYTES);
  if (patchEntry.size > MAX_PATCH_BYTES)
    throw rsError('RS_LIMIT_BYTES', `Patch '${patchName}' is larger than ${MAX_PATCH_BYTES} bytes.`, {
      loc,
      path: patchName,
    });
  const hashes = knownHashes(item.md?.hash);
  const length = parseLength(item.md?.length);
  return async (staged) => {
    const chunks: Buffer[] = [];
    for await (const c of asChunks(await patchEntry.body(patchLimit, () => {}))) chunks.push(Buffer.from(c));
    const local = await readPatchBase(run.storage, relPath, loc);
    const bytes = applyJsonPatchBytes(
      local,
      Buffer.concat(chunks),
      { hashes, ...(length === undefined ? {} : { length }) },
      loc,
    );
    const result = await writeItem(target, singleChunk(bytes), { length: bytes.length, hashes }, staged);
    return async () => {
      ctx.progress.files++;
      run.report.extracted++;
      run.report.patched++;
      run.report.updated++;
      run.report.bytes += result.length;
      await applied(target, result);
    };
  };
}

/** The copy a packaged patch applies to, of at most {@link MAX_PATCH_BYTES}; `RS_PATCH` when there is none to read. */
async function readPatchBase(storage: MirrorStorage, relPath: string, loc: string): Promise<Uint8Array> {
  let bytes: Uint8Array | undefined;
  try {
    bytes = await storage.read(relPath, { maxBytes: MAX_PATCH_BYTES });
  } catch (err) {
    throw rsError('RS_PATCH', `Patch for '${loc}' has no local copy to apply to.`, { loc }, err);
  }
  if (bytes === undefined) throw rsError('RS_PATCH', `Patch for '${loc}' has no local copy to apply to.`, { loc });
  return bytes;
}

/**
 * A bitstream in the package: checks the ZIP entry against the manifest (present, sizes, the total cap, which
 * it reserves), returns the work that extracts and verifies it.
 */
function extractWork(target: ItemTarget, path: string): Work {
  const { ctx, item, relPath, change } = target;
  const { pkgUrl, run } = ctx;
  const loc = item.loc;
  const name = packageName(path);
  const zipEntry = ctx.pkg.get(name);
  const kind = ctx.pkg.format === 'zip' ? 'ZIP entry' : 'WARC record';
  if (zipEntry === undefined)
    throw rsError(ctx.pkg.format === 'zip' ? 'RS_ZIP' : 'RS_WARC', `Package '${pkgUrl}' lacks the bitstream '${path}' of '${loc}'.`, { url: pkgUrl, loc, path });
  ctx.used.add(name);
  if (zipEntry.targetUri !== undefined && !sameUri(zipEntry.targetUri, loc)) {
    throw rsError('RS_WARC', `WARC record '${name}' is of '${zipEntry.targetUri}', the manifest entry of '${loc}'.`, { url: pkgUrl, loc, path });
  }
  const length = parseLength(item.md?.length);
  const hashes = knownHashes(item.md?.hash);
  if (length !== undefined && zipEntry.size !== length) {
    throw rsError(
      'RS_LENGTH_MISMATCH',
      `${kind} '${name}' declares ${zipEntry.size} bytes, the manifest '${length}'.`,
      { loc, path, expected: length, actual: zipEntry.size },
    );
  }
  const limit = Math.min(length ?? zipEntry.size, zipEntry.size);
  if (run.extractedTotal + limit > run.maxTotal) {
    throw rsError('RS_LIMIT_BYTES', `${kind} '${name}' would pass the cap of ${run.maxTotal} extracted bytes.`, {
      loc,
      path,
      limit: run.maxTotal,
    });
  }
  run.extractedTotal += limit; // reserved before extraction starts
  if (hashes.length === 0) run.report.unverified.push(loc);
  const expected: { length: number; hashes?: HashValue[] } = { length: length ?? zipEntry.size };
  if (hashes.length > 0) expected.hashes = hashes;
  return async (staged) => {
    if (
      hashes.length > 0 &&
      (await run.opts.current?.(loc, relPath, { ...(length === undefined ? {} : { length }), hashes })) === true
    ) {
      // the manifest's hashes say the destination holds these bytes: nothing to write
      staged();
      return async () => {
        ctx.progress.files++;
        run.report.unchanged++;
        await applied(target, 'unchanged');
      };
    }
    let written = 0;
    const onBytes = (n: number): void => {
      written += n;
      run.opts.onProgress?.({ phase: 'extract', package: pkgUrl, bytes: written, files: ctx.progress.files });
    };
    const body = await zipEntry.body(limit, onBytes);
    const result = await writeItem(target, body, expected, staged);
    return async () => {
      ctx.progress.files++;
      run.report.extracted++;
      run.report.bytes += result.length;
      if (change === 'updated') run.report.updated++;
      else run.report.created++;
      await applied(target, result);
    };
  };
}

/** Removes a deleted resource's copy from the storage (only with `delete: true`); returns what to report in its turn. */
async function applyDeletion(run: Run, pkgUrl: string, item: Entry, relPath: string): Promise<ItemReport> {
  const { opts, report } = run;
  const base = {
    loc: item.loc,
    relPath,
    change: 'deleted' as const,
    links: relatedLinks(item),
    package: pkgUrl,
    ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
  };
  if (opts.delete !== true) {
    return async () => {
      report.deletionsNotApplied.push(item.loc);
      await opts.onResource?.({ ...base, applied: false });
    };
  }
  await run.storage.remove(relPath);
  return async () => {
    report.deleted++;
    await opts.onResource?.({ ...base, applied: true });
  };
}

/** The same resource URI, compared as URLs (a WARC writer may normalise the one it records). */
function sameUri(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return new URL(a).href === new URL(b).href;
  } catch {
    return false;
  }
}

/** Chunks of a body (a ByteSource read into fresh buffers). */
async function* asChunks(body: AsyncIterable<Uint8Array> | ByteSource): AsyncGenerator<Uint8Array> {
  if (Symbol.asyncIterator in body) {
    yield* body;
    return;
  }
  for (;;) {
    const buf = new Uint8Array(64 * 1024);
    const n = await body.read(buf);
    if (n === 0) return;
    yield buf.subarray(0, n);
  }
}
