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
import { RenameOnly } from '../src/node/durability.js';
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
    const r = await sync({ source: src.capabilityList, dest, preferDump: true, durability: new RenameOnly() });
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
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'baseline');
    assert.deepEqual(r.failed, []);
    assert.equal(r.created, 5);
    assert.ok(r.sets[0]?.documents.includes(`${src.origin}/resourcedump.xml`), JSON.stringify(r.sets));
    // later changes come from the Change List the set also offers
    src.put('d/new.txt', 'new');
    src.publish();
    onlyDump();
    const inc = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(inc.mode, 'incremental');
    assert.deepEqual([inc.failed, inc.created], [[], 1]);
    assert.equal(await readFile(join(dest, 'd', 'new.txt'), 'utf8'), 'new');
  });
});

void test('Change Dumps that start after the cursor are caught up from the changedump-archive, never skipped silently', async () => {
  await withSource(async (src, dest, server) => {
    src.withChangeList = false;
    src.put('a.txt', 'a');
    src.publish();
    const first = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(first.mode, 'baseline');
    const t = (s: number): string => new Date(src.clock + s * 1000).toISOString();
    const pkg = async (name: string, file: string, body: string, lastmod: string, from: string, until: string): Promise<{ loc: string; zip: Buffer; from: string; until: string }> => {
      const manifest = manifestXml('changedump-manifest', [{ loc: `${src.origin}/${file}`, path: `/${file}`, data: body, change: 'created', lastmod }], src.capabilityList).replace(
        'from="2013-01-02T00:00:00Z"',
        `from="${from}" until="${until}"`,
      );
      const zip = await yazlZip([
        { name: 'manifest.xml', data: manifest },
        { name: file, data: body },
      ]);
      server.set(`/${name}`, zip);
      return { loc: `${src.origin}/${name}`, zip, from, until };
    };
    // the earlier period, archived; the current Change Dump starts after the Destination's cursor
    const old = await pkg('cd-1.zip', 'b.txt', 'b', t(10), t(-5), t(20));
    const cur = await pkg('cd-2.zip', 'c.txt', 'c', t(30), t(20), t(40));
    server.set('/changedump-1.xml', dumpXml('changedump', [old]).replace('from="2013-01-01T00:00:00Z"', `from="${t(-5)}" until="${t(20)}"`));
    server.set('/changedump.xml', dumpXml('changedump', [cur]).replace('from="2013-01-01T00:00:00Z"', `from="${t(20)}"`));
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    server.set('/changedump-archive.xml', `<urlset ${ns}><rs:ln rel="up" href="${src.capabilityList}"/><rs:md capability="changedump-archive"/>
<url><loc>${src.origin}/changedump-1.xml</loc><rs:md from="${t(-5)}" until="${t(20)}"/></url></urlset>`);
    const cap = (archive: boolean): string =>
      `<urlset ${ns}><rs:md capability="capabilitylist"/>
<url><loc>${src.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${src.origin}/changedump.xml</loc><rs:md capability="changedump"/></url>
${archive ? `<url><loc>${src.origin}/changedump-archive.xml</loc><rs:md capability="changedump-archive"/></url>` : ''}</urlset>`;

    // without the archive the gap is seen: a new baseline, not a silent skip of b.txt
    const other = `${dest}-other`;
    await sync({ source: src.capabilityList, dest: other, durability: new RenameOnly() });
    server.set('/capabilitylist.xml', cap(false));
    const noArchive = await sync({ source: src.capabilityList, dest: other, durability: new RenameOnly() });
    assert.ok(noArchive.warnings.some((w) => w.code === 'changes-missed' && w.data.remedy === 'baseline' && w.data.dumps === true), JSON.stringify(noArchive.warnings));
    assert.equal(noArchive.mode, 'baseline');
    await rm(other, { recursive: true, force: true });

    server.set('/capabilitylist.xml', cap(true));
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.equal(r.mode, 'incremental', JSON.stringify(r.warnings));
    assert.deepEqual(r.failed, []);
    assert.ok(r.warnings.some((w) => w.code === 'changes-missed' && w.data.remedy === 'archive' && w.data.dumps === true), JSON.stringify(r.warnings));
    assert.deepEqual(r.sets[0]?.documents, [`${src.origin}/changedump-1.xml`, `${src.origin}/changedump.xml`]);
    for (const [f, body] of [['a.txt', 'a'], ['b.txt', 'b'], ['c.txt', 'c']] as const) assert.equal(await readFile(join(dest, f), 'utf8'), body);
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
      const denied = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), retries: 0 });
      assert.equal(denied.failed.length, 1);
      assert.equal(mirror.requests.length + other.requests.length, 0);
      // allowed: the pri=1 mirror serves it
      const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), retries: 0, allowOrigins: [mirror.origin] });
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
    const r = await sync({ source: `${src.origin}/`, dest, durability: new RenameOnly() });
    assert.equal(r.created, 1);
    assert.deepEqual(r.sets.map((s) => s.key), [src.capabilityList]);
    assert.deepEqual(listFiles(dest), ['a/b.txt']);
  });
});
