/**
 * The contract of a {@link HubStore}: what every implementation (SQLite here; PostgreSQL or another later)
 * must do for the hub to keep its guarantees. `describeHubStoreContract(name, make)` registers the tests;
 * `make` opens a fresh, empty store and says how to reopen it over the same data and how to clean up.
 * Nothing here depends on how a store keeps its data.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { HubStore, PendingDelivery, QueueLimits, Subscription } from '../../src/notify/hub-store.js';

/** A store under test: `reopen` closes `impl` and opens the same data again; `cleanup` closes what is open and removes the data. */
export interface HubStoreFixture {
  impl: HubStore;
  reopen(): Promise<HubStore>;
  cleanup(): Promise<void>;
}

const T0 = 1_800_000_000_000;
const TOPIC = 'http://127.0.0.1:8080/set/change/';
const OTHER = 'http://127.0.0.1:8080/other/change/';
const ROOMY: QueueLimits = { topicBytes: 1e9, totalBytes: 1e9, subscriberBytes: 1e9, subscriberDeliveries: 1e6 };
const HOLD = { limit: 100, holdMs: 60_000 };

function bytes(s: string): Uint8Array {
  return new TextEncoder().encode(s);
}

function text(b: Uint8Array | undefined): string | undefined {
  return b === undefined ? undefined : new TextDecoder().decode(b);
}

async function subscribe(store: HubStore, callback: string, topic = TOPIC, secret?: string): Promise<Subscription> {
  const s = await store.addSubscription({ topic, callback, secret, leaseSeconds: 600, now: T0 });
  assert.notEqual(s, 'conflict');
  return s as Subscription;
}

/** Runs `body` over a fresh store, cleaning up whatever happens. */
function withStore(
  make: () => Promise<HubStoreFixture>,
  body: (store: HubStore, fixture: HubStoreFixture) => Promise<void>,
): () => Promise<void> {
  return async () => {
    const fixture = await make();
    try {
      await body(fixture.impl, fixture);
    } finally {
      await fixture.cleanup();
    }
  };
}

function describeSubscriptions(make: () => Promise<HubStoreFixture>): void {
  void test('a verified subscription is recorded with its lease, and found by topic and callback', withStore(make, async (store) => {
    const s = await subscribe(store, 'http://127.0.0.1:9/a', TOPIC, 'k');
    assert.deepEqual(
      [s.topic, s.callback, s.secret, s.leaseSeconds, s.expiresAt, s.verifiedAt, s.state, s.failures],
      [TOPIC, 'http://127.0.0.1:9/a', 'k', 600, T0 + 600_000, T0, 'verified', 0],
    );
    assert.deepEqual(await store.getSubscription(TOPIC, 'http://127.0.0.1:9/a'), s);
    assert.equal(await store.getSubscription(TOPIC, 'http://127.0.0.1:9/missing'), undefined);
    assert.equal(await store.getSubscription(OTHER, 'http://127.0.0.1:9/a'), undefined);
  }));

  void test('subscriptions are listed by topic, in the order they were first recorded', withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/b');
    await subscribe(store, 'http://127.0.0.1:9/x', OTHER);
    await subscribe(store, 'http://127.0.0.1:9/a');
    await subscribe(store, 'http://127.0.0.1:9/b'); // a renewal keeps its place
    assert.deepEqual((await store.subscriptions(TOPIC)).map((s) => s.callback), ['http://127.0.0.1:9/b', 'http://127.0.0.1:9/a']);
    assert.deepEqual((await store.subscriptions()).map((s) => s.callback), [
      'http://127.0.0.1:9/b',
      'http://127.0.0.1:9/x',
      'http://127.0.0.1:9/a',
    ]);
    assert.deepEqual(await store.subscriptions('http://127.0.0.1:8080/none/'), []);
  }));

  void test('a renewal with the same secret restarts the lease in place and keeps the queue', withStore(make, async (store) => {
    const first = await subscribe(store, 'http://127.0.0.1:9/a', TOPIC, 'k');
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    const renewed = await store.addSubscription({ topic: TOPIC, callback: first.callback, secret: 'k', leaseSeconds: 900, now: T0 + 5000 });
    assert.notEqual(renewed, 'conflict');
    const s = renewed as Subscription;
    assert.deepEqual([s.id, s.leaseSeconds, s.expiresAt, s.verifiedAt], [first.id, 900, T0 + 5000 + 900_000, T0 + 5000]);
    assert.equal((await store.counts()).deliveries, 1);
  }));

  void test('a renewal with another secret, or without one, is refused and changes nothing', withStore(make, async (store) => {
    const first = await subscribe(store, 'http://127.0.0.1:9/a', TOPIC, 'k');
    const plain = await subscribe(store, 'http://127.0.0.1:9/plain');
    const ask = (callback: string, secret: string | undefined): ReturnType<HubStore['addSubscription']> =>
      store.addSubscription({ topic: TOPIC, callback, secret, leaseSeconds: 900, now: T0 + 1 });
    assert.equal(await ask(first.callback, 'other'), 'conflict');
    assert.equal(await ask(first.callback, undefined), 'conflict');
    assert.equal(await ask(plain.callback, 'k'), 'conflict');
    assert.deepEqual(await store.getSubscription(TOPIC, first.callback), first);
    assert.deepEqual(await store.getSubscription(TOPIC, plain.callback), plain);
  }));

  void test('removing a subscription drops its queue; removing a missing one says so', withStore(make, async (store) => {
    const a = await subscribe(store, 'http://127.0.0.1:9/a');
    const b = await subscribe(store, 'http://127.0.0.1:9/b');
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    assert.equal(await store.removeSubscription(TOPIC, a.callback), true);
    assert.equal(await store.removeSubscription(TOPIC, a.callback), false);
    assert.deepEqual(await store.counts(), { subscriptions: 1, messages: 1, deliveries: 1 });
    await store.removeSubscriptionById(b.id);
    await store.removeSubscriptionById(b.id);
    assert.deepEqual(await store.counts(), { subscriptions: 0, messages: 0, deliveries: 0 });
    assert.equal(await store.queuedBytes(), 0);
  }));

  void test('leases expire at their end, with their queues; the others stay', withStore(make, async (store) => {
    const short = await store.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/s', secret: undefined, leaseSeconds: 300, now: T0 });
    await subscribe(store, 'http://127.0.0.1:9/long');
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    assert.deepEqual(await store.expire(T0 + 299_999), []);
    const gone = await store.expire(T0 + 300_000);
    assert.deepEqual(gone.map((s) => s.id), [(short as Subscription).id]);
    assert.deepEqual((await store.subscriptions()).map((s) => s.callback), ['http://127.0.0.1:9/long']);
    assert.equal((await store.counts()).deliveries, 1);
    // a publish after a lease ended, before it was expired, does not queue for it
    await store.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/s', secret: undefined, leaseSeconds: 300, now: T0 });
    const outcome = await store.publish(TOPIC, 'application/xml', bytes('two'), T0 + 300_000, ROOMY);
    assert.equal(outcome.queued && outcome.deliveries, 1);
  }));

  void test('a given-up subscription gets nothing until renewed, and keeps its secret', withStore(make, async (store) => {
    const a = await subscribe(store, 'http://127.0.0.1:9/a', TOPIC, 'k');
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    const [head] = await store.claim(T0, HOLD);
    await store.failed(head!.id, T0 + 10, 'status 500', T0);
    const g = await store.giveUp(a.id, 'it failed');
    assert.deepEqual([g?.state, g?.secret, g?.lastError], ['given-up', 'k', 'it failed']);
    assert.deepEqual(await store.counts(), { subscriptions: 1, messages: 0, deliveries: 0 });
    const outcome = await store.publish(TOPIC, 'application/xml', bytes('two'), T0 + 1, ROOMY);
    assert.equal(outcome.queued && outcome.deliveries, 0);
    assert.equal(await store.giveUp(a.id + 1000, 'none'), undefined);
    assert.equal(await store.addSubscription({ topic: TOPIC, callback: a.callback, secret: 'j', leaseSeconds: 600, now: T0 + 2 }), 'conflict');
    const renewed = (await subscribe(store, a.callback, TOPIC, 'k'));
    assert.deepEqual([renewed.state, renewed.failures, renewed.failingSince], ['verified', 0, undefined]);
  }));
}

function describeOutbox(make: () => Promise<HubStoreFixture>): void {
  void test('a publish with no subscriber stores nothing', withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/a', OTHER);
    const outcome = await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    assert.deepEqual(outcome, { queued: true, messageId: 0, deliveries: 0, givenUp: [] });
    assert.deepEqual(await store.counts(), { subscriptions: 1, messages: 0, deliveries: 0 });
  }));

  void test('a message is stored once and delivered once to each subscriber of its topic', withStore(make, async (store) => {
    const subs = [await subscribe(store, 'http://127.0.0.1:9/a'), await subscribe(store, 'http://127.0.0.1:9/b')];
    await subscribe(store, 'http://127.0.0.1:9/x', OTHER);
    const outcome = await store.publish(TOPIC, 'application/atom+xml', bytes('hello'), T0, ROOMY);
    assert.ok(outcome.queued);
    assert.equal(outcome.deliveries, 2);
    assert.deepEqual(await store.counts(), { subscriptions: 3, messages: 1, deliveries: 2 });
    assert.equal(await store.queuedBytes(), 5);
    assert.equal(text(await store.messageBody(outcome.messageId)), 'hello');
    const claimed = await store.claim(T0, HOLD);
    assert.deepEqual(claimed.map((d) => d.subscription.id), subs.map((s) => s.id));
    for (const d of claimed) {
      assert.deepEqual([d.messageId, d.topic, d.contentType, d.size, d.attempts, d.nextAt], [outcome.messageId, TOPIC, 'application/atom+xml', 5, 0, T0]);
      await store.delivered(d.id, T0 + 1);
    }
    assert.deepEqual(await store.claim(T0 + 1, HOLD), []);
    assert.deepEqual(await store.counts(), { subscriptions: 3, messages: 0, deliveries: 0 });
    assert.equal(await store.messageBody(outcome.messageId), undefined, 'the message goes with its last delivery');
    assert.equal((await store.getSubscription(TOPIC, 'http://127.0.0.1:9/a'))?.lastDeliveryAt, T0 + 1);
  }));

  void test('only the head of a queue is handed out: deliveries keep publish order', withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/a');
    for (const s of ['one', 'two', 'three']) await store.publish(TOPIC, 'application/xml', bytes(s), T0, ROOMY);
    assert.equal((await store.heads()).length, 1);
    const seen: string[] = [];
    for (let i = 0; i < 5; i++) {
      const claimed = await store.claim(T0, HOLD);
      if (claimed.length === 0) break;
      assert.equal(claimed.length, 1);
      seen.push(text(await store.messageBody(claimed[0]!.messageId))!);
      await store.delivered(claimed[0]!.id, T0);
    }
    assert.deepEqual(seen, ['one', 'two', 'three']);
  }));

  void test('a claim is exclusive until it ends; a failed delivery is due again at its retry time', withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/a');
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    const [d] = await store.claim(T0, { limit: 10, holdMs: 1000 });
    assert.ok(d);
    assert.deepEqual(await store.claim(T0 + 999, HOLD), [], 'held by its claimer');
    const again = await store.claim(T0 + 1000, { limit: 10, holdMs: 1000 });
    assert.deepEqual(again.map((x) => x.id), [d.id], 'a claim that ended may be taken again');
    const s = await store.failed(d.id, T0 + 5000, 'status 503', T0 + 1500);
    assert.deepEqual([s?.failures, s?.failingSince, s?.lastError], [1, T0 + 1500, 'status 503']);
    assert.equal(await store.nextWake(), T0 + 5000);
    assert.deepEqual(await store.claim(T0 + 4999, HOLD), [], 'not before its retry time');
    const retried = await store.claim(T0 + 5000, HOLD);
    assert.deepEqual(retried.map((x) => [x.id, x.attempts, x.nextAt]), [[d.id, 1, T0 + 5000]]);
    const s2 = await store.failed(d.id, T0 + 9000, 'status 500', T0 + 6000);
    assert.deepEqual([s2?.failures, s2?.failingSince], [2, T0 + 1500], 'failing since the first failure in a row');
    await store.delivered((await store.claim(T0 + 9000, HOLD))[0]!.id, T0 + 9000);
    const s3 = await store.getSubscription(TOPIC, 'http://127.0.0.1:9/a');
    assert.deepEqual([s3?.failures, s3?.failingSince, s3?.lastDeliveryAt], [0, undefined, T0 + 9000]);
  }));

  void test('two concurrent claimers never hold the same delivery', withStore(make, async (store) => {
    for (let i = 0; i < 20; i++) await subscribe(store, `http://127.0.0.1:9/${i}`);
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
    const claimer = async (): Promise<PendingDelivery[]> => store.claim(T0, { limit: 12, holdMs: 60_000 });
    const [a, b] = await Promise.all([claimer(), claimer()]);
    const ids = [...a, ...b].map((d) => d.id);
    assert.equal(new Set(ids).size, ids.length, 'no delivery handed out twice');
    assert.equal(ids.length, 20);
    assert.ok(a.length <= 12 && b.length <= 12, 'each claim keeps to its limit');
    assert.deepEqual(await store.claim(T0, { limit: 0, holdMs: 60_000 }), []);
  }));

  void test('what is unknown is no error: a delivery or message that is gone', withStore(make, async (store) => {
    await store.delivered(12345, T0);
    assert.equal(await store.failed(12345, T0, 'x', T0), undefined);
    assert.equal(await store.messageBody(12345), undefined);
    assert.equal(await store.nextWake(), undefined);
    assert.deepEqual(await store.heads(), []);
    assert.deepEqual(await store.expire(T0), []);
  }));

  void test('nextWake is the earliest due head or lease end', withStore(make, async (store) => {
    await store.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/a', secret: undefined, leaseSeconds: 300, now: T0 });
    assert.equal(await store.nextWake(), T0 + 300_000);
    await store.publish(TOPIC, 'application/xml', bytes('one'), T0 + 7, ROOMY);
    assert.equal(await store.nextWake(), T0 + 7);
  }));

  void test('concurrent publishes are each stored whole', withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/a');
    await subscribe(store, 'http://127.0.0.1:9/b');
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, async (_, i) => store.publish(TOPIC, 'application/xml', bytes(`m${i}`), T0 + i, ROOMY)),
    );
    assert.ok(outcomes.every((o) => o.queued && o.deliveries === 2));
    assert.deepEqual(await store.counts(), { subscriptions: 2, messages: 10, deliveries: 20 });
    assert.equal(new Set(outcomes.map((o) => (o.queued ? o.messageId : 0))).size, 10);
  }));
}

function describeQuotas(make: () => Promise<HubStoreFixture>): void {
  void test('a subscription whose queue would pass its limits is given up, its queue dropped', withStore(make, async (store) => {
    const slow = await subscribe(store, 'http://127.0.0.1:9/slow');
    const limits = { ...ROOMY, subscriberDeliveries: 2 };
    for (const s of ['one', 'two']) assert.equal((await store.publish(TOPIC, 'application/xml', bytes(s), T0, limits)).givenUp.length, 0);
    await subscribe(store, 'http://127.0.0.1:9/fresh');
    const third = await store.publish(TOPIC, 'application/xml', bytes('three'), T0, limits);
    assert.deepEqual(third.givenUp.map((s) => [s.id, s.state]), [[slow.id, 'given-up']]);
    assert.equal(third.queued && third.deliveries, 1, 'the others still get it');
    assert.deepEqual(await store.counts(), { subscriptions: 2, messages: 1, deliveries: 1 });
    const bySize = await subscribe(store, 'http://127.0.0.1:9/size');
    const big = await store.publish(TOPIC, 'application/xml', bytes('x'.repeat(50)), T0, { ...ROOMY, subscriberBytes: 40 });
    assert.deepEqual(big.givenUp.map((s) => s.id).sort(), [bySize.id, (await store.getSubscription(TOPIC, 'http://127.0.0.1:9/fresh'))!.id].sort());
  }));

  void test("a publish that would pass the topic's or the total limit is refused, with nothing stored", withStore(make, async (store) => {
    await subscribe(store, 'http://127.0.0.1:9/a');
    await subscribe(store, 'http://127.0.0.1:9/x', OTHER);
    const limits = { ...ROOMY, topicBytes: 10, totalBytes: 15 };
    assert.ok((await store.publish(TOPIC, 'application/xml', bytes('12345678'), T0, limits)).queued);
    assert.deepEqual(await store.publish(TOPIC, 'application/xml', bytes('123'), T0, limits), { queued: false, limit: 'topicBytes', givenUp: [] });
    assert.ok((await store.publish(OTHER, 'application/xml', bytes('1234567'), T0, limits)).queued);
    assert.deepEqual(await store.publish(OTHER, 'application/xml', bytes('1'), T0, limits), { queued: false, limit: 'totalBytes', givenUp: [] });
    assert.deepEqual(await store.counts(), { subscriptions: 2, messages: 2, deliveries: 2 });
    assert.equal(await store.queuedBytes(), 15, 'each message counted once');
  }));
}

/** Registers the contract tests of a {@link HubStore} implementation under `name`. */
export function describeHubStoreContract(name: string, make: () => Promise<HubStoreFixture>): void {
  void describe(`HubStore contract: ${name}`, () => {
    void describe('subscriptions', () => describeSubscriptions(make));
    void describe('outbox', () => describeOutbox(make));
    void describe('quotas', () => describeQuotas(make));
    void test('subscriptions, queued messages and attempts survive a reopen', withStore(make, async (first, fixture) => {
      await subscribe(first, 'http://127.0.0.1:9/a', TOPIC, 'k');
      await first.publish(TOPIC, 'application/xml', bytes('one'), T0, ROOMY);
      await first.publish(TOPIC, 'application/xml', bytes('two'), T0, ROOMY);
      const [d] = await first.claim(T0, HOLD);
      await first.failed(d!.id, T0 + 100, 'status 500', T0);
      const store = await fixture.reopen();
      assert.deepEqual(await store.counts(), { subscriptions: 1, messages: 2, deliveries: 2 });
      assert.equal((await store.getSubscription(TOPIC, 'http://127.0.0.1:9/a'))?.secret, 'k');
      const [head] = await store.claim(T0 + 100, HOLD);
      assert.deepEqual([head?.attempts, text(await store.messageBody(head!.messageId))], [1, 'one']);
    }));
    void test('closing twice is no error', withStore(make, async (store) => {
      await store.close();
      await store.close();
    }));
  });
}
