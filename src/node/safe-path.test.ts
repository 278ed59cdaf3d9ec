import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { safeJoin, safeRelativePath } from './safe-path.js';
import { isResourceSyncError } from '../core/errors.js';

const refused = (fn: () => unknown): void => {
  assert.throws(fn, (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH'));
};

void test('safeRelativePath keeps plain and unusual but safe paths as they are', () => {
  for (const p of ['a', 'a/b.txt', 'small/d0/f0.txt', 'a-b_c~d/e.f.g', 'x/.well-known/y', 'a/café menu.txt', 'a/b..c', 'a/...x', 'ü/€']) {
    assert.equal(safeRelativePath(p), p);
  }
  assert.equal(safeRelativePath('/a/b.txt'), 'a/b.txt', 'a leading slash (manifest paths) is dropped');
});

void test('safeRelativePath refuses every way out of the destination and the state folder', () => {
  const bad = ['', '/', '..', '.', 'a/../b', 'a/./b', 'a//b', 'a/', '../a', 'a/..', 'a\\b', 'C:/x', 'c:x', 'a/\u0000b', 'a/b\u001f', 'x\u007f',
    '.resourcesync/state.sqlite', 'a/.resourcesync-tmp/x', '.resourcesync'];
  for (const p of bad) refused(() => safeRelativePath(p));
});

void test('safeJoin gives what path.join gives for safe paths, whatever the shape of the root', () => {
  const roots = ['/tmp/mirror', '/tmp/mirror/', '/tmp/./mirror', '/tmp/x/../mirror', 'rel/dir', './rel', 'rel/', '/', '.', ''];
  const rels = ['a.txt', 'a/b/c.txt', 'x/.well-known/y', 'café/b'];
  for (const root of roots) {
    for (const rel of rels) assert.equal(safeJoin(root, rel), join(root, ...rel.split('/')), `${root} + ${rel}`);
  }
});

void test('safeJoin refuses what safeRelativePath refuses', () => {
  for (const p of ['../etc/passwd', 'a/../../b', '/..', 'a\\..\\b', '.resourcesync/tmp/x', 'a//b']) refused(() => safeJoin('/tmp/mirror', p));
});
