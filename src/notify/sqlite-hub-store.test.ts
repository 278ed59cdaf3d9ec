import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { tempDir } from '../../test/helpers/tmp.js';
import { openSqliteHubStore } from './sqlite-hub-store.js';

const TOPIC = 'http://127.0.0.1:8080/set/change/';
const ROOMY = { topicBytes: 1e9, totalBytes: 1e9, subscriberBytes: 1e9, subscriberDeliveries: 1e6 };

void test('opening the store releases the claims of the process that held it before', async () => {
  const tmp = await tempDir('rs-sqlite-hub-');
  const file = join(tmp.dir, 'hub.sqlite');
  try {
    const first = openSqliteHubStore(file);
    first.addSubscription({ topic: TOPIC, callback: 'http://127.0.0.1:9/a', secret: undefined, leaseSeconds: 600, now: 1000 });
    first.publish(TOPIC, 'application/xml', new Uint8Array([1, 2, 3]), 1000, ROOMY);
    assert.equal(first.claim(1000, { limit: 1, holdMs: 3_600_000 }).length, 1);
    first.close(); // as if killed while delivering
    const second = openSqliteHubStore(file);
    try {
      assert.equal(second.claim(1001, { limit: 1, holdMs: 1000 }).length, 1, 'due again at once, not when the claim would end');
    } finally {
      second.close();
    }
  } finally {
    await tmp.cleanup();
  }
});

void test('a store made before deliveries could be claimed gains the column and keeps its queue', async () => {
  const tmp = await tempDir('rs-sqlite-hub-');
  const file = join(tmp.dir, 'hub.sqlite');
  try {
    openSqliteHubStore(file).close();
    const db = new Database(file);
    db.exec('ALTER TABLE delivery DROP COLUMN claimed_until');
    db.prepare(
      'INSERT INTO subscription (topic, callback, secret, lease_seconds, expires_at, verified_at) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(TOPIC, 'http://127.0.0.1:9/cb', null, 300, 10_000_000, 0);
    db.prepare('INSERT INTO message (topic, content_type, body, received_at, size) VALUES (?, ?, ?, ?, ?)').run(TOPIC, 'application/xml', Buffer.from('12345'), 0, 5);
    db.prepare('INSERT INTO delivery (subscription_id, message_id, next_at) VALUES (1, 1, 0)').run();
    db.close();
    const store = openSqliteHubStore(file);
    try {
      const [d] = store.claim(0, { limit: 5, holdMs: 1000 });
      assert.equal(d?.size, 5);
      assert.deepEqual(store.claim(0, { limit: 5, holdMs: 1000 }), []);
    } finally {
      store.close();
    }
  } finally {
    await tmp.cleanup();
  }
});
