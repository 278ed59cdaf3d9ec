/**
 * `resourcesync demo` (the README's main job): run as users run it, from a fresh working directory; the mirror
 * it makes must be byte for byte the published collection after a baseline and an incremental sync.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/paths.js';
import { tempDir } from './helpers/tmp.js';
import { listFiles } from '../src/destination/audit.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

void test('demo: publish the sample collection, sync, audit, change, sync again, audit; exit 0', async () => {
  const { dir, cleanup } = await tempDir('rs-demo-');
  try {
    const r = await new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [MAIN, 'demo'], { cwd: dir, timeout: 90_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
    });
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Source: 36 resources of examples\/sample-collection published at http:\/\/127\.0\.0\.1:\d+/);
    assert.match(r.stdout, /baseline sync: 36 created, 0 updated, 0 deleted, 0 unchanged, 0 failed/);
    assert.match(r.stdout, /incremental sync: 1 created, 1 updated, 1 deleted, 0 unchanged, 0 failed/);
    assert.equal(r.stdout.match(/audit: in sync: 36 resources on offer, 36 verified unchanged, 0 missing, 0 changed, 0 extra/g)?.length, 2);
    const source = join(dir, '.demo', 'source', 'sample');
    const mirror = join(dir, '.demo', 'mirror');
    const files = listFiles(source).sort();
    assert.deepEqual(listFiles(mirror).sort(), files);
    assert.ok(files.includes('unicode/naïve résumé.txt') && files.includes('with space/a file with spaces.txt') && files.includes('misc/100% done.txt'));
    for (const f of files) assert.deepEqual(await readFile(join(mirror, f)), await readFile(join(source, f)), f);
  } finally {
    await cleanup();
  }
});
