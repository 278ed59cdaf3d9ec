/**
 * The Resource Dump of a published set (§11.1): the latest snapshot in ZIP packages with their Resource Dump
 * Manifests (§11.2), and the Resource Dump Archive (ResourceSync Archives).
 * @see Z39.99 §11; ResourceSync Archives §4
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { isResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import { writeFileAtomic } from '../node/file-sink.js';
import { atTimes, header, packageEntry, resourceEntry, snapshotEntry } from './documents.js';
import { archivesLn, DEFAULT_SNAPSHOT_RETENTION, docBytes, writeDoc, type Context } from './publish-context.js';
import type { Rewrite } from './publish-html.js';
import { DOCUMENTS_PREFIX } from './url-path.js';
import type { DumpRecord, StoredResource } from './snapshot-rows.js';
import type { SourceSnapshots } from './source-snapshots.js';
import { bitstreamPath, PACKAGE_EXTENSIONS, PACKAGE_MEDIA_TYPES, writeDumpPackage, type DumpItem } from './warc-package.js';

interface DumpFiles {
  doc: string;
  zips: string[];
  manifests: string[];
}

/** Where a Resource Dump goes and what it packages. */
interface DumpTarget {
  docUrl: string;
  capUrl: string;
  resBase: string;
  /** The entry with the resource's further links (`SetPaths.linked`). */
  linked: (path: string, entry: Entry) => Entry;
  rewrite: Rewrite | undefined;
  at: number;
  completed: number;
  rebuild: boolean;
}

/** Resource Dump (§11.1) with its packages and manifests (§11.2), and the Resource Dump Archive. */
export async function resourceDump(
  ctx: Context,
  snapshots: SourceSnapshots,
  set: { name: string; dir: string },
  target: DumpTarget,
): Promise<{ documents: string[]; available: boolean }> {
  const documentUrl = (name: string): string => target.docUrl + name;
  const documentFile = (name: string): string => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name);
  const ext = ctx.ext;
  let dumps = await snapshots.dumps('resourcedump');
  const stale = (await snapshots.getMeta('rd_stale')) === '1';
  if (target.rebuild || dumps.length === 0 || stale || !existsSync(documentFile(`resourcedump${ext}`))) {
    const n = Number((await snapshots.getMeta('rd_seq')) ?? '0') + 1;
    await snapshots.setMeta('rd_seq', String(n));
    const packages = new DumpPackages(ctx, set.dir, target, `resourcedump-${n}`, { documentUrl, documentFile });
    if (!(await packages.writeAll(snapshots.resources()))) {
      await snapshots.setMeta('rd_stale', '1');
      return { documents: dumps.length > 0 ? dumpDocuments(dumps, documentUrl, ext) : [], available: dumps.length > 0 };
    }
    const done = ctx.now();
    const dumpHeader = header('resource-dump', atTimes(target.at, done), { up: target.capUrl, links: archivesLn(documentUrl(`resourcedump-archive${ext}`)) });
    await writeDoc(documentFile(packages.files.doc), dumpHeader, packages.entries, ctx.gzip);
    await writeDoc(documentFile(`resourcedump${ext}`), dumpHeader, packages.entries, ctx.gzip);
    await snapshots.addDump({ kind: 'resourcedump', at: target.at, completed: done, data: JSON.stringify(packages.files) });
    await snapshots.setMeta('rd_stale', '0');
    dumps = await snapshots.dumps('resourcedump');
  }
  const keepDumps = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
  if (dumps.length > keepDumps) {
    for (const d of dumps.slice(0, dumps.length - keepDumps)) {
      const files = JSON.parse(d.data) as DumpFiles;
      for (const name of [files.doc, ...files.zips, ...files.manifests]) rmSync(documentFile(name), { force: true });
      await snapshots.removeDump(d.id);
    }
    dumps = await snapshots.dumps('resourcedump');
  }
  await writeDoc(
    documentFile(`resourcedump-archive${ext}`),
    header('resource-dump-archive', {}, { up: target.capUrl }),
    dumps.map((d) => {
      const e = snapshotEntry(documentUrl((JSON.parse(d.data) as DumpFiles).doc), d.at!, d.completed);
      if (d.completed !== undefined) e.lastmod = formatW3CDatetime(d.completed);
      return e;
    }),
    ctx.gzip,
  );
  return { documents: dumpDocuments(dumps, documentUrl, ext), available: true };
}

/** The packages of one Resource Dump, written as the snapshot streams by. */
class DumpPackages {
  readonly files: DumpFiles;
  /** The Resource Dump's entries, one per package written. */
  readonly entries: Entry[] = [];
  private batch: StoredResource[] = [];
  private bytes = 0;

  constructor(
    private readonly ctx: Context,
    private readonly setDir: string,
    private readonly target: DumpTarget,
    private readonly prefix: string,
    private readonly names: { documentUrl: (name: string) => string; documentFile: (name: string) => string },
  ) {
    this.files = { doc: `${prefix}${ctx.ext}`, zips: [], manifests: [] };
  }

  /**
   * Packages every resource of `resources`, splitting at the package size and entry limits. False when a file
   * changed or went away since the scan: the packages written are removed (the previous dump is kept; the next
   * run retries).
   */
  async writeAll(resources: AsyncIterable<StoredResource>): Promise<boolean> {
    const maxPackageBytes = this.ctx.dumps!.maxPackageBytes;
    const perPackage = Math.min(this.ctx.maxEntries, 50_000);
    // Streams the snapshot: nothing writes to the snapshots until the loop ends.
    try {
      for await (const res of resources) {
        if (this.batch.length > 0 && (this.bytes + res.size > maxPackageBytes || this.batch.length >= perPackage)) {
          await this.flush();
        }
        this.batch.push(res);
        this.bytes += res.size;
      }
      if (this.batch.length > 0) await this.flush();
      return true;
    } catch (err) {
      const gone = (err as { code?: string; cause?: { code?: string } }).cause?.code === 'ENOENT';
      if (!isResourceSyncError(err, 'RS_HASH_MISMATCH') && !((isResourceSyncError(err, 'RS_ZIP') || isResourceSyncError(err, 'RS_WARC')) && gone)) throw err;
      for (const name of [...this.files.zips, ...this.files.manifests]) rmSync(this.names.documentFile(name), { force: true });
      return false;
    }
  }

  /** Writes the batch as one package with its manifest. */
  private async flush(): Promise<void> {
    const { ctx, target, names } = this;
    const format = ctx.dumps!.format ?? 'zip';
    const k = this.files.zips.length + 1;
    const zipName = `${this.prefix}-part${k}${PACKAGE_EXTENSIONS[format]}`;
    const manifestName = `${this.prefix}-part${k}-manifest${ctx.ext}`;
    const start = ctx.now();
    const entries = this.batch.map((res) => target.linked(res.path, resourceEntry(target.resBase, res)));
    const items: DumpItem[] = this.batch.map((res, i) => {
      const rewrite = target.rewrite?.(res.path);
      const entry = entries[i]!;
      return {
        zipPath: `resources/${res.path}`,
        file: join(this.setDir, ...res.path.split('/')),
        size: res.size,
        mtimeMs: res.mtimeMs,
        loc: entry.loc,
        ...(entry.md?.type !== undefined ? { type: entry.md.type } : {}),
        ...(entry.lastmod !== undefined ? { date: entry.lastmod } : {}),
        ...(res.hashes.md5 !== undefined ? { md5: res.hashes.md5 } : {}),
        ...(rewrite !== undefined ? { rewrite } : {}),
      };
    });
    entries.forEach((e, i) => (e.md = { ...e.md, path: bitstreamPath(format, items[i]!) }));
    const manifest = await docBytes(header('resource-dump-manifest', atTimes(target.at, target.completed), { up: target.capUrl }), entries);
    const pkg = await writeDumpPackage(format, names.documentFile(zipName), manifest, items, {
      now: ctx.now,
      manifestUrl: names.documentUrl(manifestName),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    await writeFileAtomic(names.documentFile(manifestName), [ctx.gzip ? gzipSync(manifest) : manifest]);
    this.entries.push(packageEntry(names.documentUrl(zipName), pkg, { at: start, completed: ctx.now() }, names.documentUrl(manifestName), PACKAGE_MEDIA_TYPES[format]));
    this.files.zips.push(zipName);
    this.files.manifests.push(manifestName);
    this.batch = [];
    this.bytes = 0;
  }
}

function dumpDocuments(dumps: DumpRecord[], documentUrl: (name: string) => string, ext: string): string[] {
  const documents = [documentUrl(`resourcedump${ext}`), documentUrl(`resourcedump-archive${ext}`)];
  for (const d of dumps) {
    const files = JSON.parse(d.data) as DumpFiles;
    documents.push(...[files.doc, ...files.zips, ...files.manifests].map(documentUrl));
  }
  return documents;
}
