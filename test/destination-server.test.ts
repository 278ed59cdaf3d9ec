/**
 * The Destination against the project's own Source: `publish()` + the Source server on 127.0.0.1, port 0.
 * Mirrors must be byte for byte the published directory (names with spaces and non-ASCII characters included),
 * through Resource List Indexes, rolling Change List Indexes and Resource Dumps.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './helpers/tmp.js';
import { publish, type PublishOptions } from '../src/source/publish.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import { serve } from '../src/server/node-adapter.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { audit, listFiles } from '../src/destination/audit.js';

interface Env {
  dir: string;
  src: string;
  mirror: string;
  base: string;
  republish: () => Promise<void>;
}

async function withSource(
  options: Partial<PublishOptions>,
  fn: (env: Env) => Promise<void>,
  extraFiles: Record<string, string> = {},
): Promise<void> {
  const { dir, cleanup } = await tempDir('rs-dest-server-');
  const src = join(dir, 'collection');
  const outDir = join(dir, 'publish');
  const stateDir = join(dir, 'source-state');
  await mkdir(src, { recursive: true });
  const files: Record<string, string> = {
    'a.txt': 'alpha\n',
    'dir/b.txt': 'bravo\n',
    'dir/deeper/c.json': '{"c": 3}\n',
    'with space/d e.txt': 'delta echo\n',
    'unicodé/naïve €.txt': 'non-ASCII\n',
    '100% sure.txt': 'percent\n',
    ...extraFiles,
  };
  for (const [p, c] of Object.entries(files)) {
    await mkdir(join(src, p, '..'), { recursive: true });
    await writeFile(join(src, p), c);
  }
  const live: { core?: SourceResponder } = {};
  const front: ResponderHandler = (req) => {
    if (live.core === undefined) throw new Error('not published yet');
    return live.core(req);
  };
  const server = await serve(front, { port: 0, host: '127.0.0.1' });
  const base = `${server.url}/`;
  const sets = [{ name: 'collection', dir: src }];
  const republish = async (): Promise<void> => {
    const r = await publish({ sets, baseUrl: base, outDir, stateDir, hashes: ['md5', 'sha-256'], ...options });
    live.core ??= createSourceResponder({
      sets: [{ ...sets[0]!, capabilityList: r.capabilityLists[0]! }],
      outDir,
      baseUrl: base,
      cacheMs: 0,
      ...(options.htmlDiscoveryLink === true ? { htmlDiscoveryLink: true } : {}),
    });
    live.core.invalidate();
  };
  try {
    await republish();
    await fn({ dir, src, mirror: join(dir, 'mirror'), base, republish });
  } finally {
    await server.close();
    await cleanup();
  }
}

async function sameTree(a: string, b: string): Promise<void> {
  const files = listFiles(a).sort();
  assert.deepEqual(listFiles(b).sort(), files);
  for (const f of files) assert.deepEqual(await readFile(join(b, f)), await readFile(join(a, f)), f);
}

void test('the project Source: baseline from the origin, byte for byte, with modification times', async () => {
  await withSource({}, async ({ src, mirror, base }) => {
    const r = await sync({ source: base, dest: mirror, durability: new RenameOnly() });
    assert.equal(r.mode, 'baseline');
    assert.equal(r.created, 6);
    assert.deepEqual(r.failed, []);
    await sameTree(src, mirror);
    const s = await stat(join(src, 'dir', 'b.txt'));
    const m = await stat(join(mirror, 'dir', 'b.txt'));
    assert.equal(Math.floor(m.mtimeMs / 1000), Math.floor(s.mtimeMs / 1000), 'mtime from lastmod');
    assert.equal((await audit({ source: base, dest: mirror })).inSync, true);
  });
});

void test('the project Source: incremental over a rolling Change List Index, deletions applied', async () => {
  await withSource({ changeList: { maxEntries: 2 }, maxEntries: 3 }, async ({ src, mirror, base, republish }) => {
    await sync({ source: base, dest: mirror, durability: new RenameOnly() });
    for (let round = 0; round < 3; round++) {
      await writeFile(join(src, `new-${round}.txt`), `new ${round}\n`);
      await writeFile(join(src, 'a.txt'), `alpha ${round}\n`);
      if (round === 1) await unlink(join(src, 'dir', 'b.txt'));
      await republish();
      const r = await sync({ source: base, dest: mirror, delete: true, durability: new RenameOnly() });
      assert.equal(r.mode, 'incremental', JSON.stringify(r.warnings));
      assert.deepEqual(r.failed, []);
      assert.equal(r.created, 1);
      assert.equal(r.updated, 1);
      assert.equal(r.deleted, round === 1 ? 1 : 0);
      await sameTree(src, mirror);
    }
    const a = await audit({ source: base, dest: mirror });
    assert.equal(a.inSync, true, JSON.stringify(a));
    await writeFile(join(mirror, 'new-0.txt'), 'tampered\n');
    const bad = await audit({ source: base, dest: mirror });
    assert.deepEqual(bad.changed.map((c) => c.path), ['new-0.txt']);
  });
});

void test('the project Source: baseline from its Resource Dump when preferred', async () => {
  await withSource({ dumps: true }, async ({ src, mirror, base }) => {
    const r = await sync({ source: base, dest: mirror, preferDump: true, durability: new RenameOnly() });
    assert.equal(r.mode, 'baseline');
    assert.deepEqual(r.failed, []);
    assert.equal(r.created, 6);
    assert.ok(r.sets[0]?.documents.some((d) => /resourcedump/.test(d)), JSON.stringify(r.sets));
    await sameTree(src, mirror);
    await rm(join(mirror, 'a.txt'));
    const a = await audit({ source: base, dest: mirror });
    assert.deepEqual(a.missing.map((m) => m.path), ['a.txt']);
  });
});

void test('the project Source with HTML discovery links: sync verifies the HTML as served, from the lists and from the dumps', async () => {
  const html = {
    'index.html': '<!DOCTYPE html><html><head><title>i</title></head><body>index</body></html>\n',
    'dir/page.htm': '<HTML><HEAD lang="en">\n<meta charset="utf-8"></HEAD><BODY>ü</BODY></HTML>',
    'fragment.html': '<p>no head</p>\n',
    'linked.html': '<html><head><link rel="resourcesync" href="http://elsewhere/cap.xml"></head></html>',
  };
  await withSource(
    { htmlDiscoveryLink: true, dumps: true, changeList: { maxEntries: 1 } },
    async ({ src, mirror, base, republish }) => {
      const cap = `${base}.resourcesync/collection/capabilitylist.xml`;
      const served = (stored: string): string => stored.replace(/<head>|<HEAD lang="en">/, (h) => `${h}<link rel="resourcesync" href="${cap}">`);
      const check = async (dest: string): Promise<void> => {
        for (const [p, stored] of Object.entries(html)) {
          const expected = p === 'index.html' || p === 'dir/page.htm' ? served(stored) : stored;
          assert.equal(await readFile(join(dest, p), 'utf8'), expected, p);
          const res = await fetch(`${base}${p}`);
          assert.equal(await res.text(), expected, p);
        }
      };
      const r = await sync({ source: base, dest: mirror, durability: new RenameOnly() });
      assert.deepEqual(r.failed, []);
      assert.equal(r.created, 10);
      await check(mirror);
      assert.equal((await audit({ source: base, dest: mirror })).inSync, true);
      // from the Resource Dump: its packages hold the HTML as served
      const fromDump = `${mirror}-dump`;
      const d = await sync({ source: base, dest: fromDump, preferDump: true, durability: new RenameOnly() });
      assert.deepEqual(d.failed, []);
      assert.ok(d.sets[0]?.documents.some((u) => /resourcedump/.test(u)), JSON.stringify(d.sets));
      await check(fromDump);
      // an edited page: incremental sync, and the Change Dump's package verifies too
      html['index.html'] = '<html><head></head><body>edited</body></html>';
      await writeFile(join(src, 'index.html'), html['index.html']);
      await republish();
      const inc = await sync({ source: base, dest: mirror, durability: new RenameOnly() });
      assert.equal(inc.mode, 'incremental');
      assert.deepEqual([inc.failed, inc.updated], [[], 1]);
      await check(mirror);
      const dumpInc = await sync({ source: base, dest: fromDump, preferDump: true, durability: new RenameOnly() });
      assert.deepEqual([dumpInc.failed, dumpInc.updated], [[], 1]);
      // applied from the Change Dump's package (the open Change List closed at its first change); the Change Lists
      // are read after it for changes in no package yet, and find none newer
      assert.equal(dumpInc.sets[0]?.documents[0], `${base}.resourcesync/collection/changedump.xml`);
      await check(fromDump);
    },
    html,
  );
});
