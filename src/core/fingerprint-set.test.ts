import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FingerprintSet } from './fingerprint-set.js';

void test('fingerprint set: a repeated string is seen, distinct ones are not, whatever their characters', () => {
  const set = new FingerprintSet({ capacity: 2000 });
  const locs = Array.from({ length: 1000 }, (_, i) => `http://example.com/dataset1/resources/item-${i}.html`);
  for (const loc of locs) assert.equal(set.seen(loc), false, loc);
  assert.equal(set.size, 1000);
  for (const loc of locs) assert.equal(set.seen(loc), true, `${loc} again`);
  // a slice of a larger string is the same string; odd lengths, non-ASCII and astral characters, the empty string
  const text = `<loc>${locs[7]}</loc>`;
  assert.equal(set.seen(text.slice(5, -6)), true);
  for (const loc of ['', 'a', 'http://example.com/é', 'http://example.com/😀', 'http://example.com/😀x']) {
    assert.equal(set.has(loc), false, JSON.stringify(loc));
    assert.equal(set.seen(loc), false, JSON.stringify(loc));
    assert.equal(set.has(loc), true, JSON.stringify(loc));
    assert.equal(set.seen(loc), true, JSON.stringify(loc));
  }
  assert.equal(set.seen('http://example.com/E'), false, 'case matters');
  set.add('added');
  assert.equal(set.has('added'), true);
});

void test('fingerprint set: beyond the capacity, later strings are looked up but not added', () => {
  const set = new FingerprintSet({ capacity: 3 });
  for (const s of ['a', 'b', 'c']) assert.equal(set.seen(s), false);
  assert.equal(set.seen('d'), false);
  assert.equal(set.seen('d'), false, 'the fourth was not added');
  assert.equal(set.has('d'), false);
  assert.equal(set.seen('b'), true, 'the first three still are');
  assert.equal(set.size, 3);
  const none = new FingerprintSet({ capacity: 0 });
  assert.equal(none.seen('a'), false);
  assert.equal(none.seen('a'), false);
});

void test('fingerprint set: without a capacity it grows, and keeps everything it held', () => {
  const set = new FingerprintSet();
  const n = 100_000; // the table starts at 1,024 slots: several doublings
  for (let i = 0; i < n; i++) assert.equal(set.seen(`a/d${i % 500}/r${i}.txt`), false);
  assert.equal(set.size, n);
  for (let i = 0; i < n; i += 997) assert.equal(set.has(`a/d${i % 500}/r${i}.txt`), true);
  assert.equal(set.has('a/d0/r100000.txt'), false);
  let found = 0;
  for (let i = n; i < 2 * n; i++) if (set.has(`a/d${i % 500}/r${i}.txt`)) found++;
  assert.equal(found, 0, 'no false positive among 100,000 others');
});
