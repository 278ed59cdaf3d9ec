import { open, type FileHandle } from 'node:fs/promises';
import { isResourceSyncError, messageOf } from '../core/errors.js';
import { manifestKind } from '../core/model/document-kinds.js';
import type { Entry } from '../core/model/types.js';
import { readDocument } from '../core/xml/read-document.js';
import { capped, listEntries, openEntry, openZip, type ZipEntry, type ZipFile } from '../node/zip-read.js';
import { orderedPool } from './run-pool.js';
import { DOC_LIMITS, DUMP_KIND, fail, rsError, throwIfAborted, type Run } from './dump-run.js';
import { prepareItem, type PackageCtx, type PreparedItem } from './dump-item.js';

/**
 * Applying one downloaded package: its manifest read entry by entry, each entry checked in manifest order and
 * its bitstream extracted, patched or deleted (`dump-item.ts`), up to `concurrency` at a time.
 * @see Z39.99 §11.2, §13.2
 */

/** Opens the package at `tmp`, applies its manifest, and lists the ZIP entries the manifest does not describe. */
export async function extractPackage(run: Run, pkgUrl: string, tmp: string): Promise<void> {
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
    const entries = await listEntries(zip, run.opts.maxEntries ?? 1_000_000, pkgUrl);
    const manifest = await readManifest(run, pkgUrl, zip, entries);
    const ctx: PackageCtx = {
      run,
      pkgUrl,
      tmp,
      zip,
      entries,
      used: new Set<string>(['manifest.xml']),
      progress: { files: 0 },
      file: () => (packageFile ??= open(tmp, 'r')),
    };
    await applyManifest(ctx, manifest);
    for (const name of entries.keys()) {
      if (!ctx.used.has(name) && !name.endsWith('/')) run.report.ignoredEntries.push(`${pkgUrl}#${name}`);
    }
  } finally {
    zip.close();
    await packageFile?.then((h) => h.close()).catch(() => undefined);
  }
}

/** The package's `manifest.xml`, which must be the manifest of the dump's kind; its entries are read as they are applied. */
async function readManifest(run: Run, pkgUrl: string, zip: ZipFile, entries: Map<string, ZipEntry>): Promise<AsyncIterable<Entry>> {
  const { opts, flavor } = run;
  const manifestEntry = entries.get('manifest.xml');
  if (manifestEntry === undefined)
    throw rsError('RS_ZIP', `Package '${pkgUrl}' has no manifest.xml at its top level.`, { url: pkgUrl });
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
  return reader.entries;
}

/** Each manifest entry checked as it is read (stopping at an abort). */
async function* preparedItems(ctx: PackageCtx, manifest: AsyncIterable<Entry>): AsyncGenerator<PreparedItem> {
  for await (const item of manifest) {
    throwIfAborted(ctx.run.opts.signal);
    yield prepareItem(ctx, item);
  }
}

/**
 * The manifest is read entry by entry while bitstreams are extracted (random access into the ZIP). Checks run
 * in manifest order; up to `concurrency` extractions overlap (changes to one path stay in order); failures and
 * `onResource` calls are reported in manifest order. An abort, or an `onResource` callback that throws, stops
 * the reading; the extractions under way finish (the package file is removed next) before it rejects.
 */
async function applyManifest(ctx: PackageCtx, manifest: AsyncIterable<Entry>): Promise<void> {
  const { run, pkgUrl } = ctx;
  const concurrency = Math.max(1, run.opts.concurrency ?? 4);
  await orderedPool(
    preparedItems(ctx, manifest),
    concurrency,
    async (prepared, staged) => {
      try {
        return await prepared.work(staged);
      } catch (err) {
        const failed = () => fail(run, pkgUrl, err, prepared.where);
        if (!isResourceSyncError(err, 'RS_ABORTED')) return failed;
        return () => {
          failed();
          throw err;
        };
      }
    },
    { keyOf: (prepared) => prepared.relPath },
  );
}
