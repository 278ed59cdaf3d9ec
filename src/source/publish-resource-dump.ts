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
import { writeFileAtomic } from '../node/file-sink.js';
import { atTimes, header, packageEntry, resourceEntry, snapshotEntry } from './documents.js';
import { archivesLn, DEFAULT_SNAPSHOT_RETENTION, docBytes, ts, writeDoc, type Context } from './publish-context.js';
import type { Rewrite } from './publish-html.js';
import { DOCUMENTS_PREFIX } from './url-path.js';
import type { DumpRecord, SnapshotStore, StoredResource } from './snapshot-store.js';
import { writeZipPackage, type PackageItem } from './zip-package.js';

interface DumpFiles {
  doc: string;
  zips: string[];
  manifests: string[];
}

/** Resource Dump (§11.1) with its packages and manifests (§11.2), and the Resource Dump Archive. */
export async function resourceDump(
  ctx: Context,
  store: SnapshotStore,
  set: { name: string; dir: string },
  o: {
    docUrl: string;
    capUrl: string;
    resBase: string;
    rewrite: Rewrite | undefined;
    at: number;
    completed: number;
    rebuild: boolean;
  },
): Promise<{ documents: string[]; available: boolean }> {
  const u = (name: string): string => o.docUrl + name;
  const f = (name: string): string => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name);
  const x = ctx.x;
  const archiveLn = archivesLn(u(`resourcedump-archive${x}`));
  let dumps = store.dumps('resourcedump');
  if (o.rebuild || dumps.length === 0 || store.getMeta('rd_stale') === '1' || !existsSync(f(`resourcedump${x}`))) {
    const n = Number(store.getMeta('rd_seq') ?? '0') + 1;
    store.setMeta('rd_seq', String(n));
    const prefix = `resourcedump-${n}`;
    const files: DumpFiles = { doc: `${prefix}${x}`, zips: [], manifests: [] };
    const entries: Entry[] = [];
    let batch: StoredResource[] = [];
    let bytes = 0;
    const flush = async (): Promise<void> => {
      const k = files.zips.length + 1;
      const zipName = `${prefix}-part${k}.zip`;
      const manName = `${prefix}-part${k}-manifest${x}`;
      const start = ctx.now();
      const manifest = await docBytes(
        header('resource-dump-manifest', atTimes(o.at, o.completed), o.capUrl),
        batch.map((res) => resourceEntry(o.resBase, res, `/resources/${res.path}`)),
      );
      const items: PackageItem[] = batch.map((res) => {
        const rw = o.rewrite?.(res.path);
        return {
          zipPath: `resources/${res.path}`,
          file: join(set.dir, ...res.path.split('/')),
          size: res.size,
          mtimeMs: res.mtimeMs,
          ...(res.hashes.md5 !== undefined ? { md5: res.hashes.md5 } : {}),
          ...(rw !== undefined ? { rewrite: rw } : {}),
        };
      });
      const pkg = await writeZipPackage(f(zipName), manifest, items, {
        now: ctx.now,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
      await writeFileAtomic(f(manName), [ctx.gzip ? gzipSync(manifest) : manifest]);
      entries.push(packageEntry(u(zipName), pkg, { at: start, completed: ctx.now() }, u(manName)));
      files.zips.push(zipName);
      files.manifests.push(manName);
      batch = [];
      bytes = 0;
    };
    const maxPkg = ctx.dumps!.maxPackageBytes;
    const perPackage = Math.min(ctx.maxEntries, 50_000);
    // Streams the snapshot: nothing writes to the store until the loop ends.
    try {
      for (const res of store.resources()) {
        if (batch.length > 0 && (bytes + res.size > maxPkg || batch.length >= perPackage)) {
          await flush();
        }
        batch.push(res);
        bytes += res.size;
      }
      if (batch.length > 0) await flush();
    } catch (err) {
      // A file changed or went away since the scan: drop this dump, keep the previous one, retry next run.
      const gone = (err as { code?: string; cause?: { code?: string } }).cause?.code === 'ENOENT';
      if (!isResourceSyncError(err, 'RS_HASH_MISMATCH') && !(isResourceSyncError(err, 'RS_ZIP') && gone)) throw err;
      for (const name of [...files.zips, ...files.manifests]) rmSync(f(name), { force: true });
      store.setMeta('rd_stale', '1');
      return { documents: dumps.length > 0 ? dumpDocuments(dumps, u, x) : [], available: dumps.length > 0 };
    }
    const done = ctx.now();
    const h = header('resource-dump', atTimes(o.at, done), o.capUrl, undefined, archiveLn);
    await writeDoc(f(files.doc), h, entries, ctx.gzip);
    await writeDoc(f(`resourcedump${x}`), h, entries, ctx.gzip);
    store.addDump({ kind: 'resourcedump', at: o.at, completed: done, data: JSON.stringify(files) });
    store.setMeta('rd_stale', '0');
    dumps = store.dumps('resourcedump');
  }
  const keepDumps = ctx.retention ?? DEFAULT_SNAPSHOT_RETENTION;
  if (dumps.length > keepDumps) {
    for (const d of dumps.slice(0, dumps.length - keepDumps)) {
      const files = JSON.parse(d.data) as DumpFiles;
      for (const name of [files.doc, ...files.zips, ...files.manifests]) rmSync(f(name), { force: true });
      store.removeDump(d.id);
    }
    dumps = store.dumps('resourcedump');
  }
  await writeDoc(
    f(`resourcedump-archive${x}`),
    header('resource-dump-archive', {}, o.capUrl),
    dumps.map((d) => {
      const e = snapshotEntry(u((JSON.parse(d.data) as DumpFiles).doc), d.at!, d.completed);
      if (d.completed !== undefined) e.lastmod = ts(d.completed);
      return e;
    }),
    ctx.gzip,
  );
  return { documents: dumpDocuments(dumps, u, x), available: true };
}

function dumpDocuments(dumps: DumpRecord[], u: (name: string) => string, x: string): string[] {
  const documents = [u(`resourcedump${x}`), u(`resourcedump-archive${x}`)];
  for (const d of dumps) {
    const files = JSON.parse(d.data) as DumpFiles;
    documents.push(...[files.doc, ...files.zips, ...files.manifests].map(u));
  }
  return documents;
}
