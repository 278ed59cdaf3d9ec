// The one reader of the queue's runs (src/destination/queue-runs.ts) behind both `worker --status` and the
// explorer's Queue view: pg-boss chunk jobs in every state on a throwaway PostgreSQL (one done chunk moved to the
// archive), read by readQueueStatus, by `worker --status [--json]` in a child process and by openQueueProgress; the
// two shapes agree on every count, and no URL with its password is printed.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CHUNK_QUEUE, openQueue } from '../src/destination/queue-jobs.js';
import { openQueueProgress } from '../src/destination/queue-progress.js';
import { readQueueStatus, type QueueStatus } from '../src/destination/queue-status.js';
import { runCli } from './helpers/mirror-check.js';
import { POSTGRES_SKIP, usePostgres } from './helpers/postgres.js';

describe('worker --status and the Queue view read the queue alike', { skip: POSTGRES_SKIP }, () => {
  const cluster = usePostgres();

  void test('chunks by state, resources, retries and times per run, from the job table and its archive', async () => {
    const secretUrl = cluster().url.replace('postgres@', 'postgres:qr3cret@');
    assert.deepEqual((await readQueueStatus(secretUrl)).runs, [], 'no pg-boss tables yet: no run');
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 3600 });
    try {
      const job = (run: string, destination: string, n: number, retryLimit = 0) => ({
        name: CHUNK_QUEUE,
        data: { version: 1, run, set: 'rl', state: { url: secretUrl, destination }, storage: { kind: 'folder', path: destination }, entries: Array.from({ length: n }, (_, i) => ({ loc: `https://x.example/${i}` })) },
        retryLimit,
        retryDelay: 0,
      });
      await queue.boss.insert([job('A', '/mirror/a', 10, 3), job('A', '/mirror/a', 10), job('A', '/mirror/a', 10), job('A', '/mirror/a', 10)]);
      const fetched = (await queue.boss.fetch(CHUNK_QUEUE, { batchSize: 4 })) ?? [];
      assert.equal(fetched.length, 4);
      const ids = fetched.map((j) => j.id);
      const byRetry = await queue.query<{ id: string; retry_limit: number }>(`SELECT id, retry_limit FROM pgboss.job WHERE id = ANY($1::uuid[])`, [ids]);
      const retriable = byRetry.find((r) => r.retry_limit === 3)!.id;
      const others = ids.filter((id) => id !== retriable);
      await queue.boss.fail(CHUNK_QUEUE, retriable, { message: 'worker lost' }); // → retry
      await queue.boss.complete(CHUNK_QUEUE, others[0]!, { done: 10, failed: 2, created: 8, updated: 0, deleted: 0, unchanged: 0, bytes: 80, warnings: 0 });
      await queue.boss.complete(CHUNK_QUEUE, others[1]!, { done: 10, failed: 0, created: 10, updated: 0, deleted: 0, unchanged: 0, bytes: 100, warnings: 0 });
      await queue.query(`INSERT INTO pgboss.archive SELECT *, now() FROM pgboss.job WHERE id = $1`, [others[1]]);
      await queue.query(`DELETE FROM pgboss.job WHERE id = $1`, [others[1]]);
      assert.deepEqual(((await queue.boss.fetch(CHUNK_QUEUE, { batchSize: 4 })) ?? []).map((j) => j.id), [retriable], 'taken again: retried');
      // others[2] stays active; run B (3 entries) waits
      await queue.boss.insert([job('B', '/mirror/b', 3)]);

      const status = await readQueueStatus(secretUrl);
      assert.doesNotMatch(JSON.stringify(status), /qr3cret/);
      assert.deepEqual(status.runs.map((r) => r.run), ['A', 'B'], 'oldest first');
      const a = status.runs[0]!;
      assert.deepEqual(
        [a.destination, a.storage, a.chunks, a.resources, a.waiting, a.active, a.completed, a.failed, a.retried, a.done],
        ['/mirror/a', '/mirror/a', 4, 40, 0, 2, 2, 0, 1, 20],
      );
      assert.ok(a.lastCompletedAt !== undefined && Date.parse(a.lastCompletedAt) >= Date.parse(a.startedAt), JSON.stringify(a));
      const b = status.runs[1]!;
      assert.deepEqual([b.chunks, b.resources, b.waiting, b.done, b.lastCompletedAt], [1, 3, 1, 0, undefined]);

      const json = await runCli(['worker', '--queue', secretUrl, '--status', '--json']);
      assert.equal(json.status, 0, json.stderr);
      assert.deepEqual((JSON.parse(json.stdout) as QueueStatus).runs, status.runs, 'the CLI prints what the library reads');
      const human = await runCli(['worker', '--queue', secretUrl, '--status']);
      assert.equal(human.status, 0, human.stderr);
      assert.match(human.stdout, /^run A into \/mirror\/a: 2\/4 chunks done \(20\/40 resources\), 0 waiting, 2 active, 1 retried$/m);
      assert.doesNotMatch(json.stdout + json.stderr + human.stdout + human.stderr, /qr3cret/);

      const reader = await openQueueProgress(secretUrl);
      try {
        const progress = (await reader.read()).runs.find((r) => r.run === 'A')!;
        assert.deepEqual(progress.chunks, { waiting: a.waiting, active: a.active, done: a.completed, failed: a.failed, total: a.chunks });
        assert.deepEqual(progress.resources, { done: 18, failed: 2 });
        assert.equal(new Date(progress.createdAt).toISOString(), a.startedAt);
      } finally {
        await reader.close();
      }
    } finally {
      await queue.close();
    }
  });

  void test('worker --status on a queue that cannot be reached: exit 3, its URL without the password', async () => {
    const ran = await runCli(['worker', '--queue', 'postgres://rs:topsecret@127.0.0.1:9/none', '--status']);
    assert.equal(ran.status, 3, ran.stderr);
    assert.match(ran.stderr, /postgres:\/\/rs@127\.0\.0\.1:9\/none/);
    assert.doesNotMatch(ran.stderr + ran.stdout, /topsecret/);
  });
});
