import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compareSorted } from './compare.js';

void test('compareSorted classifies created, updated, deleted and unchanged paths', async () => {
  const now = [
    { path: 'a', v: 1 },
    { path: 'b', v: 2 },
    { path: 'd', v: 4 },
    { path: 'é', v: 5 },
  ];
  const before = [
    { path: 'b', v: 2 },
    { path: 'c', v: 3 },
    { path: 'd', v: 0 },
    { path: 'z', v: 9 },
  ];
  const out: string[] = [];
  for await (const c of compareSorted(now, before, (x, y) => x.v === y.v)) out.push(`${c.kind}:${c.path}`);
  assert.deepEqual(out, ['created:a', 'unchanged:b', 'deleted:c', 'updated:d', 'deleted:z', 'created:é']);
});

void test('compareSorted handles empty sides and async input, and refuses unsorted input', async () => {
  async function* gen(paths: string[]) {
    for (const path of paths) {
      await Promise.resolve();
      yield { path };
    }
  }
  const kinds: string[] = [];
  for await (const c of compareSorted(gen(['x', 'y']), [], () => true)) kinds.push(c.kind);
  assert.deepEqual(kinds, ['created', 'created']);
  kinds.length = 0;
  for await (const c of compareSorted([], gen(['x']), () => true)) kinds.push(c.kind);
  assert.deepEqual(kinds, ['deleted']);
  await assert.rejects(async () => {
    for await (const _ of compareSorted(gen(['b', 'a']), [], () => true)) void _;
  }, /not sorted/);
});
