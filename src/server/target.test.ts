import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTarget } from './target.js';

void test('parseTarget decodes segments and drops the query', () => {
  assert.deepEqual(parseTarget('/a%20b/c%C3%A9.txt?x=1#f'), { ok: true, segments: ['a b', 'cé.txt'], directory: false });
  assert.deepEqual(parseTarget('/'), { ok: true, segments: [], directory: true });
  assert.deepEqual(parseTarget('/dir/'), { ok: true, segments: ['dir'], directory: true });
  assert.deepEqual(parseTarget('http://example.org/x/y'), { ok: true, segments: ['x', 'y'], directory: false });
  assert.deepEqual(parseTarget('/a+b/%2B'), { ok: true, segments: ['a+b', '+'], directory: false });
});

void test('parseTarget refuses traversal and smuggled separators', () => {
  const bad = [
    '/../etc/passwd',
    '/a/../../etc/passwd',
    '/%2e%2e/etc/passwd',
    '/%2E%2E/x',
    '/.%2e/x',
    '/a/./b',
    '/a%2f..%2f..%2fetc%2fpasswd',
    '/a%2F..',
    '/a%5c..%5cb',
    '/a\\..\\b',
    '/a%00.txt',
    '/a%0a.txt',
    '/a\u0000b',
    '/a//b',
    '/%zz',
    '/%C3',
    '*',
    'etc/passwd',
  ];
  for (const t of bad) assert.equal(parseTarget(t).ok, false, t);
});
