import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readManifestPath } from './manifest-path.js';

test('the standard form: a leading slash, relative to the package root (§11.2)', () => {
  assert.deepEqual(readManifestPath('/resources/res1'), { name: 'resources/res1', relative: false });
  assert.deepEqual(readManifestPath('//resources/res1'), { name: 'resources/res1', relative: false });
});

test('what producers write instead: no slash (resync-build), ./ (CORE); the same name in the package', () => {
  assert.deepEqual(readManifestPath('sub/b.txt'), { name: 'sub/b.txt', relative: true });
  assert.deepEqual(readManifestPath('./sub/b.txt'), { name: 'sub/b.txt', relative: true });
  assert.deepEqual(readManifestPath('././a.txt'), { name: 'a.txt', relative: true });
  assert.deepEqual(readManifestPath('.hidden'), { name: '.hidden', relative: true });
});

test('nothing left, or climbing out of the package root: no reading', () => {
  for (const p of ['', '/', './', '.', '..', '../x', './../x', '/a/../../x', 'a/..', '/..']) {
    assert.equal(readManifestPath(p), undefined, p);
  }
});
