import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isResourceSyncError } from '../core/errors.js';
import { GroupCommit } from './group-commit.js';
import { SmallFileThread } from './small-file-thread.js';
import type { SmallFile } from './durability.js';
import { tempDir } from '../../test/helpers/tmp.js';

function file(root: string, i: number, extra: Partial<SmallFile> = {}): SmallFile {
  const tmp = join(root, '.tmp', `${i}.tmp`);
  return { tmp, data: Buffer.from(`file ${i}\n`), mtimeMs: 1_357_131_600_000 + i * 1000, finalPath: join(root, `d${i % 7}`, `f${i}.txt`), realRoot: root, root, ...extra };
}

void test('SmallFileThread: many small files written and renamed on the thread, in place with their bytes and times', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    for (const [name, thread] of [
      ['rename', new SmallFileThread()],
      ['group', new SmallFileThread(new GroupCommit({ gatherMs: 2, idleMs: 1 }))],
    ] as const) {
      const dir = join(root, name);
      mkdirSync(join(dir, '.tmp'), { recursive: true });
      const files = Array.from({ length: 500 }, (_, i) => file(dir, i));
      await Promise.all(files.map((f) => thread.writeSmall(f)));
      await thread.settle();
      for (const f of files) {
        assert.deepEqual(readFileSync(f.finalPath), Buffer.from(f.data), f.finalPath);
        assert.equal(statSync(f.finalPath).mtimeMs, f.mtimeMs);
      }
      assert.deepEqual(readdirSync(join(dir, '.tmp')), [], `${name}: every temporary file renamed`);
      await thread.close();
      // closed: later files are written on the caller's thread
      const late = file(dir, 1000);
      await thread.writeSmall(late);
      assert.equal(readFileSync(late.finalPath, 'utf8'), 'file 1000\n');
    }
  } finally {
    await tmp.cleanup();
  }
});

void test('SmallFileThread: errors come back with their codes; a thread that stops leaves its files to the caller', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    const thread = new SmallFileThread();
    // the temporary file exists already: the file system's error, with its code
    const first = file(root, 1);
    await thread.writeSmall(first);
    await assert.rejects(thread.writeSmall({ ...first, tmp: first.finalPath }), (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable);
    // a destination whose real path is elsewhere: the confinement check on the thread
    await assert.rejects(thread.writeSmall(file(root, 2, { realRoot: join(root, 'elsewhere') })), (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH') && e.recoverable);
    await thread.close();

    // a thread that exits at once: every write is made here, none is lost
    const dying = new SmallFileThread(undefined, new URL('data:text/javascript,process.exit(3)'));
    const files = Array.from({ length: 50 }, (_, i) => file(root, 100 + i));
    await Promise.all(files.map((f) => dying.writeSmall(f)));
    for (const f of files) assert.equal(readFileSync(f.finalPath, 'utf8'), `file ${f.finalPath.match(/f(\d+)\.txt$/)![1]}\n`);
    await dying.close();
  } finally {
    await tmp.cleanup();
  }
});

void test('SmallFileThread: an idle thread does not keep the process alive, and a pending write is not lost at exit', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    const module = pathToFileURL(join(import.meta.dirname, 'small-file-thread.js')).href;
    // never closed: the process must still end, after the write
    const script = `import { SmallFileThread } from ${JSON.stringify(module)};
      const t = new SmallFileThread();
      void t.writeSmall({ tmp: ${JSON.stringify(join(root, '.tmp', 'x.tmp'))}, data: Buffer.from('kept'), finalPath: ${JSON.stringify(join(root, 'x.txt'))}, realRoot: ${JSON.stringify(root)}, root: ${JSON.stringify(root)} });`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 20_000, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(join(root, 'x.txt')));
    assert.equal(readFileSync(join(root, 'x.txt'), 'utf8'), 'kept');
  } finally {
    await tmp.cleanup();
  }
});
