import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isResourceSyncError } from '../core/errors.js';
import { GroupCommit } from './group-commit.js';
import { RenameOnly, type SmallFile } from './durability.js';
import { SmallFileThread } from './small-file-thread.js';
import { tempDir } from '../../test/helpers/tmp.js';

function file(root: string, i: number, extra: Partial<SmallFile> = {}): SmallFile {
  const tmp = join(root, '.tmp', `${i}.tmp`);
  return { tmp, data: Buffer.from(`file ${i}\n`), mtimeMs: 1_357_131_600_000 + i * 1000, finalPath: join(root, `d${i % 7}`, `f${i}.txt`), realRoot: root, root, ...extra };
}

void test('SmallFileThread: many small files written on the thread, renamed there by RenameOnly and by a group commit after its flush', async () => {
  const tmp = await tempDir('rs-sft-');
  const thread = new SmallFileThread();
  try {
    for (const [name, durability] of [
      ['rename', new RenameOnly({ thread })],
      ['group', new GroupCommit({ gatherMs: 2, idleMs: 1, thread })],
    ] as const) {
      const dir = join(tmp.dir, name);
      mkdirSync(join(dir, '.tmp'), { recursive: true });
      const files = Array.from({ length: 500 }, (_, i) => file(dir, i));
      await Promise.all(files.map((f) => durability.writeSmall!(f)));
      await durability.settle();
      for (const f of files) {
        assert.deepEqual(readFileSync(f.finalPath), Buffer.from(f.data), f.finalPath);
        assert.equal(statSync(f.finalPath).mtimeMs, f.mtimeMs);
      }
      assert.deepEqual(readdirSync(join(dir, '.tmp')), [], `${name}: every temporary file renamed`);
    }
    // a group commit's renames of files written elsewhere (a large file) go through the thread too
    const dir = join(tmp.dir, 'renames');
    mkdirSync(dir);
    writeFileSync(join(dir, 'a.tmp'), 'a');
    const errors = await thread.rename([
      { tmp: join(dir, 'a.tmp'), finalPath: join(dir, 'sub', 'a.txt') },
      { tmp: join(dir, 'missing.tmp'), finalPath: join(dir, 'b.txt') },
    ]);
    assert.equal(readFileSync(join(dir, 'sub', 'a.txt'), 'utf8'), 'a');
    assert.deepEqual([errors[0], (errors[1] as { code?: string } | undefined)?.code], [undefined, 'ENOENT']);

    await thread.close();
    // closed: later calls are made on the caller's thread
    const late = file(join(tmp.dir, 'rename'), 1000);
    await thread.write(late, true);
    assert.equal(readFileSync(late.finalPath, 'utf8'), 'file 1000\n');
  } finally {
    await thread.close();
    await tmp.cleanup();
  }
});

void test('SmallFileThread: errors come back with their codes; a thread that stops leaves its calls to the caller', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    const thread = new SmallFileThread();
    // the temporary file exists already: the file system's error, with its code
    const first = file(root, 1);
    await thread.write(first, true);
    await assert.rejects(thread.write({ ...first, tmp: first.finalPath }, true), (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable);
    // a destination whose real path is elsewhere: the confinement check on the thread
    await assert.rejects(thread.write(file(root, 2, { realRoot: join(root, 'elsewhere') }), true), (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH') && e.recoverable);
    await thread.close();

    // a thread that exits at once: every call is made here, none is lost
    const dying = new SmallFileThread(new URL('data:text/javascript,process.exit(3)'));
    const files = Array.from({ length: 50 }, (_, i) => file(root, 100 + i));
    await Promise.all(files.map((f) => dying.write(f, true)));
    for (const [i, f] of files.entries()) assert.equal(readFileSync(f.finalPath, 'utf8'), `file ${100 + i}\n`);
    await dying.close();
  } finally {
    await tmp.cleanup();
  }
});

void test('SmallFileThread: bodies that outrun the thread are written on the caller\'s thread, so that at most 16 MiB wait in memory', async () => {
  const tmp = await tempDir('rs-sft-');
  const thread = new SmallFileThread();
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    const big = (i: number): SmallFile => file(root, i, { data: Buffer.alloc(256 * 1024, i) });
    const files = Array.from({ length: 160 }, (_, i) => big(i)); // 40 MiB at once
    const writes = files.map((f) => thread.write(f, true));
    assert.ok(thread.heldBytes > 0 && thread.heldBytes <= 16 * 1024 * 1024, String(thread.heldBytes));
    await Promise.all(writes);
    assert.equal(thread.heldBytes, 0);
    for (const [i, f] of files.entries()) assert.deepEqual(readFileSync(f.finalPath), Buffer.alloc(256 * 1024, i), f.finalPath);
  } finally {
    await thread.close();
    await tmp.cleanup();
  }
});

void test('SmallFileThread: a rename the thread made before it stopped unanswered is not failed (nor made again)', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const dir = tmp.dir;
    writeFileSync(join(dir, 'a.tmp'), 'a');
    writeFileSync(join(dir, 'b.tmp'), 'b');
    // a thread that makes the calls of its first batch, then exits without answering
    const module = pathToFileURL(join(import.meta.dirname, 'small-file-thread.js')).href;
    const script = `import { parentPort } from 'node:worker_threads'; import { runCall, unpackBatch } from ${JSON.stringify(module)};
parentPort.on('message', (b) => { for (const c of unpackBatch(b)) runCall(c); process.exit(0); });`;
    const thread = new SmallFileThread(new URL(`data:text/javascript,${encodeURIComponent(script)}`));
    const errors = await thread.rename([
      { tmp: join(dir, 'a.tmp'), finalPath: join(dir, 'a.txt') },
      { tmp: join(dir, 'b.tmp'), finalPath: join(dir, 'sub', 'b.txt') },
    ]);
    assert.deepEqual(errors, [undefined, undefined]);
    assert.equal(readFileSync(join(dir, 'a.txt'), 'utf8'), 'a');
    assert.equal(readFileSync(join(dir, 'sub', 'b.txt'), 'utf8'), 'b');
    assert.equal(existsSync(join(dir, 'a.tmp')), false);
    await thread.close();
  } finally {
    await tmp.cleanup();
  }
});

void test('SmallFileThread: an idle thread does not keep the process alive, and a pending call is not lost at exit', async () => {
  const tmp = await tempDir('rs-sft-');
  try {
    const root = tmp.dir;
    mkdirSync(join(root, '.tmp'));
    const module = pathToFileURL(join(import.meta.dirname, 'small-file-thread.js')).href;
    // never closed: the process must still end, after the write
    const script = `import { SmallFileThread } from ${JSON.stringify(module)};
      const t = new SmallFileThread();
      void t.write({ tmp: ${JSON.stringify(join(root, '.tmp', 'x.tmp'))}, data: Buffer.from('kept'), finalPath: ${JSON.stringify(join(root, 'x.txt'))}, realRoot: ${JSON.stringify(root)}, root: ${JSON.stringify(root)} }, true);`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { timeout: 60_000, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.ok(existsSync(join(root, 'x.txt')));
    assert.equal(readFileSync(join(root, 'x.txt'), 'utf8'), 'kept');
    // nothing asked of it: it ends with the process too
    const idle = spawnSync(process.execPath, ['--input-type=module', '-e', `import { SmallFileThread } from ${JSON.stringify(module)}; new SmallFileThread();`], { timeout: 60_000 });
    assert.equal(idle.status, 0);
  } finally {
    await tmp.cleanup();
  }
});
