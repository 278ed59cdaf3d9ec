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
import type { ChangePeriod, SnapshotStore } from './snapshot-store.js';
import { writeZipPackage, type PackageItem } from './zip-package.js';

interface ChangePackage {
  zip: string;
  manifest: string;
  length: number;
  md5: string;
}

/**
 * Change Dump (§13.1): one package per closed Change List, each with a Change Dump Manifest (§13.2).
 * `changedump.xml` lists every kept package; each package also has a Change Dump of its own,
 * `changedump-NNNNN.xml` (the period of its Change List), and the Change Dump Archive lists those.
 * @see ResourceSync Archives §6
 */
export async function changeDump(
  ctx: Context,
  store: SnapshotStore,
  set: { name: string; dir: string },
  o: {
    docUrl: string;
    capUrl: string;
    resBase: string;
    rewrite: Rewrite | undefined;
    bitDir: string;
    closed: ChangePeriod[];
    open: ChangePeriod;
    fresh: boolean;
  },
): Promise<{ documents: string[]; archived: boolean }> {
  const u = (name: string): string => o.docUrl + name;
  const f = (name: string): string => join(ctx.outDir, DOCUMENTS_PREFIX, set.name, name);
  const x = ctx.x;
  const archiveUrl = u(`changedump-archive${x}`);
  const periodDoc = (p: ChangePeriod): string => `changedump-${pad(p.id)}${x}`;
  const have = new Map(store.dumps('changedump').map((d) => [d.period!, d]));
  const retained = new Set(o.closed.map((p) => p.id));
  for (const [period, d] of have) {
    if (!retained.has(period)) {
      store.removeDump(d.id);
      have.delete(period);
    }
  }
  for (const p of o.closed) {
    const old = have.get(p.id);
    if (
      old !== undefined &&
      !o.fresh &&
      existsSync(f((JSON.parse(old.data) as ChangePackage).zip)) &&
      existsSync(f(periodDoc(p)))
    )
      continue;
    if (old !== undefined) store.removeDump(old.id);
    const changes = [...store.changes(p.id)];
    const items: PackageItem[] = [];
    const entries: Entry[] = [];
    for (const c of changes) {
      if (c.change === 'deleted') {
        entries.push(changeEntry(o.resBase, c));
        continue;
      }
      const zipPath = `changes/${c.seq}/${c.path}`;
      const copy = join(o.bitDir, String(c.seq));
      let file = copy;
      if (!existsSync(copy)) {
        // no kept bitstream (dumps enabled later): the current file serves if it still has that content
        const current = join(set.dir, ...c.path.split('/'));
        if (!sameFile(current, c)) continue;
        file = current;
      }
      const rw = o.rewrite?.(c.path);
      items.push({
        zipPath,
        file,
        size: rw !== undefined && c.size !== undefined ? c.size : statSync(file).size,
        mtimeMs: c.mtimeMs ?? c.datetime,
        ...(c.hashes?.md5 !== undefined ? { md5: c.hashes.md5 } : {}),
        ...(rw !== undefined ? { rewrite: rw } : {}),
      });
      entries.push(changeEntry(o.resBase, c, `/${zipPath}`));
    }
    const manifest = await docBytes(header('change-dump-manifest', fromTimes(p.from, p.until), o.capUrl), entries);
    const zip = `changedump-${pad(p.id)}.zip`;
    const man = `changedump-${pad(p.id)}-manifest${x}`;
    let pkg;
    try {
      pkg = await writeZipPackage(f(zip), manifest, items, {
        now: ctx.now,
        ...(ctx.signal ? { signal: ctx.signal } : {}),
      });
    } catch (err) {
      if ((err as ResourceSyncError).code !== 'RS_HASH_MISMATCH') throw err;
      continue; // a kept bitstream was altered: leave this package for a later call
    }
    await writeFileAtomic(f(man), [ctx.gzip ? gzipSync(manifest) : manifest]);
    const data: ChangePackage = { zip, manifest: man, length: pkg.length, md5: pkg.md5 };
    await writeDoc(
      f(periodDoc(p)),
      header('change-dump', fromTimes(p.from, p.until), o.capUrl, undefined, archivesLn(archiveUrl)),
      [packageEntry(u(zip), data, { from: p.from, until: p.until! }, u(man))],
      ctx.gzip,
    );
    const rec = store.addDump({
      kind: 'changedump',
      from: p.from,
      until: p.until!,
      period: p.id,
      data: JSON.stringify(data),
    });
    have.set(p.id, rec);
    for (const it of items) if (it.file.startsWith(o.bitDir)) rmSync(it.file, { force: true });
  }
  const packages = o.closed
    .filter((p) => have.has(p.id))
    .map((p) => ({ p, d: JSON.parse(have.get(p.id)!.data) as ChangePackage }));
  const archived = packages.length > 0;
  const from = o.closed[0]?.from ?? o.open.from;
  await writeDoc(
    f(`changedump${x}`),
    header('change-dump', fromTimes(from), o.capUrl, undefined, archivesLn(archived ? archiveUrl : undefined)),
    packages.map(({ p, d }) => packageEntry(u(d.zip), d, { from: p.from, until: p.until! }, u(d.manifest))),
    ctx.gzip,
  );
  if (archived) {
    await writeDoc(
      f(`changedump-archive${x}`),
      header('change-dump-archive', {}, o.capUrl),
      packages.map(({ p }) => intervalEntry(u(periodDoc(p)), p.from, p.until)),
      ctx.gzip,
    );
  } else {
    rmSync(f(`changedump-archive${x}`), { force: true });
  }
  return {
    documents: [
      u(`changedump${x}`),
      ...(archived ? [archiveUrl] : []),
      ...packages.flatMap(({ p, d }) => [u(periodDoc(p)), u(d.zip), u(d.manifest)]),
    ],
    archived,
  };
}
