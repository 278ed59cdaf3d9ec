/**
 * The Change Dump of a published set (§13.1): one ZIP package per closed Change List with its Change Dump
 * Manifest (§13.2), and the Change Dump Archive (ResourceSync Archives).
 * @see Z39.99 §13; ResourceSync Archives §6
 */
import { existsSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { ResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { writeFileAtomic } from '../node/file-sink.js';
import { changeEntry, fromTimes, header, intervalEntry, packageEntry } from './documents.js';
import { archivesLn, docBytes, pad, writeDoc, type Context } from './publish-context.js';
import { sameFile } from './publish-files.js';
import type { Rewrite } from './publish-html.js';
import { DOCUMENTS_PREFIX } from './url-path.js';
import type { ChangePeriod, ChangeRecord, DumpRecord } from './snapshot-rows.js';
import type { SourceSnapshots } from './source-snapshots.js';
import { bitstreamPath, PACKAGE_EXTENSIONS, PACKAGE_MEDIA_TYPES, writeDumpPackage, type DumpFormat, type DumpItem } from './warc-package.js';

interface ChangePackage {
  /** The package's file name (a `.zip`, or a `.warc.gz` when `format` is `warc`). */
  zip: string;
  manifest: string;
  length: number;
  md5: string;
  format?: 'warc';
}

/** Where a set's Change Dump goes and what it packages. */
interface ChangeDumpTarget {
  docUrl: string;
  capUrl: string;
  resBase: string;
  /** The entry with the resource's further links (`SetPaths.linked`). */
  linked: (path: string, entry: Entry) => Entry;
  rewrite: Rewrite | undefined;
  bitDir: string;
  closed: ChangePeriod[];
  open: ChangePeriod;
  fresh: boolean;
}

/** The URLs and files of a set's Change Dump documents. */
interface ChangeDumpNames {
  documentUrl: (name: string) => string;
  documentFile: (name: string) => string;
  /** The Change Dump of one period's package. */
  periodDoc: (p: ChangePeriod) => string;
  archiveUrl: string;
}

/**
 * Change Dump (§13.1): one package per closed Change List, each with a Change Dump Manifest (§13.2).
 * `changedump.xml` lists every kept package; each package also has a Change Dump of its own,
 * `changedump-NNNNN.xml` (the period of its Change List), and the Change Dump Archive lists those.
 * @see ResourceSync Archives §6
 */
export async function changeDump(
  ctx: Context,
  snapshots: SourceSnapshots,
  set: { name: string; dir: string },
  target: ChangeDumpTarget,
): Promise<{ documents: string[]; archived: boolean }> {
  const ext = ctx.ext;
  const documentUrl = (name: string): string => target.docUrl + name;
  const names: ChangeDumpNames = {
    documentUrl,
    documentFile: (name) => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name),
    periodDoc: (p) => `changedump-${pad(p.id)}${ext}`,
    archiveUrl: documentUrl(`changedump-archive${ext}`),
  };
  const have = new Map((await snapshots.dumps('changedump')).map((d) => [d.period!, d]));
  const retained = new Set(target.closed.map((p) => p.id));
  for (const [period, d] of have) {
    if (!retained.has(period)) {
      await snapshots.removeDump(d.id);
      have.delete(period);
    }
  }
  for (const p of target.closed) {
    const old = have.get(p.id);
    const kept = old !== undefined && !target.fresh && existsSync(names.documentFile((JSON.parse(old.data) as ChangePackage).zip)) && existsSync(names.documentFile(names.periodDoc(p)));
    if (kept) continue;
    if (old !== undefined) {
      // a package of another format (or options) is replaced: one dump never mixes formats (§13.1)
      const was = JSON.parse(old.data) as ChangePackage;
      for (const name of [was.zip, was.manifest]) rmSync(names.documentFile(name), { force: true });
      await snapshots.removeDump(old.id);
    }
    const record = await writePeriodPackage(ctx, snapshots, set, target, names, p);
    if (record !== undefined) have.set(p.id, record);
  }
  const packages = target.closed.filter((p) => have.has(p.id)).map((p) => ({ p, d: JSON.parse(have.get(p.id)!.data) as ChangePackage }));
  return writeChangeDumpDocuments(ctx, target, names, packages);
}

/**
 * The package of one closed period (its ZIP, its manifest and its own Change Dump), recorded in the snapshots;
 * undefined when a kept bitstream was altered (the package is left for a later call).
 */
async function writePeriodPackage(
  ctx: Context,
  snapshots: SourceSnapshots,
  set: { dir: string },
  target: ChangeDumpTarget,
  names: ChangeDumpNames,
  p: ChangePeriod,
): Promise<DumpRecord | undefined> {
  const changes: ChangeRecord[] = [];
  for await (const c of snapshots.changes(p.id)) changes.push(c);
  const format = ctx.dumps!.format ?? 'zip';
  const { items, entries } = packageItems(set.dir, target, changes, format);
  const manifest = await docBytes(header('change-dump-manifest', fromTimes(p.from, p.until), { up: target.capUrl }), entries);
  const zip = `changedump-${pad(p.id)}${PACKAGE_EXTENSIONS[format]}`;
  const manifestName = `changedump-${pad(p.id)}-manifest${ctx.ext}`;
  let pkg;
  try {
    pkg = await writeDumpPackage(format, names.documentFile(zip), manifest, items, {
      now: ctx.now,
      manifestUrl: names.documentUrl(manifestName),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
  } catch (err) {
    if ((err as ResourceSyncError).code !== 'RS_HASH_MISMATCH') throw err;
    return undefined; // a kept bitstream was altered: leave this package for a later call
  }
  await writeFileAtomic(names.documentFile(manifestName), [ctx.gzip ? gzipSync(manifest) : manifest]);
  const data: ChangePackage = { zip, manifest: manifestName, length: pkg.length, md5: pkg.md5, ...(format === 'warc' ? { format } : {}) };
  await writeDoc(
    names.documentFile(names.periodDoc(p)),
    header('change-dump', fromTimes(p.from, p.until), { up: target.capUrl, links: archivesLn(names.archiveUrl) }),
    [packageEntry(names.documentUrl(zip), data, { from: p.from, until: p.until! }, names.documentUrl(manifestName), PACKAGE_MEDIA_TYPES[format])],
    ctx.gzip,
  );
  const record = await snapshots.addDump({ kind: 'changedump', from: p.from, until: p.until!, period: p.id, data: JSON.stringify(data) });
  for (const it of items) if (it.file.startsWith(target.bitDir)) rmSync(it.file, { force: true });
  return record;
}

/** The package items and manifest entries of a period's changes (a deletion has an entry and no item). */
function packageItems(
  setDir: string,
  target: ChangeDumpTarget,
  changes: readonly ChangeRecord[],
  format: DumpFormat,
): { items: DumpItem[]; entries: Entry[] } {
  const items: DumpItem[] = [];
  const entries: Entry[] = [];
  for (const c of changes) {
    if (c.change === 'deleted') {
      entries.push(target.linked(c.path, changeEntry(target.resBase, c)));
      continue;
    }
    const zipPath = `changes/${c.seq}/${c.path}`;
    const copy = join(target.bitDir, String(c.seq));
    let file = copy;
    if (!existsSync(copy)) {
      // no kept bitstream (dumps enabled later): the current file serves if it still has that content
      const current = join(setDir, ...c.path.split('/'));
      if (!sameFile(current, c)) continue;
      file = current;
    }
    const rewrite = target.rewrite?.(c.path);
    const entry = target.linked(c.path, changeEntry(target.resBase, c));
    const item: DumpItem = {
      zipPath,
      file,
      size: rewrite !== undefined && c.size !== undefined ? c.size : statSync(file).size,
      mtimeMs: c.mtimeMs ?? c.datetime,
      loc: entry.loc,
      ...(entry.md?.type !== undefined ? { type: entry.md.type } : {}),
      ...(entry.md?.datetime !== undefined ? { date: entry.md.datetime } : {}),
      ...(c.hashes?.md5 !== undefined ? { md5: c.hashes.md5 } : {}),
      ...(rewrite !== undefined ? { rewrite } : {}),
    };
    entry.md = { ...entry.md, path: bitstreamPath(format, item) };
    items.push(item);
    entries.push(entry);
  }
  return { items, entries };
}

/** `changedump.xml` over every kept package, and the Change Dump Archive over their periods' Change Dumps. */
async function writeChangeDumpDocuments(
  ctx: Context,
  target: ChangeDumpTarget,
  names: ChangeDumpNames,
  packages: Array<{ p: ChangePeriod; d: ChangePackage }>,
): Promise<{ documents: string[]; archived: boolean }> {
  const { documentUrl, documentFile, periodDoc, archiveUrl } = names;
  const ext = ctx.ext;
  const archived = packages.length > 0;
  const from = target.closed[0]?.from ?? target.open.from;
  await writeDoc(
    documentFile(`changedump${ext}`),
    header('change-dump', fromTimes(from), { up: target.capUrl, links: archivesLn(archived ? archiveUrl : undefined) }),
    packages.map(({ p, d }) => packageEntry(documentUrl(d.zip), d, { from: p.from, until: p.until! }, documentUrl(d.manifest), PACKAGE_MEDIA_TYPES[d.format ?? 'zip'])),
    ctx.gzip,
  );
  if (archived) {
    await writeDoc(
      documentFile(`changedump-archive${ext}`),
      header('change-dump-archive', {}, { up: target.capUrl }),
      packages.map(({ p }) => intervalEntry(documentUrl(periodDoc(p)), p.from, p.until)),
      ctx.gzip,
    );
  } else {
    rmSync(documentFile(`changedump-archive${ext}`), { force: true });
  }
  return {
    documents: [
      documentUrl(`changedump${ext}`),
      ...(archived ? [archiveUrl] : []),
      ...packages.flatMap(({ p, d }) => [documentUrl(periodDoc(p)), documentUrl(d.zip), documentUrl(d.manifest)]),
    ],
    archived,
  };
}
