/** The {@link HubStore} contract, run against the PostgreSQL store (a throwaway cluster), and what sharing it adds. */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { isResourceSyncError } from '../../src/core/errors.js';
import type { HubStore, QueueLimits, Subscription } from '../../src/notify/hub-store.js';
import { openPostgresHubStore } from '../../src/notify/postgres-hub-store.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { describeHubStoreContract } from './hub-store.js';

const cluster = usePostgres();

const T0 = 1_800_000_000_000;
const TOPIC = 'http://127.0.0.1:8080/set/change/';
const ROOMY: QueueLimits = { topicBytes: 1e9, totalBytes: 1e9, subscriberBytes: 1e9, subscriberDeliveries: 1e6 };

/** Every store opened on `hub`, closed together. */
function opener(hub: string): { open: () => Promise<HubStore>; closeAll: () => Promise<void> } {
  const opened: HubStore[] = [];
  return {
    open: async () => {
      const store = await openPostgresHubStore(cluster().url, { hub });
      opened.push(store);
      return store;
    },
    closeAll: async () => {
      for (const store of opened) await store.close();
    },
  };
}

if (POSTGRES_SKIP !== false) {
  void test('PostgreSQL hub store', { skip: POSTGRES_SKIP }, () => undefined);
} else {
  describeHubStoreContract('PostgreSQL (a fresh hub key per test)', async () => {
    const { open, closeAll } = opener(`hub-${randomUUID()}`);
    let current = await open();
    return {
      impl: current,
      async reopen() {
        await current.close();
        current = await open();
        return current;
      },
      cleanup: closeAll,
    };
  });

  void describe('PostgreSQL hub store', () => {
    void test('two stores (two pools) claiming at once never get the same delivery, and share the work out', async () => {
      const { open, closeAll } = opener(`hub-${randomUUID()}`);
      try {
        const [a, b] = [await open(), await open()];
        for (let i = 0; i < 60; i++) {
          const s = await a.addSubscription({ topic: TOPIC, callback: `http://127.0.0.1:9/${i}`, secret: undefined, leaseSeconds: 600, now: T0 });
          assert.notEqual(s, 'conflict');
        }
        for (const m of ['one', 'two']) await a.publish(TOPIC, 'application/xml', new TextEncoder().encode(m), T0, ROOMY);
        const seen = new Map<number, string>();
        // rounds of concurrent claims from both stores, each delivery acknowledged by its claimer
        for (let round = 0; round < 20 && seen.size < 120; round++) {
          const claims = await Promise.all([a, b, a, b].map(async (store, i) => ({ store, who: i % 2 === 0 ? 'a' : 'b', got: await store.claim(T0, { limit: 7, holdMs: 60_000 }) })));
          const ids = claims.flatMap((c) => c.got.map((d) => d.id));
          assert.equal(new Set(ids).size, ids.length, 'no delivery handed out twice in a round');
          for (const c of claims) {
            for (const d of c.got) {
              assert.ok(!seen.has(d.id), `delivery ${d.id} handed out again after ${seen.get(d.id)} took it`);
              seen.set(d.id, c.who);
              await c.store.delivered(d.id, T0);
            }
          }
        }
        assert.equal(seen.size, 120, 'every delivery handed out once');
        assert.deepEqual(await b.counts(), { subscriptions: 60, messages: 0, deliveries: 0 }, 'each message went with its last delivery');
        assert.ok([...seen.values()].includes('b') && [...seen.values()].includes('a'));
      } finally {
        await closeAll();
      }
    });

    void test('the last deliveries of a message acknowledged at once through two stores take the message with them', async () => {
      const { open, closeAll } = opener(`hub-${randomUUID()}`);
      try {
        const [a, b] = [await open(), await open()];
        for (let i = 0; i < 40; i++) await a.addSubscription({ topic: TOPIC, callback: `http://127.0.0.1:9/${i}`, secret: undefined, leaseSeconds: 600, now: T0 });
        for (let round = 0; round < 3; round++) {
          await a.publish(TOPIC, 'application/xml', new TextEncoder().encode(`m${round}`), T0, ROOMY);
          const claimed = await a.claim(T0, { limit: 40, holdMs: 60_000 });
          assert.equal(claimed.length, 40);
          // every acknowledgement at once, alternately through each store, with expiries and renewals among them
          await Promise.all([
            ...claimed.map(async (d, i) => (i % 2 === 0 ? a : b).delivered(d.id, T0)),
            b.expire(T0),
            a.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/0', secret: undefined, leaseSeconds: 600, now: T0 }),
          ]);
          assert.deepEqual(await b.counts(), { subscriptions: 40, messages: 0, deliveries: 0 }, `round ${round}`);
        }
      } finally {
        await closeAll();
      }
    });

    void test('a claim survives its claimer: another store waits for the hold to end', async () => {
      const { open, closeAll } = opener(`hub-${randomUUID()}`);
      try {
        const a = await open();
        await a.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/a', secret: 'k', leaseSeconds: 600, now: T0 });
        await a.publish(TOPIC, 'application/xml', new TextEncoder().encode('one'), T0, ROOMY);
        assert.equal((await a.claim(T0, { limit: 10, holdMs: 5000 })).length, 1);
        await a.close(); // a hub process gone while delivering
        const b = await open();
        assert.deepEqual(await b.claim(T0 + 4999, { limit: 10, holdMs: 5000 }), []);
        assert.equal((await b.claim(T0 + 5000, { limit: 10, holdMs: 5000 })).length, 1);
      } finally {
        await closeAll();
      }
    });

    void test('two hubs in one database keep apart', async () => {
      const one = opener('hub-one');
      const two = opener('hub-two');
      try {
        const [a, b] = [await one.open(), await two.open()];
        const s = (await a.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/a', secret: undefined, leaseSeconds: 600, now: T0 })) as Subscription;
        assert.deepEqual(await b.subscriptions(), []);
        assert.deepEqual(await b.publish(TOPIC, 'application/xml', new Uint8Array([1]), T0, ROOMY), { queued: true, messageId: 0, deliveries: 0, givenUp: [] });
        assert.deepEqual(await b.counts(), { subscriptions: 0, messages: 0, deliveries: 0 });
        const out = await a.publish(TOPIC, 'application/xml', new Uint8Array([1, 2]), T0, ROOMY);
        assert.ok(out.queued && out.deliveries === 1);
        assert.equal(await b.messageBody(out.messageId), undefined);
        assert.deepEqual(await b.claim(T0, { limit: 10, holdMs: 1000 }), []);
        await b.removeSubscriptionById(s.id);
        assert.equal((await a.counts()).subscriptions, 1, 'an id of another hub is not removed');
        assert.equal(await b.queuedBytes(), 0);
        assert.equal(await a.queuedBytes(), 2);
      } finally {
        await one.closeAll();
        await two.closeAll();
      }
    });

    void test('the schema is versioned: a newer one is refused; an unreachable database is RS_IO', async () => {
      const client = new pg.Client({ connectionString: cluster().url });
      await client.connect();
      try {
        await (await openPostgresHubStore(cluster().url)).close();
        assert.deepEqual((await client.query('SELECT version FROM resourcesync_hub_schema_version')).rows, [{ version: 1 }]);
        await client.query('UPDATE resourcesync_hub_schema_version SET version = 99');
        await assert.rejects(openPostgresHubStore(cluster().url), (e) => isResourceSyncError(e, 'RS_IO') && /99/.test(e.message));
      } finally {
        await client.query('UPDATE resourcesync_hub_schema_version SET version = 1');
        await client.end();
      }
      const url = new URL(cluster().url);
      url.port = '1';
      await assert.rejects(openPostgresHubStore(url.href), (e) => isResourceSyncError(e, 'RS_IO'));
      await assert.rejects(openPostgresHubStore(cluster().url, { hub: '' }), (e) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
    });
  });
}
