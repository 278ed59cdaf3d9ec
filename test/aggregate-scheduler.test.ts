/**
 * The aggregator's scheduling, in process over real servers on loopback: a Source that never answers is abandoned
 * at its timeout and backs off without holding up a good one, even with one sync at a time; each chosen capability
 * set of a Source keeps its own state in the one mirror.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { parseAggregateConfig } from '../src/aggregate/config.js';
import { startAggregator, type AggregateEvent } from '../src/aggregate/aggregator.js';
import { createLiveSource } from '../src/live/live-source.js';
import { until } from './helpers/cli-child.js';
import { tempDir } from './helpers/tmp.js';

/**
 * Dates every file under `dir` a minute back: a live Source leaves out of its first publication a file modified
 * just before it reads it (it may still be being written), which a busy machine makes likely.
 */
async function settle(dir: string): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  for (const d of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (d.isFile()) await utimes(join(d.parentPath, d.name), past, past);
  }
}

void test('a Source that never answers is abandoned at its timeout and never holds up the others', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-sched-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const held: ServerResponse[] = [];
  const hanging: Server = createServer((_req, res) => void held.push(res)); // headers never come
  await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
  teardown.push(() => {
    for (const r of held) r.destroy();
    hanging.close();
  });
  const data = join(dir, 'data');
  await mkdir(data);
  await writeFile(join(data, 'a.txt'), 'alpha\n');
  await settle(data);
  const live = await createLiveSource({ sets: [{ name: 'data', dir: data }], port: 0, stateDir: join(dir, 'live-state') });
  teardown.push(() => live.close());
  await live.ready();

  const config = parseAggregateConfig(
    `out: ${join(dir, 'out')}
concurrency: 1
max-backoff: 1
sources:
  - url: http://127.0.0.1:${(hanging.address() as AddressInfo).port}/
    id: hanging
    interval: 1
    timeout: 1
  - url: ${live.url}/
    id: good
    interval: 0.2
`,
    join(dir, 'agg.yaml'),
  );
  const events: AggregateEvent[] = [];
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, onEvent: (e) => events.push(e) });
  teardown.push(() => aggregator.close());
  const synced = (): number => events.filter((e) => e.type === 'synced' && e.id === 'good').length;
  const timedOut = (): number => events.filter((e) => e.type === 'sync-failed' && e.id === 'hanging').length;
  await until('the good Source synced 4 times while the hanging one timed out twice', () => synced() >= 4 && timedOut() >= 2, 60_000);
  const hangingStatus = aggregator.status().find((s) => s.id === 'hanging')!;
  assert.equal(hangingStatus.state === 'failing' || hangingStatus.state === 'syncing', true);
  assert.equal(hangingStatus.lastError?.code, 'RS_HTTP_TIMEOUT');
  assert.match(hangingStatus.lastError?.message ?? '', /longer than its timeout \(1 s\)/);
  t.diagnostic(JSON.stringify(aggregator.status().find((s) => s.id === 'good')));
  assert.equal(await readFile(join(dir, 'out', 'sources', 'good', 'mirror', 'a.txt'), 'utf8'), 'alpha\n');
});

void test('capability-sets: each chosen set of a Source has its own state; deletions in one leave the other alone', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-sets-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const one = join(dir, 'one');
  const two = join(dir, 'two');
  const three = join(dir, 'three');
  for (const d of [one, two, three]) await mkdir(d);
  await writeFile(join(one, 'x.txt'), 'x\n');
  await writeFile(join(two, 'y.txt'), 'y\n');
  await writeFile(join(three, 'z.txt'), 'z\n');
  for (const d of [one, two, three]) await settle(d);
  const live = await createLiveSource({ sets: [{ name: 'one', dir: one }, { name: 'two', dir: two }, { name: 'three', dir: three }], port: 0, stateDir: join(dir, 'live-state') });
  teardown.push(() => live.close());
  await live.ready();
  const out = join(dir, 'out');
  const config = parseAggregateConfig(
    `out: ${out}
sources:
  - url: ${live.url}/
    id: two-of-three
    interval: 0.2
    capability-sets:
      - ${live.url}/.resourcesync/one/capabilitylist.xml
      - ${live.url}/.resourcesync/two/capabilitylist.xml
`,
    join(dir, 'agg.yaml'),
  );
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, onEvent: (e) => { if (e.type === 'sync-failed') t.diagnostic(String(e.error)); } });
  teardown.push(() => aggregator.close());
  const mirror = join(out, 'sources', 'two-of-three', 'mirror');
  const exists = async (p: string): Promise<boolean> => readFile(p).then(() => true, () => false);
  const deadline = Date.now() + 60_000;
  while (!((await exists(join(mirror, 'one', 'x.txt'))) && (await exists(join(mirror, 'two', 'y.txt'))))) {
    assert.ok(Date.now() < deadline, 'both chosen sets mirrored');
    await new Promise((r) => setTimeout(r, 50));
  }
  await until('the first sync done', () => aggregator.status()[0]?.lastSync !== undefined, 60_000);
  assert.equal(await exists(join(mirror, 'three', 'z.txt')), false, 'the set not chosen is left out');
  assert.equal(aggregator.status()[0]?.resources, 2);
  // several syncs later, neither set's baseline took the other's resources for deletions
  const syncs = aggregator.status()[0]!.totals.syncs;
  await until('three more syncs', () => (aggregator.status()[0]?.totals.syncs ?? 0) >= syncs + 3, 60_000);
  assert.equal(await exists(join(mirror, 'one', 'x.txt')), true);
  assert.equal(await exists(join(mirror, 'two', 'y.txt')), true);
  assert.equal(aggregator.status()[0]?.totals.deleted, 0);
});

void test('politeness: two Sources on one origin never sync at the same time, while one elsewhere goes on', { timeout: 120_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-polite-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
  const inFlight = { a: 0, b: 0 };
  let overlaps = 0;
  let served = { a: 0, b: 0 };
  const shared: Server = createServer((req, res) => {
    const which = req.url?.startsWith('/a/') === true ? 'a' : 'b';
    const origin = `http://127.0.0.1:${(shared.address() as AddressInfo).port}/${which}`;
    inFlight[which]++;
    served = { ...served, [which]: served[which] + 1 };
    if (inFlight.a > 0 && inFlight.b > 0) overlaps++;
    const path = req.url!.slice(2);
    const body =
      path === '/capabilitylist.xml'
        ? `<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`
        : path === '/resourcelist.xml'
          ? `<urlset ${NS}><rs:md capability="resourcelist" at="2024-01-01T00:00:00Z"/><url><loc>${origin}/r.txt</loc><rs:md length="2"/></url></urlset>`
          : path === '/r.txt'
            ? `${which}\n`
            : undefined;
    setTimeout(() => {
      inFlight[which]--;
      if (body === undefined) res.writeHead(404).end();
      else res.writeHead(200, { 'content-type': path.endsWith('.xml') ? 'application/xml' : 'text/plain' }).end(body);
    }, 40); // slow enough for two syncs to overlap if they were allowed to
  });
  await new Promise<void>((r) => shared.listen(0, '127.0.0.1', r));
  teardown.push(() => shared.close());
  const data = join(dir, 'data');
  await mkdir(data);
  await writeFile(join(data, 'c.txt'), 'c\n');
  await settle(data);
  const elsewhere = await createLiveSource({ sets: [{ name: 'data', dir: data }], port: 0, stateDir: join(dir, 'live-state') });
  teardown.push(() => elsewhere.close());
  await elsewhere.ready();
  const base = `http://127.0.0.1:${(shared.address() as AddressInfo).port}`;
  const config = parseAggregateConfig(
    `out: ${join(dir, 'out')}
concurrency: 3
sources:
  - { url: "${base}/a/capabilitylist.xml", id: a, interval: 0.1 }
  - { url: "${base}/b/capabilitylist.xml", id: b, interval: 0.1 }
  - { url: "${elsewhere.url}/", id: elsewhere, interval: 0.1 }
`,
    join(dir, 'agg.yaml'),
  );
  const failures: string[] = [];
  const aggregator = startAggregator(config, { defaultBaseUrl: 'http://127.0.0.1:9/', env: {}, onEvent: (e) => void (e.type === 'sync-failed' && failures.push(`${e.id}: ${String(e.error)}`)) });
  teardown.push(() => aggregator.close());
  const syncs = (id: string): number => aggregator.status().find((s) => s.id === id)?.totals.syncs ?? 0;
  await until('each Source synced 3 times', () => syncs('a') >= 3 && syncs('b') >= 3 && syncs('elsewhere') >= 3, 60_000);
  assert.deepEqual(failures, []);
  assert.equal(overlaps, 0, 'requests of the two Sources on one origin never overlapped');
  assert.ok(served.a > 0 && served.b > 0);
  assert.equal(await readFile(join(dir, 'out', 'sources', 'b', 'mirror', 'b', 'r.txt'), 'utf8'), 'b\n');
});
