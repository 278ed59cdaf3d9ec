import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { removeStaleSpillFolders, SpillingSet } from './spilling-set.js';
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

/** Starts a process whose set spills into `dir`, waits until it says where, and kills it with SIGKILL. */
async function spillAndKill(dir: string): Promise<string> {
  const module = fileURLToPath(new URL('./spilling-set.js', import.meta.url));
  const code = `const { SpillingSet } = await import(${JSON.stringify(module)});
const seen = new SpillingSet({ inMemory: 1, dir: ${JSON.stringify(dir)} });
seen.add('a'); seen.add('b'); seen.add('c');
console.log(seen.spillFolder);
setInterval(() => undefined, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const deadline = Date.now() + 30_000;
  while (!out.includes('\n')) {
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`the child did not spill: '${out}'`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  const [, signal] = (await exited) as [number | null, string | null];
  assert.equal(signal, 'SIGKILL');
  return out.trim();
}

void test('spilling set: the folder of a process killed with SIGKILL is removed by a later spill once a minute old; a living one is kept', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-spill-test-'));
  try {
    const left = await spillAndKill(dir);
    assert.ok(existsSync(join(left, 'seen.sqlite')), 'a kill -9 leaves the folder behind');
    const name = left.slice(dir.length + 1);
    assert.match(name, new RegExp(`^resourcesync-seen-.+-\\d+-`), 'the name carries the host and the pid');
    // younger than a minute: kept, even though its process is dead
    const young = new SpillingSet({ inMemory: 1, dir });
    young.add('x');
    young.add('y');
    assert.ok(existsSync(left));
    // a living process's folder (this one's), a minute old, and a folder of another host: kept
    const living = young.spillFolder!;
    const otherHost = join(dir, `resourcesync-seen-elsewhere-${process.pid + 1}-abcdef`);
    mkdirSync(otherHost);
    const old = new Date(Date.now() - 120_000);
    for (const p of [left, living, otherHost]) utimesSync(p, old, old);
    const later = new SpillingSet({ inMemory: 1, dir });
    later.add('x');
    later.add('y');
    assert.equal(existsSync(left), false, 'the dead process\'s folder is removed by the later spill');
    assert.ok(existsSync(living) && existsSync(otherHost));
    assert.deepEqual(removeStaleSpillFolders(dir), [], 'nothing else to remove');
    young.close();
    later.close();
    assert.deepEqual(readdirSync(dir), [otherHost.slice(dir.length + 1)]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
