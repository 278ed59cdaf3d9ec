import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createMapper } from './mapper.js';
import { isResourceSyncError } from '../core/errors.js';

void test('maps URLs under the base to percent-decoded relative paths', () => {
  const m = createMapper({ base: 'http://Example.com:80/start/capabilitylist.xml' });
  assert.equal(m.toPath('http://example.com/start/a/b.txt'), 'a/b.txt');
  assert.equal(m.toPath('http://example.com/start/caf%C3%A9%20menu.txt'), 'café menu.txt');
  assert.equal(m.toPath('http://example.com/start/a%2Bb.txt'), 'a+b.txt');
  assert.equal(m.toUrl('café menu.txt'), 'http://example.com/start/caf%C3%A9%20menu.txt');
});

void test('refuses URLs that would leave the destination or name no file', () => {
  const m = createMapper({ base: 'http://example.com/' });
  const unsafe = (u: string) => assert.throws(() => m.toPath(u), (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH'), u);
  unsafe('http://example.com/a/..%2F..%2Fetc/passwd');
  unsafe('http://example.com/a%5C..%5C..%5Cx');
  unsafe('http://example.com/%2e%2e/x%00');
  unsafe('http://example.com/dir/');
  unsafe('http://example.com/a?b=c');
  unsafe('http://example.com/.resourcesync/state.sqlite');
  unsafe('http://example.com/%E0%A4%A');
  // dot segments are resolved by the URL parser and stay under the base
  assert.equal(m.toPath('http://example.com/a/../../../x'), 'x');
  assert.throws(() => m.toPath('http://other.example/x'), (e: unknown) => isResourceSyncError(e, 'RS_AUTHORITY'));
  assert.throws(() => m.toPath('https://example.com/x'), (e: unknown) => isResourceSyncError(e, 'RS_AUTHORITY'));
  assert.equal(m.tryPath('http://other.example/x'), undefined);
});

void test('several mappings: the longest prefix wins, directories are checked', () => {
  const m = createMapper({
    base: 'http://example.com/',
    maps: [
      { url: 'http://example.com/data/', dir: 'd' },
      { url: 'http://mirror.example/x/', dir: 'm/x' },
    ],
  });
  assert.equal(m.toPath('http://example.com/data/1.txt'), 'd/1.txt');
  assert.equal(m.toPath('http://example.com/other/1.txt'), 'other/1.txt');
  assert.equal(m.toPath('http://mirror.example/x/y/z'), 'm/x/y/z');
  assert.equal(m.toUrl('d/1.txt'), 'http://example.com/data/1.txt');
  assert.throws(() => createMapper({ maps: [{ url: 'http://a/', dir: '../up' }] }), (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH'));
});
