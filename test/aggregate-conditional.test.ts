/**
 * A Source that offers a Resource List but no Change List, polled by the aggregator: with validators (nginx sends
 * an `ETag` and a `Last-Modified` for a `build` tree) each poll asks for the list conditionally and a 304 costs no
 * baseline; a new list is taken in at the next poll. The same tree without validators (stripped on the way) is read
 * in full at every poll, and never asked for conditionally. Every request and byte is counted on its way through a
 * loopback relay in front of nginx.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readAggregateStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { startCli, until } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { WEB_SERVERS, startWebServer } from './helpers/web-servers.js';

/** One request through the relay. */
interface Seen {
  path: string;
  status: number;
  bytes: number;
  conditional: boolean;
}

/**
 * A relay on loopback to the server at `upstream.origin` (once set): requests and answers passed on, the body
 * bytes counted; with `strip`, the answers lose their `ETag` and `Last-Modified`.
 */
async function relay(upstream: { origin?: string }, strip: boolean): Promise<{ origin: string; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const to = new URL(req.url ?? '/', upstream.origin);
    const headers: Record<string, string> = {};
    for (const h of ['accept-encoding', 'if-none-match', 'if-modified-since', 'range', 'authorization']) if (typeof req.headers[h] === 'string') headers[h] = req.headers[h];
    const up = request(to, { method: req.method, headers }, (answer) => {
      const out: Record<string, string | string[]> = {};
      for (const [k, v] of Object.entries(answer.headers)) if (v !== undefined && !(strip && (k === 'etag' || k === 'last-modified'))) out[k] = v;
      res.writeHead(answer.statusCode ?? 502, out);
      let bytes = 0;
      answer.on('data', (c: Buffer) => {
        bytes += c.length;
        res.write(c);
      });
      answer.on('end', () => {
        seen.push({ path: to.pathname, status: answer.statusCode ?? 0, bytes, conditional: headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined });
        res.end();
      });
    });
    up.on('error', () => res.writeHead(502).end());
    up.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

/** A `build` tree of `data` named under `origin` (the files copied in), without its Change List: a Source with a Resource List alone. */
async function buildTree(data: string, root: string, state: string, origin: string): Promise<void> {
  const r = await runCli(['build', data, '--base-url', `${origin}/`, '--out', root, '--state', state]);
  assert.equal(r.status, 0, r.stderr);
  await cp(data, root, { recursive: true });
  const capFile = join(root, '.resourcesync', 'data', 'capabilitylist.xml');
  const cap = await readFile(capFile, 'utf8');
  await writeFile(capFile, cap.replace(/<url>(?:(?!<\/url>)[\s\S])*<\/url>/g, (u) => (/capability="resourcelist"/.test(u) ? u : '')));
}

/** Requests, bytes, and the share of each path, over the polls in `window`. */
function perPoll(window: Seen[], listPath: string): { polls: number; requests: number; bytes: number; paths: string[] } {
  const polls = window.filter((s) => s.path === listPath).length;
  const bytes = window.reduce((n, s) => n + s.bytes, 0);
  return { polls, requests: window.length / polls, bytes: bytes / polls, paths: [...new Set(window.map((s) => s.path))].sort() };
}

void test('aggregate: a Source without a Change List answers 304 to the conditional poll; without validators it is read in full', { timeout: 300_000 }, async (t) => {
  const nginx = WEB_SERVERS.find((k) => k.name === 'nginx')!;
  const bin = nginx.find();
  if (bin === undefined) return void t.skip('nginx is not installed (Debian package nginx-light): no web server that sends ETags');
  const { dir, cleanup } = await tempDir('rs-agg-conditional-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const data = join(dir, 'data');
  await mkdir(data);
  for (let i = 0; i < 200; i++) await writeFile(join(data, `file-${String(i).padStart(3, '0')}.txt`), `resource ${i}\n`);
  // two trees of the same files, each named under its own relay: A passes the validators on, B strips them
  const sources = [];
  for (const [id, strip] of [['a', false], ['b', true]] as const) {
    const upstream: { origin?: string } = {};
    const r = await relay(upstream, strip);
    teardown.push(r.close);
    const root = join(dir, `root-${id}`);
    await buildTree(data, root, join(dir, `state-${id}`), r.origin);
    await mkdir(join(dir, `nginx-${id}`));
    const web = await startWebServer(nginx, bin, join(dir, `nginx-${id}`), root, '/robots.txt');
    teardown.push(() => web.stop());
    upstream.origin = web.origin;
    sources.push({ id, relay: r, root });
  }
  const [a, b] = sources as [(typeof sources)[0], (typeof sources)[0]];

  const out = join(dir, 'out');
  const config = join(dir, 'agg.yaml');
  await writeFile(config, `out: ${out}\nsources:\n${sources.map((s) => `  - url: ${s.relay.origin}/\n    id: ${s.id}\n    interval: 0.3\n`).join('')}`);
  const p = startCli(['aggregate', config, '--port', '0']);
  teardown.push(() => p.child.kill('SIGKILL'));
  const syncs = (id: string): number => {
    try {
      return readAggregateStatus(out).find((s) => s.id === id)?.totals.syncs ?? 0;
    } catch {
      return 0; // not written yet
    }
  };
  await until('both Sources synced', () => syncs('a') >= 1 && syncs('b') >= 1, 120_000);
  const from = { a: a.relay.seen.length, b: b.relay.seen.length, syncsA: syncs('a'), syncsB: syncs('b') };
  const deadline = Date.now() + 120_000;
  while (syncs('a') < from.syncsA + 5 || syncs('b') < from.syncsB + 5) {
    assert.ok(Date.now() < deadline, `the polls did not go on: ${p.err()}`);
    await sleep(100);
  }
  const listPath = '/.resourcesync/data/resourcelist.xml';
  const winA = a.relay.seen.slice(from.a);
  const winB = b.relay.seen.slice(from.b);
  const withValidators = perPoll(winA, listPath);
  const without = perPoll(winB, listPath);
  t.diagnostic(`200 resources, with validators: ${withValidators.requests.toFixed(1)} requests, ${Math.round(withValidators.bytes)} bytes per poll (${withValidators.polls} polls)`);
  t.diagnostic(`200 resources, without validators: ${without.requests.toFixed(1)} requests, ${Math.round(without.bytes)} bytes per poll (${without.polls} polls)`);
  for (const s of readAggregateStatus(out)) {
    assert.equal(s.resources, 200, `every resource of ${s.id} held`);
    t.diagnostic(`${s.id}: last poll took ${s.lastRun?.durationMs} ms`);
  }
  // A: the list asked for conditionally, 304 each time, no resource fetched
  const listA = winA.filter((s) => s.path === listPath);
  assert.ok(listA.length >= 4);
  assert.ok(listA.every((s) => s.conditional && s.status === 304), JSON.stringify(listA));
  assert.deepEqual(withValidators.paths, ['/.resourcesync/data/capabilitylist.xml', listPath, '/.well-known/resourcesync']);
  // B: never a conditional request (nothing stored to trust a 304 with), the list read in full each poll
  assert.ok(winB.every((s) => !s.conditional && s.status === 200), 'no conditional request without validators');
  assert.deepEqual(without.paths, withValidators.paths, 'no resource fetched again either way');
  assert.ok(without.bytes > 5 * withValidators.bytes, `a 304 poll costs less: ${withValidators.bytes} vs ${without.bytes} bytes`);

  // a change at A: a new list (another ETag) is taken in at the next poll and republished
  await writeFile(join(data, 'new.txt'), 'new\n');
  await buildTree(data, a.root, join(dir, 'state-a'), a.relay.origin);
  await until('the new resource in the mirror', () => existsSync(join(out, 'sources', 'a', 'mirror', 'new.txt')), 120_000);
  const aggUrl = /^listening on (\S+)/m.exec(p.out())![1]!;
  const deadline2 = Date.now() + 120_000;
  for (;;) {
    const rl = await (await fetch(`${aggUrl}/.resourcesync/a/resourcelist.xml`)).text();
    if (rl.includes(`${aggUrl}/a/new.txt`)) break;
    assert.ok(Date.now() < deadline2, 'the new resource never republished');
    await sleep(100);
  }
  assert.equal(await readFile(join(out, 'sources', 'a', 'mirror', 'new.txt'), 'utf8'), 'new\n');
  // and the polls after it are conditional again
  const after = a.relay.seen.length;
  const s0 = syncs('a');
  await until('two more polls of A', () => syncs('a') >= s0 + 2, 120_000);
  const later = a.relay.seen.slice(after).filter((s) => s.path === listPath);
  assert.ok(later.some((s) => s.status === 304), JSON.stringify(later));

  p.child.kill('SIGTERM');
  assert.equal((await exited(p.child))[0], 0, p.err());
});
