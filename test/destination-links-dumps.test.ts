import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { FakeSource, urlPath } from './helpers/fake-source.js';
import { dumpXml, manifestXml, yazlZip } from './helpers/dump-fixtures.js';
import { sync } from '../src/destination/sync.js';
import { audit, listFiles } from '../src/destination/audit.js';

const md5 = (b: Buffer | string): string => createHash('md5').update(b).digest('hex');

async function withSource(fn: (src: FakeSource, dest: string, server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-links-'));
  try {
    await fn(new FakeSource(server), dest, server);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
}

void test('baseline via a Resource Dump when preferred: packages verified and extracted, no resource fetched one by one', async () => {
  await withSource(async (src, dest, server) => {
    for (let i = 0; i < 8; i++) src.put(`d/${i}.txt`, `dumped ${i}\n`.repeat(i + 1));
    src.put('name with space.txt', 'spaced');
    src.publish();
    const items = [...src.files].map(([p, f], i) => ({ loc: src.origin + urlPath(p), path: `/res/${i}`, data: f.body }));
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', items, src.capabilityList) },
      ...items.map((it) => ({ name: it.path.slice(1), data: it.data })),
    ]);
    server.set('/dump-1.zip', zip);
    server.set('/resourcedump.xml', dumpXml('resourcedump', [{ loc: `${src.origin}/dump-1.zip`, zip }]));
    server.set(
      '/capabilitylist.xml',
      server.routes.get('/capabilitylist.xml')!.body!.toString().replace('</urlset>', `<url><loc>${src.origin}/resourcedump.xml</loc><rs:md capability="resourcedump"/></url>\n</urlset>`),
    );
    const r = await sync({ source: src.capabilityList, dest, preferDump: true, fsync: false });
    assert.equal(r.mode, 'baseline');
    assert.deepEqual(r.failed, []);
    assert.equal(r.created, 9);
    assert.ok(r.sets[0]?.documents.includes(`${src.origin}/resourcedump.xml`));
    const singles = server.requests.filter((q) => !q.url.endsWith('.xml') && !q.url.endsWith('.zip'));
    assert.deepEqual(singles, [], 'resources came from the package');
    for (const [p, f] of src.files) assert.equal(md5(await readFile(join(dest, ...p.split('/')))), md5(f.body));
    const a = await audit({ source: src.capabilityList, dest });
    assert.equal(a.inSync, true, JSON.stringify(a));
  });
});

void test('a Source whose only capability is a Resource Dump: baseline from it without --prefer-dump, then its Change List', async () => {
  await withSource(async (src, dest, server) => {
    for (let i = 0; i < 5; i++) src.put(`d/${i}.txt`, `dumped ${i}\n`.repeat(i + 1));
    src.publish();
    const items = [...src.files].map(([p, f], i) => ({ loc: src.origin + urlPath(p), path: `/res/${i}`, data: f.body }));
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', items, src.capabilityList) },
      ...items.map((it) => ({ name: it.path.slice(1), data: it.data })),
    ]);
    server.set('/dump-1.zip', zip);
    // the dump is a snapshot of now: the Change List (tracked since before it) reaches back past its `at`
    server.set('/resourcedump.xml', dumpXml('resourcedump', [{ loc: `${src.origin}/dump-1.zip`, zip }]).replace('2013-01-03T09:00:00Z', new Date(src.clock).toISOString()));
    const onlyDump = (): void =>
      server.set(
        '/capabilitylist.xml',
        server
          .routes.get('/capabilitylist.xml')!
          .body!.toString()
          .replace(/<url><loc>[^<]*resourcelist\.xml<\/loc><rs:md capability="resourcelist"\/><\/url>/, `<url><loc>${src.origin}/resourcedump.xml</loc><rs:md capability="resourcedump"/></url>`),
      );
    onlyDump();
    const r = await sync({ source: src.capabilityList, dest, fsync: false });
    assert.equal(r.mode, 'baseline');
    assert.deepEqual(r.failed, []);
    assert.equal(r.created, 5);
    assert.ok(r.sets[0]?.documents.includes(`${src.origin}/resourcedump.xml`), JSON.stringify(r.sets));
    // later changes come from the Change List the set also offers
    src.put('d/new.txt', 'new');
    src.publish();
    onlyDump();
    const inc = await sync({ source: src.capabilityList, dest, fsync: false });
    assert.equal(inc.mode, 'incremental');
    assert.deepEqual([inc.failed, inc.created], [[], 1]);
    assert.equal(await readFile(join(dest, 'd', 'new.txt'), 'utf8'), 'new');
  });
});

void test('duplicate mirrors (§14.2) are tried in pri order when the primary fails, only on allowed origins', async () => {
  const mirror = await startTestServer();
  const other = await startTestServer();
  try {
    await withSource(async (src, dest, server) => {
      src.put('m.txt', 'mirrored content');
      src.publish();
      mirror.set('/copy/m.txt', 'mirrored content');
      other.set('/m.txt', 'mirrored content');
      const withLinks = src
        .resourceListXml()
        .replace(
          '<rs:md hash',
          `<rs:ln rel="duplicate" pri="2" href="${other.origin}/m.txt"/><rs:ln rel="duplicate" pri="1" href="${mirror.origin}/copy/m.txt"/><rs:md hash`,
        );
      server.set('/resourcelist.xml', withLinks);
      server.fault = (req, res) => (req.url === '/m.txt' ? (res.writeHead(404).end(), true) : false);
      // not allowed: the mirrors are never contacted
      const denied = await sync({ source: src.capabilityList, dest, fsync: false, retries: 0 });
      assert.equal(denied.failed.length, 1);
      assert.equal(mirror.requests.length + other.requests.length, 0);
      // allowed: the pri=1 mirror serves it
      const r = await sync({ source: src.capabilityList, dest, fsync: false, retries: 0, allowOrigins: [mirror.origin] });
      assert.deepEqual(r.failed, []);
      assert.equal(await readFile(join(dest, 'm.txt'), 'utf8'), 'mirrored content');
      assert.deepEqual(mirror.requests.map((q) => q.url), ['/copy/m.txt']);
      assert.equal(other.requests.length, 0, 'the pri=2 mirror is off-authority');
    });
  } finally {
    await mirror.close();
    await other.close();
  }
});

void test('discovery from the origin: /.well-known/resourcesync → Source Description → Capability List', async () => {
  await withSource(async (src, dest, server) => {
    src.put('a/b.txt', 'found by discovery');
    src.publish();
    server.set(
      '/.well-known/resourcesync',
      `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="description"/>
<url><loc>${src.capabilityList}</loc><rs:md capability="capabilitylist"/></url>
</urlset>`,
    );
    const r = await sync({ source: `${src.origin}/`, dest, fsync: false });
    assert.equal(r.created, 1);
    assert.deepEqual(r.sets.map((s) => s.key), [src.capabilityList]);
    assert.deepEqual(listFiles(dest), ['a/b.txt']);
  });
});
