import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { FakeSource, urlPath } from './helpers/fake-source.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { audit, listFiles } from '../src/destination/audit.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';

async function withSource(fn: (src: FakeSource, dest: string, server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-sync-'));
  try {
    await fn(new FakeSource(server), dest, server);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
}

function seed(src: FakeSource, n = 12): void {
  for (let i = 0; i < n; i++) src.put(`dir${i % 3}/file-${i}.txt`, `content of file ${i}\n`.repeat(i + 1));
  src.put('with space/a b.txt', 'space');
  src.put('unicodé/naïve.txt', 'non-ascii');
}

/** The destination's files and contents, state aside. */
async function tree(dest: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of listFiles(dest).sort()) out[p] = await readFile(join(dest, ...p.split('/')), 'utf8');
  return out;
}

function expected(src: FakeSource): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of [...src.files.keys()].sort()) out[p] = src.files.get(p)!.body.toString('utf8');
  return out;
}

void test('baseline from a Capability List: every resource verified, written with its lastmod, state recorded', async () => {
  await withSource(async (src, dest, server) => {
    seed(src);
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'baseline');
    assert.equal(r.created, 14);
    assert.deepEqual([r.updated, r.deleted, r.unchanged, r.failed.length], [0, 0, 0, 0]);
    assert.deepEqual(await tree(dest), expected(src));
    const f = src.files.get('dir1/file-4.txt')!;
    assert.equal((await stat(join(dest, 'dir1', 'file-4.txt'))).mtime.getTime(), f.lastmod);
    const store = await openSqliteDestinationState(dest, { readonly: true });
    assert.equal(await store.count(), 14);
    const rec = await store.get(`${src.origin}/unicod%C3%A9/na%C3%AFve.txt`);
    assert.equal(rec?.path, 'unicodé/naïve.txt');
    assert.ok(rec?.hashes['sha-256']);
    await store.close();
    assert.deepEqual(await readdir(join(dest, '.resourcesync')).then((x) => x.includes('tmp')), false);

    // run again: incremental, nothing to fetch
    const before = server.requests.length;
    const again = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(again.mode, 'incremental');
    assert.deepEqual([again.created, again.updated, again.deleted, again.failed.length], [0, 0, 0, 0]);
    const fetched = server.requests.slice(before).filter((q) => !q.url.endsWith('.xml'));
    assert.deepEqual(fetched, [], 'no resource fetched again');
  });
});

void test('incremental over a Change List Index that rolls over: creates, updates, deletes, last change wins', async () => {
  await withSource(async (src, dest, server) => {
    src.rollover = 3;
    seed(src, 6);
    src.publish();
    const first = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(first.mode, 'baseline');
    src.put('new/created.txt', 'fresh');
    src.put('dir0/file-0.txt', 'updated once');
    src.put('dir0/file-0.txt', 'updated twice');
    src.remove('dir1/file-1.txt');
    src.put('dir2/file-2.txt', 'changed');
    src.put('temp.txt', 'short-lived');
    src.remove('temp.txt');
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });
    assert.equal(r.mode, 'incremental', JSON.stringify(r.warnings));
    assert.equal(r.created, 1);
    assert.equal(r.updated, 2);
    assert.equal(r.deleted, 1);
    assert.deepEqual(r.failed, []);
    assert.deepEqual(await tree(dest), expected(src));

    // third run: closed lists before the cursor are not even fetched
    src.put('later.txt', 'later');
    src.publish();
    const before = server.requests.length;
    const r3 = await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });
    assert.equal(r3.created, 1);
    const lists = server.requests.slice(before).map((q) => q.url).filter((u) => /changelist-\d+/.test(u));
    assert.ok(!lists.includes('/changelist-0.xml'), `closed lists skipped: ${lists.join(', ')}`);
    assert.deepEqual(await tree(dest), expected(src));
  });
});

void test('1.0 change lists (lastmod as change time) and a reverse-ordered list tolerated with a warning', async () => {
  await withSource(async (src, dest) => {
    src.spec = '1.0';
    seed(src, 4);
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    src.reverse = true;
    src.put('dir0/file-0.txt', 'v2');
    src.put('dir0/file-0.txt', 'v3');
    src.put('b.txt', 'b');
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'incremental');
    assert.ok(r.warnings.some((w) => w.code === 'changes-out-of-order'), JSON.stringify(r.warnings));
    assert.equal(await readFile(join(dest, 'dir0', 'file-0.txt'), 'utf8'), 'v3');
    assert.deepEqual(r.failed, []);
    assert.deepEqual(await tree(dest), expected(src));
  });
});

void test('deletions are reported, not applied, without --delete; a gap falls back to a baseline', async () => {
  await withSource(async (src, dest) => {
    seed(src, 3);
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    src.remove('dir0/file-0.txt');
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.deleted, 0);
    assert.equal(r.deletionsSkippedCount, 1);
    assert.deepEqual(r.deletionsSkipped, [`${src.origin}/dir0/file-0.txt`]);
    assert.ok(existsSync(join(dest, 'dir0', 'file-0.txt')));

    // the Source forgets its change history: changes on offer start after the cursor
    src.put('x.txt', 'x', false);
    src.changes.length = 0;
    src.since = src.tick();
    src.publish();
    const g = await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });
    assert.equal(g.mode, 'baseline');
    assert.ok(g.warnings.some((w) => w.code === 'changes-missed' && w.data.remedy === 'baseline' && w.data.cursor !== '' && w.data.start > w.data.cursor), JSON.stringify(g.warnings));
    assert.equal(g.created, 1);
    assert.equal(g.deleted, 1);
    assert.deepEqual(await tree(dest), expected(src));
  });
});

void test('a dry run changes nothing, state included', async () => {
  await withSource(async (src, dest, server) => {
    seed(src, 5);
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, dryRun: true });
    assert.equal(r.created, 7);
    assert.deepEqual(await readdir(dest), []);
    assert.ok(server.requests.every((q) => q.url.endsWith('.xml')), 'only documents fetched');
    // the report is the plan: what would be done and why, counted, with the items that change something
    assert.deepEqual([r.plan?.counts, r.plan?.reasons], [{ create: 7, update: 0, delete: 0, unchanged: 0 }, { missing: 7 }]);
    assert.deepEqual(
      r.plan?.items.map((i) => `${i.action} ${i.path} ${i.reason}`).sort(),
      [...src.files.keys()].sort().map((p) => `create ${p} missing`),
    );
    assert.ok(r.plan?.items.every((i) => i.url === `${src.origin}${urlPath(i.path!)}` && i.source?.hashes.length === 2 && i.local === undefined));
  });
});

void test('a dry run of changes plans updates and deletions (kept without delete) from the Change List; the sync then does what it planned', async () => {
  await withSource(async (src, dest, server) => {
    seed(src, 4);
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    src.put('dir0/file-0.txt', 'changed at the Source');
    src.put('dir2/new.txt', 'new');
    src.remove('dir1/file-1.txt');
    src.publish();
    const url = (p: string): string => `${src.origin}${urlPath(p)}`;
    const heard: string[] = [];
    const before = server.requests.length;
    const kept = await sync({ source: src.capabilityList, dest, dryRun: true, onPlan: (i) => void heard.push(i.url) });
    assert.equal(kept.mode, 'incremental');
    assert.ok(server.requests.slice(before).every((q) => q.url.endsWith('.xml')), 'only documents fetched');
    const summary = (items: readonly { action: string; url: string; reason: string; change?: string; kept?: true }[] | undefined): string[] =>
      (items ?? []).map((i) => `${i.action} ${i.url} ${i.reason} ${i.change ?? '-'}${i.kept ? ' kept' : ''}`).sort();
    assert.deepEqual(summary(kept.plan?.items), [
      `create ${url('dir2/new.txt')} missing created`,
      `delete ${url('dir1/file-1.txt')} deleted-at-source deleted kept`,
      `update ${url('dir0/file-0.txt')} length updated`,
    ]);
    assert.deepEqual(heard.sort(), kept.plan?.items.map((i) => i.url).sort());
    assert.deepEqual([kept.created, kept.updated, kept.deleted, kept.deletionsSkippedCount], [1, 1, 0, 1]);
    assert.equal(await readFile(join(dest, 'dir1', 'file-1.txt'), 'utf8'), 'content of file 1\n'.repeat(2), 'a dry run deletes nothing');

    const planned = await sync({ source: src.capabilityList, dest, dryRun: true, delete: true });
    assert.deepEqual(summary(planned.plan?.items), summary(kept.plan?.items).map((l) => l.replace(' kept', '')));
    assert.deepEqual([planned.deleted, planned.deletionsSkippedCount], [1, 0]);

    const done: string[] = [];
    const r = await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly(), onPlan: (i) => void done.push(`${i.action} ${i.url}`) });
    assert.equal(r.plan, undefined, 'only a dry run lists the plan in the report');
    assert.deepEqual(done.sort(), summary(planned.plan?.items).map((l) => l.split(' ').slice(0, 2).join(' ')));
    assert.deepEqual([r.created, r.updated, r.deleted], [1, 1, 1]);
    assert.deepEqual(await tree(dest), expected(src));
  });
});

void test('audit both ways: in sync, then missing, extra and changed files', async () => {
  await withSource(async (src, dest) => {
    seed(src, 6);
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    const ok = await audit({ source: src.capabilityList, dest });
    assert.equal(ok.inSync, true, JSON.stringify(ok));
    assert.equal(ok.unchanged, 8);

    // changes at the Source after the Resource List are part of its current state
    src.put('dir0/file-0.txt', 'newer');
    src.publish();
    src.server.set('/resourcelist.xml', src.resourceListXml(Date.UTC(2019, 0, 1))); // an old list: the change list tells the rest
    const behind = await audit({ source: src.capabilityList, dest });
    assert.equal(behind.inSync, false);
    assert.deepEqual(behind.changed.map((c) => c.path), ['dir0/file-0.txt']);
    assert.deepEqual(behind.plan.items.map((i) => `${i.action} ${i.path} ${i.reason} ${i.change}`), ['update dir0/file-0.txt length updated']);

    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    await writeFile(join(dest, 'dir1', 'file-1.txt'), 'tampered!');
    await unlink(join(dest, 'dir2', 'file-2.txt'));
    await writeFile(join(dest, 'stray.txt'), 'extra');
    const bad = await audit({ source: src.capabilityList, dest });
    assert.equal(bad.inSync, false);
    assert.deepEqual(bad.missing.map((m) => m.path), ['dir2/file-2.txt']);
    assert.deepEqual(bad.changed.map((c) => `${c.path}:${c.reason}`), ['dir1/file-1.txt:length']);
    assert.deepEqual(bad.extra, ['stray.txt']);
    // the figures are those of the plan a sync with --delete would carry out
    assert.deepEqual(bad.plan.counts, { create: 1, update: 1, delete: 1, unchanged: 6 });
    assert.deepEqual(bad.plan.reasons, { missing: 1, length: 1, same: 6, gone: 1 });
    assert.deepEqual(
      bad.plan.items.map((i) => `${i.action} ${i.path} ${i.reason}`),
      ['update dir1/file-1.txt length', 'create dir2/file-2.txt missing', 'delete stray.txt gone'],
    );
    const trusted = await audit({ source: src.capabilityList, dest, trustState: true });
    assert.equal(trusted.trustedState, true);
    assert.equal(trusted.inSync, true, 'the state does not see local tampering');
    assert.deepEqual(trusted.warnings.map((w) => w.code), ['store-trusted']);
  });
});

void test('resources without hashes or lengths: conditional GET with the stored ETag', async () => {
  await withSource(async (src, dest, server) => {
    src.bare = true;
    src.withChangeList = false;
    seed(src, 3);
    src.publish();
    await sync({ source: `${src.origin}/resourcelist.xml`, dest, durability: new RenameOnly() });
    const before = server.requests.length;
    const r = await sync({ source: `${src.origin}/resourcelist.xml`, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'baseline');
    assert.equal(r.unchanged, 5);
    const conditional = server.requests.slice(before).filter((q) => q.headers['if-none-match'] !== undefined);
    assert.equal(conditional.length, 0, 'lastmod decides when it is given');
    // without lastmod either, the ETag decides
    src.server.set('/resourcelist.xml', src.resourceListXml().replace(/<lastmod>[^<]*<\/lastmod>/g, ''));
    const b2 = server.requests.length;
    const r2 = await sync({ source: `${src.origin}/resourcelist.xml`, dest, durability: new RenameOnly() });
    assert.equal(r2.unchanged, 5);
    assert.equal(server.requests.slice(b2).filter((q) => q.headers['if-none-match'] !== undefined).length, 5);
    void urlPath;
  });
});
