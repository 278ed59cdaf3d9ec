import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { deflateRawSync } from 'node:zlib';
import { REL_PATCH } from '../src/core/constants.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { createAuthority } from '../src/client/authority.js';
import { discover } from '../src/destination/discover.js';
import { applyChangeDump, applyResourceDump, type ApplyDumpOptions } from '../src/destination/dump.js';
import { createHttpClient } from '../src/client/http-client.js';
import { fetchResource } from '../src/destination/links.js';
import { RenameOnly } from '../src/node/durability.js';
import { createMapper } from '../src/destination/mapper.js';
import { createLocalDirectory } from '../src/destination/local-directory.js';
import { dumpXml, manifestXml, yazlZip } from './helpers/dump-fixtures.js';
import { rawZip } from './helpers/raw-zip.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';

/**
 * Hostile dumps and links: nothing is written outside the destination (the parent folder is compared
 * before and after) and nothing is fetched off-authority (a second server records every request).
 * @see Z39.99 §11.2 (`path`), §14
 */

interface Env {
  s: TestServer;
  /** Another origin that must never be contacted. */
  trap: TestServer;
  parent: string;
  dest: string;
  opts(dumpUrl: string, extra?: Partial<ApplyDumpOptions>): ApplyDumpOptions;
  http: ReturnType<typeof createHttpClient>;
  authority: ReturnType<typeof createAuthority>;
  close(): Promise<void>;
}

async function env(): Promise<Env> {
  const s = await startTestServer();
  const trap = await startTestServer();
  const parent = await mkdtemp(join(tmpdir(), 'rs-sec-'));
  const dest = join(parent, 'dest');
  await mkdir(dest);
  const authority = createAuthority({ origins: [s.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 10_000 });
  const mapper = createMapper({ base: `${s.origin}/` });
  return {
    s,
    trap,
    parent,
    dest,
    http,
    authority,
    opts: (dumpUrl, extra = {}) => ({
      dumpUrl,
      http,
      authority,
      storage: createLocalDirectory(dest),
      mapPath: (loc) => mapper.toPath(loc),
      fsync: false,
      ...extra,
    }),
    async close() {
      await http.close();
      await s.close();
      await trap.close();
      await rm(parent, { recursive: true, force: true });
    },
  };
}

/** Every path under `dir`, relative, sorted. */
async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const ent of await readdir(d, { withFileTypes: true })) {
      const p = join(d, ent.name);
      out.push(relative(dir, p));
      if (ent.isDirectory()) await walk(p);
    }
  };
  await walk(dir);
  return out.sort();
}

async function assertContained(e: Env, allowedInDest: string[]): Promise<void> {
  assert.deepEqual(await readdir(e.parent), ['dest'], 'nothing next to the destination');
  const inDest = (await tree(e.dest)).filter((p) => p !== '.resourcesync' && !p.startsWith(`.resourcesync/`));
  assert.deepEqual(inDest, allowedInDest.sort());
  assert.deepEqual(await readdir(join(e.dest, '.resourcesync', 'tmp')).catch(() => []), [], 'no temporary files');
  assert.deepEqual(e.trap.requests, [], 'the other origin saw no request');
}

void test('zip slip: entries named ../evil, a/../../evil, /abs, C:\\x and with backslashes make the package refused', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const names = ['../evil', 'a/../../evil', '/abs/evil', 'C:/evil', '..\\evil', 'a\\..\\..\\evil'];
    const pkgs = names.map((name, i) => {
      const data = Buffer.from(`evil ${i}`);
      const manifest = manifestXml('resourcedump-manifest', [
        { loc: `${o}/good${i}.txt`, path: '/good', data: 'good' },
        { loc: `${o}/evil${i}.txt`, path: `/${name}`, data },
      ]);
      const zip = rawZip([
        { name: 'manifest.xml', data: Buffer.from(manifest) },
        { name: 'good', data: Buffer.from('good') },
        { name, data },
      ]);
      e.s.set(`/p${i}.zip`, zip);
      return { loc: `${o}/p${i}.zip`, zip };
    });
    e.s.set('/dump.xml', dumpXml('resourcedump', pkgs));
    const report = await applyResourceDump(e.opts(`${o}/dump.xml`));
    assert.equal(report.extracted, 0);
    assert.deepEqual(
      report.failures.map((f) => f.code),
      names.map(() => 'RS_ZIP'),
    );
    await assertContained(e, []);
  } finally {
    await e.close();
  }
});

void test('hostile manifest paths (../, backslashes, encoded separators, absolute) and hostile locs write nothing outside', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const data = 'payload';
    const zip = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [
          { loc: `${o}/m1.txt`, path: '/../evil', data },
          { loc: `${o}/m2.txt`, path: '/a/../../evil', data },
          { loc: `${o}/m3.txt`, path: '\\a\\evil', data },
          { loc: `${o}/m4.txt`, path: '/a%2F..%2F..%2Fevil', data },
          { loc: `${o}/m5.txt`, path: '//etc/passwd', data },
          { loc: `${o}/m6.txt`, path: '/.resourcesync/state', data },
          { loc: `${o}/..%2F..%2Fevil`, path: '/ok', data },
          { loc: `${o}/a%5C..%5C..%5Cevil`, path: '/ok', data },
          { loc: 'http://other.example/evil', path: '/ok', data },
          { loc: `${o}/.resourcesync/lock`, path: '/ok', data },
          { loc: `${o}/fine.txt`, path: '/ok', data },
        ]),
      },
      { name: 'ok', data },
      { name: 'evil', data },
      { name: 'a/evil', data },
    ]);
    e.s.set('/p.zip', zip);
    e.s.set('/dump.xml', dumpXml('resourcedump', [{ loc: `${o}/p.zip`, zip }]));
    const report = await applyResourceDump(e.opts(`${o}/dump.xml`));
    assert.equal(report.extracted, 1);
    assert.deepEqual(
      report.failures.map((f) => f.code),
      [
        'RS_UNSAFE_PATH',
        'RS_UNSAFE_PATH',
        'RS_UNSAFE_PATH',
        'RS_ZIP',
        'RS_ZIP',
        'RS_UNSAFE_PATH',
        'RS_UNSAFE_PATH',
        'RS_UNSAFE_PATH',
        'RS_AUTHORITY',
        'RS_UNSAFE_PATH',
      ],
    );
    assert.deepEqual(report.ignoredEntries.sort(), [`${o}/p.zip#a/evil`, `${o}/p.zip#evil`]);
    await assertContained(e, ['fine.txt']);
  } finally {
    await e.close();
  }
});

void test('decompression bombs: an entry larger than its manifest length, a header that lies, and the total cap', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const big = Buffer.alloc(32 * 1024 * 1024); // 32 MiB of zeros deflates to ~32 KiB
    const deflated = deflateRawSync(big);
    const small = Buffer.from('tiny');
    // 1. Honest ZIP header, manifest claims 4 bytes: refused before inflating.
    const honest = rawZip([
      {
        name: 'manifest.xml',
        data: Buffer.from(
          manifestXml('resourcedump-manifest', [{ loc: `${o}/bomb1.bin`, path: '/bomb', data: small }]),
        ),
      },
      { name: 'bomb', data: big, deflate: true, deflated },
    ]);
    // 2. The ZIP header lies (4 bytes) and so does the manifest: inflation stops past 4 bytes.
    const liar = rawZip([
      {
        name: 'manifest.xml',
        data: Buffer.from(
          manifestXml('resourcedump-manifest', [{ loc: `${o}/bomb2.bin`, path: '/bomb', data: small }]),
        ),
      },
      { name: 'bomb', data: big, deflate: true, deflated, declaredSize: 4 },
    ]);
    // 3. No length or hash in the manifest, lying header: still stopped at the declared size.
    const noLength = rawZip([
      {
        name: 'manifest.xml',
        data: Buffer.from(
          manifestXml('resourcedump-manifest', [{ loc: `${o}/bomb3.bin`, path: '/bomb', hash: null, length: null }]),
        ),
      },
      { name: 'bomb', data: big, deflate: true, deflated, declaredSize: 10 },
    ]);
    assert.ok(honest.length < 1024 * 1024);
    e.s.set('/honest.zip', honest);
    e.s.set('/liar.zip', liar);
    e.s.set('/nolength.zip', noLength);
    e.s.set(
      '/dump.xml',
      dumpXml('resourcedump', [
        { loc: `${o}/honest.zip`, zip: honest },
        { loc: `${o}/liar.zip`, zip: liar },
        { loc: `${o}/nolength.zip`, zip: noLength },
      ]),
    );
    const t0 = Date.now();
    const report = await applyResourceDump(e.opts(`${o}/dump.xml`));
    assert.ok(Date.now() - t0 < 10_000);
    assert.equal(report.extracted, 0);
    // A lying header is caught by yauzl's size check (RS_ZIP) or by the cap on the stream (RS_LIMIT_BYTES).
    const stopped = (code: string) => (code === 'RS_ZIP' || code === 'RS_LIMIT_BYTES' ? 'stopped' : code);
    assert.deepEqual(
      report.failures.map((f) => [f.loc?.slice(o.length), stopped(f.code)]),
      [
        ['/bomb1.bin', 'RS_LENGTH_MISMATCH'],
        ['/bomb2.bin', 'stopped'],
        ['/bomb3.bin', 'stopped'],
      ],
    );
    await assertContained(e, []);

    // 4. The total cap across entries.
    const files = ['a', 'b', 'c'].map((n) => ({ loc: `${o}/${n}.txt`, path: `/${n}`, data: n.repeat(1000) }));
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', files) },
      ...files.map((f) => ({ name: f.path.slice(1), data: f.data })),
    ]);
    e.s.set('/capped.zip', zip);
    e.s.set('/capped.xml', dumpXml('resourcedump', [{ loc: `${o}/capped.zip`, zip }]));
    const capped = await applyResourceDump(e.opts(`${o}/capped.xml`, { maxTotalBytes: 2500 }));
    assert.equal(capped.extracted, 2);
    assert.deepEqual(
      capped.failures.map((f) => f.code),
      ['RS_LIMIT_BYTES'],
    );
    await assertContained(e, ['a.txt', 'b.txt']);
  } finally {
    await e.close();
  }
});

void test('off-authority packages, dump index entries and change dump deletions are never fetched or applied outside', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const x = e.trap.origin;
    const data = 'd';
    const zip = await yazlZip([
      { name: 'manifest.xml', data: manifestXml('resourcedump-manifest', [{ loc: `${o}/d.txt`, path: '/d', data }]) },
      { name: 'd', data },
    ]);
    e.trap.set('/p.zip', zip);
    e.s.set('/p.zip', zip);
    e.s.set(
      '/dump.xml',
      dumpXml('resourcedump', [
        { loc: `${x}/p.zip`, zip },
        { loc: `${o}/p.zip`, zip, contents: `${x}/manifest.xml` },
      ]),
    );
    const report = await applyResourceDump(e.opts(`${o}/dump.xml`));
    assert.deepEqual(
      report.failures.map((f) => f.code),
      ['RS_AUTHORITY'],
    );
    assert.equal(report.extracted, 1);

    e.s.set('/index.xml', dumpXml('resourcedump', [{ loc: `${x}/dump.xml` }], 'sitemapindex'));
    await assert.rejects(applyResourceDump(e.opts(`${o}/index.xml`)), (err: unknown) =>
      isResourceSyncError(err, 'RS_AUTHORITY'),
    );
    await assert.rejects(applyResourceDump(e.opts(`${x}/dump.xml`)), (err: unknown) =>
      isResourceSyncError(err, 'RS_AUTHORITY'),
    );

    const cd = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('changedump-manifest', [
          { loc: `${o}/..%2Fdest-sibling`, change: 'deleted' },
          { loc: `${x}/d.txt`, change: 'deleted' },
        ]),
      },
    ]);
    e.s.set('/cd.zip', cd);
    e.s.set('/cd.xml', dumpXml('changedump', [{ loc: `${o}/cd.zip`, zip: cd }]));
    const r2 = await applyChangeDump(e.opts(`${o}/cd.xml`, { delete: true }));
    assert.deepEqual(
      r2.failures.map((f) => f.code),
      ['RS_UNSAFE_PATH', 'RS_AUTHORITY'],
    );
    assert.equal(r2.deleted, 0);
    await assertContained(e, ['d.txt']);
  } finally {
    await e.close();
  }
});

void test('off-authority rs:ln mirrors and patches, up/index links and Link headers are never fetched', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const x = e.trap.origin;
    const body = '{"a":1}';
    e.s.set('/res.json', { status: 503, body: 'down' });
    e.trap.set('/res.json', body);
    e.trap.set('/patch', '[]');
    await assert.rejects(
      fetchResource(
        {
          loc: `${o}/res.json`,
          md: { hash: 'md5:5b8b0f8b0fcb9d14b9b3b0d1a3a5d0f6' },
          ln: [
            { rel: 'duplicate', href: `${x}/res.json`, pri: '1' },
            { rel: 'duplicate', href: `//${new URL(x).host}/res.json`, pri: '2' },
            { rel: REL_PATCH, href: `${x}/patch`, type: 'application/json-patch+json' },
          ],
        },
        {
          http: e.http,
          authority: e.authority,
          dest: e.dest,
          relPath: 'res.json',
          localCopy: join(e.dest, 'nothing.json'),
          preferMirrors: true,
          durability: new RenameOnly(),
        },
      ),
      (err: unknown) => isResourceSyncError(err) && err.recoverable,
    );
    // A hostile relPath is refused by writeVerified's safeJoin even when the bytes are fine.
    e.s.set('/ok.json', body);
    await assert.rejects(
      fetchResource(
        { loc: `${o}/ok.json` },
        { http: e.http, authority: e.authority, dest: e.dest, relPath: '../escape.json', durability: new RenameOnly() },
      ),
      (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'),
    );

    const xml = (cap: string, lns: string) =>
      `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">${lns}<rs:md capability="${cap}"/></urlset>`;
    e.s.set('/rl.xml', {
      headers: { 'content-type': 'application/xml', link: `<${x}/cl.xml>; rel="resourcesync"` },
      body: xml('resourcelist', `<rs:ln rel="up" href="${x}/cl.xml"/>`),
    });
    e.s.set('/rl2.xml', {
      headers: { 'content-type': 'application/xml' },
      body: xml('resourcelist', `<rs:ln rel="index" href="${x}/index.xml"/>`),
    });
    e.s.set('/res.pdf', {
      headers: {
        'content-type': 'application/pdf',
        link: `<${x}/cl.xml>; rel="resourcesync", <http://localhost:${new URL(x).port}/cl.xml>; rel=resourcesync`,
      },
      body: 'pdf',
    });
    e.s.set('/page.html', {
      headers: { 'content-type': 'text/html' },
      body: `<link rel="resourcesync" href="${x}/cl.xml"><link rel="resourcesync" href="//${new URL(x).host}/cl2.xml">`,
    });
    e.s.set('/robots.txt', { headers: { 'content-type': 'text/plain' }, body: `Sitemap: ${x}/rl.xml\n` });
    for (const start of ['/rl.xml', '/rl2.xml']) {
      const d = await discover(`${o}${start}`, { http: e.http, authority: e.authority });
      assert.equal(d.capabilityLists[0]?.synthetic, true);
    }
    for (const start of ['/res.pdf', '/page.html']) {
      await assert.rejects(discover(`${o}${start}`, { http: e.http, authority: e.authority }), (err: unknown) =>
        isResourceSyncError(err, 'RS_NOT_RESOURCESYNC'),
      );
    }
    await assert.rejects(discover(`${x}/cl.xml`, { http: e.http, authority: e.authority }), (err: unknown) =>
      isResourceSyncError(err, 'RS_AUTHORITY'),
    );
    await assertContained(e, []);
    await assert.rejects(stat(join(e.parent, 'escape.json')));
  } finally {
    await e.close();
  }
});
