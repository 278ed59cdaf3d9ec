// The changes of an incremental `syncWithQueue` go to the workers in chunks: the mirror ends as a plain sync's does
// (files and records), the report is a plain sync's, one job never holds two changes of one resource, the cursor
// moves only once every chunk of the Change List is done, and a worker refuses a job format it does not know.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { sync, type SyncReport } from '../src/destination/sync.js';
import { syncWithQueue, type QueueSyncOptions } from '../src/destination/queue-sync.js';
import { startQueueWorkers, type QueueWorkers } from './helpers/queue-workers.js';
import { CHUNK_QUEUE, openQueue, type ChunkJob } from '../src/destination/queue-jobs.js';
import { openPostgresDestinationState } from '../src/destination/postgres-state.js';
import type { DestinationState } from '../src/destination/state.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { FakeSource, urlPath } from './helpers/fake-source.js';
import { POSTGRES_SKIP, usePostgres } from './helpers/postgres.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';

const FILES = 400;

const cluster = usePostgres();
let server: TestServer;
let source: FakeSource;
let tmp: { dir: string; cleanup: () => Promise<void> };

/** Workers in this process on this file's queue until `stop`; every chunk they report is kept. */
const startWorkers = (n: number): QueueWorkers => startQueueWorkers(cluster().url, n);

/** The parts of a report that a queue's sync must give as a plain sync does. */
function essence(r: SyncReport): unknown {
  const { created, updated, deleted, unchanged, deletionsSkippedCount, mode, bytes } = r;
  return {
    created,
    updated,
    deleted,
    unchanged,
    bytes,
    deletionsSkippedCount,
    deletionsSkipped: [...r.deletionsSkipped].sort(),
    mode,
    failed: r.failed.map((f) => [f.url, f.code, f.status]).sort(),
    sets: r.sets,
    warnings: r.warnings.map((w) => JSON.stringify(w)).sort(),
  };
}

/** Every file under `dir` (the state's folder aside) with the md5 of its bytes. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const path = join(e.parentPath, e.name);
    const rel = relative(dir, path);
    if (rel.startsWith('.resourcesync')) continue;
    out[rel] = createHash('md5').update(await readFile(path)).digest('hex');
  }
  return out;
}

/** What the state holds: each record without its time of writing, the pending entries, the skipped deletions. */
async function held(key: string): Promise<unknown> {
  const state = await openPostgresDestinationState(cluster().url, { destination: key, readonly: true });
  try {
    const records: unknown[] = [];
    for await (const u of state.urls()) {
      const r = await state.get(u);
      records.push([u, r?.path, r?.length, r?.hashes, r?.lastmod]);
    }
    records.sort((a, b) => String((a as string[])[0]).localeCompare(String((b as string[])[0])));
    return { records, pending: (await state.pending(source.capabilityList)).map((e) => e.loc).sort(), skipped: await skippedOf(state) };
  } finally {
    await state.close();
  }
}

async function skippedOf(state: DestinationState): Promise<string[]> {
  return [...(await state.skippedDeletions(source.capabilityList))].sort();
}

/** The options of a queued run into `name`. */
function queued(name: string, extra: Partial<QueueSyncOptions> = {}): QueueSyncOptions {
  return { source: source.capabilityList, dest: join(tmp.dir, name), queue: cluster().url, stateUrl: cluster().url, chunkSize: 40, pollIntervalMs: 50, expireInSeconds: 30, ...extra };
}

/** A plain run into `name`, its state in the same PostgreSQL. */
async function plain(name: string, extra: { delete?: boolean } = {}): Promise<SyncReport> {
  const dest = join(tmp.dir, name);
  const state = await openPostgresDestinationState(cluster().url, { destination: dest });
  try {
    return await sync({ source: source.capabilityList, dest, state, ...extra });
  } finally {
    await state.close();
  }
}

/** The Source's changes: creates, updates, deletions, one resource updated twice, one updated then deleted, one deleted and created again. */
function change(round: number): void {
  for (let i = 0; i < 60; i++) source.put(`new${round}/n${i}.txt`, `new ${round} ${i}\n`);
  for (let i = 0; i < 50; i++) source.put(`d${i % 7}/f${i}.txt`, `updated ${round} ${i}\n`.repeat(2));
  for (let i = 100; i < 130; i++) source.remove(`d${i % 7}/f${i}.txt`);
  source.put('d4/f200.txt', `twice ${round}, first\n`);
  source.put('d4/f200.txt', `twice ${round}, second\n`);
  source.put('d5/f201.txt', 'updated, then deleted\n');
  source.remove('d5/f201.txt');
  source.remove('d6/f202.txt');
  source.put('d6/f202.txt', `deleted, then back ${round}\n`);
  source.publish();
}

describe('the changes of sync --queue applied by workers (library)', { skip: POSTGRES_SKIP, timeout: 600_000 }, () => {
  before(async () => {
    server = await startTestServer();
    source = new FakeSource(server);
    for (let i = 0; i < FILES; i++) source.put(`d${i % 7}/f${i}.txt`, `body of ${i} `.repeat(1 + (i % 5)));
    source.publish();
    tmp = await tempDir('rs-queue-changes-');
  });
  after(async () => {
    await server?.close();
    await tmp?.cleanup();
  });

  test('an incremental run through the queue ends as a plain one: files, records, report; one change per resource per job', async () => {
    const workers = startWorkers(2);
    try {
      for (const [name, del] of [['keep', false], ['del', true]] as const) {
        const a = await plain(`plain-${name}`, { delete: del });
        const b = await syncWithQueue(queued(`queued-${name}`, { delete: del }));
        assert.deepEqual(essence(b), essence(a));
      }
      change(1);
      for (const [name, del] of [['keep', false], ['del', true]] as const) {
        const a = await plain(`plain-${name}`, { delete: del });
        const sentBefore = workers.chunks.length;
        const b = await syncWithQueue(queued(`queued-${name}`, { delete: del }));
        assert.equal(b.mode, 'incremental');
        assert.deepEqual(essence(b), essence(a));
        assert.ok(workers.chunks.length - sentBefore >= 4, 'the changes went to the workers in several chunks');
        assert.deepEqual(await tree(join(tmp.dir, `queued-${name}`)), await tree(join(tmp.dir, `plain-${name}`)));
        assert.deepEqual(await held(join(tmp.dir, `queued-${name}`)), await held(join(tmp.dir, `plain-${name}`)));
        if (del) {
          assert.equal(b.deleted, 31, '30 deletions and the resource updated, then deleted');
          assert.equal(b.deletionsSkippedCount, 0);
        } else {
          assert.equal(b.deleted, 0);
          assert.equal(b.deletionsSkippedCount, 31);
        }
        assert.equal(await readFile(join(tmp.dir, `queued-${name}`, 'd4', 'f200.txt'), 'utf8'), 'twice 1, second\n');
        assert.equal(await readFile(join(tmp.dir, `queued-${name}`, 'd6', 'f202.txt'), 'utf8'), 'deleted, then back 1\n');
      }
      // the jobs of changes: format 2, kind 'changes', at most chunkSize each, never one resource twice in a list's window
      const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 60 });
      try {
        const rows = await queue.query<{ data: ChunkJob }>(`SELECT data FROM ${queue.tables.job} WHERE name = $1 AND data->>'kind' = 'changes'`, [CHUNK_QUEUE]);
        assert.ok(rows.length >= 8, `${rows.length} jobs of changes`);
        const byRun = new Map<string, string[]>();
        for (const { data } of rows) {
          assert.equal(data.version, 2);
          assert.ok(data.entries.length <= 40 && data.entries.length > 0);
          const urls = byRun.get(data.run) ?? [];
          urls.push(...data.entries.map((e) => e.loc));
          byRun.set(data.run, urls);
        }
        for (const urls of byRun.values()) assert.equal(new Set(urls).size, urls.length, 'one change per resource');
      } finally {
        await queue.close();
      }
      // a later run with --delete applies the deletions skipped before, as a plain one does
      const a = await plain('plain-keep', { delete: true });
      const b = await syncWithQueue(queued('queued-keep', { delete: true }));
      assert.deepEqual(essence(b), essence(a));
      assert.equal(b.deleted, 31);
      assert.deepEqual(await tree(join(tmp.dir, 'queued-keep')), await tree(join(tmp.dir, 'plain-keep')));
      assert.deepEqual(await held(join(tmp.dir, 'queued-keep')), await held(join(tmp.dir, 'plain-keep')));
    } finally {
      await workers.stop();
    }
  });

  test('the cursor stays until every chunk of the Change List is done; the same command run again finishes the window', async () => {
    change(2);
    const dest = join(tmp.dir, 'queued-del');
    const state = await openPostgresDestinationState(cluster().url, { destination: dest, readonly: true });
    const cursorBefore = await state.getCursor(source.capabilityList);
    assert.ok(cursorBefore !== undefined);
    const stop = new AbortController();
    // no worker yet: the coordinator sends the window's chunks and waits
    const first = syncWithQueue(queued('queued-del', { delete: true, signal: stop.signal }));
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 60 });
    try {
      const waiting = async (): Promise<number> => {
        const [r] = await queue.query<{ n: string }>(`SELECT count(*) AS n FROM ${queue.tables.job} WHERE name = $1 AND state = 'created' AND data->>'kind' = 'changes'`, [CHUNK_QUEUE]);
        return Number(r?.n ?? 0);
      };
      const deadline = Date.now() + 120_000;
      while ((await waiting()) < 4 && Date.now() < deadline) await sleep(50);
      assert.ok((await waiting()) >= 4, 'the chunks of the window are waiting');
      assert.deepEqual(await state.getCursor(source.capabilityList), cursorBefore);
      stop.abort();
      await assert.rejects(first, (err: unknown) => isResourceSyncError(err, 'RS_ABORTED'));
      assert.deepEqual(await state.getCursor(source.capabilityList), cursorBefore, 'not moved past changes not done');
    } finally {
      await queue.close();
    }
    const workers = startWorkers(2);
    try {
      const b = await syncWithQueue(queued('queued-del', { delete: true }));
      const a = await plain('plain-del', { delete: true });
      assert.deepEqual(essence(b), essence(a));
      assert.deepEqual(await tree(dest), await tree(join(tmp.dir, 'plain-del')));
      assert.deepEqual(await held(dest), await held(join(tmp.dir, 'plain-del')));
      assert.notDeepEqual(await state.getCursor(source.capabilityList), cursorBefore);
    } finally {
      await workers.stop();
      await state.close();
    }
  });

  test('a Change List Index: one window per Change List, in order; a resource changed in two lists ends as the later says', async () => {
    source.rollover = 70;
    change(3);
    source.put('d0/f7.txt', 'round 3, last of all\n');
    source.remove('d0/f14.txt');
    source.publish();
    const workers = startWorkers(2);
    try {
      const a = await plain('plain-del', { delete: true });
      const b = await syncWithQueue(queued('queued-del', { delete: true, chunkSize: 25 }));
      assert.deepEqual(essence(b), essence(a));
      const lists = b.sets.flatMap((s) => s.documents).filter((d) => /changelist-\d+\.xml$/.test(d));
      assert.ok(lists.length >= 3, `several Change Lists read: ${lists.join(' ')}`);
      assert.deepEqual(await tree(join(tmp.dir, 'queued-del')), await tree(join(tmp.dir, 'plain-del')));
      assert.deepEqual(await held(join(tmp.dir, 'queued-del')), await held(join(tmp.dir, 'plain-del')));
      assert.equal(await readFile(join(tmp.dir, 'queued-del', 'd0', 'f7.txt'), 'utf8'), 'round 3, last of all\n');
      await assert.rejects(readFile(join(tmp.dir, 'queued-del', 'd0', 'f14.txt')), { code: 'ENOENT' });
      const state = await openPostgresDestinationState(cluster().url, { destination: join(tmp.dir, 'queued-del'), readonly: true });
      const plainState = await openPostgresDestinationState(cluster().url, { destination: join(tmp.dir, 'plain-del'), readonly: true });
      assert.deepEqual(await state.getCursor(source.capabilityList), await plainState.getCursor(source.capabilityList));
      await state.close();
      await plainState.close();
    } finally {
      await workers.stop();
      source.rollover = undefined;
    }
  });

  test('a change that fails (404) is reported, kept pending and holds the cursor as in a plain sync; the next run resolves it', async () => {
    change(4);
    source.put('d0/f21.txt', 'changed, then not served\n');
    source.publish();
    server.delete(urlPath('d0/f21.txt'));
    const workers = startWorkers(2);
    try {
      const a = await plain('plain-del', { delete: true });
      const b = await syncWithQueue(queued('queued-del', { delete: true }));
      assert.deepEqual(essence(b), essence(a));
      assert.deepEqual(b.failed.map((f) => [f.url, f.status]), [[`${source.origin}/d0/f21.txt`, 404]]);
      assert.deepEqual(await held(join(tmp.dir, 'queued-del')), await held(join(tmp.dir, 'plain-del')));
      const cursors = async (): Promise<unknown[]> => {
        const out: unknown[] = [];
        for (const name of ['queued-del', 'plain-del']) {
          const state = await openPostgresDestinationState(cluster().url, { destination: join(tmp.dir, name), readonly: true });
          out.push(await state.getCursor(source.capabilityList));
          await state.close();
        }
        return out;
      };
      const [q, p] = await cursors();
      assert.deepEqual(q, p, 'the cursor stops at the change that failed, as in a plain sync');
      source.publish(); // served again
      const a2 = await plain('plain-del', { delete: true });
      const b2 = await syncWithQueue(queued('queued-del', { delete: true }));
      assert.deepEqual(essence(b2), essence(a2));
      assert.deepEqual(b2.failed, []);
      const after = (await held(join(tmp.dir, 'queued-del'))) as { pending: string[] };
      assert.deepEqual(after.pending, []);
      assert.deepEqual(after, await held(join(tmp.dir, 'plain-del')));
      assert.deepEqual(await tree(join(tmp.dir, 'queued-del')), await tree(join(tmp.dir, 'plain-del')));
      const [q2, p2] = await cursors();
      assert.deepEqual(q2, p2);
    } finally {
      await workers.stop();
    }
  });

  test('chunks of changes the workers gave up on (cancelled) are applied by the coordinator itself, counted once', async () => {
    change(5);
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 60 });
    try {
      const a = await plain('plain-del', { delete: true });
      // no worker: every chunk of the window is cancelled as soon as it is waiting
      const run = syncWithQueue(queued('queued-del', { delete: true }));
      let cancelled = 0;
      const deadline = Date.now() + 120_000;
      let done = false;
      void run.finally(() => (done = true)).catch(() => undefined);
      while (!done && Date.now() < deadline) {
        const rows = await queue.query<{ id: string }>(`SELECT id FROM ${queue.tables.job} WHERE name = $1 AND state = 'created' AND data->>'kind' = 'changes'`, [CHUNK_QUEUE]);
        if (rows.length > 0) await queue.boss.cancel(CHUNK_QUEUE, rows.map((r) => r.id));
        cancelled += rows.length;
        await sleep(50);
      }
      const b = await run;
      assert.ok(cancelled >= 4, `${cancelled} chunks cancelled`);
      assert.deepEqual(essence(b), essence(a));
      assert.deepEqual(await tree(join(tmp.dir, 'queued-del')), await tree(join(tmp.dir, 'plain-del')));
      assert.deepEqual(await held(join(tmp.dir, 'queued-del')), await held(join(tmp.dir, 'plain-del')));
    } finally {
      await queue.close();
    }
  });

  test('a worker refuses a job of a format it does not know, with a clear error', async () => {
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 60 });
    const workers = startWorkers(1);
    try {
      const id = randomUUID();
      const data = { version: 3, run: 'r', set: 's', entries: [] } as unknown as ChunkJob;
      await queue.boss.insert([{ id, name: CHUNK_QUEUE, data, retryLimit: 0 }]);
      const deadline = Date.now() + 60_000;
      while (!workers.chunks.some((c) => c.id === id) && Date.now() < deadline) await sleep(50);
      const got = workers.chunks.find((c) => c.id === id);
      assert.equal(got?.outcome, undefined);
      assert.match(got?.error ?? '', /format version 3; this worker reads versions 1 and 2: upgrade the worker/);
      const [row] = await queue.query<{ state: string }>(`SELECT state FROM ${queue.tables.job} WHERE id = $1`, [id]);
      assert.equal(row?.state, 'failed');
      const kindless = randomUUID();
      await queue.boss.insert([{ id: kindless, name: CHUNK_QUEUE, data: { ...data, version: 2, kind: 'other' }, retryLimit: 0 }]);
      while (!workers.chunks.some((c) => c.id === kindless) && Date.now() < deadline) await sleep(50);
      assert.match(workers.chunks.find((c) => c.id === kindless)?.error ?? '', /kind 'other'/);
    } finally {
      await workers.stop();
      await queue.close();
    }
  });
});
