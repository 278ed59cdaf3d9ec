import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isResourceSyncError } from './errors.js';
import { base32, cdxTimestamp, formatWarcHeader, parseWarcDigest, parseWarcHeader, surtKey, warcDate } from './warc.js';

void test('base32 is RFC 4648 (its test vectors), and a sha1 is 32 characters', () => {
  const vectors: Array<[string, string]> = [['', ''], ['f', 'MY======'], ['fo', 'MZXQ===='], ['foo', 'MZXW6==='], ['foob', 'MZXW6YQ='], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI======']];
  for (const [input, out] of vectors) assert.equal(base32(Buffer.from(input)), out, input);
  assert.equal(base32(createHash('sha1').update('').digest()), '3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ');
});

void test('digest fields: sha1 base32 (as web archives write), hex, sha256, and what is not a digest', () => {
  const empty = createHash('sha1').update('').digest('hex');
  assert.deepEqual(parseWarcDigest('sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ'), { algorithm: 'sha1', hex: empty });
  assert.deepEqual(parseWarcDigest(`sha1:${empty}`), { algorithm: 'sha1', hex: empty });
  const s256 = createHash('sha256').update('x').digest();
  assert.deepEqual(parseWarcDigest(`sha-256:${base32(s256)}`), { algorithm: 'sha256', hex: s256.toString('hex') });
  for (const bad of [undefined, 'sha1', 'crc32:1234', 'sha1:tooshort', 'sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBY1']) assert.equal(parseWarcDigest(bad), undefined, String(bad));
});

void test('record headers: written with CRLF, read back (folded lines too); forged fields refused', () => {
  const text = formatWarcHeader([
    ['WARC-Type', 'resource'],
    ['Content-Length', '5'],
  ]);
  assert.equal(text, 'WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 5\r\n\r\n');
  const h = parseWarcHeader('WARC/1.0\r\nWARC-Type: response\r\nX-Long: a\r\n  b\r\nContent-Length: 7');
  assert.equal(h.version, 'WARC/1.0');
  assert.equal(h.fields.get('warc-type'), 'response');
  assert.equal(h.fields.get('x-long'), 'a b');
  const refused = (f: () => unknown): void => assert.throws(f, (e) => isResourceSyncError(e, 'RS_WARC'));
  refused(() => formatWarcHeader([['WARC-Target-URI', 'http://x/\r\nWARC-Type: revisit']]));
  refused(() => formatWarcHeader([['Bad Name', 'x']]));
  refused(() => parseWarcHeader('HTTP/1.1 200 OK\r\nA: b'));
  refused(() => parseWarcHeader('WARC/1.1\r\nno colon here'));
});

void test('dates, CDXJ timestamps and SURT keys as pywb writes them', () => {
  assert.equal(warcDate(Date.UTC(2026, 0, 2, 3, 4, 5)), '2026-01-02T03:04:05Z');
  assert.equal(warcDate(Date.UTC(2026, 0, 2, 3, 4, 5, 120)), '2026-01-02T03:04:05.120Z');
  assert.equal(cdxTimestamp('2026-01-02T03:04:05.120Z'), '20260102030405');
  assert.equal(surtKey('https://www.Example.com/a/B?z=1&a=2#x'), 'com,example)/a/b?a=2&z=1');
  assert.equal(surtKey('http://127.0.0.1:8080/x/y.txt'), '1,0,0,127:8080)/x/y.txt');
  assert.equal(surtKey('http://example.com/'), 'com,example)/');
});
