import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { isResourceSyncError } from '../core/errors.js';
import { tempDir } from '../../test/helpers/tmp.js';
import {
  ChangeSimulator,
  applyChange,
  changeDigest,
  simulatedPath,
  type SimulatedChange,
  type SimulatorOptions,
} from './simulator.js';

const OPTIONS: SimulatorOptions = { resources: 20, mix: [1, 2, 1], size: 100, seed: 42 };

function run(
  options: SimulatorOptions,
  n: number,
): Array<{ seq: number; change: string; path: string; md5: string | undefined }> {
  const sim = new ChangeSimulator(options);
  for (const r of sim.initial()) assert.equal(r.bytes.length, options.size);
  const out = [];
  for (let i = 0; i < n; i++) {
    const c = sim.next();
    out.push({ seq: c.seq, change: c.change, path: c.path, md5: changeDigest(c) });
  }
  return out;
}

void test('the same options give the same changes with the same bytes; another seed gives others', () => {
  const a = run(OPTIONS, 200);
  assert.deepEqual(run(OPTIONS, 200), a);
  assert.notDeepEqual(run({ ...OPTIONS, seed: 43 }, 200), a);
  assert.deepEqual(
    a.map((c) => c.seq),
    a.map((_, i) => i + 1),
  );
  const kinds = new Map<string, number>();
  for (const c of a) kinds.set(c.change, (kinds.get(c.change) ?? 0) + 1);
  // weights 1:2:1 over 200 draws: each kind occurs, updates most
  assert.ok((kinds.get('created') ?? 0) > 20 && (kinds.get('deleted') ?? 0) > 20, JSON.stringify([...kinds]));
  assert.ok((kinds.get('updated') ?? 0) > (kinds.get('created') ?? 0), JSON.stringify([...kinds]));
});

void test('changes are consistent: updates and deletions touch live resources, deleted ones never come back', () => {
  const sim = new ChangeSimulator(OPTIONS);
  const live = new Set<string>();
  for (const r of sim.initial()) live.add(r.path);
  const gone = new Set<string>();
  for (let i = 0; i < 500; i++) {
    const c = sim.next();
    if (c.change === 'created') {
      assert.ok(!live.has(c.path) && !gone.has(c.path), c.path);
      live.add(c.path);
    } else {
      assert.ok(live.has(c.path), `${c.change} of ${c.path}`);
      if (c.change === 'deleted') {
        live.delete(c.path);
        gone.add(c.path);
        assert.equal(c.bytes, undefined);
      } else assert.equal(c.bytes?.length, OPTIONS.size);
    }
  }
  assert.equal(sim.resources, live.size);
  assert.equal(sim.changes, 500);
});

void test('deletions only: once nothing is left, a deletion becomes a creation', () => {
  const sim = new ChangeSimulator({ resources: 2, mix: [0, 0, 1], size: 10, seed: 1 });
  assert.equal([...sim.initial()].length, 2);
  const kinds = [sim.next(), sim.next(), sim.next(), sim.next()].map((c) => c.change);
  assert.deepEqual(kinds, ['deleted', 'deleted', 'created', 'deleted']);
});

void test('an update gives new bytes; paths spread over folders of 1,000', () => {
  assert.equal(simulatedPath(7), 'd000/r000007.txt');
  assert.equal(simulatedPath(12_345), 'd012/r012345.txt');
  const sim = new ChangeSimulator({ resources: 1, mix: [0, 1, 0], size: 64, seed: 9 });
  const [first] = [...sim.initial()];
  const u = sim.next();
  assert.equal(u.path, first!.path);
  assert.notDeepEqual(u.bytes, first!.bytes);
});

void test('bad options are RS_INVALID_ARGUMENT', () => {
  const bad: SimulatorOptions[] = [
    { ...OPTIONS, resources: -1 },
    { ...OPTIONS, resources: 1.5 },
    { ...OPTIONS, size: -3 },
    { ...OPTIONS, mix: [0, 0, 0] },
    { ...OPTIONS, mix: [1, -1, 1] },
    { ...OPTIONS, seed: 2 ** 32 },
  ];
  for (const options of bad)
    assert.throws(
      () => new ChangeSimulator(options),
      (e) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'),
      JSON.stringify(options),
    );
  const sim = new ChangeSimulator(OPTIONS);
  sim.next();
  assert.throws(
    () => [...sim.initial()],
    (e) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'),
  );
});

async function tree(dir: string, prefix = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) for (const [k, v] of await tree(join(dir, e.name), rel)) out.set(k, v);
    else
      out.set(
        rel,
        createHash('md5')
          .update(await readFile(join(dir, e.name)))
          .digest('hex'),
      );
  }
  return out;
}

void test('populate and applyChange leave exactly the live resources, no temporary file', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const sim = new ChangeSimulator(OPTIONS);
    await sim.populate(dir);
    const expected = new Map<string, string>();
    const mirror = new ChangeSimulator(OPTIONS);
    for (const r of mirror.initial()) expected.set(r.path, createHash('md5').update(r.bytes).digest('hex'));
    for (let i = 0; i < 100; i++) {
      const c: SimulatedChange = sim.next();
      await applyChange(dir, c);
      if (c.bytes === undefined) expected.delete(c.path);
      else expected.set(c.path, changeDigest(c)!);
    }
    assert.deepEqual(await tree(dir), expected);
    assert.ok((await stat(join(dir, 'd000'))).isDirectory());
  } finally {
    await cleanup();
  }
});
