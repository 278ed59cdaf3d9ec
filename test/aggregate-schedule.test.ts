/**
 * The aggregator's schedules, filters and shared pace, in process over real servers on loopback: a Source with a
 * `schedule` is synced at its times (the status says when next); `url-prefixes` keep a Source's mirror to the
 * resources under them; `origin-rate` paces two Sources on one origin together, syncing at once, never faster.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseAggregateConfig } from '../src/aggregate/config.js';
import { startAggregator, type AggregateEvent } from '../src/aggregate/aggregator.js';
import { listFiles } from '../src/destination/audit.js';
import { startCli, until } from './helpers/cli-child.js';
import { exited } from './helpers/exited.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';

const RS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

/**
 * A server holding one Source per name, each at `/<name>/capabilitylist.xml` with a Resource List of `n`
 * resources `/<name>/r<i>.txt` (no Change List: each poll is a baseline); every request's time is recorded.
 */
async function sourcesServer(names: string[], n: number): Promise<{ origin: string; seen: { at: number; path: string }[]; close: () => Promise<void> }> {
  const seen: { at: number; path: string }[] = [];
  let origin = '';
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    seen.push({ at: Date.now(), path });
    const m = /^\/([a-z]+)\/(capabilitylist\.xml|resourcelist\.xml|r(\d+)\.txt)$/.exec(path);
    if (m === null || !names.includes(m[1]!)) return void res.writeHead(404).end();
    const base = `${origin}/${m[1]!}`;
    if (m[2] === 'capabilitylist.xml') {
      res.writeHead(200, { 'content-type': 'application/xml' });
      return void res.end(`<?xml version="1.0"?><urlset ${RS}><rs:md capability="capabilitylist"/><url><loc>${base}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`);
    }
    if (m[2] === 'resourcelist.xml') {
      const urls = Array.from({ length: n }, (_, i) => `<url><loc>${base}/r${i}.txt</loc><rs:md length="${`${m[1]!}${i}`.length}"/></url>`);
      res.writeHead(200, { 'content-type': 'application/xml' });
      return void res.end(`<?xml version="1.0"?><urlset ${RS}><rs:ln rel="up" href="${base}/capabilitylist.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>${urls.join('')}</urlset>`);
    }
    res.writeHead(200, { 'content-type': 'text/plain' }).end(`${m[1]!}${m[3]!}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { origin, seen, close: () => new Promise<void>((r) => server.close(() => r())) };
}

void test('origin-rate: two Sources on one origin sync at once and together never exceed the rate', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-rate-');
  const server = await sourcesServer(['a', 'b'], 10);
  const teardown: (() => unknown)[] = [() => server.close()];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const rate = 4;
  const config = parseAggregateConfig(
    `out: ${join(dir, 'out')}
origin-rate: ${rate}
sources:
  - url: ${server.origin}/a/capabilitylist.xml
    id: a
    interval: 3600
  - url: ${server.origin}/b/capabilitylist.xml
    id: b
    interval: 3600
`,
    join(dir, 'agg.yaml'),
  );
  const events: AggregateEvent[] = [];
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, onEvent: (e) => events.push(e) });
  teardown.push(() => aggregator.close());
  const synced = (id: string): boolean => events.some((e) => e.type === 'synced' && e.id === id);
  await until('both Sources synced', () => synced('a') && synced('b'), 90_000);
  const failed = events.filter((e) => e.type === 'sync-failed');
  assert.deepEqual(failed, []);
  for (const id of ['a', 'b']) {
    assert.deepEqual(listFiles(join(dir, 'out', 'sources', id, 'mirror', id)).sort(), Array.from({ length: 10 }, (_, i) => `r${i}.txt`).sort());
  }
  const times = server.seen.map((s) => s.at).sort((x, y) => x - y);
  // at an exact pace, a window of one second holds rate + 1 requests when both ends fall on one (a timer may fire a
  // millisecond early, and a request reach the server a little late, the next one on time): that one is the slack
  const slack = 1;
  let most = 0;
  for (const [i, start] of times.entries()) {
    let j = i;
    while (j < times.length && times[j]! < start + 1000) j++;
    most = Math.max(most, j - i);
  }
  t.diagnostic(`${times.length} requests in ${times.at(-1)! - times[0]!} ms; at most ${most} in one second (rate ${rate})`);
  assert.ok(times.length >= 24, `${times.length} requests`);
  assert.ok(most <= rate + slack, `${most} requests in one second`);
  assert.ok(times.at(-1)! - times[0]! >= ((times.length - 1) * 1000) / rate - 1000, 'the requests are spread at the rate');
  // both syncs were under way at once: their requests interleave
  const a = server.seen.filter((s) => s.path.startsWith('/a/')).map((s) => s.at);
  const b = server.seen.filter((s) => s.path.startsWith('/b/')).map((s) => s.at);
  assert.ok(Math.min(...b) < Math.max(...a) && Math.min(...a) < Math.max(...b), 'the two Sources synced at the same time');
});

void test('url-prefixes: the Source is mirrored, counted and republished only under its prefixes', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-prefixes-');
  const server = await sourcesServer(['a'], 12);
  const teardown: (() => unknown)[] = [() => server.close()];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const config = parseAggregateConfig(
    `out: ${join(dir, 'out')}
sources:
  - url: ${server.origin}/a/capabilitylist.xml
    id: a
    url-prefixes: [${server.origin}/a/r1]
`,
    join(dir, 'agg.yaml'),
  );
  const events: AggregateEvent[] = [];
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, onEvent: (e) => events.push(e) });
  teardown.push(() => aggregator.close());
  await until('the Source synced', () => events.some((e) => e.type === 'synced' && e.id === 'a'), 90_000);
  assert.deepEqual(listFiles(join(dir, 'out', 'sources', 'a', 'mirror', 'a')).sort(), ['r1.txt', 'r10.txt', 'r11.txt']);
  assert.ok(!server.seen.some((s) => s.path === '/a/r2.txt'), 'nothing outside the prefixes is fetched');
  assert.equal(aggregator.status().find((s) => s.id === 'a')?.resources, 3);
  await until('the aggregate is published', () => events.some((e) => e.type === 'published' && e.sources === 1), 60_000);
  const published = (await readdir(join(dir, 'out', 'publish'), { recursive: true })).filter((p) => p.endsWith('.xml'));
  const texts = await Promise.all(published.map((p) => readFile(join(dir, 'out', 'publish', p), 'utf8')));
  assert.ok(texts.some((x) => x.includes(`<rs:ln rel="via" href="${server.origin}/a/r10.txt"`)), published.join(', '));
  assert.ok(!texts.some((x) => x.includes(`${server.origin}/a/r2.txt`)), 'nothing outside the prefixes is republished');
});

void test('schedule: a Source is synced at its times, and its status says when next; a restart waits for the next time', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-cron-');
  const server = await sourcesServer(['a'], 2);
  const teardown: (() => unknown)[] = [() => server.close()];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  // the aggregator's clock starts 5 s before a minute (2030-01-01T00:00:00Z): "every minute" comes soon
  const minute = Date.UTC(2030, 0, 1);
  const skew = minute - 5000 - Date.now();
  const now = (): number => Date.now() + skew;
  const text = `out: ${join(dir, 'out')}
sources:
  - url: ${server.origin}/a/capabilitylist.xml
    id: a
    schedule: "* * * * *"
`;
  const config = parseAggregateConfig(text, join(dir, 'agg.yaml'));
  const events: AggregateEvent[] = [];
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, now, onEvent: (e) => events.push(e) });
  const syncs = (): number => events.filter((e) => e.type === 'synced' && e.id === 'a').length;
  await until('the first sync (at once: never synced before)', () => syncs() >= 1, 60_000);
  await until('the second sync, at a minute', () => syncs() >= 2, 90_000);
  const status = aggregator.status().find((s) => s.id === 'a')!;
  t.diagnostic(JSON.stringify({ lastSync: status.lastSync! - minute, nextAttempt: status.nextAttempt! - minute }));
  const started = Math.floor(status.lastSync! / 60_000) * 60_000;
  assert.ok(status.lastSync! >= minute && status.lastSync! - started < 10_000, 'the second sync started at a scheduled minute');
  assert.equal(status.nextAttempt, started + 60_000, 'the next attempt is the next minute');
  await aggregator.close();

  // a yearly schedule: after a restart, a Source in step waits for its next time
  const yearly = parseAggregateConfig(text.replace('* * * * *', '0 0 1 1 *'), join(dir, 'agg.yaml'));
  const requests = server.seen.length;
  const again = startAggregator(yearly, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, now });
  teardown.push(() => again.close());
  const s2 = again.status().find((s) => s.id === 'a')!;
  assert.equal(s2.state, 'waiting');
  assert.equal(s2.nextAttempt, Date.UTC(2031, 0, 1), 'the next time after its last sync');
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(server.seen.length, requests, 'no request before the next time');
});

void test('the aggregate process: a scheduled Source synced once, `aggregate status` shows its next time; url-prefixes held', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-cron-cli-');
  const server = await sourcesServer(['a'], 5);
  const teardown: (() => unknown)[] = [() => server.close()];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const config = join(dir, 'agg.yaml');
  await writeFile(
    config,
    `out: ./out
origin-rate: 50
sources:
  - url: ${server.origin}/a/capabilitylist.xml
    id: a
    schedule: "15 4 * * sun"
    url-prefixes: [${server.origin}/a/r3.txt, ${server.origin}/a/r4.txt]
`,
  );
  const p = startCli(['aggregate', config, '--port', '0']);
  teardown.push(async () => {
    p.child.kill('SIGTERM');
    await exited(p.child);
  });
  const status = async (): Promise<{ sources: { id: string; lastSync?: number; nextAttempt?: number; resources?: number; state: string }[] }> => {
    const r = await runCli(['aggregate', 'status', config, '--json']);
    return JSON.parse(r.stdout || '{"sources":[]}') as never;
  };
  let last: Awaited<ReturnType<typeof status>> = { sources: [] };
  const deadline = Date.now() + 90_000;
  while (last.sources[0]?.lastSync === undefined) {
    assert.ok(Date.now() < deadline && p.child.exitCode === null, `not synced: ${p.err()}`);
    await new Promise((r) => setTimeout(r, 200));
    last = await status();
  }
  const a = last.sources[0];
  assert.equal(a.resources, 2);
  const next = new Date(a.nextAttempt!);
  assert.deepEqual([next.getUTCDay(), next.getUTCHours(), next.getUTCMinutes(), next.getUTCSeconds()], [0, 4, 15, 0], next.toISOString());
  assert.ok(a.nextAttempt! > a.lastSync! && a.nextAttempt! - a.lastSync! <= 7 * 86_400_000, 'the first Sunday 04:15 after the sync');
  assert.deepEqual(listFiles(join(dir, 'out', 'sources', 'a', 'mirror', 'a')).sort(), ['r3.txt', 'r4.txt']);
});
