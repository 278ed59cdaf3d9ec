import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { FakeSource, urlPath } from './helpers/fake-source.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { audit, listFiles } from '../src/destination/audit.js';
import { isResourceSyncError } from '../src/core/errors.js';

async function withSource(fn: (src: FakeSource, dest: string, server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-converge-'));
  try {
    await fn(new FakeSource(server), dest, server);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
}

async function tree(dest: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of listFiles(dest).sort()) out[p] = await readFile(join(dest, ...p.split('/')), 'utf8');
  return out;
}

function current(src: FakeSource): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of [...src.files.keys()].sort()) out[p] = src.files.get(p)!.body.toString('utf8');
  return out;
}

/** Publishes the resources and the Change List, keeping the Resource List as it was (a snapshot taken earlier). */
function publishChangesOnly(src: FakeSource, server: TestServer): void {
  const list = server.routes.get('/resourcelist.xml');
  src.publish();
  if (list !== undefined) server.routes.set('/resourcelist.xml', list);
}

void test('a baseline taken while the Source changes ends equal to the Source: changes since the snapshot applied in the same run', async () => {
  await withSource(async (src, dest, server) => {
    for (let i = 0; i < 200; i++) src.put(`r/${i}.txt`, `resource ${i}\n`.repeat(1 + (i % 7)));
    src.publish();
    let seen = 0;
    server.fault = async (req) => {
      if (req.url?.startsWith('/r/') !== true) return false;
      await new Promise((r) => setTimeout(r, 1));
      if (++seen === 40) {
        // mid-baseline: resources later in the list change or go away, a new one appears
        for (let i = 180; i < 190; i++) src.remove(`r/${i}.txt`);
        for (let i = 190; i < 200; i++) src.put(`r/${i}.txt`, `changed after the list was written ${i}`);
        src.put('r/new.txt', 'created after the list');
        publishChangesOnly(src, server);
      }
      return false;
    };
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), delete: true });
    assert.equal(seen >= 40, true);
    assert.deepEqual(r.failed, [], JSON.stringify(r.failed.slice(0, 3)));
    assert.equal(r.mode, 'baseline');
    assert.deepEqual(await tree(dest), current(src));
    const a = await audit({ source: src.capabilityList, dest });
    assert.equal(a.inSync, true);

    // the next run: nothing to do, exit-0 report
    server.fault = undefined;
    const again = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), delete: true });
    assert.equal(again.mode, 'incremental');
    assert.deepEqual(again.failed, []);
    assert.deepEqual(await tree(dest), current(src));
  });
});

void test('an incremental run without --delete: a resource created and deleted since the cursor is neither a failure nor a skipped deletion', async () => {
  await withSource(async (src, dest) => {
    src.put('a.txt', 'a');
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    src.put('brief.txt', 'here and gone');
    src.remove('brief.txt');
    src.put('b.txt', 'b');
    src.publish();
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'incremental');
    assert.deepEqual(r.failed, []);
    assert.equal(r.deletionsSkippedCount, 0);
    assert.equal(r.created, 1);
    assert.deepEqual(await tree(dest), { 'a.txt': 'a', 'b.txt': 'b' });
  });
});

void test('a failed baseline resource that the Source deleted afterwards is resolved by the Change List, not reported', async () => {
  await withSource(async (src, dest, server) => {
    src.put('keep.txt', 'keep');
    src.put('gone.txt', 'gone soon');
    src.publish();
    // the list still names gone.txt, but the resource is already deleted and the Change List says so
    src.remove('gone.txt');
    publishChangesOnly(src, server);
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.deepEqual(r.failed, []);
    assert.deepEqual(await tree(dest), { 'keep.txt': 'keep' });
  });
});

void test('a 404 that no change explains stays a failure (exit 1), with its HTTP status', async () => {
  await withSource(async (src, dest, server) => {
    src.put('a.txt', 'a');
    src.put('b.txt', 'b');
    src.publish();
    server.delete(urlPath('b.txt'));
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.deepEqual(
      r.failed.map((f) => [f.url, f.code, f.status]),
      [[`${src.origin}/b.txt`, 'RS_HTTP_STATUS', 404]],
    );
  });
});

const b64 = (alg: string, body: string): string => createHash(alg).update(body).digest('base64');

void test('base64 digests (tolerated) are compared as the bytes they stand for; changelistindex and relative locs are read leniently', async () => {
  await withSource(async (src, dest, server) => {
    const files: Record<string, string> = { 'x.txt': 'ex', 'y/z.txt': 'zed' };
    const urls = Object.entries(files).map(
      ([p, body]) => `<url><loc>${p}</loc><rs:md hash="md5:${b64('md5', body)} sha-256:${b64('sha256', body)}" length="${body.length}"/></url>`,
    );
    for (const [p, body] of Object.entries(files)) server.set(urlPath(p), body);
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    server.set('/capabilitylist.xml', `<urlset ${ns}><rs:md capability="capabilitylist"/>
<url><loc>${src.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${src.origin}/changelist-index.xml</loc><rs:md capability="changelistindex"/></url></urlset>`);
    server.set('/resourcelist.xml', `<urlset ${ns}><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>${urls.join('')}</urlset>`);
    server.set('/changelist-index.xml', `<sitemapindex ${ns}><rs:md capability="changelistindex" from="2020-01-01T00:00:00Z"/>
<sitemap><loc>${src.origin}/changelist-1.xml</loc></sitemap></sitemapindex>`);
    server.set('/changelist-1.xml', `<urlset ${ns}><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/></urlset>`);
    const first = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.deepEqual(first.failed, []);
    assert.equal(first.created, 2);
    assert.deepEqual(await tree(dest), files);
    // 1.0-era changelistindex: the Change Lists are used, so the second run is incremental, not a new baseline
    server.set('/changelist-1.xml', `<urlset ${ns}><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/>
<url><loc>${src.origin}/w.txt</loc><rs:md change="created" datetime="2020-01-02T00:00:00Z" hash="md5:${b64('md5', 'new')}" length="3"/></url></urlset>`);
    server.set('/w.txt', 'new');
    const second = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(second.mode, 'incremental');
    assert.deepEqual(second.failed, []);
    assert.equal(second.created, 1);
  });
});

void test('a Source that offers nothing to synchronize from is an error naming what it offers', async () => {
  await withSource(async (src, dest, server) => {
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    server.set('/capabilitylist.xml', `<urlset ${ns}><rs:md capability="capabilitylist"/>
<url><loc>${src.origin}/rl-archive.xml</loc><rs:md capability="resourcelist-archive"/></url></urlset>`);
    await assert.rejects(sync({ source: src.capabilityList, dest, durability: new RenameOnly() }), (e: unknown) => {
      assert.ok(isResourceSyncError(e, 'RS_NOT_RESOURCESYNC'));
      assert.match(e.message, /resourcelist-archive/);
      return true;
    });
  });
});

/**
 * A mirror in sync, then changes while it is away (b created, a deleted) that go to a closed Change List
 * (`/changelist-old.xml`, [t0, t1]) and one more (c) in the current Change List, which starts at t1.
 */
async function awayThenArchived(src: FakeSource, server: TestServer, dest: string) {
  src.put('a.txt', 'a');
  src.publish();
  await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), delete: true });
  src.put('b.txt', 'b');
  src.remove('a.txt');
  const archived = [...src.changes]; // every change since tracking began, the ones while away last
  const t0 = src.since;
  const t1 = archived[archived.length - 1]!.time + 500;
  src.put('c.txt', 'c');
  src.publish();
  server.set('/changelist-old.xml', src.changeListXml(archived, t0, t1));
  server.set('/changelist.xml', src.changeListXml(src.changes.slice(-1), t1, undefined));
  const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
  const iso = (t: number): string => new Date(t).toISOString();
  return { t0, t1, ns, iso };
}

void test('a Destination away longer than the Change Lists reach back catches up from the changelist-archive, not a new baseline', async () => {
  await withSource(async (src, dest, server) => {
    const { t0, t1, ns, iso } = await awayThenArchived(src, server, dest);
    server.set('/changelist-archive.xml', `<urlset ${ns}><rs:md capability="changelist-archive"/>
<url><loc>${src.origin}/changelist-old.xml</loc><rs:md from="${iso(t0)}" until="${iso(t1)}"/></url></urlset>`);
    const cl = server.routes.get('/capabilitylist.xml')!;
    server.set('/capabilitylist.xml', String(cl.body).replace('</urlset>', `<url><loc>${src.origin}/changelist-archive.xml</loc><rs:md capability="changelist-archive"/></url></urlset>`));
    // the Resource List is gone stale on purpose: a new baseline would not give the right answer
    server.set('/resourcelist.xml', src.resourceListXml(Date.UTC(2019, 0, 1)).replace(/<url>.*<\/url>/gs, ''));
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), delete: true });
    assert.equal(r.mode, 'incremental', JSON.stringify([r.warnings, r.sets]));
    assert.deepEqual(r.failed, []);
    assert.ok(r.warnings.some((w) => w.code === 'changes-missed' && w.data.remedy === 'archive' && w.data.archive === `${src.origin}/changelist-archive.xml` && w.data.dumps === undefined), JSON.stringify(r.warnings));
    assert.deepEqual(await tree(dest), { 'b.txt': 'b', 'c.txt': 'c' });
  });
});

void test('a changelist-archive split into an index of Change List Archives: each archive is read for its Change Lists, a part of another kind is skipped', async () => {
  await withSource(async (src, dest, server) => {
    const { t0, t1, ns, iso } = await awayThenArchived(src, server, dest);
    // ResourceSync Archives §5: the archive is an index whose parts are Change List Archives (and one that is not)
    server.set('/changelist-archive-1.xml', `<urlset ${ns}><rs:md capability="changelist-archive"/>
<url><loc>${src.origin}/changelist-old.xml</loc><rs:md from="${iso(t0)}" until="${iso(t1)}"/></url></urlset>`);
    server.set('/changelist-archive.xml', `<sitemapindex ${ns}><rs:md capability="changelist-archive"/>
<sitemap><loc>${src.origin}/changelist-old.xml</loc></sitemap>
<sitemap><loc>${src.origin}/changelist-archive-1.xml</loc></sitemap></sitemapindex>`);
    const cl = server.routes.get('/capabilitylist.xml')!;
    server.set('/capabilitylist.xml', String(cl.body).replace('</urlset>', `<url><loc>${src.origin}/changelist-archive.xml</loc><rs:md capability="changelist-archive"/></url></urlset>`));
    server.set('/resourcelist.xml', src.resourceListXml(Date.UTC(2019, 0, 1)).replace(/<url>.*<\/url>/gs, ''));
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), delete: true });
    assert.equal(r.mode, 'incremental', JSON.stringify([r.warnings, r.sets]));
    assert.deepEqual(r.failed, []);
    const skipped = r.warnings.find((w) => w.code === 'index-part-unexpected');
    assert.deepEqual(skipped?.data, {
      url: `${src.origin}/changelist-archive.xml`,
      index: 'Change List Archive Index',
      part: `${src.origin}/changelist-old.xml`,
      expected: 'Change List Archive',
      kind: 'Change List',
    });
    assert.equal(
      skipped?.message,
      `Change List Archive Index '${src.origin}/changelist-archive.xml' lists '${src.origin}/changelist-old.xml', which is not a Change List Archive (Change List); skipped.`,
    );
    assert.deepEqual(await tree(dest), { 'b.txt': 'b', 'c.txt': 'c' });
  });
});

void test('audit reads only Resource Lists from a Resource List Index and only Change Lists from a Change List Index', async () => {
  await withSource(async (src, dest, server) => {
    src.put('a.txt', 'a');
    src.put('b.txt', 'b');
    src.publish();
    await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    const at = '2030-01-01T00:00:00Z';
    const capabilityList = `<urlset ${ns}><rs:md capability="capabilitylist"/>
<url><loc>${src.origin}/resourcelist-index.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${src.origin}/changelist-index.xml</loc><rs:md capability="changelist"/></url></urlset>`;
    server.set('/capabilitylist.xml', capabilityList);
    // a Resource List Index whose second part is a Change List: its entries are changes, not resources on offer
    server.set('/resourcelist-index.xml', `<sitemapindex ${ns}><rs:md capability="resourcelist" at="${at}"/>
<sitemap><loc>${src.origin}/resourcelist.xml</loc></sitemap>
<sitemap><loc>${src.origin}/changelist.xml</loc></sitemap></sitemapindex>`);
    // a Change List Index whose part is a Resource List: its entries are no changes
    server.set('/changelist-index.xml', `<sitemapindex ${ns}><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/>
<sitemap><loc>${src.origin}/resourcelist.xml</loc></sitemap></sitemapindex>`);
    const r = await audit({ source: src.capabilityList, dest });
    assert.deepEqual(r.failed.map((f) => [f.url, f.code]), [[`${src.origin}/changelist.xml`, 'RS_INVALID_DOCUMENT']]);
    assert.deepEqual(r.counts, { missing: 0, extra: 0, changed: 0, failed: 1 });
    assert.equal(r.unchanged, 2);
    assert.deepEqual(
      r.warnings.filter((w) => w.code === 'index-part-not-change-list').map((w) => w.data),
      [{ url: `${src.origin}/changelist-index.xml`, part: `${src.origin}/resourcelist.xml` }],
    );
  });
});

void test('a Change List that cannot be read while a failure waits for it to move leaves the failure as it is: no error of the run', async () => {
  await withSource(async (src, dest, server) => {
    src.put('a.txt', 'a');
    src.put('b.txt', 'b');
    src.publish();
    server.delete(urlPath('b.txt'));
    let reads = 0;
    server.fault = (req, res) => {
      if (req.url !== '/changelist.xml' || ++reads === 1) return Promise.resolve(false);
      res.destroy(); // every look after the first: the connection is reset
      return Promise.resolve(true);
    };
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), retries: 0 });
    assert.ok(reads > 1, 'the Change List was watched');
    assert.deepEqual(
      r.failed.map((f) => [f.url, f.status]),
      [[`${src.origin}/b.txt`, 404]],
    );
  });
});
