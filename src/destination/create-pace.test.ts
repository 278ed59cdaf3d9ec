import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CreatePace } from './create-pace.js';

void test('CreatePace: quick synchronous creates stay synchronous; a stall moves creates to the thread pool for holdMs', () => {
  let now = 0;
  const pace = new CreatePace({ stallMs: 1, holdMs: 500, now: () => now });
  const create = (ms: number): number =>
    pace.timed(() => {
      now += ms;
      return 7;
    });
  assert.equal(create(0.05), 7);
  assert.equal(pace.threadPool, false);
  assert.equal(pace.stalls, 0);
  create(3); // a create held by the journal
  assert.equal(pace.stalls, 1);
  assert.equal(pace.threadPool, true);
  now += 499;
  assert.equal(pace.threadPool, true);
  now += 2;
  assert.equal(pace.threadPool, false, 'synchronous creates are tried again after holdMs');
});

void test('CreatePace: a create that throws is still timed, and its error goes through', () => {
  let now = 0;
  const pace = new CreatePace({ stallMs: 1, holdMs: 100, now: () => now });
  assert.throws(
    () =>
      pace.timed(() => {
        now += 5;
        throw new Error('EEXIST');
      }),
    /EEXIST/,
  );
  assert.equal(pace.threadPool, true);
});
