import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResourceSyncError } from '../core/errors.js';
import { DEFAULT_CONNECT_TIMEOUT_S, connectTimeoutMs, pgConnection, postgresMessage } from './postgres.js';

void test('connectTimeoutMs: the URL\'s connect_timeout, else PGCONNECT_TIMEOUT, else 10 s, read as libpq reads them', () => {
  const url = 'postgres://rs:pw@db/rs';
  assert.equal(DEFAULT_CONNECT_TIMEOUT_S, 10);
  assert.equal(connectTimeoutMs(url, {}), 10_000);
  assert.equal(connectTimeoutMs(`${url}?connect_timeout=3`, {}), 3000);
  assert.equal(connectTimeoutMs(`${url}?sslmode=disable&connect_timeout=30`, { PGCONNECT_TIMEOUT: '5' }), 30_000, 'the URL wins');
  assert.equal(connectTimeoutMs(url, { PGCONNECT_TIMEOUT: '5' }), 5000);
  assert.equal(connectTimeoutMs(`${url}?connect_timeout=1`, {}), 2000, 'libpq takes 1 as 2');
  assert.equal(connectTimeoutMs(`${url}?connect_timeout=0`, {}), 0, 'zero waits forever');
  assert.equal(connectTimeoutMs(`${url}?connect_timeout=-4`, {}), 0);
  assert.deepEqual(pgConnection(`${url}?connect_timeout=7`, {}), { connectionString: `${url}?connect_timeout=7`, connectionTimeoutMillis: 7000 });
  for (const bad of ['2.5', 'soon', '1e3']) {
    assert.throws(() => connectTimeoutMs(`${url}?connect_timeout=${bad}`, {}), (err: unknown) =>
      err instanceof ResourceSyncError && err.code === 'RS_INVALID_ARGUMENT' && err.message.includes(`'${bad}'`) && !err.message.includes('pw'));
  }
  assert.throws(() => connectTimeoutMs(url, { PGCONNECT_TIMEOUT: 'x' }), /PGCONNECT_TIMEOUT is 'x'/);
});

void test('postgresMessage: a connection that timed out says how to give it longer; other messages are as they were', () => {
  assert.match(postgresMessage(new Error('Connection terminated due to connection timeout')), /timeout \(the server did not answer within the connect timeout: connect_timeout=SECONDS in the URL, 10 s by default\)$/);
  assert.equal(postgresMessage(new Error('connect ECONNREFUSED 127.0.0.1:9')), 'connect ECONNREFUSED 127.0.0.1:9');
});
