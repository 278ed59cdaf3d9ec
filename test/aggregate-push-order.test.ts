/**
 * The aggregate's Change List for a Source followed by push: each batch of Change Notifications is recorded in the
 * order the aggregator applied it (the order of the entries' `datetime`s, the Source's order), not in path order,
 * and batch after batch in the order they came (Z39.99 §12.1, Change Notification §3). A static Source on loopback
 * advertises its change channel with a real WebSub hub (in this process); the aggregator is a child process.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceSyncDocument } from '../src/core/model/types.js';
import { readAggregateStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { startCli, until, type CliChild } from './helpers/cli-child.js';
import { startHub } from './helpers/test-hub.js';
import { tempDir } from './helpers/tmp.js';
import { parseXml } from './helpers/xml-oracle.js';

const RS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
const XML = '<?xml version="1.0" encoding="UTF-8"?>\n';

/**
 * A static server over `root` on loopback, 404 for what it does not hold; `/hub` is passed on to the hub at
 * `hub.url` once set (the Source's hub on its own origin, as `serve` has it).
 */
async function staticServer(root: string, hub: { url?: string }): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (path === '/hub' && hub.url !== undefined) return void relay(req, res, hub.url);
    if (path.includes('..')) return void res.writeHead(400).end();
    const type = path.endsWith('.txt') ? 'text/plain' : 'application/xml';
    void readFile(join(root, ...path.split('/'))).then(
      (b) => res.writeHead(200, { 'content-type': type }).end(b),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

/** Passes a request on to `to` and its answer back. */
async function relay(req: IncomingMessage, res: ServerResponse, to: string): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const headers: Record<string, string> = {};
  for (const h of ['content-type', 'link']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
  const got = await fetch(`${to}${new URL(req.url ?? '/', 'http://x').search}`, { method: req.method ?? 'GET', headers, ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}) });
  res.writeHead(got.status, { 'content-type': got.headers.get('content-type') ?? 'text/plain' }).end(Buffer.from(await got.arrayBuffer()));
}

/** Fetches `url` until `ok` holds of the parsed document, against a deadline. */
async function documentWhen(url: string, ok: (d: ResourceSyncDocument) => boolean, what: string, p: CliChild): Promise<ResourceSyncDocument> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(url);
    if (res.status === 200) {
      const d = parseXml(await res.text());
      if (ok(d)) return d;
    } else await res.body?.cancel();
    assert.ok(Date.now() < deadline, `${what} never came: ${p.err()}`);
    await sleep(100);
  }
}

void test('aggregate Change List of a Source followed by push: each batch in the order applied (datetime order), not path order', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-agg-push-order-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const root = join(dir, 'root');
  await mkdir(join(root, '.well-known'), { recursive: true });
  const relayTo: { url?: string } = {};
  const server = await staticServer(root, relayTo);
  teardown.push(server.close);
  const o = server.origin;
  const hub = await startHub({ hubUrl: `${o}/hub` });
  relayTo.url = hub.url;
  teardown.push(() => hub.stop());
  const at = '2026-01-01T00:00:00Z';
  const topic = `${o}/change-notification/`;
  const md5 = (body: string): string => createHash('md5').update(body).digest('hex');
  const entry = (path: string, body: string, change: string, datetime: string): string =>
    `<url><loc>${o}/${path}</loc><lastmod>${datetime}</lastmod><rs:md change="${change}" datetime="${datetime}" hash="md5:${md5(body)}" length="${Buffer.byteLength(body)}" type="text/plain"/></url>`;
  await writeFile(join(root, '.well-known', 'resourcesync'), `${XML}<urlset ${RS}><rs:md capability="description"/><url><loc>${o}/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url></urlset>\n`);
  await writeFile(
    join(root, 'capabilitylist.xml'),
    `${XML}<urlset ${RS}><rs:ln rel="up" href="${o}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>` +
      `<url><loc>${o}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url><url><loc>${o}/changelist.xml</loc><rs:md capability="changelist"/></url>` +
      `<url><loc>${topic}</loc><rs:md capability="change-notification"/><rs:ln rel="hub" href="${o}/hub"/></url></urlset>\n`,
  );
  await writeFile(join(root, 'x.txt'), 'x\n');
  await writeFile(
    join(root, 'resourcelist.xml'),
    `${XML}<urlset ${RS}><rs:ln rel="up" href="${o}/capabilitylist.xml"/><rs:md capability="resourcelist" at="${at}"/>` +
      `<url><loc>${o}/x.txt</loc><lastmod>${at}</lastmod><rs:md hash="md5:${md5('x\n')}" length="2" type="text/plain"/></url></urlset>\n`,
  );
  await writeFile(join(root, 'changelist.xml'), `${XML}<urlset ${RS}><rs:ln rel="up" href="${o}/capabilitylist.xml"/><rs:md capability="changelist" from="${at}"/></urlset>\n`);
  const publish = async (from: string, until_: string, entries: string[]): Promise<void> => {
    const body = `${XML}<urlset ${RS}><rs:md capability="change-notification" from="${from}" until="${until_}"/>${entries.join('')}</urlset>\n`;
    const res = await hub.hub.handleLocal(
      new Request(hub.url, { method: 'POST', headers: { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${o}/hub>; rel="hub"` }, body }),
    );
    assert.equal(res.status, 200, await res.text());
  };

  // the intervals (an hour) rule out polling: what reaches the aggregate comes by push
  const out = join(dir, 'out');
  const config = join(dir, 'agg.yaml');
  await writeFile(config, `out: ${out}\nsources:\n  - url: ${o}/\n    id: src\n    interval: 3600\n    mode: push\n`);
  const p = startCli(['aggregate', config, '--port', '0', '--verbose']);
  teardown.push(() => p.child.kill('SIGKILL'));
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  const aggUrl = /^listening on (\S+)/m.exec(p.out())![1]!;
  const mode = (): string | undefined => {
    try {
      return readAggregateStatus(out).find((s) => s.id === 'src')?.mode;
    } catch {
      return undefined; // not written yet
    }
  };
  await until('the Source followed by push', () => mode() === 'push', 120_000).catch((e: unknown) => assert.fail(`${String(e)}\n${p.err()}`));
  await documentWhen(`${aggUrl}/.resourcesync/src/resourcelist.xml`, (d) => d.entries.length === 1, 'the baseline of the aggregate', p);

  // one notification: c.txt, then a.txt, then b.txt (datetime order, not path order)
  const bodies = { 'c.txt': 'see\n', 'a.txt': 'ay\n', 'b.txt': 'bee\n' };
  for (const [path, b] of Object.entries(bodies)) await writeFile(join(root, path), b);
  const now = Date.now();
  const iso = (s: number): string => new Date(now - 120_000 + s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  await publish(iso(0), iso(4), [entry('c.txt', bodies['c.txt'], 'created', iso(1)), entry('a.txt', bodies['a.txt'], 'created', iso(2)), entry('b.txt', bodies['b.txt'], 'created', iso(3))]);
  const clUrl = `${aggUrl}/.resourcesync/src/changelist.xml`;
  const names = (d: ResourceSyncDocument): string[] => d.entries.map((e) => `${e.md?.change ?? '?'} ${e.loc.slice(`${aggUrl}/src/`.length)}`);
  let cl = await documentWhen(clUrl, (d) => d.entries.length >= 3, 'the first batch in the aggregate', p);
  assert.deepEqual(names(cl), ['created c.txt', 'created a.txt', 'created b.txt'], 'the order applied, not path order');

  // a later batch: x.txt, then a.txt again, then c.txt deleted; its entries listed out of datetime order
  await writeFile(join(root, 'x.txt'), 'x, again\n');
  await writeFile(join(root, 'a.txt'), 'ay, again\n');
  const gone = `<url><loc>${o}/c.txt</loc><rs:md change="deleted" datetime="${iso(13)}"/></url>`;
  await publish(iso(10), iso(14), [entry('a.txt', 'ay, again\n', 'updated', iso(12)), gone, entry('x.txt', 'x, again\n', 'updated', iso(11))]);
  cl = await documentWhen(clUrl, (d) => d.entries.length >= 6, 'the second batch in the aggregate', p);
  assert.deepEqual(names(cl), ['created c.txt', 'created a.txt', 'created b.txt', 'updated x.txt', 'updated a.txt', 'deleted c.txt']);
  const times = cl.entries.map((e) => Date.parse(e.md!.datetime!));
  assert.ok(
    times.every((v, i) => i === 0 || v >= times[i - 1]!),
    `datetimes go forward: ${cl.entries.map((e) => e.md?.datetime).join(', ')}`,
  );
  assert.equal(cl.entries[4]!.ln?.find((l) => l.rel === 'via')?.href, `${o}/a.txt`);
  assert.deepEqual(cl.entries[5]!.ln, [{ rel: 'via', href: `${o}/c.txt` }]);
  assert.equal(mode(), 'push', 'still followed by push');

  p.child.kill('SIGTERM');
  assert.equal((await exited(p.child))[0], 0, p.err());
});
