import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareUtf8 } from '../core/utf8-order.js';
import { decodeUrlPath, normalizeBaseUrl, pathToUrl, resolveResource, setBaseUrl, urlToPath } from './url-path.js';
import { mediaType } from '../core/media-type.js';

const BASE = 'http://example.com/data/';

void test('pathToUrl percent-encodes spaces, non-ASCII and reserved characters, and urlToPath inverts it', () => {
  const cases: [string, string][] = [
    ['a.txt', 'a.txt'],
    ['dir/a b.txt', 'dir/a%20b.txt'],
    ['é/ü.txt', '%C3%A9/%C3%BC.txt'],
    ['x#1?.txt', 'x%231%3F.txt'],
    ['100%;a+b=c&d@e:f,g$h.txt', '100%25%3Ba%2Bb%3Dc%26d%40e%3Af%2Cg%24h.txt'],
    ['日本/😀.png', '%E6%97%A5%E6%9C%AC/%F0%9F%98%80.png'],
  ];
  for (const [path, encoded] of cases) {
    const url = pathToUrl(BASE, path);
    assert.equal(url, BASE + encoded);
    assert.equal(urlToPath(BASE, url), path);
    assert.equal(new URL(url).href, url, 'already in the WHATWG normal form');
  }
});

void test('urlToPath refuses URLs outside the base and unsafe paths', () => {
  assert.equal(urlToPath(BASE, 'http://example.com/other/a.txt'), undefined);
  for (const bad of ['', '..', 'a/../b', '%2e%2e/x', 'a%2Fb', 'a%5Cb', 'a//b', '%00', '%E0%A4%A', 'a?x', '.resourcesync/x']) {
    assert.equal(decodeUrlPath(bad), undefined, bad);
  }
});

void test('normalizeBaseUrl adds the trailing slash and refuses non-HTTP or queried URLs', () => {
  assert.equal(normalizeBaseUrl('http://example.com'), 'http://example.com/');
  assert.equal(normalizeBaseUrl('https://example.com/a/b'), 'https://example.com/a/b/');
  assert.equal(normalizeBaseUrl('ftp://example.com/'), undefined);
  assert.equal(normalizeBaseUrl('http://example.com/?q=1'), undefined);
  assert.equal(normalizeBaseUrl('not a url'), undefined);
});

void test('resolveResource maps URL paths to set and file, and refuses documents, hidden names and traversal', () => {
  const one = [{ name: 'data', dir: '/srv/data' }];
  assert.deepEqual(resolveResource(one, '/a%20b/%C3%A9.txt'), { set: one[0], path: 'a b/é.txt' });
  const two = [
    { name: 'set1', dir: '/srv/1' },
    { name: 'set2', dir: '/srv/2' },
  ];
  assert.deepEqual(resolveResource(two, '/set2/x.txt'), { set: two[1], path: 'x.txt' });
  assert.equal(setBaseUrl(BASE, 'set2', 2), `${BASE}set2/`);
  assert.equal(setBaseUrl(BASE, 'set2', 1), BASE);
  for (const bad of ['/set3/x.txt', '/set1', '/set1/', '/set1/../set2/x.txt', '/set1/%2e%2e/x', '/set1/a%2fb', '/set1/.hidden', '/.resourcesync/set1/capabilitylist.xml', '/set1/a\\b']) {
    assert.equal(resolveResource(two, bad), undefined, bad);
  }
  assert.equal(resolveResource(one, '/.well-known/resourcesync'), undefined);
  assert.equal(resolveResource(one, '/dir/.git/config'), undefined);
});

void test('compareUtf8 is the byte order of the UTF-8 encodings', () => {
  const words = ['a', 'a/b', 'a-c', 'b', 'é', 'z', '\uffff', '😀', '\ue000', 'A', 'a b', ''];
  const byBytes = [...words].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
  assert.deepEqual([...words].sort(compareUtf8), byBytes);
});

void test('mediaType reads the extension case-insensitively', () => {
  assert.equal(mediaType('a/Report.PDF'), 'application/pdf');
  assert.equal(mediaType('index.html'), 'text/html');
  assert.equal(mediaType('noext'), 'application/octet-stream');
  assert.equal(mediaType('dir.d/noext'), 'application/octet-stream');
  assert.equal(mediaType('x.unknownext'), 'application/octet-stream');
});
