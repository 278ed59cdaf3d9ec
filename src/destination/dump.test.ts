import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from '../../test/helpers/test-server.js';
import { dumpXml, manifestXml, yazlZip } from '../../test/helpers/dump-fixtures.js';
import { createAuthority } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import { createMapper } from './mapper.js';
import { createLocalDirectory } from './local-directory.js';
import { applyChangeDump, applyResourceDump, type ApplyDumpOptions, type DumpResource } from './dump.js';
import { GroupCommit } from '../node/group-commit.js';
import { RenameOnly } from '../node/durability.js';
import { FIXTURES } from '../../test/helpers/paths.js';

interface Env {
  s: TestServer;
  dest: string;
  opts(dumpUrl: string, extra?: Partial<ApplyDumpOptions>): ApplyDumpOptions;
  close(): Promise<void>;
}

async function env(): Promise<Env> {
  const s = await startTestServer();
  const root = await mkdtemp(join(tmpdir(), 'rs-dump-'));
  const dest = join(root, 'dest');
  await mkdir(dest);
  const authority = createAuthority({ origins: [s.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 10_000 });
  const mapper = createMapper({ base: `${s.origin}/` });
  return {
    s,
    dest,
    opts: (dumpUrl, extra = {}) => ({
      dumpUrl,
      http,
      authority,
      storage: createLocalDirectory(dest, { durability: new RenameOnly() }),
      mapPath: (loc) => mapper.toPath(loc),
      ...extra,
    }),
    async close() {
      await http.close();
      await s.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function noTemp(dest: string): Promise<void> {
  assert.deepEqual(
    await readdir(join(dest, '.resourcesync', 'tmp')).catch(() => []),
    [],
    'no temporary files are left',
  );
}

void test('Resource Dump: packages downloaded and verified, manifests checked, bitstreams extracted to mapped paths (§11)', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const res1 = 'x'.repeat(10_000);
    const res2 = Buffer.from(Array.from({ length: 5000 }, (_, i) => i % 251));
    const res3 = 'no hash here';
    const zip1 = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [
          { loc: `${o}/res1`, path: '/resources/res1', data: res1, lastmod: '2013-01-02T13:00:00Z' },
          { loc: `${o}/a/caf%C3%A9.bin`, path: '/resources/res2', data: res2 },
        ]),
      },
      { name: 'resources/res1', data: res1 },
      { name: 'resources/res2', data: res2, compress: false },
      { name: 'resources/extra.txt', data: 'not in the manifest' },
    ]);
    const zip2 = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [{ loc: `${o}/b/res3.txt`, path: '/r3', data: res3, hash: null }]),
      },
      { name: 'r3', data: res3 },
    ]);
    e.s.set('/part1.zip', zip1);
    e.s.set('/part2.zip', zip2);
    e.s.set(
      '/resourcedump.xml',
      dumpXml('resourcedump', [
        { loc: `${o}/part1.zip`, zip: zip1, contents: 'http://elsewhere.example/manifest1.xml' },
        { loc: 'part2.zip', zip: zip2, hash: null, length: null },
      ]),
    );
    const seen: DumpResource[] = [];
    const progress: string[] = [];
    const report = await applyResourceDump(
      e.opts(`${o}/resourcedump.xml`, {
        onResource: (r) => void seen.push(r),
        onProgress: (p) => void progress.push(p.phase),
      }),
    );
    assert.deepEqual(report.failures, []);
    assert.equal(report.packages, 2);
    assert.equal(report.extracted, 3);
    assert.equal(report.created, 3);
    assert.equal(report.bytes, res1.length + res2.length + res3.length);
    assert.equal(report.packageBytes, zip1.length + zip2.length);
    assert.deepEqual(report.unverified, [`${o}/b/res3.txt`]);
    assert.deepEqual(report.ignoredEntries, [`${o}/part1.zip#resources/extra.txt`]);
    assert.deepEqual(report.notes.filter((n) => n.code === 'package-unverified').map((n) => n.data), [{ url: `${o}/part2.zip` }], JSON.stringify(report.notes));
    assert.equal(await readFile(join(e.dest, 'res1'), 'utf8'), res1);
    assert.deepEqual(await readFile(join(e.dest, 'a', 'café.bin')), res2);
    assert.equal(await readFile(join(e.dest, 'b', 'res3.txt'), 'utf8'), res3);
    assert.equal((await stat(join(e.dest, 'res1'))).mtime.toISOString(), '2013-01-02T13:00:00.000Z');
    await assert.rejects(stat(join(e.dest, 'resources')), 'ZIP names are not destination paths');
    assert.deepEqual(
      seen.map((r) => [r.relPath, r.change, r.applied]),
      [
        ['res1', 'created', true],
        ['a/café.bin', 'created', true],
        ['b/res3.txt', 'created', true],
      ],
    );
    assert.ok(seen[0]!.hashes?.['sha-256']);
    assert.ok(progress.includes('download') && progress.includes('extract'));
    assert.ok(!e.s.requests.some((r) => r.url.includes('manifest')), 'the contents link is not fetched');
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump in ZIP64 format: stored entries larger than the read buffers, deflated ones, all verified', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const big = Buffer.alloc(2 * 1024 * 1024 + 12_345);
    for (let i = 0; i + 4 <= big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
    const small = 'a small stored file';
    const deflated = 'z'.repeat(50_000);
    const zip = await yazlZip(
      [
        {
          name: 'manifest.xml',
          data: manifestXml('resourcedump-manifest', [
            { loc: `${o}/big.bin`, path: '/big', data: big },
            { loc: `${o}/small.txt`, path: '/small', data: small },
            { loc: `${o}/deflated.txt`, path: '/deflated', data: deflated },
          ]),
        },
        { name: 'big', data: big, compress: false },
        { name: 'small', data: small, compress: false },
        { name: 'deflated', data: deflated },
      ],
      { zip64: true },
    );
    assert.ok(zip.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06])), 'the package has a ZIP64 end of central directory record');
    e.s.set('/p.zip', zip);
    e.s.set('/resourcedump.xml', dumpXml('resourcedump', [{ loc: `${o}/p.zip`, zip }]));
    // durable, as a sync writes by default: every file through a group commit
    const groupCommit = new GroupCommit();
    const report = await applyResourceDump(e.opts(`${o}/resourcedump.xml`, { storage: createLocalDirectory(e.dest, { durability: groupCommit }) }));
    await groupCommit.settle();
    assert.deepEqual(report.failures, []);
    assert.equal(report.extracted, 3);
    assert.ok(groupCommit.batches >= 1);
    assert.ok((await readFile(join(e.dest, 'big.bin'))).equals(big));
    assert.equal(await readFile(join(e.dest, 'small.txt'), 'utf8'), small);
    assert.equal(await readFile(join(e.dest, 'deflated.txt'), 'utf8'), deflated);
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump: bad packages and bad bitstreams are reported with codes, never committed', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const good = 'good bytes';
    const zipOk = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [
          { loc: `${o}/ok.txt`, path: '/ok', data: good },
          { loc: `${o}/wrong-hash.txt`, path: '/wh', data: 'what the manifest says', length: null },
          { loc: `${o}/wrong-length.txt`, path: '/wl', data: good, length: '3' },
          { loc: `${o}/missing.txt`, path: '/missing', data: good },
          { loc: `${o}/nopath.txt`, data: good },
          { loc: `${o}/q.txt?x=1`, path: '/ok', data: good },
        ]),
      },
      { name: 'ok', data: good },
      { name: 'wh', data: 'something else entirely' },
      { name: 'wl', data: good },
    ]);
    const noManifest = await yazlZip([{ name: 'a', data: 'a' }]);
    const wrongKind = await yazlZip([{ name: 'manifest.xml', data: manifestXml('changedump-manifest', []) }]);
    const notZip = Buffer.from('this is not a zip file at all');
    e.s.set('/ok.zip', zipOk);
    e.s.set('/nomanifest.zip', noManifest);
    e.s.set('/wrongkind.zip', wrongKind);
    e.s.set('/notzip.zip', notZip);
    e.s.set('/short.zip', zipOk.subarray(0, 100));
    e.s.set('/corrupt.zip', Buffer.concat([zipOk.subarray(0, 50), Buffer.from('X'), zipOk.subarray(51)]));
    e.s.set(
      '/dump.xml',
      dumpXml('resourcedump', [
        { loc: `${o}/ok.zip`, zip: zipOk },
        { loc: `${o}/nomanifest.zip`, zip: noManifest },
        { loc: `${o}/wrongkind.zip`, zip: wrongKind },
        { loc: `${o}/notzip.zip`, zip: notZip },
        { loc: `${o}/short.zip`, zip: zipOk, hash: null },
        { loc: `${o}/corrupt.zip`, zip: zipOk },
        { loc: `${o}/absent.zip`, hash: null, length: null },
      ]),
    );
    const report = await applyResourceDump(e.opts(`${o}/dump.xml`));
    const codes = report.failures.map((f) => [f.package.slice(o.length), f.loc?.slice(o.length), f.code]);
    assert.deepEqual(codes, [
      ['/ok.zip', '/wrong-hash.txt', 'RS_HASH_MISMATCH'],
      ['/ok.zip', '/wrong-length.txt', 'RS_LENGTH_MISMATCH'],
      ['/ok.zip', '/missing.txt', 'RS_ZIP'],
      ['/ok.zip', '/nopath.txt', 'RS_INVALID_DOCUMENT'],
      ['/ok.zip', '/q.txt?x=1', 'RS_UNSAFE_PATH'],
      ['/nomanifest.zip', undefined, 'RS_ZIP'],
      ['/wrongkind.zip', undefined, 'RS_INVALID_DOCUMENT'],
      ['/notzip.zip', undefined, 'RS_ZIP'],
      ['/short.zip', undefined, 'RS_LENGTH_MISMATCH'],
      ['/corrupt.zip', undefined, 'RS_HASH_MISMATCH'],
      ['/absent.zip', undefined, 'RS_HTTP_STATUS'],
    ]);
    assert.equal(report.extracted, 1);
    assert.deepEqual((await readdir(e.dest)).sort(), ['.resourcesync', 'ok.txt']);
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Change Dump: packages in forward order, created/updated extracted, deletions only with delete: true, cursor (§13)', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    await writeFile(join(e.dest, 'res5.tiff'), 'old tiff');
    await writeFile(join(e.dest, 'res9.pdf'), 'old pdf');
    const v1 = '<html>v1</html>';
    const v2 = '<html>v2, longer</html>';
    const pdf = '%PDF new';
    const day2 = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('changedump-manifest', [
          {
            loc: `${o}/res7.html`,
            path: '/changes/res7.html',
            data: v1,
            change: 'created',
            lastmod: '2013-01-02T12:00:00Z',
          },
          {
            loc: `${o}/res9.pdf`,
            path: '/changes/res9.pdf',
            data: pdf,
            change: 'updated',
            lastmod: '2013-01-02T13:00:00Z',
          },
          { loc: `${o}/res5.tiff`, change: 'deleted', lastmod: '2013-01-02T19:00:00Z' },
          {
            loc: `${o}/res7.html`,
            path: '/changes/res7-v2.html',
            data: v2,
            change: 'updated',
            lastmod: '2013-01-02T20:00:00Z',
          },
        ]),
      },
      { name: 'changes/res7.html', data: v1 },
      { name: 'changes/res9.pdf', data: pdf },
      { name: 'changes/res7-v2.html', data: v2 },
    ]);
    const day1 = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('changedump-manifest', [
          { loc: `${o}/res7.html`, path: '/x', data: 'day one', change: 'created' },
        ]),
      },
      { name: 'x', data: 'day one' },
    ]);
    e.s.set('/day1.zip', day1);
    e.s.set('/day2.zip', day2);
    // Listed newest first: tolerated, applied oldest first.
    e.s.set(
      '/changedump.xml',
      dumpXml('changedump', [
        { loc: `${o}/day2.zip`, zip: day2, from: '2013-01-02T00:00:00Z', until: '2013-01-03T00:00:00Z' },
        { loc: `${o}/day1.zip`, zip: day1, from: '2013-01-01T00:00:00Z', until: '2013-01-02T00:00:00Z' },
      ]),
    );
    const seen: DumpResource[] = [];
    const r1 = await applyChangeDump(e.opts(`${o}/changedump.xml`, { onResource: (r) => void seen.push(r) }));
    assert.deepEqual(r1.failures, []);
    assert.ok(r1.notes.some((n) => n.code === 'packages-out-of-order'), JSON.stringify(r1.notes));
    assert.equal(r1.created, 2);
    assert.equal(r1.updated, 2);
    assert.equal(r1.deleted, 0);
    assert.deepEqual(r1.deletionsNotApplied, [`${o}/res5.tiff`]);
    assert.equal(r1.until, '2013-01-03T00:00:00Z');
    assert.equal(await readFile(join(e.dest, 'res7.html'), 'utf8'), v2);
    assert.equal(await readFile(join(e.dest, 'res9.pdf'), 'utf8'), pdf);
    assert.equal(await readFile(join(e.dest, 'res5.tiff'), 'utf8'), 'old tiff', 'not deleted without delete: true');
    assert.deepEqual(
      seen.map((r) => [r.relPath, r.change, r.applied]),
      [
        ['res7.html', 'created', true],
        ['res7.html', 'created', true],
        ['res9.pdf', 'updated', true],
        ['res5.tiff', 'deleted', false],
        ['res7.html', 'updated', true],
      ],
    );

    // With delete: true and the cursor after day 1: only day 2 is downloaded.
    e.s.requests.length = 0;
    const r2 = await applyChangeDump(e.opts(`${o}/changedump.xml`, { delete: true, after: '2013-01-02T00:00:00Z' }));
    assert.equal(r2.deleted, 1);
    assert.equal(r2.packages, 1);
    await assert.rejects(stat(join(e.dest, 'res5.tiff')));
    assert.ok(!e.s.requests.some((r) => r.url === '/day1.zip'));

    // A cursor inside day 2: only the changes after it (19:00 delete, 20:00 update) are applied.
    await writeFile(join(e.dest, 'res9.pdf'), 'kept: its change was at 13:00');
    await writeFile(join(e.dest, 'res5.tiff'), 'old tiff');
    const r3 = await applyChangeDump(e.opts(`${o}/changedump.xml`, { delete: true, after: '2013-01-02T15:00:00Z' }));
    assert.deepEqual(r3.failures, []);
    assert.equal(r3.skippedBeforeCursor, 2);
    assert.deepEqual([r3.created, r3.updated, r3.deleted], [0, 1, 1]);
    assert.equal(await readFile(join(e.dest, 'res9.pdf'), 'utf8'), 'kept: its change was at 13:00');
    await assert.rejects(stat(join(e.dest, 'res5.tiff')));

    // A Resource Dump document given to applyChangeDump is refused.
    e.s.set('/rd.xml', dumpXml('resourcedump', []));
    await assert.rejects(applyChangeDump(e.opts(`${o}/rd.xml`)), { code: 'RS_INVALID_DOCUMENT' });
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump Index: every dump it lists is applied', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const zips: Buffer[] = [];
    for (let i = 0; i < 2; i++) {
      const data = `file ${i}`;
      const zip = await yazlZip([
        {
          name: 'manifest.xml',
          data: manifestXml('resourcedump-manifest', [{ loc: `${o}/f${i}.txt`, path: `/f${i}`, data }]),
        },
        { name: `f${i}`, data },
      ]);
      zips.push(zip);
      e.s.set(`/p${i}.zip`, zip);
      e.s.set(`/rd${i}.xml`, dumpXml('resourcedump', [{ loc: `${o}/p${i}.zip`, zip }]));
    }
    e.s.set(
      '/rd-index.xml',
      dumpXml('resourcedump', [{ loc: `${o}/rd0.xml` }, { loc: `${o}/rd1.xml` }], 'sitemapindex'),
    );
    const report = await applyResourceDump(e.opts(`${o}/rd-index.xml`));
    assert.deepEqual(report.failures, []);
    assert.equal(report.extracted, 2);
    assert.equal(await readFile(join(e.dest, 'f1.txt'), 'utf8'), 'file 1');
  } finally {
    await e.close();
  }
});

void test('Change Dump: an update given only as a JSON Patch in the package is applied to the local copy and verified (§14.4)', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const before = { title: 'A', n: [1] };
    const after = JSON.stringify({ title: 'B', n: [1, 2] });
    await writeFile(join(e.dest, 'doc.json'), JSON.stringify(before));
    const patch = JSON.stringify([
      { op: 'replace', path: '/title', value: 'B' },
      { op: 'add', path: '/n/-', value: 2 },
    ]);
    const md5 = createHash('md5').update(after).digest('hex');
    const entry = (loc: string, patchPath: string, hash = md5) =>
      `<url><loc>${o}/${loc}</loc><lastmod>2013-01-02T12:00:00Z</lastmod><rs:md change="updated" hash="md5:${hash}" length="${after.length}"/>` +
      `<rs:ln rel="http://www.openarchives.org/rs/terms/patch" type="application/json-patch+json" path="${patchPath}" href="${o}/patches/${loc}"/></url>`;
    const manifest =
      `<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` +
      `<rs:ln rel="up" href="${o}/cl.xml"/><rs:md capability="changedump-manifest" from="2013-01-02T00:00:00Z"/>` +
      entry('doc.json', '/patches/doc.json') +
      entry('missing-local.json', '/patches/doc.json') +
      entry('wrong.json', '/patches/doc.json', '0'.repeat(32)) +
      entry('absent-patch.json', '/patches/nope.json') +
      `</urlset>`;
    await writeFile(join(e.dest, 'wrong.json'), JSON.stringify(before));
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifest },
      { name: 'patches/doc.json', data: patch },
    ]);
    e.s.set('/cd.zip', zip);
    e.s.set('/cd.xml', dumpXml('changedump', [{ loc: `${o}/cd.zip`, zip }]));
    const report = await applyChangeDump(e.opts(`${o}/cd.xml`));
    assert.equal(report.patched, 1);
    assert.equal(report.updated, 1);
    assert.equal(await readFile(join(e.dest, 'doc.json'), 'utf8'), after);
    assert.deepEqual(
      report.failures.map((f) => [f.loc?.slice(o.length), f.code]),
      [
        ['/missing-local.json', 'RS_PATCH'],
        ['/wrong.json', 'RS_HASH_MISMATCH'],
        ['/absent-patch.json', 'RS_ZIP'],
      ],
    );
    assert.equal(
      await readFile(join(e.dest, 'wrong.json'), 'utf8'),
      JSON.stringify(before),
      'a failed patch leaves the old copy',
    );
    assert.ok(
      !e.s.requests.some((r) => r.url.startsWith('/patches/')),
      'the patch href is not fetched: the package has it',
    );
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump: an abort stops between bitstreams, waits for extractions in flight and leaves no temporary files', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const files = Array.from({ length: 40 }, (_, i) => ({
      loc: `${o}/f${i}.txt`,
      path: `/f${i}`,
      data: `content ${i}`.repeat(100),
    }));
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', files) },
      ...files.map((f) => ({ name: f.path.slice(1), data: f.data })),
    ]);
    e.s.set('/p.zip', zip);
    e.s.set('/rd.xml', dumpXml('resourcedump', [{ loc: `${o}/p.zip`, zip }]));
    const ac = new AbortController();
    let seen = 0;
    await assert.rejects(
      applyResourceDump(
        e.opts(`${o}/rd.xml`, {
          signal: ac.signal,
          onResource: () => {
            if (++seen === 3) ac.abort();
          },
        }),
      ),
      { code: 'RS_ABORTED' },
    );
    const written = (await readdir(e.dest)).filter((n) => n !== '.resourcesync');
    assert.ok(written.length >= 3 && written.length < 40, `stopped early (${written.length} files)`);
    for (const n of written) assert.equal(await readFile(join(e.dest, n), 'utf8'), files[Number(n.slice(1, -4))]!.data);
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump as resync-build writes it: manifest paths without the leading slash, and ./ paths, are read relative to the package root (§11.2)', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    // The package resync-build wrote here (test/fixtures/producers/resync-build/README.md), byte for byte:
    // its manifest has no 'at' and the paths 'a.txt', 'd.txt', 'sub/b.txt'; its locs are under http://example.org/data/.
    const real = await readFile(join(FIXTURES, 'producers', 'resync-build', 'resourcedump-package.zip'));
    // A second package in the form CORE's manifests use: './' paths, and one with the standard's leading slash.
    const c1 = '{"id":1234}';
    const c2 = '{"id":5678}';
    const core = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [
          { loc: 'http://example.org/data/articles/1234.json', path: './articles/1234.json', data: c1 },
          { loc: 'http://example.org/data/articles/5678.json', path: '/articles/5678.json', data: c2 },
        ]),
      },
      { name: 'articles/1234.json', data: c1 },
      { name: 'articles/5678.json', data: c2 },
    ]);
    e.s.set('/resync-build.zip', real);
    e.s.set('/core.zip', core);
    e.s.set(
      '/resourcedump.xml',
      dumpXml('resourcedump', [
        { loc: `${o}/resync-build.zip`, zip: real },
        { loc: `${o}/core.zip`, zip: core },
      ]),
    );
    const mapper = createMapper({ base: 'http://example.org/data/' });
    const report = await applyResourceDump(e.opts(`${o}/resourcedump.xml`, { mapPath: (loc) => mapper.toPath(loc) }));
    assert.deepEqual(report.failures, []);
    assert.equal(report.extracted, 5);
    assert.deepEqual(report.ignoredEntries, []);
    // the files resync-build packaged (the data it was run on, see the README), each at the path its loc maps to
    assert.equal(await readFile(join(e.dest, 'a.txt'), 'utf8'), 'alpha changed\n');
    assert.equal(await readFile(join(e.dest, 'd.txt'), 'utf8'), 'new\n');
    assert.equal(await readFile(join(e.dest, 'sub', 'b.txt'), 'utf8'), 'beta beta\n');
    assert.equal(await readFile(join(e.dest, 'articles', '1234.json'), 'utf8'), c1);
    assert.equal(await readFile(join(e.dest, 'articles', '5678.json'), 'utf8'), c2);
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('Resource Dump: a relative manifest path that climbs out of the package root (../) is refused', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const data = 'outside';
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', [{ loc: `${o}/x.txt`, path: '../x.txt', data }]) },
      { name: 'x.txt', data },
    ]);
    e.s.set('/p.zip', zip);
    e.s.set('/rd.xml', dumpXml('resourcedump', [{ loc: `${o}/p.zip`, zip }]));
    const report = await applyResourceDump(e.opts(`${o}/rd.xml`));
    assert.equal(report.extracted, 0);
    assert.equal(report.failures.length, 1);
    assert.equal(report.failures[0]!.code, 'RS_UNSAFE_PATH');
    await assert.rejects(stat(join(e.dest, 'x.txt')));
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});
