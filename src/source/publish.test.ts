import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { tempDir } from '../../test/helpers/tmp.js';
import { unzipTo } from '../../test/helpers/unzip.js';
import { parseXml } from '../../test/helpers/xml-oracle.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { validateDocument } from '../core/validate/index.js';
import { parseDocument } from '../core/xml/read-document.js';
import { publish, type PublishOptions } from './publish.js';
import { resolveResource, urlToPath } from './url-path.js';

const BASE = 'http://example.org/';

function clock(start = Date.UTC(2024, 0, 1)): () => number {
  let t = start;
  return () => (t += 1000);
}

/** Reads the document at a URL from the publish folder. */
function readDoc(out: string, url: string): ResourceSyncDocument {
  return parseXml(readFileSync(fileOf(out, url), 'utf8'));
}

/** The file of a document URL in the publish folder. */
function fileOf(out: string, url: string): string {
  assert.ok(url.startsWith(BASE), url);
  return join(out, ...decodeURIComponent(url.slice(BASE.length)).split('/'));
}

function allFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...allFiles(p, base));
    else out.push(relative(base, p).split('\\').join('/'));
  }
  return out.sort();
}

/** Validates every XML document of the publish folder in 1.0 and 1.1 strict mode. */
async function validateTree(out: string): Promise<number> {
  const docs = allFiles(out).filter((p) => p.endsWith('.xml') || p === '.well-known/resourcesync');
  for (const p of docs) {
    const doc = await parseDocument(readFileSync(join(out, p)));
    assert.deepEqual(doc.entries.map((e) => e.loc), parseXml(readFileSync(join(out, p), 'utf8')).entries.map((e) => e.loc), 'parser and oracle agree');
    for (const spec of ['1.0', '1.1'] as const) {
      const errors = validateDocument(doc, { spec, mode: 'strict' }).filter((i) => i.severity === 'error');
      assert.deepEqual(errors, [], `${p} (${spec})`);
    }
  }
  return docs.length;
}

function write(dir: string, files: Record<string, string | Buffer>): void {
  for (const [p, c] of Object.entries(files)) {
    mkdirSync(join(dir, ...p.split('/').slice(0, -1)), { recursive: true });
    writeFileSync(join(dir, ...p.split('/')), c);
  }
}

const md5 = (b: Buffer | string): string => createHash('md5').update(b).digest('hex');

void test('publish writes a discoverable, valid document tree whose Resource List equals the files', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    const files = { 'a.txt': 'alpha', 'dir with space/ü é.html': '<p>ü</p>', 'odd #1 %2.pdf': 'pdf', 'deep/er/x.json': '{}' };
    write(src.dir, files);
    write(src.dir, { '.hidden': 'no', '.git/config': 'no' });
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: src.dir, describedBy: `${BASE}about-data.html` }],
      baseUrl: BASE,
      outDir: out.dir,
      hashes: ['md5', 'sha-256'],
      describedBy: `${BASE}about.html`,
      now: clock(),
    };
    const r = await publish(opts);
    assert.equal(r.sourceDescription, `${BASE}.well-known/resourcesync`);
    assert.equal(r.resources, 4);
    assert.deepEqual(r.changes, { created: 0, updated: 0, deleted: 0 });
    assert.ok(r.documents.includes('/.resourcesync/data/capabilitylist.xml'));
    assert.ok(r.documents.every((p) => existsSync(join(out.dir, ...decodeURIComponent(p).split('/')))));

    // discovery chain: Source Description → Capability List → Resource List → resources
    const sd = parseXml(readFileSync(join(out.dir, '.well-known', 'resourcesync'), 'utf8'));
    assert.equal(sd.md?.capability, 'description');
    assert.deepEqual(sd.entries.map((e) => e.loc), r.capabilityLists);
    assert.equal(sd.ln.find((l) => l.rel === 'describedby')?.href, `${BASE}about.html`);
    assert.equal(sd.entries[0]!.ln?.[0]?.href, `${BASE}about-data.html`);
    const cap = readDoc(out.dir, sd.entries[0]!.loc);
    assert.equal(cap.ln.find((l) => l.rel === 'up')?.href, r.sourceDescription);
    assert.equal(cap.ln.find((l) => l.rel === 'describedby')?.href, `${BASE}about-data.html`);
    const rlLoc = cap.entries.find((e) => e.md?.capability === 'resourcelist')!.loc;
    assert.equal(rlLoc, r.resourceLists[0]);
    const rl = readDoc(out.dir, rlLoc);
    assert.equal(rl.root, 'urlset');
    assert.equal(rl.ln.find((l) => l.rel === 'up')?.href, r.capabilityLists[0]);
    const listed = rl.entries.map((e) => urlToPath(BASE, e.loc)).sort();
    assert.deepEqual(listed, Object.keys(files).sort());
    for (const e of rl.entries) {
      const p = urlToPath(BASE, e.loc)!;
      const content = readFileSync(join(src.dir, p));
      assert.equal(e.md?.length, String(content.length));
      assert.equal(e.md?.hash, `md5:${md5(content)} sha-256:${createHash('sha256').update(content).digest('hex')}`);
      assert.deepEqual(resolveResource([{ name: 'data', dir: src.dir }], new URL(e.loc).pathname)?.path, p);
    }
    assert.match(readFileSync(join(out.dir, 'robots.txt'), 'utf8'), new RegExp(`^Sitemap: ${rlLoc.replace(/\./g, '\\.')}$`, 'm'));
    assert.ok((await validateTree(out.dir)) >= 4);
    assert.ok(!existsSync(join(out.dir, 'a.txt')), 'resources are not copied');
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('changes across runs appear in the open Change List in order; rollover builds a forward Change List Index', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    write(src.dir, { 'keep.txt': 'k', 'edit.txt': 'v1', 'gone.txt': 'g' });
    const now = clock();
    const opts: PublishOptions = { sets: [{ name: 'data', dir: src.dir }], baseUrl: BASE, outDir: out.dir, now, changeList: { maxEntries: 4 } };
    await publish(opts);
    const again = await publish(opts);
    assert.deepEqual(again.changes, { created: 0, updated: 0, deleted: 0 });
    const cl0 = readDoc(out.dir, `${BASE}.resourcesync/data/changelist.xml`);
    assert.equal(cl0.entries.length, 0);
    assert.equal(cl0.md?.until, undefined);

    write(src.dir, { 'edit.txt': 'version 2', 'new file ä.txt': 'new' });
    rmSync(join(src.dir, 'gone.txt'));
    const r = await publish(opts);
    assert.deepEqual(r.changes, { created: 1, updated: 1, deleted: 1 });
    const cl = readDoc(out.dir, `${BASE}.resourcesync/data/changelist.xml`);
    assert.deepEqual(
      cl.entries.map((e) => [urlToPath(BASE, e.loc), e.md?.change]),
      [
        ['edit.txt', 'updated'],
        ['gone.txt', 'deleted'],
        ['new file ä.txt', 'created'],
      ],
    );
    for (const e of cl.entries) {
      assert.ok(e.md?.datetime !== undefined && e.lastmod === e.md.datetime);
      assert.ok(e.md.datetime >= cl.md!.from!);
    }
    assert.equal(cl.entries[0]!.md?.hash, `md5:${md5('version 2')}`);
    assert.equal(cl.entries[1]!.md?.hash, undefined);

    // two more changes reach maxEntries 4: the list closes, a new one opens, the index lists both in order
    write(src.dir, { 'keep.txt': 'changed', 'x.txt': 'x' });
    await publish(opts);
    write(src.dir, { 'y.txt': 'y' });
    await publish(opts);
    const idx = readDoc(out.dir, `${BASE}.resourcesync/data/changelist-index.xml`);
    assert.equal(idx.root, 'sitemapindex');
    assert.equal(idx.entries.length, 2);
    const [closed, open] = idx.entries;
    assert.ok(closed!.md?.until !== undefined && open!.md?.until === undefined);
    assert.equal(open!.md?.from, closed!.md?.until);
    assert.equal(open!.loc, `${BASE}.resourcesync/data/changelist.xml`);
    const closedDoc = readDoc(out.dir, closed!.loc);
    assert.equal(closedDoc.md?.until, closed!.md?.until);
    assert.equal(closedDoc.entries.length, 4);
    assert.equal(closedDoc.ln.find((l) => l.rel === 'index')?.href, `${BASE}.resourcesync/data/changelist-index.xml`);
    const openDoc = readDoc(out.dir, open!.loc);
    assert.deepEqual(openDoc.entries.map((e) => urlToPath(BASE, e.loc)), ['x.txt', 'y.txt']);
    const cap = readDoc(out.dir, `${BASE}.resourcesync/data/capabilitylist.xml`);
    assert.equal(cap.entries.find((e) => e.md?.capability === 'changelist')?.loc, `${BASE}.resourcesync/data/changelist-index.xml`);
    assert.ok(cap.entries.some((e) => e.md?.capability === 'changelist-archive'));
    await validateTree(out.dir);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('a Resource List past maxEntries becomes a Resource List Index with up and index links in every part', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    for (let i = 0; i < 7; i++) write(src.dir, { [`f${i}.txt`]: String(i) });
    const r = await publish({ sets: [{ name: 'data', dir: src.dir }], baseUrl: BASE, outDir: out.dir, maxEntries: 3, now: clock() });
    const idx = readDoc(out.dir, r.resourceLists[0]!);
    assert.equal(idx.root, 'sitemapindex');
    assert.equal(idx.md?.capability, 'resourcelist');
    assert.equal(idx.entries.length, 3);
    const seen: string[] = [];
    for (const part of idx.entries) {
      const doc = readDoc(out.dir, part.loc);
      assert.equal(doc.ln.find((l) => l.rel === 'up')?.href, r.capabilityLists[0]);
      // parts point at their generation's index, of which resourcelist.xml is a byte-identical copy
      assert.equal(doc.ln.find((l) => l.rel === 'index')?.href, `${BASE}.resourcesync/data/resourcelist-1.xml`);
      seen.push(...doc.entries.map((e) => urlToPath(BASE, e.loc)!));
    }
    assert.ok(readFileSync(fileOf(out.dir, r.resourceLists[0]!)).equals(readFileSync(fileOf(out.dir, `${BASE}.resourcesync/data/resourcelist-1.xml`))));
    assert.deepEqual(seen, ['f0.txt', 'f1.txt', 'f2.txt', 'f3.txt', 'f4.txt', 'f5.txt', 'f6.txt']);
    await validateTree(out.dir);
    // fewer files later: the new generation is a single list; the old one stays in the Resource List Archive
    for (let i = 2; i < 7; i++) rmSync(join(src.dir, `f${i}.txt`));
    const opts = { sets: [{ name: 'data', dir: src.dir }], baseUrl: BASE, outDir: out.dir, maxEntries: 3, now: clock(Date.UTC(2025, 0, 1)) };
    await publish(opts);
    assert.equal(readDoc(out.dir, r.resourceLists[0]!).root, 'urlset');
    const archive = readDoc(out.dir, `${BASE}.resourcesync/data/resourcelist-archive.xml`);
    assert.equal(archive.md?.capability, 'resourcelist-archive');
    assert.deepEqual(archive.entries.map((e) => e.loc), [1, 2].map((g) => `${BASE}.resourcesync/data/resourcelist-${g}.xml`));
    assert.equal(readDoc(out.dir, archive.entries[0]!.loc).root, 'sitemapindex');
    assert.equal(readDoc(out.dir, archive.entries[0]!.loc).entries.length, 3);
    await validateTree(out.dir);
    // retention 1: older generations and their parts are removed
    write(src.dir, { 'f9.txt': '9' });
    await publish({ ...opts, retention: 1 });
    assert.ok(!existsSync(join(out.dir, '.resourcesync', 'data', 'resourcelist-1-part3.xml')));
    assert.ok(!existsSync(join(out.dir, '.resourcesync', 'data', 'resourcelist-2.xml')));
    assert.equal(readDoc(out.dir, `${BASE}.resourcesync/data/resourcelist-archive.xml`).entries.length, 1);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('several sets: one Capability List each, resources under the set name', async () => {
  const a = await tempDir();
  const b = await tempDir();
  const out = await tempDir();
  try {
    write(a.dir, { 'same.txt': 'from a' });
    write(b.dir, { 'same.txt': 'from b', 'sub/y.txt': 'y' });
    const sets = [
      { name: 'one', dir: a.dir },
      { name: 'two', dir: b.dir },
    ];
    const r = await publish({ sets, baseUrl: BASE, outDir: out.dir, stateDir: join(out.dir, '.state'), now: clock() });
    assert.equal(r.capabilityLists.length, 2);
    assert.equal(r.resources, 3);
    const rl2 = readDoc(out.dir, r.resourceLists[1]!);
    assert.deepEqual(rl2.entries.map((e) => e.loc), [`${BASE}two/same.txt`, `${BASE}two/sub/y.txt`]);
    assert.deepEqual(resolveResource(sets, '/two/sub/y.txt'), { set: sets[1], path: 'sub/y.txt' });
    assert.ok(existsSync(join(out.dir, '.state', 'one', 'source.sqlite')));
    assert.ok(!existsSync(join(a.dir, '.resourcesync')));
    const robots = readFileSync(join(out.dir, 'robots.txt'), 'utf8');
    assert.equal(robots.match(/^Sitemap: /gm)?.length, 2);
    await validateTree(out.dir);
    await assert.rejects(publish({ sets: [{ name: '../x', dir: a.dir }], baseUrl: BASE, outDir: out.dir }), { code: 'RS_INVALID_ARGUMENT' });
    await assert.rejects(publish({ sets, baseUrl: 'ftp://x/', outDir: out.dir }), { code: 'RS_INVALID_ARGUMENT' });
  } finally {
    await a.cleanup();
    await b.cleanup();
    await out.cleanup();
  }
});

void test('a Resource Dump unzipped reproduces the tree; a Change Dump reproduces the changes', async () => {
  const src = await tempDir();
  const out = await tempDir();
  const x = await tempDir();
  try {
    const big = Buffer.alloc(300_000, 7);
    const files: Record<string, string | Buffer> = { 'a.txt': 'alpha', 'b c/ä #%.bin': big, 'z.txt': 'zzz', 'e/empty': '' };
    write(src.dir, files);
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: src.dir }],
      baseUrl: BASE,
      outDir: out.dir,
      dumps: { maxPackageBytes: 200_000 },
      changeList: { maxEntries: 3 },
      now: clock(),
    };
    const r = await publish(opts);
    const rd = readDoc(out.dir, `${BASE}.resourcesync/data/resourcedump.xml`);
    assert.equal(rd.md?.capability, 'resourcedump');
    assert.ok(rd.entries.length >= 2, 'split at maxPackageBytes');
    for (const [i, e] of rd.entries.entries()) {
      const zipFile = fileOf(out.dir, e.loc);
      const bytes = readFileSync(zipFile);
      assert.equal(e.md?.type, 'application/zip');
      assert.equal(e.md?.length, String(bytes.length));
      assert.equal(e.md?.hash, `md5:${md5(bytes)}`);
      const contents = e.ln?.find((l) => l.rel === 'contents');
      const dest = join(x.dir, `p${i}`);
      mkdirSync(dest);
      await unzipTo(zipFile, dest);
      assert.equal(readFileSync(join(dest, 'manifest.xml'), 'utf8'), readFileSync(fileOf(out.dir, contents!.href!), 'utf8'));
      const man = parseXml(readFileSync(join(dest, 'manifest.xml'), 'utf8'));
      assert.equal(man.md?.capability, 'resourcedump-manifest');
      for (const m of man.entries) assert.ok(existsSync(join(dest, ...m.md!.path!.slice(1).split('/'))), m.md!.path);
    }
    // the union of the packages is the tree, byte for byte
    const unpacked = new Map<string, Buffer>();
    for (const p of readdirSync(x.dir)) {
      for (const f of allFiles(join(x.dir, p, 'resources'))) unpacked.set(f, readFileSync(join(x.dir, p, 'resources', f)));
    }
    assert.deepEqual([...unpacked.keys()].sort(), Object.keys(files).sort());
    for (const [p, c] of Object.entries(files)) assert.ok(unpacked.get(p)!.equals(Buffer.from(c)), p);

    // changes, then a rollover: the closed period gets a Change Dump package
    write(src.dir, { 'a.txt': 'alpha 2', 'new.txt': 'new' });
    rmSync(join(src.dir, 'z.txt'));
    const r2 = await publish(opts);
    assert.deepEqual(r2.changes, { created: 1, updated: 1, deleted: 1 });
    write(src.dir, { 'a.txt': 'alpha 3' }); // a.txt changes again: the package must keep version 2
    await publish(opts);
    const cd = readDoc(out.dir, `${BASE}.resourcesync/data/changedump.xml`);
    assert.equal(cd.md?.capability, 'changedump');
    assert.equal(cd.entries.length, 1);
    const pkgFile = fileOf(out.dir, cd.entries[0]!.loc);
    const dest = join(x.dir, 'changes');
    mkdirSync(dest);
    await unzipTo(pkgFile, dest);
    const man = parseXml(readFileSync(join(dest, 'manifest.xml'), 'utf8'));
    assert.equal(man.md?.capability, 'changedump-manifest');
    assert.ok(man.md?.until !== undefined);
    const got = man.entries.map((e) => [urlToPath(BASE, e.loc), e.md?.change, e.md?.path === undefined ? undefined : readFileSync(join(dest, ...e.md.path.slice(1).split('/')), 'utf8')]);
    assert.deepEqual(got, [
      ['a.txt', 'updated', 'alpha 2'],
      ['new.txt', 'created', 'new'],
      ['z.txt', 'deleted', undefined],
    ]);
    assert.ok(r.documents.some((d) => d.endsWith('.zip')));
    await validateTree(out.dir);
  } finally {
    await src.cleanup();
    await out.cleanup();
    await x.cleanup();
  }
});

void test('publishing into the directory itself never lists its own documents, state or robots.txt; abort stops it', async () => {
  const src = await tempDir();
  try {
    write(src.dir, { 'a.txt': 'a', 'pub/old.txt': 'not published: inside the publish folder' });
    const opts: PublishOptions = { sets: [{ name: 'data', dir: src.dir }], baseUrl: BASE, outDir: src.dir, now: clock() };
    await publish(opts);
    const again = await publish(opts);
    assert.deepEqual(again.changes, { created: 0, updated: 0, deleted: 0 });
    assert.equal(again.resources, 2);
    const rl = readDoc(src.dir, again.resourceLists[0]!);
    assert.deepEqual(rl.entries.map((e) => urlToPath(BASE, e.loc)), ['a.txt', 'pub/old.txt']);
    // a publish folder inside the set is excluded (the robots.txt left at the top by the runs above is now a plain file)
    const nested = await publish({ ...opts, outDir: join(src.dir, 'pub') });
    const listed = readDoc(join(src.dir, 'pub'), nested.resourceLists[0]!).entries.map((e) => urlToPath(BASE, e.loc));
    assert.deepEqual(listed, ['a.txt', 'robots.txt']);
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(publish({ ...opts, signal: ac.signal }), { code: 'RS_ABORTED' });
  } finally {
    await src.cleanup();
  }
});

void test('overlapping publish calls for the same set run one after the other', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    write(src.dir, { 'a.txt': 'a' });
    const opts: PublishOptions = { sets: [{ name: 'data', dir: src.dir }], baseUrl: BASE, outDir: out.dir, now: clock() };
    await publish(opts);
    write(src.dir, { 'b.txt': 'b' });
    const [r1, r2, r3] = await Promise.all([publish(opts), publish(opts), publish(opts)]);
    assert.deepEqual([r1.changes.created, r2.changes.created, r3.changes.created], [1, 0, 0]);
    const cl = readDoc(out.dir, `${BASE}.resourcesync/data/changelist.xml`);
    assert.deepEqual(cl.entries.map((e) => urlToPath(BASE, e.loc)), ['b.txt']);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('a file altered between the scan and its packaging drops that Resource Dump until the next run', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    write(src.dir, { 'a.txt': 'aaaa', 'b.txt': 'bbbb' });
    let sabotage = true;
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: src.dir }],
      baseUrl: BASE,
      outDir: out.dir,
      dumps: true,
      now: clock(),
      onProgress: (p) => {
        if (p.phase === 'dumps' && sabotage) writeFileSync(join(src.dir, 'b.txt'), 'BBBB'); // same length, new content
      },
    };
    await publish(opts);
    const cap = readDoc(out.dir, `${BASE}.resourcesync/data/capabilitylist.xml`);
    assert.ok(!cap.entries.some((e) => e.md?.capability === 'resourcedump'), 'no Resource Dump advertised yet');
    assert.ok(!readdirSync(join(out.dir, '.resourcesync', 'data')).some((n) => n.endsWith('.zip')));
    sabotage = false;
    const r = await publish(opts);
    assert.equal(r.changes.updated, 1);
    const rd = readDoc(out.dir, `${BASE}.resourcesync/data/resourcedump.xml`);
    assert.equal(rd.entries.length, 1);
    await validateTree(out.dir);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

/** Every document of a set's folder, by name, read with the oracle (gunzipped when the name ends in `.gz`). */
function setDocuments(out: string, set: string): Map<string, ResourceSyncDocument> {
  const dir = join(out, '.resourcesync', set);
  const docs = new Map<string, ResourceSyncDocument>();
  for (const name of readdirSync(dir)) {
    if (name.endsWith('.zip')) continue;
    const bytes = readFileSync(join(dir, name));
    docs.set(name, parseXml((name.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8')));
  }
  return docs;
}

void test('every document with an archive links to it; each archive lists documents of its capability', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    write(src.dir, { 'a.txt': 'a0', 'b.txt': 'b0' });
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: src.dir }],
      baseUrl: BASE,
      outDir: out.dir,
      now: clock(),
      dumps: true,
      maxEntries: 1,
      changeList: { maxEntries: 1 },
    };
    await publish(opts);
    for (let round = 1; round <= 3; round++) {
      write(src.dir, { 'a.txt': `a${round}` });
      await publish(opts);
    }
    assert.ok((await validateTree(out.dir)) > 20);
    const docs = setDocuments(out.dir, 'data');
    const url = (name: string): string => `${BASE}.resourcesync/data/${name}`;
    const cap = docs.get('capabilitylist.xml')!;
    // the core capabilities first, then the four archives (Archives Example 2.1)
    assert.deepEqual(
      cap.entries.map((e) => e.md?.capability),
      ['resourcelist', 'resourcedump', 'changelist', 'changedump', 'resourcelist-archive', 'resourcedump-archive', 'changelist-archive', 'changedump-archive'],
    );
    const archiveOf: Record<string, string> = {};
    for (const e of cap.entries) if (e.md?.capability?.endsWith('-archive') === true) archiveOf[e.md.capability.slice(0, -'-archive'.length)] = e.loc;
    let linked = 0;
    for (const [name, doc] of docs) {
      const capability = doc.md?.capability ?? '';
      const archives = doc.ln.filter((l) => l.rel === 'archives').map((l) => l.href);
      if (['resourcelist', 'resourcedump', 'changelist', 'changedump'].includes(capability)) {
        assert.deepEqual(archives, [archiveOf[capability]], `${name} links to the ${capability} archive`);
        linked++;
      } else {
        assert.deepEqual(archives, [], `${name} (${capability}) has no archive`);
      }
    }
    // resourcelist(.xml, -G, -G-partK), resourcedump(.xml, -N), changelist(.xml, -NNNNN, -index), changedump(.xml, -NNNNN)
    assert.ok(linked >= 15, String(linked));
    for (const [capability, loc] of Object.entries(archiveOf)) {
      const archive = docs.get(loc.slice(url('').length))!;
      assert.equal(archive.md?.capability, `${capability}-archive`);
      assert.equal(archive.ln.find((l) => l.rel === 'up')?.href, url('capabilitylist.xml'));
      assert.ok(archive.entries.length > 0, loc);
      for (const e of archive.entries) {
        const listed = docs.get(e.loc.slice(url('').length));
        assert.equal(listed?.md?.capability, capability, `${e.loc} in ${loc}`);
      }
    }
    // three closed Change Lists: the Change Dump Archive lists one Change Dump per package, with its interval
    const cdArchive = docs.get('changedump-archive.xml')!;
    const closed = docs.get('changelist-archive.xml')!;
    assert.equal(cdArchive.entries.length, closed.entries.length);
    assert.equal(cdArchive.entries.length, 3);
    for (const [i, e] of cdArchive.entries.entries()) {
      assert.deepEqual([e.md?.from, e.md?.until, e.lastmod], [closed.entries[i]!.md?.from, closed.entries[i]!.md?.until, closed.entries[i]!.md?.until]);
      const dump = docs.get(e.loc.slice(url('').length))!;
      assert.deepEqual([dump.md?.from, dump.md?.until], [e.md?.from, e.md?.until]);
      assert.equal(dump.entries.length, 1);
      assert.ok(docs.get('changedump.xml')!.entries.some((p) => p.loc === dump.entries[0]!.loc));
    }
    // retention drops the oldest Change List, its package and its Change Dump from both archives
    write(src.dir, { 'b.txt': 'b1' });
    await publish({ ...opts, retention: 2 });
    const after = setDocuments(out.dir, 'data');
    assert.equal(after.get('changedump-archive.xml')!.entries.length, 2);
    assert.equal(after.get('changelist-archive.xml')!.entries.length, 2);
    assert.ok(!existsSync(join(out.dir, '.resourcesync', 'data', 'changedump-00001.xml')));
    assert.ok(!existsSync(join(out.dir, '.resourcesync', 'data', 'changedump-00001.zip')));
    await validateTree(out.dir);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('gzip: every document of a set is .xml.gz and every link points at the .gz names', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    write(src.dir, { 'a.txt': 'a0', 'b.txt': 'b0', 'c.txt': 'c0' });
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: src.dir }],
      baseUrl: BASE,
      outDir: out.dir,
      now: clock(),
      dumps: true,
      gzip: true,
      maxEntries: 2,
      changeList: { maxEntries: 1 },
    };
    const r = await publish(opts);
    write(src.dir, { 'a.txt': 'a1' });
    await publish(opts);
    write(src.dir, { 'b.txt': 'b1' });
    await publish(opts);
    assert.equal(r.capabilityLists[0], `${BASE}.resourcesync/data/capabilitylist.xml.gz`);
    assert.equal(r.resourceLists[0], `${BASE}.resourcesync/data/resourcelist.xml.gz`);
    const names = readdirSync(join(out.dir, '.resourcesync', 'data'));
    assert.ok(names.length > 15);
    for (const name of names) {
      assert.match(name, /\.(xml\.gz|zip)$/);
      if (name.endsWith('.gz')) assert.deepEqual([...readFileSync(join(out.dir, '.resourcesync', 'data', name)).subarray(0, 2)], [0x1f, 0x8b], name);
    }
    const docs = setDocuments(out.dir, 'data');
    const sd = parseXml(readFileSync(join(out.dir, '.well-known', 'resourcesync'), 'utf8'));
    const links: string[] = sd.entries.map((e) => e.loc);
    for (const doc of docs.values()) {
      for (const l of doc.ln) if (l.href !== undefined) links.push(l.href);
      for (const e of doc.entries) links.push(e.loc, ...(e.ln ?? []).flatMap((l) => (l.href === undefined ? [] : [l.href])));
    }
    const robots = readFileSync(join(out.dir, 'robots.txt'), 'utf8');
    assert.match(robots, /^Sitemap: http:\/\/example\.org\/\.resourcesync\/data\/resourcelist\.xml\.gz$/m);
    const documentLinks = links.filter((l) => l.startsWith(`${BASE}.resourcesync/`) || l.startsWith(`${BASE}.well-known/`));
    assert.ok(documentLinks.length > 30);
    for (const l of documentLinks) {
      if (l === r.sourceDescription) continue;
      assert.match(l, /\.(xml\.gz|zip)$/, l);
      assert.ok(existsSync(fileOf(out.dir, l)), l);
    }
    // a Resource List Index of two parts, gzipped
    const rl = docs.get('resourcelist.xml.gz')!;
    assert.equal(rl.root, 'sitemapindex');
    assert.deepEqual(rl.entries.map((e) => e.loc), [1, 2].map((k) => `${BASE}.resourcesync/data/resourcelist-3-part${k}.xml.gz`));
    // the gzipped documents validate as they are (the reader detects gzip)
    for (const name of names.filter((n) => n.endsWith('.gz'))) {
      const doc = await parseDocument(readFileSync(join(out.dir, '.resourcesync', 'data', name)));
      const errors = validateDocument(doc, { spec: '1.1', mode: 'strict' }).filter((i) => i.severity === 'error');
      assert.deepEqual(errors, [], name);
    }
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});
