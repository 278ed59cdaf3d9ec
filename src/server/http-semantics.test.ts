import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  acceptsEncoding,
  evaluatePreconditions,
  ifRangeHolds,
  isCompressible,
  matches,
  noneMatch,
  parseRange,
} from './http-semantics.js';

void test('parseRange: satisfiable single ranges', () => {
  assert.deepEqual(parseRange('bytes=0-99', 1000), { start: 0, end: 100 });
  assert.deepEqual(parseRange('bytes=900-', 1000), { start: 900, end: 1000 });
  assert.deepEqual(parseRange('bytes=-100', 1000), { start: 900, end: 1000 });
  assert.deepEqual(parseRange('bytes=-5000', 1000), { start: 0, end: 1000 });
  assert.deepEqual(parseRange('bytes=990-5000', 1000), { start: 990, end: 1000 });
  assert.deepEqual(parseRange('Bytes = 1-1', 10), { start: 1, end: 2 });
});

void test('parseRange: unsatisfiable ranges', () => {
  assert.equal(parseRange('bytes=1000-', 1000), 'unsatisfiable');
  assert.equal(parseRange('bytes=2000-3000', 1000), 'unsatisfiable');
  assert.equal(parseRange('bytes=-0', 1000), 'unsatisfiable');
  assert.equal(parseRange('bytes=0-', 0), 'unsatisfiable');
});

void test('parseRange: invalid syntax, other units and multiple ranges are ignored', () => {
  for (const h of ['bytes=abc', 'bytes=5-2', 'items=0-1', 'bytes=', 'bytes=1', 'bytes=0-1,3-4', 'bytes=--1', '0-1']) {
    assert.equal(parseRange(h, 1000), undefined, h);
  }
  assert.equal(parseRange(undefined, 1000), undefined);
});

void test('entity-tag comparison: weak for If-None-Match, strong for If-Match', () => {
  assert.equal(noneMatch('"a"', '"a"'), false);
  assert.equal(noneMatch('W/"a"', '"a"'), false);
  assert.equal(noneMatch('"b", "a"', '"a"'), false);
  assert.equal(noneMatch('"b"', '"a"'), true);
  assert.equal(noneMatch('*', '"a"'), false);
  assert.equal(matches('"a"', '"a"'), true);
  assert.equal(matches('W/"a"', '"a"'), false);
  assert.equal(matches('*', '"a"'), true);
});

void test('evaluatePreconditions follows RFC 9110 §13.2.2 order', () => {
  const etag = '"x"';
  const t = Date.UTC(2024, 0, 2, 3, 4, 5) / 1000;
  const lm = new Date(t * 1000).toUTCString();
  assert.equal(evaluatePreconditions({}, etag, t), 'proceed');
  assert.equal(evaluatePreconditions({ 'if-none-match': '"x"' }, etag, t), 'not-modified');
  assert.equal(evaluatePreconditions({ 'if-none-match': '"y"', 'if-modified-since': lm }, etag, t), 'proceed');
  assert.equal(evaluatePreconditions({ 'if-modified-since': lm }, etag, t), 'not-modified');
  assert.equal(evaluatePreconditions({ 'if-modified-since': new Date((t - 1) * 1000).toUTCString() }, etag, t), 'proceed');
  assert.equal(evaluatePreconditions({ 'if-modified-since': 'not a date' }, etag, t), 'proceed');
  assert.equal(evaluatePreconditions({ 'if-match': '"y"' }, etag, t), 'failed');
  assert.equal(evaluatePreconditions({ 'if-unmodified-since': new Date((t - 10) * 1000).toUTCString() }, etag, t), 'failed');
});

void test('ifRangeHolds: strong entity-tag or exact date', () => {
  assert.equal(ifRangeHolds(undefined, '"a"', 'd'), true);
  assert.equal(ifRangeHolds('"a"', '"a"', 'd'), true);
  assert.equal(ifRangeHolds('"b"', '"a"', 'd'), false);
  assert.equal(ifRangeHolds('W/"a"', '"a"', 'd'), false);
  const lm = 'Tue, 02 Jan 2024 03:04:05 GMT';
  assert.equal(ifRangeHolds(lm, '"a"', lm), true);
  assert.equal(ifRangeHolds('Tue, 02 Jan 2024 03:04:06 GMT', '"a"', lm), false);
});

void test('acceptsEncoding honours q-values and the wildcard', () => {
  assert.equal(acceptsEncoding('gzip, deflate, br', 'gzip'), true);
  assert.equal(acceptsEncoding('gzip;q=0', 'gzip'), false);
  assert.equal(acceptsEncoding('br;q=1, gzip;q=0.5', 'gzip'), true);
  assert.equal(acceptsEncoding('*', 'gzip'), true);
  assert.equal(acceptsEncoding('*;q=0', 'gzip'), false);
  assert.equal(acceptsEncoding('identity', 'gzip'), false);
  assert.equal(acceptsEncoding(undefined, 'gzip'), false);
  assert.equal(acceptsEncoding('x-gzip', 'gzip'), true);
});

void test('isCompressible: text and XML yes, images and archives no', () => {
  assert.equal(isCompressible('text/html; charset=utf-8'), true);
  assert.equal(isCompressible('application/xml'), true);
  assert.equal(isCompressible('application/atom+xml'), true);
  assert.equal(isCompressible('image/png'), false);
  assert.equal(isCompressible('application/zip'), false);
});
