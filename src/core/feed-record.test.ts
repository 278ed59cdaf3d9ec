import { test } from 'node:test';
import assert from 'node:assert/strict';
import { feedRecord, parseFeedLine } from './feed-record.js';
import { ResourceSyncError } from './errors.js';

const fails = (fn: () => unknown, line: number, field: string, message: RegExp): void => {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ResourceSyncError);
    assert.equal(err.code, 'RS_INVALID_FEED');
    assert.deepEqual([err.data.line, err.data.field], [line, field]);
    assert.match(err.message, message);
    return true;
  });
};

void test('parseFeedLine: the spec words, separate hash fields, a deletion, other fields ignored', () => {
  const r = parseFeedLine(
    '{"loc":"https://ex.org/a%20b","lastmod":"2024-05-01T12:00:00+02:00","length":12,"hash":"MD5:5D41402ABC4B2A76B9719D911017C592","sha-256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824","type":"text/plain; charset=utf-8","x":1}',
    3,
  );
  assert.deepEqual(r, {
    loc: 'https://ex.org/a%20b',
    deleted: false,
    lastmod: Date.UTC(2024, 4, 1, 10),
    length: 12,
    type: 'text/plain; charset=utf-8',
    hashes: { md5: '5d41402abc4b2a76b9719d911017c592', 'sha-256': '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824' },
  });
  assert.deepEqual(parseFeedLine('{"loc":"http://ex.org/x","change":"deleted","length":"junk"}', 1), { loc: 'http://ex.org/x', deleted: true, hashes: {} });
  assert.deepEqual(parseFeedLine('{"loc":"http://ex.org/x","change":"updated"}', 1), { loc: 'http://ex.org/x', deleted: false, hashes: {} });
});

void test('feedRecord: a database row (Date, bigint as a string, nulls)', () => {
  const r = feedRecord({ loc: 'https://ex.org/1', lastmod: new Date(Date.UTC(2024, 0, 2)), length: '9007199254740991', hash: null, type: null }, 5);
  assert.deepEqual(r, { loc: 'https://ex.org/1', deleted: false, lastmod: Date.UTC(2024, 0, 2), length: 9007199254740991, hashes: {} });
});

void test('bad lines name the line and the field', () => {
  fails(() => parseFeedLine('{"loc":', 7), 7, '', /^line 7: not JSON/);
  fails(() => parseFeedLine('[1]', 2), 2, '', /not a JSON object/);
  fails(() => parseFeedLine('{}', 1), 1, 'loc', /line 1: loc: is missing/);
  for (const loc of ['/a', 'ftp://ex.org/a', 'https://user:pw@ex.org/a', 'https://ex.org/a#f', ' https://ex.org/a', 'https://ex.org/a\tb', `https://ex.org/${'a'.repeat(2100)}`])
    fails(() => feedRecord({ loc }, 4), 4, 'loc', /^line 4: loc: /);
  fails(() => feedRecord({ loc: 42 }, 1), 1, 'loc', /is not a string/);
  for (const lastmod of ['2024-05-01T12:00:00', '2024-13-01', 'yesterday', 1714560000])
    fails(() => feedRecord({ loc: 'http://ex.org/a', lastmod }, 1), 1, 'lastmod', /lastmod/);
  for (const length of [-1, 1.5, '12a', 'x', Number.MAX_SAFE_INTEGER + 2]) fails(() => feedRecord({ loc: 'http://ex.org/a', length }, 1), 1, 'length', /length/);
  for (const hash of ['md5', 'crc32:1234', 'md5:abc', 'md5:5d41402abc4b2a76b9719d911017c592 md5:5d41402abc4b2a76b9719d911017c592', 'sha-1:zz'])
    fails(() => feedRecord({ loc: 'http://ex.org/a', hash }, 1), 1, 'hash', /hash/);
  fails(() => feedRecord({ loc: 'http://ex.org/a', md5: 'abc' }, 1), 1, 'md5', /md5/);
  fails(() => feedRecord({ loc: 'http://ex.org/a', type: 'text' }, 1), 1, 'type', /not a media type/);
  fails(() => feedRecord({ loc: 'http://ex.org/a', change: 'moved' }, 1), 1, 'change', /not created, updated or deleted/);
});
