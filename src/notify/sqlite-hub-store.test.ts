import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { tempDir } from '../../test/helpers/tmp.js';
import { openSqliteHubStore } from './sqlite-hub-store.js';

const TOPIC = 'http://127.0.0.1:8080/set/change/';
const ROOMY = { topicBytes: 1e9, totalBytes: 1e9, subscriberBytes: 1e9, subscriberDeliveries: 1e6 };

void test('claims end with the process that held them: a store opened again hands the delivery out at once', async () => {
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
