import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hasSpaceSeparator, normalizeW3CDatetime, parseW3CDatetime } from './w3c-datetime.js';

test('a space between date and time: read as T leniently, refused strictly', () => {
  const spaced = parseW3CDatetime('2020-03-18 10:12:00Z', true);
  assert.deepEqual(spaced, parseW3CDatetime('2020-03-18T10:12:00Z'));
  assert.equal(spaced?.ms, Date.UTC(2020, 2, 18, 10, 12));
  assert.equal(parseW3CDatetime('2020-03-18 10:12:00Z'), undefined);
  // CORE also leaves the zone off: both tolerances at once, read as UTC
  assert.deepEqual(parseW3CDatetime('2020-06-05 03:15:16.563252', true), { ms: Date.UTC(2020, 5, 5, 3, 15, 16, 563), granularity: 'fraction', zoned: false });
  assert.equal(parseW3CDatetime('2020-03-18 10:12+01:00', true)?.ms, Date.UTC(2020, 2, 18, 9, 12));
  assert.equal(normalizeW3CDatetime(' 2020-03-18 10:12:00Z ', true), '2020-03-18T10:12:00Z');
});

test('only one space, only where the T goes', () => {
  for (const bad of ['2020-03-18  10:12:00Z', '2020-03 -18T10:12:00Z', '2020-03-18_10:12:00Z', '2020-03-18 10:12:00 Z']) {
    assert.equal(parseW3CDatetime(bad, true), undefined, bad);
  }
});

test('hasSpaceSeparator tells the lenient reading from a T', () => {
  assert.equal(hasSpaceSeparator('2020-03-18 10:12:00Z'), true);
  assert.equal(hasSpaceSeparator('  2020-03-18 10:12:00Z'), true);
  assert.equal(hasSpaceSeparator('2020-03-18T10:12:00Z'), false);
  assert.equal(hasSpaceSeparator('2020-03-18'), false);
  assert.equal(hasSpaceSeparator('2020-03-18 '), false);
});
