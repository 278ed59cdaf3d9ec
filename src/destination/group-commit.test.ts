import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GroupCommit } from '../node/group-commit.js';
import { runPool } from './run-pool.js';
import { tempDir, writeVerified } from './verified-write.js';
import { isResourceSyncError } from '../core/errors.js';
import { fsyncEach, syncFileSystem } from '../node/sync-file-system.js';

const body = (s: string): AsyncIterable<Uint8Array> => Readable.from([Buffer.from(s)]);

void test('group commit: files appear only after the barrier that covers them, many files per barrier', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    const batches: string[][] = [];
    let open!: () => void;
    let gate = new Promise<void>((r) => (open = r));
    const group = new GroupCommit({
      maxBatch: 50,
      gatherMs: 60_000, // the batch closes when full
      idleMs: 60_000,
      barrier: async (_dir, files) => {
        batches.push([...files]);
        // every file of the batch is staged (in the temporary folder), none is in place yet
        for (const f of files) assert.ok(existsSync(f), `${f} staged`);
        await gate;
      },
    });
    let staged = 0;
    const writes = Array.from({ length: 50 }, (_, i) =>
      writeVerified({
        root,
        relPath: `d${i % 3}/f${i}.txt`,
        body: body(`file ${i}`),
        groupCommit: group,
        onStaged: () => staged++,
      }),
    );
    while (batches.length === 0) await new Promise((r) => setTimeout(r, 2));
    assert.equal(staged, 50);
    assert.equal(batches[0]!.length, 50, 'one barrier for the 50 files');
    assert.ok(!existsSync(join(root, 'd0', 'f0.txt')), 'nothing is renamed into place before the barrier');
    open();
    gate = Promise.resolve();
    const results = await Promise.all(writes);
    assert.equal(results.length, 50);
    assert.equal(await readFile(join(root, 'd1', 'f49.txt'), 'utf8'), 'file 49');
    assert.equal(group.barriers, 1);
    await group.settle();
    assert.equal(group.barriers, 2, 'settle makes the renames durable with one more barrier');
    assert.deepEqual(
      batches[1]!.sort(),
      ['d0', 'd1', 'd2'].map((d) => join(root, d)),
      'the folders that received files',
    );
    await group.settle();
    assert.equal(group.barriers, 2, 'nothing renamed since: no barrier');
    assert.deepEqual(await readdir(tempDir(root)), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('group commit: a failed barrier fails its batch, commits nothing and leaves no temporary file', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    let fail = true;
    const group = new GroupCommit({
      gatherMs: 1,
      barrier: async () => {
        if (fail) throw new Error('EIO: simulated flush failure');
      },
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) => writeVerified({ root, relPath: `f${i}.txt`, body: body('x'), groupCommit: group })),
    );
    for (const r of results) {
      assert.equal(r.status, 'rejected');
      assert.match(String(r.status === 'rejected' ? r.reason : ''), /simulated flush failure/);
    }
    assert.deepEqual(
      (await readdir(root)).filter((n) => n !== '.resourcesync'),
      [],
    );
    assert.deepEqual(await readdir(tempDir(root)), []);
    fail = false; // the queue goes on after a failure
    await writeVerified({ root, relPath: 'f4.txt', body: body('y'), groupCommit: group });
    assert.equal(await readFile(join(root, 'f4.txt'), 'utf8'), 'y');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('group commit: a verification failure never reaches the batch; a full batch does not wait for the timer', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    const sizes: number[] = [];
    const group = new GroupCommit({
      maxBatch: 4,
      gatherMs: 60_000,
      idleMs: 60_000,
      barrier: async (_d, files) => {
        sizes.push(files.length);
      },
    });
    const bad = writeVerified({
      root,
      relPath: 'bad.txt',
      body: body('abc'),
      expected: { length: 4 },
      groupCommit: group,
    });
    await assert.rejects(bad, (e: unknown) => isResourceSyncError(e, 'RS_LENGTH_MISMATCH'));
    const t0 = Date.now();
    await Promise.all(
      [1, 2, 3, 4].map((i) => writeVerified({ root, relPath: `ok${i}.txt`, body: body('ok'), groupCommit: group })),
    );
    assert.ok(Date.now() - t0 < 10_000, 'a full batch is committed at once');
    assert.deepEqual(sizes, [4]);
    assert.ok(!existsSync(join(root, 'bad.txt')));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('large bodies keep an fsync of their own: no barrier, no wait for a batch', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    let barriers = 0;
    const group = new GroupCommit({ gatherMs: 60_000, idleMs: 60_000, barrier: async () => void barriers++ });
    const data = Buffer.alloc(300 * 1024, 7);
    const r = await writeVerified({ root, relPath: 'big.bin', body: Readable.from([data]), groupCommit: group });
    assert.equal(r.length, data.length);
    assert.equal(barriers, 0);
    assert.deepEqual(await readFile(join(root, 'big.bin')), data);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('runPool: a released slot starts the next item; at most `concurrency` unreleased, `maxOutstanding` unfinished', async () => {
  let active = 0;
  let maxActive = 0;
  let outstanding = 0;
  let maxOutstanding = 0;
  const finish: (() => void)[] = [];
  const done: number[] = [];
  const pool = runPool(
    Array.from({ length: 40 }, (_, i) => i),
    3,
    async (i, release) => {
      active++;
      outstanding++;
      maxActive = Math.max(maxActive, active);
      maxOutstanding = Math.max(maxOutstanding, outstanding);
      await new Promise((r) => setTimeout(r, 1));
      active--;
      release(); // downloaded: only waiting for a commit now
      await new Promise<void>((r) => finish.push(r));
      outstanding--;
      done.push(i);
    },
    10,
  );
  while (finish.length < 10) await new Promise((r) => setTimeout(r, 2));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(finish.length, 10, 'no more than maxOutstanding unfinished');
  const releaseAll = setInterval(() => finish.splice(0).forEach((f) => f()), 2);
  await pool;
  clearInterval(releaseAll);
  assert.equal(done.length, 40);
  assert.ok(maxActive <= 3, `at most 3 unreleased (saw ${maxActive})`);
  assert.ok(maxOutstanding > 3 && maxOutstanding <= 10, `more than 3, at most 10 unfinished (saw ${maxOutstanding})`);
});

void test('runPool: the first error rejects once the calls under way have finished; no further item starts', async () => {
  let started = 0;
  let finished = 0;
  await assert.rejects(
    runPool(
      Array.from({ length: 100 }, (_, i) => i),
      4,
      async (i) => {
        started++;
        await new Promise((r) => setTimeout(r, 2));
        finished++;
        if (i === 5) throw new Error('boom');
      },
    ),
    /boom/,
  );
  assert.equal(finished, started, 'nothing left running');
  assert.ok(started < 20, `stopped pulling after the error (started ${started})`);
});

void test('syncFileSystem and fsyncEach make real files and folders durable; a missing file is an error', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-sfs-'));
  try {
    const { writeFile } = await import('node:fs/promises');
    const files = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const p = join(root, `f${i}`);
        await writeFile(p, `x${i}`);
        return p;
      }),
    );
    await syncFileSystem(root, files); // syncfs on Linux (6 files), fsyncs elsewhere
    await syncFileSystem(root, files); // the helper shell is reused
    const odd = join(root, 'a\nfolder'); // a name the helper's line protocol cannot carry: sync -f run directly
    const { mkdir } = await import('node:fs/promises');
    await mkdir(odd);
    await syncFileSystem(odd, files);
    await assert.rejects(syncFileSystem(join(root, 'gone'), [...files, join(root, 'gone', 'x')]), /ENOENT/, 'a folder that is gone: the fsyncs report it');
    await syncFileSystem(root, files); // and syncfs still serves afterwards
    await syncFileSystem(root, files.slice(0, 2)); // few files: fsyncs
    await fsyncEach([root, ...files]); // a folder among them
    await assert.rejects(fsyncEach([join(root, 'missing')]), /ENOENT/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('group commit: a batch closes once no file came for idleMs, long before gatherMs', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    const sizes: number[] = [];
    const group = new GroupCommit({ gatherMs: 60_000, idleMs: 200, barrier: async (_d, files) => void sizes.push(files.length) });
    const t0 = Date.now();
    await Promise.all([1, 2, 3].map((i) => writeVerified({ root, relPath: `f${i}.txt`, body: body('x'), groupCommit: group })));
    assert.ok(Date.now() - t0 < 30_000, 'not held for gatherMs');
    assert.deepEqual(sizes, [3]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
