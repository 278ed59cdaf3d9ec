import { isResourceSyncError } from '../core/errors.js';
import { manifestKind } from '../core/model/document-kinds.js';
import type { Entry } from '../core/model/types.js';
import { readDocument } from '../core/xml/read-document.js';
import { orderedPool } from './run-pool.js';
import { DOC_LIMITS, DUMP_KIND, fail, rsError, throwIfAborted, type Run } from './dump-run.js';
import { prepareItem, type PackageCtx, type PreparedItem } from './dump-item.js';
import { openPackage, type OpenPackage } from './dump-package.js';

/**
 * Applying one downloaded package (ZIP or WARC, `dump-package.ts`): its manifest read entry by entry, each entry
 * checked in manifest order and its bitstream extracted, patched or deleted (`dump-item.ts`), up to
 * `concurrency` at a time.
 * @see Z39.99 §11.2, §13.2
 */

/** Opens the package at `tmp`, applies its manifest, and lists the bitstreams the manifest does not describe. */
export async function extractPackage(run: Run, pkgUrl: string, tmp: string): Promise<void> {
  const pkg = await openPackage(run, pkgUrl, tmp);
  try {
    const manifest = await readManifest(run, pkgUrl, pkg);
    const ctx: PackageCtx = { run, pkgUrl, pkg, used: new Set<string>([pkg.manifestName]), progress: { files: 0 } };
    await applyManifest(ctx, manifest);
    for (const name of pkg.names()) {
      if (!ctx.used.has(name)) run.report.ignoredEntries.push(`${pkgUrl}#${name}`);
    }
  } finally {
    await pkg.close();
  }
}

/** The package's manifest (`manifest.xml`, or a WARC's manifest record), which must be the manifest of the dump's kind; its entries are read as they are applied. */
async function readManifest(run: Run, pkgUrl: string, pkg: OpenPackage): Promise<AsyncIterable<Entry>> {
  const { opts, flavor } = run;
  const reader = await readDocument(await pkg.manifest(), {
    limits: DOC_LIMITS,
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  // §11.2, §13.2: the manifest of the dump's kind
  const manifest = manifestKind(DUMP_KIND[flavor])!;
  if (reader.kind?.id !== manifest.id) {
    throw rsError(
      'RS_INVALID_DOCUMENT',
      `Package '${pkgUrl}' manifest${pkg.format === 'zip' ? '.xml' : ''} is not a ${manifest.name} (capability '${reader.header.md?.capability ?? ''}').`,
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
