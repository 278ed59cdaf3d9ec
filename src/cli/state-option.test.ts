import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { redactedUrl, stateChoice } from './state-option.js';

void test('--state: postgres:// and postgresql:// name PostgreSQL, keyed by the absolute path of <dest> or its URL', () => {
  assert.deepEqual(stateChoice({ state: 'postgres://rs:pw@db:5433/m' }, 'mirror'), { kind: 'postgres', url: 'postgres://rs:pw@db:5433/m', key: resolve('mirror') });
  assert.deepEqual(stateChoice({ state: 'postgresql://db/m' }, 's3://bucket/prefix'), { kind: 'postgres', url: 'postgresql://db/m', key: 's3://bucket/prefix' });
  assert.deepEqual(stateChoice({ state: 'POSTGRES://db/m', 'state-key': 'a' }, 'x'), { kind: 'postgres', url: 'POSTGRES://db/m', key: 'a' });
});

void test('--state: anything else is an SQLite file (made absolute); none is the default', () => {
  assert.deepEqual(stateChoice({ state: 'states/m.sqlite' }, 's3://b/p'), { kind: 'sqlite', file: resolve('states/m.sqlite') });
  assert.deepEqual(stateChoice({}, 'mirror'), { kind: 'default' });
});

void test('--state: usage errors never show the password', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ state: '' }, /--state is empty/],
    [{ 'state-key': 'k' }, /--state-key goes with --state postgres/],
    [{ state: 'file.sqlite', 'state-key': 'k' }, /--state-key goes with --state postgres/],
    [{ state: 'postgres://rs:secret@/m' }, /is not a PostgreSQL URL/],
    [{ state: 'postgres://rs:secret@db/m', 'state-key': '' }, /--state-key is empty/],
  ];
  for (const [values, message] of cases) {
    assert.throws(() => stateChoice(values, 'mirror'), (e: Error) => message.test(e.message) && !e.message.includes('secret'), JSON.stringify(values));
  }
});

void test('redactedUrl drops the password and the query, keeps user, host, port and database', () => {
  assert.equal(redactedUrl('postgres://rs:s3cr%40t@db.example.org:5433/mirrors?sslmode=require&password=x'), 'postgres://rs@db.example.org:5433/mirrors');
  assert.equal(redactedUrl('postgres://rs:secret@/m'), 'postgres://…@/m');
});
