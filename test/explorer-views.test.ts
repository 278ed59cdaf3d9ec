// The explorer's status views: the Aggregate view over a real aggregate status file (failing Sources first, no
// secret), the Queue view over a throwaway PostgreSQL with pg-boss chunk jobs in every state (the queue's URL and
// the jobs' state URLs never reach the page), both through the handler, and the Aggregate view in Chromium
// (failing Source on top, a click on a column header sorts by it).
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { listen, type Listener } from '../src/notify/node-listener.js';
import { createExplorerHandler, type ExplorerHandler, type ExplorerOptions } from '../src/web/explorer.js';
import type { AggregateStatusView, QueueStatusView } from '../src/web/status-views.js';
import type { AggregateSource } from '../src/aggregate/config.js';
import { openStatusStore, readAggregateStatus, type SourceStatus } from '../src/aggregate/status.js';
import { aggregateStatusView } from '../src/aggregate/status-view.js';
import { CHUNK_QUEUE, openQueue } from '../src/destination/queue-jobs.js';
import { openQueueProgress } from '../src/destination/queue-progress.js';
import { ARTIFACTS, launchChromium, noBrowser } from './helpers/browser.js';
import { POSTGRES_SKIP, usePostgres } from './helpers/postgres.js';
import { tempDir } from './helpers/tmp.js';

const HOUR = 3_600_000;
const NOW = Date.parse('2026-11-27T12:00:00Z');
const totals = (syncs: number, errors: number): SourceStatus['totals'] => ({ syncs, errors, created: syncs * 10, updated: syncs, deleted: 0 });

/** Four Sources: one in step, one failing three times, one failing once, one removed. */
const STATUSES: SourceStatus[] = [
  { id: 'alpha', url: 'https://alpha.example.org/', mode: 'poll', state: 'waiting', lastSync: NOW - 2 * HOUR, resources: 120, totals: totals(5, 0), failures: 0, nextAttempt: NOW + HOUR },
  { id: 'zeta', url: 'https://user:hunter2@zeta.example.org/rs', mode: 'push', state: 'failing', lastSync: NOW - 30 * HOUR, resources: 40, totals: totals(2, 3), failures: 3,
    lastError: { code: 'RS_HTTP', message: 'HTTP 503 for https://zeta.example.org/rs', at: NOW - HOUR }, nextAttempt: NOW + 4 * HOUR },
  { id: 'mid', url: 'https://mid.example.org/', mode: 'poll', state: 'failing', totals: totals(0, 1), failures: 1, lastError: { code: 'RS_PARSE', message: 'not XML', at: NOW - 60_000 }, nextAttempt: NOW + 30_000 },
  { id: 'gone', url: 'https://gone.example.org/', mode: 'poll', state: 'stopped', lastSync: NOW - 50 * HOUR, resources: 7, totals: totals(1, 0), failures: 0, nextAttempt: NOW },
];
const CONFIG: AggregateSource[] = [
  { id: 'zeta', url: 'https://zeta.example.org/rs', interval: 300, timeout: 600, mode: 'auto', credentials: { scheme: 'bearer', env: 'ZETA_TOKEN' }, line: 3 },
];

let out: { dir: string; cleanup: () => Promise<void> };
before(async () => {
  out = await tempDir('rs-aggregate-view-');
  const store = openStatusStore(out.dir);
  for (const s of STATUSES) store.put(s);
  store.close();
});
after(async () => {
  await out.cleanup();
});

/** A handler exploring an unreachable Source, with the status views given. */
function handlerWith(extra: Partial<ExplorerOptions>): { handler: ExplorerHandler; close: () => Promise<void> } {
  const source = 'http://127.0.0.1:9/';
  const authority = createAuthority({ origins: [new URL(source).origin] });
  const http = createHttpClient({ authority, retries: 0, env: {} });
  return { handler: createExplorerHandler({ source, http, authority, ...extra }), close: () => http.close() };
}

async function getJson<T>(handler: ExplorerHandler, path: string): Promise<{ status: number; body: T; text: string }> {
  const res = await handler(new Request(`http://127.0.0.1:8090/${path}`));
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as T, text };
}

const aggregateProvider = (dir: string) => (): Promise<AggregateStatusView> => Promise.resolve(aggregateStatusView(readAggregateStatus(dir), CONFIG, NOW));

void test('api/aggregate: every Source from the status file, failing first, with lag, counts, errors and no secret', async () => {
  const { handler, close } = handlerWith({ aggregate: aggregateProvider(out.dir) });
  try {
    const views = await getJson<Record<string, boolean>>(handler, 'api/views');
    assert.deepEqual(views.body, { aggregate: true, queue: false, channels: false });
    const { status, body, text } = await getJson<AggregateStatusView>(handler, 'api/aggregate');
    assert.equal(status, 200);
    assert.deepEqual(body.sources.map((s) => s.id), ['zeta', 'mid', 'alpha', 'gone'], 'most failures first, removed last');
    const zeta = body.sources[0]!;
    assert.equal(zeta.failing, true);
    assert.equal(zeta.url, 'https://zeta.example.org/rs', 'user information dropped');
    assert.equal(zeta.lagMs, 30 * HOUR);
    assert.equal(zeta.credentialsEnv, 'ZETA_TOKEN');
    assert.deepEqual(zeta.lastError, STATUSES[1]!.lastError);
    assert.equal(zeta.nextAttempt, NOW + 4 * HOUR);
    assert.deepEqual(zeta.totals, { syncs: 2, errors: 3, created: 20, updated: 2, deleted: 0 });
    assert.equal(body.sources[2]!.resources, 120);
    assert.equal(body.sources[3]!.nextAttempt, undefined, 'a removed Source has no next attempt');
    assert.doesNotMatch(text, /hunter2|user:/);
    const queue = await getJson<{ error: { code: string } }>(handler, 'api/queue');
    assert.equal(queue.status, 404, 'no queue view without a provider');
  } finally {
    await close();
  }
});

void test('api/aggregate: a folder without status answers a JSON error, and the page has no view when none is given', async () => {
  const empty = await tempDir('rs-aggregate-none-');
  const { handler, close } = handlerWith({ aggregate: aggregateProvider(empty.dir) });
  const plain = handlerWith({});
  try {
    const { status, body } = await getJson<{ error: { code: string; message: string } }>(handler, 'api/aggregate');
    assert.equal(status, 502);
    assert.equal(body.error.code, 'RS_INVALID_ARGUMENT');
    assert.match(body.error.message, /holds no aggregate status/);
    assert.deepEqual((await getJson(plain.handler, 'api/views')).body, { aggregate: false, queue: false, channels: false });
    assert.equal((await getJson(plain.handler, 'api/aggregate')).status, 404);
  } finally {
    await close();
    await plain.close();
    await empty.cleanup();
  }
});

describe('api/queue on a real PostgreSQL', { skip: POSTGRES_SKIP }, () => {
  const cluster = usePostgres();

  void test('chunks by state and resources per run and destination; no URL with its password reaches the page', async (t) => {
    const secretUrl = cluster().url.replace('postgres@', 'postgres:s3cret@');
    const reader = await openQueueProgress(secretUrl);
    const { handler, close } = handlerWith({ queue: () => reader.read() });
    try {
      // no pg-boss schema yet: no run
      const before = await getJson<QueueStatusView>(handler, 'api/queue');
      assert.equal(before.status, 200);
      assert.deepEqual(before.body.runs, []);
      const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 3600 });
      try {
        const job = (run: string, destination: string, n: number, retryLimit = 0) => ({
          name: CHUNK_QUEUE,
          data: { version: 1, run, set: 'rl', state: { url: secretUrl, destination }, storage: { kind: 'folder', path: destination }, entries: Array.from({ length: n }, (_, i) => ({ loc: `https://x.example/${i}` })) },
          retryLimit,
          retryDelay: 0,
        });
        // run A on /mirror/a: 6 chunks → 2 waiting (one of them retried), 1 active, 2 done (one archived), 1 failed
        await queue.boss.insert([job('A', '/mirror/a', 10, 3), job('A', '/mirror/a', 10), job('A', '/mirror/a', 10), job('A', '/mirror/a', 10), job('A', '/mirror/a', 10)]);
        const fetched = (await queue.boss.fetch(CHUNK_QUEUE, { batchSize: 5 })) ?? [];
        assert.equal(fetched.length, 5);
        await queue.boss.insert([job('A', '/mirror/a', 10)]); // sent after the others were taken: waiting
        const ids = fetched.map((j) => j.id);
        const byRetry = await queue.query<{ id: string; retry_limit: number }>(`SELECT id, retry_limit FROM pgboss.job WHERE id = ANY($1::uuid[])`, [ids]);
        const retriable = byRetry.find((r) => r.retry_limit === 3)!.id;
        const others = ids.filter((id) => id !== retriable);
        await queue.boss.fail(CHUNK_QUEUE, retriable, { message: 'worker lost' }); // → retry (waiting)
        await queue.boss.complete(CHUNK_QUEUE, others[0]!, { done: 10, failed: 2, created: 8, updated: 0, deleted: 0, unchanged: 0, bytes: 80, warnings: 0 });
        await queue.boss.complete(CHUNK_QUEUE, others[1]!, { done: 10, failed: 0, created: 10, updated: 0, deleted: 0, unchanged: 0, bytes: 100, warnings: 0 });
        await queue.boss.fail(CHUNK_QUEUE, others[2]!, { message: 'bad chunk' }); // retry limit 0 → failed
        // others[3] stays active; one done chunk moves to the archive as pg-boss's maintenance does
        await queue.query(`INSERT INTO pgboss.archive SELECT *, now() FROM pgboss.job WHERE id = $1`, [others[1]]);
        await queue.query(`DELETE FROM pgboss.job WHERE id = $1`, [others[1]]);
        // run B on /mirror/b: one chunk waiting
        await queue.boss.insert([job('B', '/mirror/b', 3)]);

        const { status, body, text } = await getJson<QueueStatusView>(handler, 'api/queue');
        assert.equal(status, 200);
        const a = body.runs.find((r) => r.run === 'A')!;
        const b = body.runs.find((r) => r.run === 'B')!;
        assert.equal(a.destination, '/mirror/a');
        assert.deepEqual(a.chunks, { waiting: 2, active: 1, done: 2, failed: 1, total: 6 });
        assert.deepEqual(a.resources, { done: 18, failed: 2 });
        assert.deepEqual(b.chunks, { waiting: 1, active: 0, done: 0, failed: 0, total: 1 });
        assert.ok(a.updatedAt >= a.createdAt && a.createdAt > 0);
        assert.equal(body.queue.includes('s3cret'), false);
        assert.doesNotMatch(text, /s3cret/, 'neither the queue URL nor a job state URL with its password');
        // read again (names cached): same counts; a job done meanwhile moves
        await queue.boss.complete(CHUNK_QUEUE, others[3]!, { done: 10, failed: 0, created: 10, updated: 0, deleted: 0, unchanged: 0, bytes: 100, warnings: 0 });
        const again = (await getJson<QueueStatusView>(handler, 'api/queue')).body.runs.find((r) => r.run === 'A')!;
        assert.deepEqual(again.chunks, { waiting: 2, active: 0, done: 3, failed: 1, total: 6 });
        assert.deepEqual(again.resources, { done: 28, failed: 2 });
        if (noBrowser() === undefined) await queueInChromium(handler, t);
        else t.diagnostic(`Queue view in Chromium not tried: ${noBrowser()}`);
      } finally {
        await queue.close();
      }
    } finally {
      await close();
      await reader.close();
    }
  });

  void test('an unreachable queue answers a JSON error naming it without its password', async () => {
    const reader = await openQueueProgress('postgres://rs:topsecret@127.0.0.1:9/none');
    const { handler, close } = handlerWith({ queue: () => reader.read() });
    try {
      const { status, body, text } = await getJson<{ error: { code: string; message: string } }>(handler, 'api/queue');
      assert.equal(status, 502);
      assert.equal(body.error.code, 'RS_IO');
      assert.match(body.error.message, /postgres:\/\/rs@127\.0\.0\.1:9\/none/);
      assert.doesNotMatch(text, /topsecret/);
    } finally {
      await close();
      await reader.close();
    }
  });
});

/** Opens the Queue view of `handler` in Chromium: the runs' rows, the one with a failed chunk marked; a screenshot. */
async function queueInChromium(handler: ExplorerHandler, t: TestContext): Promise<void> {
  const listener = await listen(handler, { port: 0 });
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${listener.url}/`);
    await page.waitForSelector('#queue-table tbody tr');
    assert.equal(await page.getAttribute('#tab-queue', 'aria-selected'), 'true');
    assert.equal(await page.getAttribute('#queue-table tr[data-id="A"]', 'class'), 'failing');
    assert.match((await page.textContent('#queue-table tr[data-id="A"]')) ?? '', /\/mirror\/a.*3 of 6/);
    assert.doesNotMatch(await page.content(), /s3cret/);
    const path = join(ARTIFACTS, 'explorer-queue.png');
    await page.screenshot({ path, fullPage: false });
    t.diagnostic(`screenshot: ${path}`);
  } finally {
    await browser.close();
    await listener.close();
  }
}

void describe('the Aggregate view in Chromium', () => {
  const skip = noBrowser();
  void test('failing Source on top; clicking a column header sorts by it', { skip: skip ?? false }, async (t) => {
    let reads = 0;
    const provider = aggregateProvider(out.dir);
    const { handler, close } = handlerWith({ aggregate: () => (reads++, provider()) });
    const listener: Listener = await listen(handler, { port: 0 });
    const browser = await launchChromium();
    try {
      const page = await browser.context.newPage();
      const failures: string[] = [];
      page.on('pageerror', (e) => failures.push(e.message));
      await page.goto(`${listener.url}/`);
      await page.waitForSelector('#aggregate-table tbody tr');
      assert.equal(await page.getAttribute('#tab-aggregate', 'aria-selected'), 'true', 'the Aggregate tab opens first');
      const ids = async (): Promise<string[]> => {
        const rows = await page.locator('#aggregate-table tbody tr').all();
        return Promise.all(rows.map(async (r) => (await r.getAttribute('data-id')) ?? ''));
      };
      assert.deepEqual(await ids(), ['zeta', 'mid', 'alpha', 'gone']);
      assert.equal(await page.getAttribute('#aggregate-table tbody tr:first-child', 'class'), 'failing');
      await page.click('#aggregate-table th[data-key="id"]');
      assert.deepEqual(await ids(), ['alpha', 'gone', 'mid', 'zeta']);
      assert.equal(await page.getAttribute('#aggregate-table th[data-key="id"]', 'aria-sort'), 'ascending');
      await page.click('#aggregate-table th[data-key="lag"]');
      assert.deepEqual(await ids(), ['alpha', 'zeta', 'gone', 'mid'], 'by lag, unknown last');
      await page.click('#aggregate-table th[data-key="lag"]');
      assert.deepEqual(await ids(), ['gone', 'zeta', 'alpha', 'mid'], 'by lag, the other way');
      // refreshed every few seconds, and the order chosen stays
      const seen = reads;
      const deadline = Date.now() + 30_000;
      while (reads === seen && Date.now() < deadline) await sleep(100);
      assert.ok(reads > seen, 'the view is read again');
      await page.waitForSelector('#aggregate-table tbody tr');
      assert.deepEqual(await ids(), ['gone', 'zeta', 'alpha', 'mid']);
      const path = join(ARTIFACTS, 'explorer-aggregate.png');
      await page.screenshot({ path, fullPage: false });
      t.diagnostic(`screenshot: ${path}`);
      assert.deepEqual(failures, []);
    } finally {
      await browser.close();
      await listener.close();
      await close();
    }
  });
});
