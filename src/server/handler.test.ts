import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createSourceResponder } from './source-responder.js';
import { createSourceHandler, toWebHandler, type SourceHandler } from './handler.js';

const BASE = 'http://localhost:8080';
const CAP = `${BASE}/.resourcesync/data/capabilitylist.xml`;
const LINK = `<${CAP}>; rel="resourcesync"`;

let tmp: string;
let dir: string;
let outDir: string;
let handler: SourceHandler;
const small = 'hello, resourcesync\n';
const html = `<!DOCTYPE html><html><head><title>t</title></head><body>${'<p>paragraph</p>\n'.repeat(40)}</body></html>\n`;
const bigBin = Buffer.alloc(200_000);
for (let i = 0; i < bigBin.length; i++) bigBin[i] = (i * 7 + 3) & 0xff;
const bigTxt = 'line of text that compresses well\n'.repeat(6000);

async function fixture(): Promise<void> {
  tmp = await mkdtemp(join(tmpdir(), 'rs-handler-'));
  dir = join(tmp, 'data');
  outDir = join(dir, '.resourcesync', 'publish');
  await mkdir(join(dir, 'sub', '.secret'), { recursive: true });
  await mkdir(join(outDir, '.well-known'), { recursive: true });
  await mkdir(join(outDir, '.resourcesync', 'data'), { recursive: true });
  await mkdir(join(tmp, 'outside'), { recursive: true });
  await writeFile(join(dir, 'a.txt'), small);
  await writeFile(join(dir, 'page.html'), html);
  await writeFile(join(dir, 'big.bin'), bigBin);
  await writeFile(join(dir, 'big.txt'), bigTxt);
  await writeFile(join(dir, 'empty.txt'), '');
  await writeFile(join(dir, 'sub', 'x y é.txt'), 'spaces and accents');
  await writeFile(join(dir, '.hidden.txt'), 'hidden');
  await writeFile(join(dir, 'sub', '.secret', 's.txt'), 'secret');
  await writeFile(join(dir, '.resourcesync', 'source.sqlite'), 'state');
  await writeFile(join(tmp, 'outside', 'secret.txt'), 'outside secret');
  await symlink(join(tmp, 'outside', 'secret.txt'), join(dir, 'link-out.txt'));
  await symlink('a.txt', join(dir, 'link-in.txt'));
  await symlink(join('.resourcesync', 'source.sqlite'), join(dir, 'link-state.txt'));
  await symlink(join(tmp, 'outside'), join(dir, 'dirlink-out'));
  await symlink('../../../outside/secret.txt', join(outDir, '.resourcesync', 'data', 'evil.xml'));
  await writeFile(join(outDir, '.well-known', 'resourcesync'), '<urlset>source description</urlset>');
  await writeFile(join(outDir, '.resourcesync', 'data', 'capabilitylist.xml'), '<urlset>capability list</urlset>');
  await writeFile(join(outDir, '.resourcesync', 'data', 'resourcedump-0001.zip'), 'PK\u0003\u0004 zip');
  await writeFile(join(outDir, 'robots.txt'), `User-agent: *\nSitemap: ${BASE}/.resourcesync/data/resourcelist.xml\n`);
}

function get(path: string, headers: Record<string, string> = {}, method = 'GET', h = handler): Promise<Response> {
  return h(new Request(`${BASE}${path}`, { method, headers }));
}

async function bytes(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

before(async () => {
  await fixture();
  handler = createSourceHandler({ sets: [{ name: 'data', dir }], outDir, baseUrl: BASE, cacheMs: 0 });
});
after(() => rm(tmp, { recursive: true, force: true }));

void describe('resources', () => {
  void test('GET a small file: body, type, validators, discovery link', async () => {
    const res = await get('/a.txt');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), small);
    assert.equal(res.headers.get('content-type'), 'text/plain');
    assert.equal(res.headers.get('content-length'), String(Buffer.byteLength(small)));
    assert.match(res.headers.get('etag')!, /^"[0-9a-f]+-[0-9a-f]+-[0-9a-f]+"$/);
    assert.ok(!Number.isNaN(Date.parse(res.headers.get('last-modified')!)));
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.equal(res.headers.get('link'), LINK);
    assert.equal(res.headers.get('cache-control'), null);
  });

  void test('HEAD has the headers of GET and no body', async () => {
    const g = await get('/a.txt');
    await g.arrayBuffer();
    const res = await get('/a.txt', {}, 'HEAD');
    assert.equal(res.status, 200);
    assert.equal((await bytes(res)).length, 0);
    for (const h of ['content-type', 'content-length', 'etag', 'last-modified', 'link']) {
      assert.equal(res.headers.get(h), g.headers.get(h), h);
    }
    const big = await get('/big.bin', {}, 'HEAD');
    assert.equal(big.headers.get('content-length'), String(bigBin.length));
    assert.equal((await bytes(big)).length, 0);
  });

  void test('names with spaces and non-ASCII letters', async () => {
    const res = await get('/sub/x%20y%20%C3%A9.txt');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'spaces and accents');
  });

  void test('HTML pages carry the Link header and are served byte for byte', async () => {
    const res = await get('/page.html');
    assert.equal(res.headers.get('content-type'), 'text/html');
    assert.equal(res.headers.get('link'), LINK);
    assert.equal(await res.text(), html);
  });

  void test('large files are streamed through a descriptor', async () => {
    const res = await get('/big.bin');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/octet-stream');
    assert.deepEqual(await bytes(res), bigBin);
  });

  void test('empty file', async () => {
    const res = await get('/empty.txt');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), '0');
    assert.equal((await bytes(res)).length, 0);
  });
});

void describe('conditional requests', () => {
  void test('If-None-Match with the current ETag → 304 with validators and no body', async () => {
    const first = await get('/a.txt');
    await first.arrayBuffer();
    const etag = first.headers.get('etag')!;
    const res = await get('/a.txt', { 'if-none-match': etag });
    assert.equal(res.status, 304);
    assert.equal(res.headers.get('etag'), etag);
    assert.equal(res.headers.get('link'), LINK);
    assert.equal((await bytes(res)).length, 0);
    const weak = await get('/a.txt', { 'if-none-match': `"other", W/${etag}` });
    assert.equal(weak.status, 304);
    const other = await get('/a.txt', { 'if-none-match': '"other"' });
    assert.equal(other.status, 200);
    assert.equal(await other.text(), small);
  });

  void test('If-Modified-Since', async () => {
    const first = await get('/big.bin', {}, 'HEAD');
    const lm = first.headers.get('last-modified')!;
    assert.equal((await get('/big.bin', { 'if-modified-since': lm })).status, 304);
    const older = new Date(Date.parse(lm) - 60_000).toUTCString();
    const res = await get('/big.bin', { 'if-modified-since': older });
    assert.equal(res.status, 200);
    assert.equal((await bytes(res)).length, bigBin.length);
    // If-None-Match takes precedence over If-Modified-Since
    assert.equal((await get('/big.bin', { 'if-modified-since': lm, 'if-none-match': '"nope"' }, 'HEAD')).status, 200);
  });

  void test('If-Match that fails → 412', async () => {
    const res = await get('/a.txt', { 'if-match': '"nope"' });
    assert.equal(res.status, 412);
    await res.arrayBuffer();
  });
});

void describe('ranges', () => {
  void test('single range → 206 with Content-Range', async () => {
    const res = await get('/a.txt', { range: 'bytes=0-4' });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), `bytes 0-4/${Buffer.byteLength(small)}`);
    assert.equal(res.headers.get('content-length'), '5');
    assert.equal(await res.text(), 'hello');
    const suffix = await get('/a.txt', { range: 'bytes=-3' });
    assert.equal(suffix.status, 206);
    assert.equal(await suffix.text(), small.slice(-3));
  });

  void test('range of a large file', async () => {
    const res = await get('/big.bin', { range: 'bytes=100000-100099' });
    assert.equal(res.status, 206);
    assert.equal(res.headers.get('content-range'), `bytes 100000-100099/${bigBin.length}`);
    assert.deepEqual(await bytes(res), bigBin.subarray(100000, 100100));
    const open = await get('/big.bin', { range: 'bytes=199990-' });
    assert.deepEqual(await bytes(open), bigBin.subarray(199990));
  });

  void test('unsatisfiable → 416 with Content-Range */size', async () => {
    const res = await get('/a.txt', { range: 'bytes=1000-2000' });
    assert.equal(res.status, 416);
    assert.equal(res.headers.get('content-range'), `bytes */${Buffer.byteLength(small)}`);
    await res.arrayBuffer();
    const big = await get('/big.bin', { range: `bytes=${bigBin.length}-` });
    assert.equal(big.status, 416);
    await big.arrayBuffer();
  });

  void test('invalid syntax and multiple ranges are ignored → 200', async () => {
    for (const range of ['bytes=abc', 'bytes=9-1', 'lines=1-2', 'bytes=0-1,4-5']) {
      const res = await get('/a.txt', { range });
      assert.equal(res.status, 200, range);
      assert.equal(await res.text(), small);
    }
  });

  void test('If-Range: a matching ETag keeps the range, another one gives the whole file', async () => {
    const head = await get('/a.txt', {}, 'HEAD');
    const etag = head.headers.get('etag')!;
    const ok = await get('/a.txt', { range: 'bytes=0-4', 'if-range': etag });
    assert.equal(ok.status, 206);
    await ok.arrayBuffer();
    const stale = await get('/a.txt', { range: 'bytes=0-4', 'if-range': '"old"' });
    assert.equal(stale.status, 200);
    assert.equal(await stale.text(), small);
    const byDate = await get('/a.txt', { range: 'bytes=0-4', 'if-range': head.headers.get('last-modified')! });
    assert.equal(byDate.status, 206);
    await byDate.arrayBuffer();
  });

  void test('HEAD ignores Range', async () => {
    const res = await get('/a.txt', { range: 'bytes=0-4' }, 'HEAD');
    assert.equal(res.status, 200);
  });
});

void describe('gzip', () => {
  void test('compressible type, client accepts gzip → gzip body, Vary, its own ETag', async () => {
    const plain = await get('/page.html');
    await plain.arrayBuffer();
    assert.equal(plain.headers.get('vary'), 'Accept-Encoding');
    assert.equal(plain.headers.get('content-encoding'), null);
    const res = await get('/page.html', { 'accept-encoding': 'gzip, deflate, br' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    assert.equal(res.headers.get('vary'), 'Accept-Encoding');
    assert.notEqual(res.headers.get('etag'), plain.headers.get('etag'));
    const body = await bytes(res);
    assert.equal(res.headers.get('content-length'), String(body.length));
    assert.equal(gunzipSync(body).toString(), html);
    const again = await get('/page.html', { 'accept-encoding': 'gzip', 'if-none-match': res.headers.get('etag')! });
    assert.equal(again.status, 304);
  });

  void test('large text files are gzipped while streaming', async () => {
    const res = await get('/big.txt', { 'accept-encoding': 'gzip' });
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    assert.equal(res.headers.get('content-length'), null);
    const body = await bytes(res);
    assert.ok(body.length < bigTxt.length / 10);
    assert.equal(gunzipSync(body).toString(), bigTxt);
  });

  void test('no gzip when refused, for binary types, or with Range', async () => {
    const refused = await get('/page.html', { 'accept-encoding': 'gzip;q=0, identity' });
    assert.equal(refused.headers.get('content-encoding'), null);
    assert.equal(await refused.text(), html);
    const bin = await get('/big.bin', { 'accept-encoding': 'gzip' });
    assert.equal(bin.headers.get('content-encoding'), null);
    assert.equal(bin.headers.get('vary'), null);
    assert.equal((await bytes(bin)).length, bigBin.length);
    const ranged = await get('/page.html', { 'accept-encoding': 'gzip', range: 'bytes=0-14' });
    assert.equal(ranged.status, 206);
    assert.equal(ranged.headers.get('content-encoding'), null);
    assert.equal(await ranged.text(), html.slice(0, 15));
  });

  void test('HEAD with gzip gives the compressed length and no body', async () => {
    const res = await get('/page.html', { 'accept-encoding': 'gzip' }, 'HEAD');
    assert.equal(res.headers.get('content-encoding'), 'gzip');
    assert.ok(Number(res.headers.get('content-length')) > 0);
    assert.equal((await bytes(res)).length, 0);
  });
});

void describe('documents and discovery', () => {
  void test('Source Description at the well-known URI', async () => {
    const res = await get('/.well-known/resourcesync');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/xml');
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(res.headers.get('link'), null);
    assert.equal(await res.text(), '<urlset>source description</urlset>');
  });

  void test('documents under /.resourcesync/ and ZIP packages', async () => {
    const cap = await get('/.resourcesync/data/capabilitylist.xml');
    assert.equal(cap.status, 200);
    assert.equal(cap.headers.get('content-type'), 'application/xml');
    assert.equal(await cap.text(), '<urlset>capability list</urlset>');
    const zip = await get('/.resourcesync/data/resourcedump-0001.zip');
    assert.equal(zip.headers.get('content-type'), 'application/zip');
    await zip.arrayBuffer();
    const missing = await get('/.resourcesync/data/nope.xml');
    assert.equal(missing.status, 404);
    await missing.arrayBuffer();
  });

  void test('robots.txt is the published one', async () => {
    const res = await get('/robots.txt');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; charset=utf-8');
    assert.match(await res.text(), /^Sitemap: http:\/\/localhost:8080\/\.resourcesync\/data\/resourcelist\.xml$/m);
  });

  void test('a resource named robots.txt is served as listed', async () => {
    const d = join(tmp, 'with-robots');
    await mkdir(d, { recursive: true });
    await writeFile(join(d, 'robots.txt'), 'User-agent: *\nDisallow: /private/\n');
    const h = createSourceHandler({ sets: [{ name: 'data', dir: d }], outDir, baseUrl: BASE, cacheMs: 0 });
    const res = await get('/robots.txt', {}, 'GET', h);
    assert.equal(await res.text(), 'User-agent: *\nDisallow: /private/\n');
    assert.equal(res.headers.get('link'), LINK);
  });
});

void describe('confinement and hidden names', () => {
  const core = (): ReturnType<typeof createSourceResponder> =>
    createSourceResponder({ sets: [{ name: 'data', dir }], outDir, baseUrl: BASE, cacheMs: 0 });

  void test('traversal syntax in the raw request-target → 400', async () => {
    const c = core();
    for (const target of [
      '/../etc/passwd',
      '/%2e%2e/%2e%2e/etc/passwd',
      '/a%2f..%2f..%2fetc%2fpasswd',
      '/sub/..%5c..%5ca.txt',
      '/sub\\..\\a.txt',
      '/a.txt%00.html',
      '/sub/../a.txt',
    ]) {
      const res = await c({ method: 'GET', target, headers: {} });
      assert.equal(res.status, 400, target);
    }
  });

  void test('symlinks whose real path leaves the tree or enters hidden folders → 404', async () => {
    for (const p of ['/link-out.txt', '/link-state.txt', '/dirlink-out/secret.txt', '/.resourcesync/data/evil.xml']) {
      const res = await get(p);
      assert.equal(res.status, 404, p);
      assert.doesNotMatch(await res.text(), /secret|state/);
    }
    const inside = await get('/link-in.txt');
    assert.equal(inside.status, 200);
    assert.equal(await inside.text(), small);
  });

  void test('hidden files, state and unknown well-known names → 404', async () => {
    for (const p of [
      '/.hidden.txt',
      '/sub/.secret/s.txt',
      '/.resourcesync/source.sqlite',
      '/.resourcesync/publish/robots.txt',
      '/.resourcesync/.x/capabilitylist.xml',
      '/.well-known/other',
      '/.well-known/resourcesync/x',
      '/.git/config',
    ]) {
      const res = await get(p);
      assert.equal(res.status, 404, p);
      await res.arrayBuffer();
    }
  });

  void test('directories → 404', async () => {
    for (const p of ['/', '/sub', '/sub/', '/.resourcesync/', '/.resourcesync/data']) {
      const res = await get(p);
      assert.equal(res.status, 404, p);
      await res.arrayBuffer();
    }
  });

  void test('other methods → 405 with Allow', async () => {
    for (const m of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']) {
      const res = await get('/a.txt', {}, m);
      assert.equal(res.status, 405, m);
      assert.equal(res.headers.get('allow'), 'GET, HEAD');
      await res.arrayBuffer();
    }
  });
});

void describe('several sets, base path, cache', () => {
  void test('resources of several sets live under /<set>/ with their own Capability List', async () => {
    const one = join(tmp, 'one');
    const two = join(tmp, 'two');
    await mkdir(one, { recursive: true });
    await mkdir(two, { recursive: true });
    await writeFile(join(one, 'x.txt'), 'one');
    await writeFile(join(two, 'x.txt'), 'two');
    const h = createSourceHandler({
      sets: [
        { name: 'one', dir: one },
        { name: 'two', dir: two, capabilityList: 'http://cap.example/two.xml' },
      ],
      outDir,
      baseUrl: BASE,
      cacheMs: 0,
    });
    const r1 = await get('/one/x.txt', {}, 'GET', h);
    assert.equal(await r1.text(), 'one');
    assert.equal(r1.headers.get('link'), `<${BASE}/.resourcesync/one/capabilitylist.xml>; rel="resourcesync"`);
    const r2 = await get('/two/x.txt', {}, 'GET', h);
    assert.equal(await r2.text(), 'two');
    assert.equal(r2.headers.get('link'), '<http://cap.example/two.xml>; rel="resourcesync"');
    for (const p of ['/x.txt', '/one', '/three/x.txt']) {
      const res = await get(p, {}, 'GET', h);
      assert.equal(res.status, 404, p);
      await res.arrayBuffer();
    }
    const robots = await get('/robots.txt', {}, 'GET', h);
    assert.match(await robots.text(), /Sitemap:/);
  });

  void test('a base URL with a path serves resources below it', async () => {
    const h = createSourceHandler({ sets: [{ name: 'data', dir }], outDir, baseUrl: 'http://h.example/pre%20fix/', cacheMs: 0 });
    const res = await get('/pre%20fix/a.txt', {}, 'GET', h);
    assert.equal(await res.text(), small);
    assert.equal(res.headers.get('link'), '<http://h.example/pre%20fix/.resourcesync/data/capabilitylist.xml>; rel="resourcesync"');
    const wk = await get('/pre%20fix/.well-known/resourcesync', {}, 'GET', h);
    assert.equal(wk.status, 200);
    await wk.arrayBuffer();
  });

  void test('resolutions are trusted for cacheMs, and invalidate() forgets them', async () => {
    const d = join(tmp, 'cached');
    await mkdir(d, { recursive: true });
    await writeFile(join(d, 'f.txt'), 'version 1');
    let clock = 0;
    const core = createSourceResponder({ sets: [{ name: 'c', dir: d }], outDir, cacheMs: 1000, now: () => clock });
    const h = toWebHandler(core);
    assert.equal(await (await get('/f.txt', {}, 'GET', h)).text(), 'version 1');
    await writeFile(join(d, 'f.txt'), 'version 2!');
    clock = 500;
    assert.equal(await (await get('/f.txt', {}, 'GET', h)).text(), 'version 1');
    clock = 1000;
    assert.equal(await (await get('/f.txt', {}, 'GET', h)).text(), 'version 2!');
    await writeFile(join(d, 'f.txt'), 'version 3');
    core.invalidate();
    assert.equal(await (await get('/f.txt', {}, 'GET', h)).text(), 'version 3');
    await rm(join(d, 'f.txt'));
    core.invalidate();
    const gone = await get('/f.txt', {}, 'GET', h);
    assert.equal(gone.status, 404);
    await gone.arrayBuffer();
  });

  void test('invalid options are refused', () => {
    assert.throws(() => createSourceResponder({ sets: [], outDir }), { code: 'RS_INVALID_ARGUMENT' });
    assert.throws(
      () => createSourceResponder({ sets: [{ name: 'a', dir }, { name: 'a', dir }], outDir }),
      { code: 'RS_INVALID_ARGUMENT' },
    );
    assert.throws(() => createSourceResponder({ sets: [{ name: '.a', dir }], outDir }), { code: 'RS_INVALID_ARGUMENT' });
  });
});

void describe('HTML discovery link (htmlDiscoveryLink)', () => {
  const withLink = (page: string): string => page.replace('<head>', `<head><link rel="resourcesync" href="${CAP}">`);
  let site: string;
  let linked: SourceHandler;
  const big = `<html><head></head><body>${'x'.repeat(1024 * 1024)}</body></html>`;
  before(async () => {
    site = await mkdtemp(join(tmpdir(), 'rs-handler-html-'));
    await writeFile(join(site, 'page.html'), html);
    await writeFile(join(site, 'no-head.html'), '<p>fragment</p>');
    await writeFile(join(site, 'big.html'), big);
    await writeFile(join(site, 'a.txt'), '<head></head>');
    linked = createSourceHandler({ sets: [{ name: 'data', dir: site }], outDir: join(site, '.out'), baseUrl: BASE, htmlDiscoveryLink: true, cacheMs: 0 });
  });
  after(() => rm(site, { recursive: true, force: true }));

  void test('HTML is served with the link in its head: length, ranges, gzip and HEAD agree with those bytes', async () => {
    const expected = Buffer.from(withLink(html));
    const res = await get('/page.html', {}, 'GET', linked);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/html');
    assert.equal(res.headers.get('content-length'), String(expected.length));
    assert.deepEqual(await bytes(res), expected);
    const head = await get('/page.html', {}, 'HEAD', linked);
    assert.equal(head.headers.get('content-length'), String(expected.length));
    const range = await get('/page.html', { range: `bytes=${expected.length - 10}-` }, 'GET', linked);
    assert.equal(range.status, 206);
    assert.equal(range.headers.get('content-range'), `bytes ${expected.length - 10}-${expected.length - 1}/${expected.length}`);
    assert.deepEqual(await bytes(range), expected.subarray(expected.length - 10));
    const gz = await get('/page.html', { 'accept-encoding': 'gzip' }, 'GET', linked);
    assert.deepEqual(gunzipSync(await bytes(gz)), expected);
    // the same file keeps being served with the link (a cached resolution)
    const cached = createSourceHandler({ sets: [{ name: 'data', dir: site }], outDir: join(site, '.out'), baseUrl: BASE, htmlDiscoveryLink: true });
    for (let i = 0; i < 2; i++) assert.deepEqual(await bytes(await get('/page.html', {}, 'GET', cached)), expected);
  });

  void test('served as stored: HTML without a head, HTML over 1 MiB, other types, and without the option', async () => {
    assert.equal(await (await get('/no-head.html', {}, 'GET', linked)).text(), '<p>fragment</p>');
    assert.equal(await (await get('/a.txt', {}, 'GET', linked)).text(), '<head></head>');
    const b = await get('/big.html', {}, 'GET', linked);
    assert.equal(b.headers.get('content-length'), String(Buffer.byteLength(big)));
    assert.equal(await b.text(), big);
    const plain = createSourceHandler({ sets: [{ name: 'data', dir: site }], outDir: join(site, '.out'), baseUrl: BASE });
    assert.equal(await (await get('/page.html', {}, 'GET', plain)).text(), html);
  });
});
