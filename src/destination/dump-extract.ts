import { open, rm, type FileHandle } from 'node:fs/promises';
import { isResourceSyncError, messageOf } from '../core/errors.js';
import { knownHashes, parseLength, type HashValue } from '../core/hash.js';
import { manifestKind } from '../core/model/document-kinds.js';
import type { Entry } from '../core/model/types.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { readDocument } from '../core/xml/read-document.js';
import { safeJoin, safeRelativePath } from '../node/safe-path.js';
import { capped, isStored, listEntries, openEntry, openZip, storedEntrySource, type ZipEntry, type ZipFile } from '../node/zip-read.js';
import { applyJsonPatchBytes, once, readFileCapped } from './apply-patch.js';
import { relatedLinks } from './links.js';
import { writeVerified, type ByteSource } from './verified-write.js';
import {
  MAX_PATCH_BYTES,
  DOC_LIMITS,
  DUMP_KIND,
  fail,
  packageName,
  packagedPatch,
  rsError,
  throwIfAborted,
  type Run,
} from './dump-run.js';

/**
 * Applying one downloaded package: each entry of its manifest checked (change, mapped path, bitstream present,
 * sizes, caps), then extracted and verified, patched from a change description in the package, or deleted.
 * @see Z39.99 §11.2, §13.2, §14.4
 */

/** What extracting one manifest entry needs. */
interface PackageCtx {
  run: Run;
  pkgUrl: string;
  tmp: string;
  zip: ZipFile;
  entries: Map<string, ZipEntry>;
  /** ZIP entry names the manifest refers to. */
  used: Set<string>;
  /** The package file, opened once for every stored entry read from it. */
  file: () => Promise<FileHandle>;
  progress: { files: number };
}

/**
 * The effect of one manifest entry; it returns what to report (in manifest order) once done. `staged` is
 * called when it no longer needs its extraction slot (its file only waits for a group commit).
 */
type Work = (staged: () => void) => Promise<() => void | Promise<void>>;

/**
 * Checks one manifest entry (change type, mapped path, bitstream present, sizes, cap) and returns its
 * local path and the work to do, or undefined for a change at or before the cursor; throws the first
 * problem found, before anything is read or written.
 */
function prepareItem(ctx: PackageCtx, item: Entry): { relPath: string; work: Work } | undefined {
  const { run, pkgUrl, tmp, zip, entries, used, progress } = ctx;
  const { opts, report, flavor } = run;
  const loc = item.loc;
  let work: Work;
  const change = flavor === 'change' ? item.md?.change : 'created';
  if (change !== 'created' && change !== 'updated' && change !== 'deleted') {
    throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has change '${change ?? ''}'.`, { loc });
  }
  if (flavor === 'change' && run.afterMs !== undefined) {
    // A package that straddles the cursor: changes at or before it were applied already (1.1 `datetime`, else `lastmod`).
    const at = parseW3CDatetime(item.md?.datetime ?? item.lastmod ?? '', true)?.ms;
    if (at !== undefined && at <= run.afterMs) return undefined;
  }
  const rel = safeRelativePath(opts.mapPath(loc));
  /** Writes a verified bitstream to `rel`, with the entry's lastmod as mtime. */
  const write = (
    body: AsyncIterable<Uint8Array> | ByteSource,
    expected: { length: number; hashes?: HashValue[] },
    staged: () => void,
  ) => {
    const lastmod = item.lastmod === undefined ? undefined : parseW3CDatetime(item.lastmod, true);
    return writeVerified({
      root: run.root,
      relPath: rel,
      body,
      expected,
      durability: run.durability,
      onVerified: staged,
      ...(lastmod ? { mtime: new Date(lastmod.ms) } : {}),
    });
  };
  /** Tells the caller (the state store) what was written. */
  const applied = (result: { length: number; hashes: Record<string, string> }) =>
    opts.onResource?.({
      loc,
      relPath: rel,
      change,
      applied: true,
      length: result.length,
      hashes: result.hashes,
      ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
      links: relatedLinks(item),
      package: pkgUrl,
    });
  if (change === 'deleted') {
    work = () => applyDeletion(run, pkgUrl, item, rel);
  } else {
    const path = item.md?.path;
    const patchLn = path === undefined ? packagedPatch(item) : undefined;
    if (path === undefined && patchLn !== undefined && change === 'updated') {
      // Only a change description in the package (§14.4): patch the local copy, verify by hash.
      const patchName = packageName(patchLn.path!);
      const patchEntry = entries.get(patchName);
      if (patchEntry === undefined)
        throw rsError('RS_ZIP', `Package '${pkgUrl}' lacks the patch '${patchLn.path!}' of '${loc}'.`, {
          url: pkgUrl,
          loc,
          path: patchLn.path,
        });
      used.add(patchName);
      const patchLimit = Math.min(patchEntry.uncompressedSize, MAX_PATCH_BYTES);
      if (patchEntry.uncompressedSize > MAX_PATCH_BYTES)
        throw rsError('RS_LIMIT_BYTES', `Patch '${patchName}' is larger than ${MAX_PATCH_BYTES} bytes.`, {
          loc,
          path: patchName,
        });
      const hashes = knownHashes(item.md?.hash);
      const length = parseLength(item.md?.length);
      work = async (staged) => {
        const chunks: Buffer[] = [];
        for await (const c of capped(await openEntry(zip, patchEntry, tmp), patchLimit, patchName, () => {}))
          chunks.push(Buffer.from(c));
        const local = await readFileCapped(safeJoin(opts.dest, rel), MAX_PATCH_BYTES).catch((err: unknown) => {
          throw rsError('RS_PATCH', `Patch for '${loc}' has no local copy to apply to.`, { loc }, err);
        });
        const bytes = applyJsonPatchBytes(
          local,
          Buffer.concat(chunks),
          { hashes, ...(length === undefined ? {} : { length }) },
          loc,
        );
        const result = await write(once(bytes), { length: bytes.length, hashes }, staged);
        return async () => {
          progress.files++;
          report.extracted++;
          report.patched++;
          report.updated++;
          report.bytes += result.length;
          await applied(result);
        };
      };
    } else {
      if (path === undefined) throw rsError('RS_INVALID_DOCUMENT', `Manifest entry '${loc}' has no path.`, { loc });
      const name = packageName(path);
      const zipEntry = entries.get(name);
      if (zipEntry === undefined || name.endsWith('/'))
        throw rsError('RS_ZIP', `Package '${pkgUrl}' lacks the bitstream '${path}' of '${loc}'.`, {
          url: pkgUrl,
          loc,
          path,
        });
      used.add(name);
      const length = parseLength(item.md?.length);
      const hashes = knownHashes(item.md?.hash);
      if (length !== undefined && zipEntry.uncompressedSize !== length) {
        throw rsError(
          'RS_LENGTH_MISMATCH',
          `ZIP entry '${name}' declares ${zipEntry.uncompressedSize} bytes, the manifest '${length}'.`,
          { loc, path, expected: length, actual: zipEntry.uncompressedSize },
        );
      }
      const limit = Math.min(length ?? zipEntry.uncompressedSize, zipEntry.uncompressedSize);
      if (run.extractedTotal + limit > run.maxTotal) {
        throw rsError('RS_LIMIT_BYTES', `ZIP entry '${name}' would pass the cap of ${run.maxTotal} extracted bytes.`, {
          loc,
          path,
          limit: run.maxTotal,
        });
      }
      run.extractedTotal += limit; // reserved before extraction starts
      if (hashes.length === 0) report.unverified.push(loc);
      work = async (staged) => {
        if (
          hashes.length > 0 &&
          (await opts.current?.(loc, rel, { ...(length === undefined ? {} : { length }), hashes })) === true
        ) {
          // the manifest's hashes say the destination holds these bytes: nothing to write
          staged();
          return async () => {
            progress.files++;
            report.unchanged++;
            await opts.onResource?.({
              loc,
              relPath: rel,
              change,
              applied: true,
              unchanged: true,
              links: relatedLinks(item),
              package: pkgUrl,
              ...(item.lastmod === undefined ? {} : { lastmod: item.lastmod }),
            });
          };
        }
        let written = 0;
        const onBytes = (n: number): void => {
          written += n;
          opts.onProgress?.({ phase: 'extract', package: pkgUrl, bytes: written, files: progress.files });
        };
        const body = isStored(zipEntry)
          ? await storedEntrySource(zip, zipEntry, await ctx.file(), onBytes)
          : capped(await openEntry(zip, zipEntry, tmp), limit, name, onBytes);
        const expected: { length: number; hashes?: HashValue[] } = {
          length: length ?? zipEntry.uncompressedSize,
        };
        if (hashes.length > 0) expected.hashes = hashes;
        const result = await write(body, expected, staged);
        return async () => {
          progress.files++;
          report.extracted++;
          report.bytes += result.length;
          if (change === 'updated') report.updated++;
          else report.created++;
          await applied(result);
        };
      };
    }
  }
  return { relPath: rel, work };
}

export async function extractPackage(run: Run, pkgUrl: string, tmp: string): Promise<void> {
  const { opts, report, flavor } = run;
  const zip = await openZip(tmp).catch((err: unknown) => {
    throw rsError(
      'RS_ZIP',
      `Package '${pkgUrl}' is not a readable ZIP file: ${messageOf(err)}.`,
      { url: pkgUrl },
      err,
    );
  });
  let packageFile: Promise<FileHandle> | undefined;
  try {
    const entries = await listEntries(zip, opts.maxEntries ?? 1_000_000, pkgUrl);
    const manifestEntry = entries.get('manifest.xml');
    if (manifestEntry === undefined)
      throw rsError('RS_ZIP', `Package '${pkgUrl}' has no manifest.xml at its top level.`, { url: pkgUrl });
    const used = new Set<string>(['manifest.xml']);
    const manifestStream = await openEntry(zip, manifestEntry);
    const reader = await readDocument(
      capped(manifestStream, DOC_LIMITS.maxBytes, 'manifest.xml', () => {}),
      {
        limits: DOC_LIMITS,
        ...(opts.signal ? { signal: opts.signal } : {}),
      },
    );
    // §11.2, §13.2: the manifest of the dump's kind
    const manifest = manifestKind(DUMP_KIND[flavor])!;
    if (reader.kind?.id !== manifest.id) {
      throw rsError(
        'RS_INVALID_DOCUMENT',
        `Package '${pkgUrl}' manifest.xml is not a ${manifest.name} (capability '${reader.header.md?.capability ?? ''}').`,
        { url: pkgUrl },
      );
    }
    // The manifest is read entry by entry while bitstreams are extracted (random access into the ZIP).
    // Checks run in manifest order; up to `concurrency` extractions overlap (changes to one path stay in
    // order); failures and `onResource` calls are reported in manifest order.
    const concurrency = Math.max(1, opts.concurrency ?? 4);
    const inFlight = new Set<Promise<void>>();
    /** Extractions holding a slot: not yet verified (or not done). */
    const active = new Set<Promise<void>>();
    const maxInFlight = concurrency * 64;
    const lastForPath = new Map<string, Promise<void>>();
    let turn: Promise<void> = Promise.resolve();
    let aborted: Error | undefined;
    const ctx: PackageCtx = {
      run,
      pkgUrl,
      tmp,
      zip,
      entries,
      used,
      progress: { files: 0 },
      file: () => (packageFile ??= open(tmp, 'r')),
    };
    try {
      for await (const item of reader.entries) {
        throwIfAborted(opts.signal);
        if (aborted !== undefined) break;
        const loc = item.loc;
        const where = { loc, ...(item.md?.path === undefined ? {} : { path: item.md.path }) };
        const myTurn = turn;
        let release!: () => void;
        turn = new Promise((r) => (release = r));
        /** Waits for the previous item's report, reports this one, lets the next one report. */
        const report1 = async (fn: () => void | Promise<void>): Promise<void> => {
          await myTurn;
          try {
            await fn();
          } finally {
            release();
          }
        };
        let work: Work;
        let relPath: string | undefined;
        try {
          const prepared = prepareItem(ctx, item);
          if (prepared === undefined) {
            await report1(() => {
              report.skippedBeforeCursor++;
            });
            continue;
          }
          ({ relPath, work } = prepared);
        } catch (err) {
          // A check failed: nothing to extract; report it in its turn.
          await report1(() => fail(run, pkgUrl, err, where));
          continue;
        }
        const before = relPath === undefined ? undefined : lastForPath.get(relPath);
        let staged!: () => void;
        const slot = new Promise<void>((r) => (staged = r));
        active.add(slot);
        void slot.then(() => active.delete(slot));
        const task: Promise<void> = (async () => {
          await before;
          let done: () => void | Promise<void>;
          try {
            done = await work(staged);
          } catch (err) {
            if (isResourceSyncError(err, 'RS_ABORTED')) aborted ??= err;
            done = () => fail(run, pkgUrl, err, where);
          }
          await report1(done);
        })().catch((err: unknown) => {
          aborted ??= err instanceof Error ? err : new Error(String(err)); // an onResource callback threw
        });
        if (relPath !== undefined) lastForPath.set(relPath, task);
        inFlight.add(task);
        void task.then(() => {
          staged();
          inFlight.delete(task);
          if (relPath !== undefined && lastForPath.get(relPath) === task) lastForPath.delete(relPath);
        });
        while (active.size >= concurrency) await Promise.race(active);
        while (inFlight.size >= maxInFlight) await Promise.race(inFlight);
      }
    } finally {
      // Never leave extractions running behind an error or an abort (the package file is removed next).
      await Promise.all(inFlight);
    }
    if (aborted !== undefined) throw aborted;
    for (const name of entries.keys()) {
      if (!used.has(name) && !name.endsWith('/')) report.ignoredEntries.push(`${pkgUrl}#${name}`);
    }
  } finally {
    zip.close();
    await packageFile?.then((h) => h.close()).catch(() => undefined);
  }
}

/** Removes a deleted resource's file (only with `delete: true`); returns what to report in its turn. */
async function applyDeletion(run: Run, pkgUrl: string, item: Entry, relPath: string): Promise<() => Promise<void>> {
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
  await rm(safeJoin(opts.dest, relPath), { force: true });
  return async () => {
    report.deleted++;
    await opts.onResource?.({ ...base, applied: true });
  };
}
