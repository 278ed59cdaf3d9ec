import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SpillingSet } from './spilling-set.js';
import { isResourceSyncError } from '../core/errors.js';

const url = (i: number): string => `http://example.com/r/${i}.txt`;

/** A temporary folder for the set's own temporary folder, removed after `f`. */
function inFolder(f: (dir: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'rs-spill-test-'));
  try {
    f(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

void test('spilling set: below the bound nothing is written; has and size as a Set would say', () => {
  inFolder((dir) => {
    const seen = new SpillingSet({ inMemory: 100, dir });
    for (let i = 0; i < 100; i++) seen.add(url(i));
    seen.add(url(5)); // again
    assert.equal(seen.size, 100);
    assert.equal(seen.spillFolder, undefined);
    assert.deepEqual(readdirSync(dir), []);
    assert.ok(seen.has(url(0)) && seen.has(url(99)));
    assert.equal(seen.has(url(100)), false);
    seen.close();
  });
});

void test('spilling set: past the bound the fingerprints go to a file; has and size stay right across spills; close removes the file', () => {
  inFolder((dir) => {
    const seen = new SpillingSet({ inMemory: 64, dir });
    const n = 1000;
    for (let i = 0; i < n; i++) seen.add(url(i));
    // duplicates of strings on disk and in memory, added again after several spills
    for (let i = 0; i < n; i += 7) seen.add(url(i));
    const folder = seen.spillFolder;
    assert.ok(folder !== undefined && folder.startsWith(dir), 'spilled into the folder given');
    assert.ok(statSync(join(folder, 'seen.sqlite')).size > 0, 'the temporary file holds the spilled fingerprints');
    assert.equal(seen.size, n);
    for (let i = 0; i < n; i++) assert.ok(seen.has(url(i)), `has ${url(i)}`);
    for (let i = n; i < 2 * n; i++) assert.equal(seen.has(url(i)), false, `not ${url(i)}`);
    seen.close();
    assert.equal(existsSync(folder), false, 'removed at close');
    assert.deepEqual(readdirSync(dir), []);
    seen.close(); // twice is harmless
    assert.throws(() => seen.add(url(0)), (err) => isResourceSyncError(err) && err.code === 'RS_INVALID_ARGUMENT');
  });
});

void test('spilling set: a folder it cannot write in is an RS_IO error, and nothing is left behind', () => {
  inFolder((dir) => {
    const notAFolder = join(dir, 'file');
    writeFileSync(notAFolder, 'x');
    const seen = new SpillingSet({ inMemory: 4, dir: notAFolder });
    for (let i = 0; i < 4; i++) seen.add(url(i));
    assert.throws(() => seen.add(url(4)), (err) => isResourceSyncError(err) && err.code === 'RS_IO');
    assert.equal(seen.spillFolder, undefined);
    assert.deepEqual(readdirSync(dir), ['file']);
    seen.close();
  });
});

void test('spilling set: a bound that is not a positive integer is refused', () => {
  for (const inMemory of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => new SpillingSet({ inMemory }), (err) => isResourceSyncError(err) && err.code === 'RS_INVALID_ARGUMENT');
  }
});
