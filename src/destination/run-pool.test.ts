import { test } from 'node:test';
import assert from 'node:assert/strict';
import { orderedPool, runPool } from './run-pool.js';

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

void test('orderedPool: work overlaps, reports come in item order one at a time, and items of one key run one after another', async () => {
  const reports: number[] = [];
  let active = 0;
  let maxActive = 0;
  let reporting = false;
  const keyStarts: number[] = [];
  await orderedPool(
    Array.from({ length: 30 }, (_, i) => i),
    4,
    async (i) => {
      if (i % 10 === 3) keyStarts.push(i);
      active++;
      maxActive = Math.max(maxActive, active);
      // later items finish first
      await new Promise((r) => setTimeout(r, (30 - i) % 7));
      active--;
      return async () => {
        assert.equal(reporting, false, 'one report at a time');
        reporting = true;
        await new Promise((r) => setTimeout(r, 1));
        reports.push(i);
        reporting = false;
      };
    },
    { keyOf: (i) => (i % 10 === 3 ? 'same' : undefined) },
  );
  assert.deepEqual(reports, Array.from({ length: 30 }, (_, i) => i));
  assert.ok(maxActive > 1 && maxActive <= 4, `overlapping, at most 4 (saw ${maxActive})`);
  assert.deepEqual(keyStarts, [3, 13, 23]);
});

void test('orderedPool: an item of a key starts its work only once the previous one of that key has reported', async () => {
  const events: string[] = [];
  await orderedPool(
    ['a1', 'b1', 'a2'],
    3,
    async (item) => {
      events.push(`start ${item}`);
      if (item === 'a1') await new Promise((r) => setTimeout(r, 20));
      return () => {
        events.push(`report ${item}`);
      };
    },
    { keyOf: (item) => item[0] },
  );
  assert.ok(events.indexOf('start a2') > events.indexOf('report a1'), events.join(', '));
  assert.ok(events.indexOf('start b1') < events.indexOf('report a1'), events.join(', '));
});

void test('orderedPool: a failed report stops the pulling; the items under way still report in order, then the first error rejects', async () => {
  const reports: number[] = [];
  const started: number[] = [];
  await assert.rejects(
    orderedPool(
      Array.from({ length: 100 }, (_, i) => i),
      2,
      async (i) => {
        started.push(i);
        await new Promise((r) => setTimeout(r, 1));
        if (i === 5) throw new Error('work 5 failed');
        return () => {
          if (i === 3) throw new Error('report 3 failed');
          reports.push(i);
        };
      },
    ),
    /report 3 failed|work 5 failed/,
  );
  assert.ok(started.length < 100, `pulling stopped (started ${started.length})`);
  const expected = started.filter((i) => i !== 3 && i !== 5).sort((a, b) => a - b);
  assert.deepEqual(reports, expected, 'every other item started reported, in order');
});
