// The coordinator's jobs found by their tag, not by ids held in memory: each ended job counted once per coordinator
// (in the job table or after pg-boss archived it), a resumed coordinator counting them again, the jobs of a killed
// coordinator waited for; timed on 10^4 jobs.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { CHUNK_QUEUE, openQueue, type ChunkQueue } from '../src/destination/queue-jobs.js';
import { SessionJobs, type EndedJob } from '../src/destination/queue-session.js';
import { POSTGRES_SKIP, usePostgres } from './helpers/postgres.js';

const cluster = usePostgres();
const JOBS = 10_000;

/** Inserts `n` jobs of the run `run` (their data only what the tag's queries read), 1,000 a statement. */
async function insertJobs(queue: ChunkQueue, run: string, n: number): Promise<string[]> {
  const ids = Array.from({ length: n }, () => randomUUID());
  for (let at = 0; at < n; at += 1000) {
    await queue.boss.insert(ids.slice(at, at + 1000).map((id) => ({ id, name: CHUNK_QUEUE, data: { run, entries: [] }, retryLimit: 0 })));
  }
  return ids;
}

/** Ends `ids` as a worker would: taken, then completed with an outcome, or failed (no retry left). */
async function end(queue: ChunkQueue, ids: string[], how: 'completed' | 'failed'): Promise<void> {
  const { job } = queue.tables;
  await queue.query(`UPDATE ${job} SET state = 'active', started_on = now() WHERE name = $1 AND id = ANY($2::uuid[])`, [CHUNK_QUEUE, ids]);
  // pg-boss completes many ids at once without an output: its statement, with the outcome a worker gives
  if (how === 'completed') await queue.query(`UPDATE ${job} SET state = 'completed', completed_on = now(), output = $3 WHERE name = $1 AND id = ANY($2::uuid[])`, [CHUNK_QUEUE, ids, { done: 1, failed: [] }]);
  else await queue.boss.fail(CHUNK_QUEUE, ids);
}

/** Moves `ids` to the archive as pg-boss's maintenance does. */
async function archive(queue: ChunkQueue, ids: string[]): Promise<void> {
  const { job, archive: a } = queue.tables;
  const columns = 'id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff, start_after, started_on, singleton_key, singleton_on, expire_in, created_on, completed_on, keep_until, dead_letter, policy, output';
  await queue.query(`WITH moved AS (DELETE FROM ${job} WHERE name = $1 AND id = ANY($2::uuid[]) RETURNING *) INSERT INTO ${a} (${columns}) SELECT ${columns} FROM moved`, [CHUNK_QUEUE, ids]);
}

/** Every job ended and not yet counted, page after page (bounded). */
async function takeAll(jobs: SessionJobs): Promise<EndedJob[]> {
  const all: EndedJob[] = [];
  for (let i = 0; i < 100; i++) {
    const page = await jobs.takeEnded();
    if (page.length === 0) return all;
    all.push(...page);
  }
  throw new Error('more pages than expected');
}

void describe('queue session', { skip: POSTGRES_SKIP }, () => {
  void test('10^4 jobs: each ended one counted once, archived or not; a resumed coordinator counts them again; timings', async (t) => {
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 10 });
    try {
      const run = randomUUID();
      const other = await insertJobs(queue, randomUUID(), 1000); // another run's jobs: never counted here
      const ids = await insertJobs(queue, run, JOBS);
      const first = await SessionJobs.open(queue, run);
      let started = performance.now();
      for (let at = 0; at < JOBS; at += 5) assert.deepEqual(await first.claim(ids.slice(at, at + 5)), []);
      t.diagnostic(`claim, 5 ids a statement: ${((performance.now() - started) / (JOBS / 5)).toFixed(2)} ms a statement`);
      const done = ids.slice(0, 6000);
      const failed = ids.slice(6000, 6100);
      await end(queue, done, 'completed');
      await end(queue, failed, 'failed');
      await end(queue, other, 'completed');
      await archive(queue, done.slice(0, 1000)); // archived before the coordinator looked
      started = performance.now();
      const states = await first.states();
      t.diagnostic(`states of ${JOBS} jobs: ${(performance.now() - started).toFixed(1)} ms`);
      assert.deepEqual(states, { waiting: JOBS - 6100, active: 0 });
      started = performance.now();
      const taken = await takeAll(first);
      t.diagnostic(`${taken.length} ended jobs taken, 500 a statement: ${(performance.now() - started).toFixed(1)} ms`);
      assert.equal(taken.length, 6100);
      assert.equal(new Set(taken.map((r) => r.id)).size, 6100, 'each once');
      assert.equal(taken.filter((r) => r.state === 'completed' && r.output?.done === 1).length, 6000);
      assert.deepEqual(new Set(taken.filter((r) => r.state === 'failed').map((r) => r.id)), new Set(failed));
      started = performance.now();
      assert.deepEqual(await takeAll(first), [], 'nothing counted twice');
      t.diagnostic(`a poll with nothing ended among ${JOBS} jobs: ${(performance.now() - started).toFixed(1)} ms`);
      await archive(queue, done.slice(1000, 2000)); // archived after it was counted: not again
      assert.deepEqual(await takeAll(first), []);

      // the coordinator killed and run again: its new session sends the same ids and counts every ended one again
      const second = await SessionJobs.open(queue, run);
      let claimed = 0;
      for (let at = 0; at < JOBS; at += 1000) claimed += (await second.claim(ids.slice(at, at + 1000))).length;
      assert.equal(claimed, 2000, 'the archived jobs are counted when sent again');
      assert.equal((await takeAll(second)).length, 4100);
      assert.deepEqual(await takeAll(first), [], 'the first session counts nothing more');
    } finally {
      await queue.close();
    }
  });

  void test('the live jobs of an earlier coordinator of the run are waited for; those of other runs are not', async () => {
    const queue = await openQueue(cluster().url, { maintenanceIntervalSeconds: 10 });
    try {
      const run = randomUUID();
      const stale = await insertJobs(queue, run, 20);
      await insertJobs(queue, randomUUID(), 20); // another run, never ending here
      const jobs = await SessionJobs.open(queue, run);
      let ended = false;
      const ending = (async () => {
        await new Promise((r) => setTimeout(r, 200));
        ended = true;
        await end(queue, stale.slice(0, 10), 'completed');
        await end(queue, stale.slice(10), 'failed');
      })();
      await jobs.waitForStale(20, undefined);
      assert.ok(ended, 'it waited for the earlier coordinator\'s jobs to end');
      await ending;
      // sent again by this coordinator (same ids), they are its own and counted
      await jobs.claim(stale);
      assert.equal((await takeAll(jobs)).length, 20);
      const ac = new AbortController();
      await insertJobs(queue, run, 1);
      const waiting = jobs.waitForStale(20, ac.signal);
      ac.abort();
      await assert.rejects(waiting, (err: Error & { code?: string }) => err.code === 'RS_ABORTED');
    } finally {
      await queue.close();
    }
  });
});
