import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runPool } from './run-pool.js';

void test('runPool: a released slot starts the next item; at most `concurrency` unreleased, `maxOutstanding` unfinished', async () => {
  let active = 0;
  let maxActive = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  const finish: (() => void)[] = [];
  const done: number[] = [];
  const pool = runPool(
    Array.from({ length: 40 }, (_, i) => i),
    3,
    async (i, release) => {
      active++;
      outstanding++;
      maxActive = Math.max(maxActive, active);
      maxOutstanding = Math.max(maxOutstanding, outstanding);
      await new Promise((r) => setTimeout(r, 1));
      active--;
      release(); // downloaded: only waiting for a commit now
      await new Promise<void>((r) => finish.push(r));
      outstanding--;
      done.push(i);
    },
    10,
  );
  while (finish.length < 10) await new Promise((r) => setTimeout(r, 2));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(finish.length, 10, 'no more than maxOutstanding unfinished');
  const releaseAll = setInterval(() => finish.splice(0).forEach((f) => f()), 2);
  await pool;
  clearInterval(releaseAll);
  assert.equal(done.length, 40);
  assert.ok(maxActive <= 3, `at most 3 unreleased (saw ${maxActive})`);
  assert.ok(maxOutstanding > 3 && maxOutstanding <= 10, `more than 3, at most 10 unfinished (saw ${maxOutstanding})`);
});

void test('runPool: the first error rejects once the calls under way have finished; no further item starts', async () => {
  let started = 0;
  let finished = 0;
  await assert.rejects(
    runPool(
      Array.from({ length: 100 }, (_, i) => i),
      4,
      async (i) => {
        started++;
        await new Promise((r) => setTimeout(r, 2));
        finished++;
        if (i === 5) throw new Error('boom');
      },
    ),
    /boom/,
  );
  assert.equal(finished, started, 'nothing left running');
  assert.ok(started < 20, `stopped pulling after the error (started ${started})`);
});
