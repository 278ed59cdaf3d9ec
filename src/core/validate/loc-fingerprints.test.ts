import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LocFingerprints } from './loc-fingerprints.js';

void test('loc fingerprints: a repeated loc is seen, distinct ones are not, whatever their characters', () => {
  const set = new LocFingerprints(2000);
  const locs = Array.from({ length: 1000 }, (_, i) => `http://example.com/dataset1/resources/item-${i}.html`);
  for (const loc of locs) assert.equal(set.seen(loc), false, loc);
  assert.equal(set.size, 1000);
  for (const loc of locs) assert.equal(set.seen(loc), true, `${loc} again`);
  // a slice of a larger string is the same loc; odd lengths, non-ASCII and astral characters, the empty string
  const text = `<loc>${locs[7]}</loc>`;
  assert.equal(set.seen(text.slice(5, -6)), true);
  for (const loc of ['', 'a', 'http://example.com/é', 'http://example.com/😀', 'http://example.com/😀x']) {
    assert.equal(set.seen(loc), false, JSON.stringify(loc));
    assert.equal(set.seen(loc), true, JSON.stringify(loc));
  }
  assert.equal(set.seen('http://example.com/E'), false, 'case matters');
});

void test('loc fingerprints: beyond the capacity, later locs are checked against the first ones but not remembered', () => {
  const set = new LocFingerprints(3);
  for (const loc of ['a', 'b', 'c']) assert.equal(set.seen(loc), false);
  assert.equal(set.seen('d'), false);
  assert.equal(set.seen('d'), false, 'the fourth was not remembered');
  assert.equal(set.seen('b'), true, 'the first three still are');
  assert.equal(set.size, 3);
  const none = new LocFingerprints(0);
  assert.equal(none.seen('a'), false);
  assert.equal(none.seen('a'), false);
});
