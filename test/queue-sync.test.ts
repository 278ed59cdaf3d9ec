import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sync, type SyncReport } from '../src/destination/sync.js';
import { syncWithQueue, type QueueProgress } from '../src/destination/queue-sync.js';
import { startQueueWorkers, type QueueWorkers } from './helpers/queue-workers.js';
import { CHUNK_QUEUE, openQueue, type ChunkJob } from '../src/destination/queue-jobs.js';
import { openPostgresDestinationState } from '../src/destination/postgres-state.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { FakeSource, urlPath } from './helpers/fake-source.js';
import { POSTGRES_SKIP, usePostgres } from './helpers/postgres.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';

const FILES = 1200;

const cluster = usePostgres();
let server: TestServer;
let source: FakeSource;
let tmp: { dir: string; cleanup: () => Promise<void> };

/** Workers in this process on this file's queue until `stop`; every chunk they report is kept. */
const startWorkers = (n: number): QueueWorkers => startQueueWorkers(cluster().url, n);

/** The parts of a report that a queue's sync must give as a plain sync does. */
function essence(r: SyncReport): unknown {
  const { created, updated, deleted, unchanged, deletionsSkippedCount, mode } = r;
  return { created, updated, deleted, unchanged, deletionsSkippedCount, mode, failed: r.failed.map((f) => [f.url, f.code, f.status]).sort(), sets: r.sets, warnings: r.warnings.map((w) => w.code).sort() };
}

describe('sync with a job queue (library)', { skip: POSTGRES_SKIP, timeout: 300_000 }, () => {
  before(async () => {
    server = await startTestServer();
    source = new FakeSource(server);
    for (let i = 0; i < FILES; i++) source.put(`d${i % 7}/f${i}.txt`, `body of ${i} `.repeat(1 + (i % 5)));
    source.put('gone.txt', 'listed but missing');
    source.publish();
    server.delete(urlPath('gone.txt'));
    tmp = await tempDir('rs-queue-');
  });
  after(async () => {
    await server?.close();
    await tmp?.cleanup();
  });

  test('reports what a plain sync reports, files and records alike; a second run goes on incrementally', async () => {
    const plainState = await openPostgresDestinationState(cluster().url, { destination: 'plain' });
    const plain = await sync({ source: source.capabilityList, dest: join(tmp.dir, 'plain'), state: plainState });
    const workers = startWorkers(2);
    const progress: QueueProgress[] = [];
    const queued = await syncWithQueue({ source: source.capabilityList, dest: join(tmp.dir, 'queued'), queue: cluster().url, stateUrl: cluster().url, chunkSize: 100, pollIntervalMs: 50, onQueueProgress: (p) => progress.push(p) });
    assert.deepEqual(essence(queued), essence(plain));
    assert.equal(queued.created, FILES);
    assert.deepEqual(queued.failed.map((f) => [f.url, f.status]), [[`${source.origin}/gone.txt`, 404]]);
    assert.equal(progress.at(-1)?.completed, 13);
    assert.equal(progress.at(-1)?.chunks, 13);
    assert.ok(workers.chunks.length >= 13);
    for (const i of [0, 1, 599, FILES - 1]) {
      assert.equal(await readFile(join(tmp.dir, 'queued', `d${i % 7}`, `f${i}.txt`), 'utf8'), `body of ${i} `.repeat(1 + (i % 5)));
    }
    const state = await openPostgresDestinationState(cluster().url, { destination: join(tmp.dir, 'queued'), readonly: true });
    assert.equal(await state.count(), FILES);
    assert.deepEqual((await state.pending(`${source.capabilityList}`)).map((e) => e.loc).length, (await plainState.pending(`${source.capabilityList}`)).length);
    await state.close();

    const again = await syncWithQueue({ source: source.capabilityList, dest: join(tmp.dir, 'queued'), queue: cluster().url, stateUrl: cluster().url, chunkSize: 100, pollIntervalMs: 50 });
    const plainAgain = await sync({ source: source.capabilityList, dest: join(tmp.dir, 'plain'), state: plainState });
    assert.deepEqual(essence(again), essence(plainAgain));
    assert.equal(again.mode, 'incremental');
    await plainState.close();
    assert.ok((await workers.stop()).every((n) => n >= 0));
  });

  test('a chunk done twice changes nothing: every resource is found held', async () => {
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 60 });
    const rows = await queue.query<{ data: ChunkJob }>(`SELECT data FROM ${queue.tables.job} WHERE name = $1 AND state = 'completed' LIMIT 1`, [CHUNK_QUEUE]);
    const data = rows[0]!.data;
    const state = await openPostgresDestinationState(cluster().url, { destination: data.state.destination, readonly: true });
    const before = await state.get(data.entries[0]!.loc);
    const workers = startWorkers(1);
    const id = randomUUID();
    await queue.boss.insert([{ id, name: CHUNK_QUEUE, data }]);
    const deadline = Date.now() + 60_000;
    while (!workers.chunks.some((c) => c.id === id) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await workers.stop();
    const again = workers.chunks.find((c) => c.id === id);
    assert.equal(again?.outcome?.created, 0);
    assert.equal(again?.outcome?.updated, 0);
    assert.equal(again?.outcome?.unchanged, data.entries.length);
    assert.equal(again?.outcome?.bytes, 0);
    assert.deepEqual(await state.get(data.entries[0]!.loc), before);
    assert.equal(await state.count(), FILES);
    await state.close();
    await queue.close();
  });

  test('refuses a queue or a state that is not PostgreSQL', async () => {
    await assert.rejects(
      () => syncWithQueue({ source: source.capabilityList, dest: join(tmp.dir, 'x'), queue: 'redis://127.0.0.1/', stateUrl: cluster().url }),
      (err: unknown) => isResourceSyncError(err, 'RS_INVALID_ARGUMENT'),
    );
    await assert.rejects(
      () => syncWithQueue({ source: source.capabilityList, dest: join(tmp.dir, 'x'), queue: cluster().url, stateUrl: join(tmp.dir, 'state.db') }),
      (err: unknown) => isResourceSyncError(err, 'RS_INVALID_ARGUMENT'),
    );
  });
});
