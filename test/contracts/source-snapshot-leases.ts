/**
 * The leases of the `SourceSnapshots` contract (registered by `describeSourceSnapshotsContract`): one holder of a
 * name at a time, within one instance and between instances over the same history, waiters served in the order
 * they came, a lease that is not renewed expires and another holder takes it, an aborted wait.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { holdingLease, type SnapshotLease, type SourceSnapshots } from '../../src/source/source-snapshots.js';
import { using, type MakeSnapshots } from './snapshots-fixture.js';

/** True once `promise` has settled, checked after the pending callbacks ran. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

/** Waits (bounded) until `check` is true. */
async function eventually(check: () => boolean, what: string, deadlineMs = 20_000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!check()) {
    assert.ok(Date.now() < deadline, what);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function withTwo(make: MakeSnapshots, body: (one: SourceSnapshots, two: SourceSnapshots) => Promise<void>): Promise<void> {
  await using(make, async ({ impl, openAgain }) => {
    const two = await openAgain();
    try {
      await body(impl, two);
    } finally {
      await two.close();
    }
  });
}

export function describeSnapshotLeaseContract(make: MakeSnapshots): void {
  void test('a lease has one holder at a time; the next waits for the release; names are independent', () =>
    using(make, async ({ impl }) => {
      const first = await impl.acquireLease('documents');
      assert.equal(first.name, 'documents');
      assert.ok(first.expiresAt > Date.now());
      const other = await impl.acquireLease('recording');
      const second = impl.acquireLease('documents');
      assert.equal(await settled(second), false, 'waits while the first holds it');
      await first.release();
      await first.release();
      const got = await second;
      assert.notEqual(got.holder, first.holder);
      await got.release();
      await other.release();
    }));

  void test('between two instances over the same history, a lease has one holder; the other gets it on release', () =>
    withTwo(make, async (one, two) => {
      const held = await one.acquireLease('recording');
      const waiting = two.acquireLease('recording');
      assert.equal(await settled(waiting), false);
      await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(await settled(waiting), false, 'still waiting while held');
      await held.release();
      const got = await waiting;
      const again = one.acquireLease('recording');
      assert.equal(await settled(again), false);
      await got.release();
      await (await again).release();
    }));

  void test('concurrent holders of the same name never overlap, and waiters are served in the order they came', () =>
    withTwo(make, async (one, two) => {
      let active = 0;
      let most = 0;
      const order: number[] = [];
      const runs = Array.from({ length: 6 }, (_, i) =>
        holdingLease(i % 2 === 0 ? one : two, 'documents', async () => {
          active++;
          most = Math.max(most, active);
          order.push(i);
          await new Promise((resolve) => setTimeout(resolve, 5));
          active--;
        }),
      );
      await Promise.all(runs);
      assert.equal(most, 1);
      assert.equal(order.length, 6);
      // the waiters of one instance are served in the order they came
      assert.deepEqual(order.filter((i) => i % 2 === 0), [0, 2, 4]);
      assert.deepEqual(order.filter((i) => i % 2 === 1), [1, 3, 5]);
    }));

  void test('a renewed lease stays held past its first expiry', () =>
    withTwo(make, async (one, two) => {
      // a TTL well above what a busy machine delays a timer, renewed ten times as often, for twice the TTL
      const held = await one.acquireLease('documents', { ttlMs: 1500 });
      const waiting = two.acquireLease('documents');
      for (let i = 0; i < 20; i++) {
        await new Promise((resolve) => setTimeout(resolve, 150));
        await held.renew();
      }
      assert.equal(await settled(waiting), false, 'renewed: still held after twice its time to live');
      await held.release();
      await (await waiting).release();
    }));

  void test('a lease not renewed expires: another holder takes it, the first can no longer renew, and its release frees nothing', () =>
    withTwo(make, async (one, two) => {
      const dead: SnapshotLease = await one.acquireLease('recording', { ttlMs: 200 });
      const started = Date.now();
      const taken = await two.acquireLease('recording');
      assert.ok(Date.now() - started >= 150, 'taken only once expired');
      await assert.rejects(dead.renew(), (e: unknown) => (e as { code?: string }).code === 'RS_LOCKED');
      await dead.release();
      const third = one.acquireLease('recording');
      assert.equal(await settled(third), false, 'the lapsed holder released nothing');
      await taken.release();
      await (await third).release();
    }));

  void test('an aborted wait throws RS_ABORTED and leaves the line', () =>
    withTwo(make, async (one, two) => {
      const held = await one.acquireLease('documents');
      const controller = new AbortController();
      const waiting = two.acquireLease('documents', { signal: controller.signal });
      const rejected = assert.rejects(waiting, (e: unknown) => (e as { code?: string }).code === 'RS_ABORTED');
      controller.abort();
      await rejected;
      let next: SnapshotLease | undefined;
      void two.acquireLease('documents').then((lease) => (next = lease));
      await held.release();
      await eventually(() => next !== undefined, 'the next waiter gets the lease');
      await next!.release();
    }));

  void test('holdingLease releases when its work throws', () =>
    using(make, async ({ impl }) => {
      await assert.rejects(
        holdingLease(impl, 'documents', () => Promise.reject(new Error('failed'))),
        /failed/,
      );
      const lease = await impl.acquireLease('documents');
      await lease.release();
    }));
}
