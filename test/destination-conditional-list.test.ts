/**
 * `sync({ skipSameList })` over a Source with a Resource List Index and no Change List, on a loopback server that
 * answers conditional requests: an unchanged index and parts (304 each) keep the set in step without reading them;
 * a part with another ETag takes a new baseline; a part sent without a validator is read each run and never asked
 * for conditionally; without the option nothing is conditional; a Source of two sets is read in full.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { sync } from '../src/destination/index.js';
import { tempDir } from './helpers/tmp.js';

const RS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

interface Doc {
  body: string;
  etag?: string;
}

/** A Source whose documents and resources are in `docs` (changed by the test); `asked` has each request. */
async function source(): Promise<{ o: string; docs: Map<string, Doc>; asked: { path: string; conditional: string | undefined; status: number }[]; close(): Promise<void> }> {
  const docs = new Map<string, Doc>();
  const asked: { path: string; conditional: string | undefined; status: number }[] = [];
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const d = docs.get(path);
    const inm = req.headers['if-none-match'];
    const status = d === undefined ? 404 : d.etag !== undefined && inm === d.etag ? 304 : 200;
    asked.push({ path, conditional: inm, status });
    if (status !== 200) return void res.writeHead(status).end();
    res.writeHead(200, { 'content-type': path.endsWith('.xml') ? 'application/xml' : 'text/plain', ...(d!.etag === undefined ? {} : { etag: d!.etag }) }).end(d!.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { o: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, docs, asked, close: () => new Promise((r) => server.close(() => r())) };
}

const list = (o: string, cap: string, urls: string[]): string =>
  `<?xml version="1.0"?>\n<urlset ${RS}><rs:md capability="${cap}" at="2026-01-01T00:00:00Z"/>${urls.map((u) => `<url><loc>${o}${u}</loc></url>`).join('')}</urlset>`;
const index = (o: string, parts: string[]): string =>
  `<?xml version="1.0"?>\n<sitemapindex ${RS}><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>${parts.map((u) => `<sitemap><loc>${o}${u}</loc></sitemap>`).join('')}</sitemapindex>`;

void test('sync skipSameList: a Resource List Index and its parts asked for conditionally; a 304 for each keeps the set', async (t) => {
  const s = await source();
  const { dir, cleanup } = await tempDir('rs-cond-list-');
  t.after(async () => {
    await s.close();
    await cleanup();
  });
  const { o, docs } = s;
  docs.set('/cl.xml', { body: `<?xml version="1.0"?>\n<urlset ${RS}><rs:md capability="capabilitylist"/><url><loc>${o}/rl.xml</loc><rs:md capability="resourcelist"/></url></urlset>` });
  docs.set('/rl.xml', { body: index(o, ['/rl1.xml', '/rl2.xml']), etag: '"i1"' });
  docs.set('/rl1.xml', { body: list(o, 'resourcelist', ['/a.txt']), etag: '"p1"' });
  docs.set('/rl2.xml', { body: list(o, 'resourcelist', ['/b.txt']), etag: 'W/"p2"' });
  docs.set('/a.txt', { body: 'a\n' });
  docs.set('/b.txt', { body: 'b\n' });
  const dest = join(dir, 'mirror');
  const run = async (skipSameList = true): Promise<{ mode: string; created: number; deleted: number; since: typeof s.asked }> => {
    const from = s.asked.length;
    const r = await sync({ source: `${o}/cl.xml`, dest, delete: true, skipSameList });
    return { mode: r.mode, created: r.created, deleted: r.deleted, since: s.asked.slice(from) };
  };
  assert.equal((await run()).created, 2);
  // unchanged: three conditional requests, each 304, nothing else fetched
  let r = await run();
  assert.equal(r.mode, 'incremental');
  assert.deepEqual(r.since.map((a) => `${a.path} ${a.conditional ?? '-'} ${a.status}`), ['/cl.xml - 200', '/rl.xml "i1" 304', '/rl1.xml "p1" 304', '/rl2.xml W/"p2" 304']);
  // a part changes (b.txt gone, c.txt new): a new baseline, the deletion inferred
  docs.set('/c.txt', { body: 'c\n' });
  docs.set('/rl2.xml', { body: list(o, 'resourcelist', ['/c.txt']), etag: '"p2b"' });
  r = await run();
  assert.equal(r.mode, 'baseline');
  assert.equal(r.created, 1);
  assert.equal(r.deleted, 1);
  assert.equal(await readFile(join(dest, 'c.txt'), 'utf8'), 'c\n');
  assert.equal((await run()).mode, 'incremental', 'the new validators kept');
  // without the option: nothing conditional
  r = await run(false);
  assert.equal(r.mode, 'baseline');
  assert.ok(r.since.every((a) => a.conditional === undefined && a.status === 200));
  // a part sent without a validator: read each run, never conditional (a 304 would not be trusted)
  docs.set('/rl1.xml', { body: list(o, 'resourcelist', ['/a.txt']) });
  assert.equal((await run()).mode, 'baseline');
  r = await run();
  assert.equal(r.mode, 'baseline');
  assert.ok(r.since.every((a) => a.conditional === undefined), JSON.stringify(r.since));
});

void test('sync skipSameList: a Source of two capability sets is read in full (a 304 set would keep the other from inferring deletions)', async (t) => {
  const s = await source();
  const { dir, cleanup } = await tempDir('rs-cond-sets-');
  t.after(async () => {
    await s.close();
    await cleanup();
  });
  const { o, docs } = s;
  const cap = (n: number): string => `<?xml version="1.0"?>\n<urlset ${RS}><rs:ln rel="up" href="${o}/sd.xml"/><rs:md capability="capabilitylist"/><url><loc>${o}/rl${n}.xml</loc><rs:md capability="resourcelist"/></url></urlset>`;
  docs.set('/sd.xml', { body: `<?xml version="1.0"?>\n<urlset ${RS}><rs:md capability="description"/><url><loc>${o}/cl1.xml</loc><rs:md capability="capabilitylist"/></url><url><loc>${o}/cl2.xml</loc><rs:md capability="capabilitylist"/></url></urlset>` });
  docs.set('/cl1.xml', { body: cap(1) });
  docs.set('/cl2.xml', { body: cap(2) });
  docs.set('/rl1.xml', { body: list(o, 'resourcelist', ['/a.txt']), etag: '"1"' });
  docs.set('/rl2.xml', { body: list(o, 'resourcelist', ['/b.txt']), etag: '"2"' });
  docs.set('/a.txt', { body: 'a\n' });
  docs.set('/b.txt', { body: 'b\n' });
  const dest = join(dir, 'mirror');
  await sync({ source: `${o}/sd.xml`, dest, delete: true, skipSameList: true });
  const from = s.asked.length;
  docs.set('/rl2.xml', { body: list(o, 'resourcelist', []), etag: '"2b"' });
  const r = await sync({ source: `${o}/sd.xml`, dest, delete: true, skipSameList: true });
  assert.equal(r.mode, 'baseline');
  assert.equal(r.deleted, 1, 'b.txt, gone from the second set, is deleted');
  assert.ok(s.asked.slice(from).every((a) => a.conditional === undefined));
});
