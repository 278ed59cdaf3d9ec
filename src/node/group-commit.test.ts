import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { GroupCommit } from './group-commit.js';
import { writeVerified } from '../destination/verified-write.js';
import { isResourceSyncError } from '../core/errors.js';
import { fsyncAll, fsyncEachOf } from './durability.js';

const tempDir = (root: string): string => join(root, '.resourcesync', 'tmp');

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
      flush: async (files) => {
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
        durability: group,
        onVerified: () => staged++,
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
    assert.equal(group.batches, 1);
    await group.settle(); // fsyncs the folders that received files (real folders: no error)
    assert.equal(group.batches, 1, 'settle flushes no batch when none is queued');
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
      flush: async () => {
        if (fail) throw new Error('EIO: simulated flush failure');
      },
    });
    const results = await Promise.allSettled(
      [1, 2, 3].map((i) => writeVerified({ root, relPath: `f${i}.txt`, body: body('x'), durability: group })),
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
    await writeVerified({ root, relPath: 'f4.txt', body: body('y'), durability: group });
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
      flush: async (files) => {
        sizes.push(files.length);
      },
    });
    const bad = writeVerified({
      root,
      relPath: 'bad.txt',
      body: body('abc'),
      expected: { length: 4 },
      durability: group,
    });
    await assert.rejects(bad, (e: unknown) => isResourceSyncError(e, 'RS_LENGTH_MISMATCH'));
    const t0 = Date.now();
    await Promise.all(
      [1, 2, 3, 4].map((i) => writeVerified({ root, relPath: `ok${i}.txt`, body: body('ok'), durability: group })),
    );
    assert.ok(Date.now() - t0 < 10_000, 'a full batch is committed at once');
    assert.deepEqual(sizes, [4]);
    assert.ok(!existsSync(join(root, 'bad.txt')));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('a large body goes through the same batch as the small ones', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    const sizes: number[] = [];
    const group = new GroupCommit({ gatherMs: 60_000, idleMs: 20, flush: async (files) => void sizes.push(files.length) });
    const data = Buffer.alloc(300 * 1024, 7);
    const [r] = await Promise.all([
      writeVerified({ root, relPath: 'big.bin', body: Readable.from([data]), durability: group }),
      writeVerified({ root, relPath: 'small.txt', body: body('s'), durability: group }),
    ]);
    assert.equal(r.length, data.length);
    assert.deepEqual(sizes, [2]);
    assert.deepEqual(await readFile(join(root, 'big.bin')), data);
    assert.equal(await readFile(join(root, 'small.txt'), 'utf8'), 's');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('fsyncAll and fsyncEachOf make real files and folders durable; a missing file is an error of its own', async () => {
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
    await fsyncAll([root, ...files]); // a folder among them
    const missing = join(root, 'missing');
    const errors = await fsyncEachOf([files[0]!, missing, files[1]!]);
    assert.equal(errors[0], undefined);
    assert.match(String(errors[1]), /ENOENT/);
    assert.equal(errors[2], undefined);
    await assert.rejects(fsyncAll([missing]), /ENOENT/);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('group commit: a batch closes once no file came for idleMs, long before gatherMs', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-gc-'));
  try {
    const sizes: number[] = [];
    const group = new GroupCommit({ gatherMs: 60_000, idleMs: 200, flush: async (files) => void sizes.push(files.length) });
    const t0 = Date.now();
    await Promise.all([1, 2, 3].map((i) => writeVerified({ root, relPath: `f${i}.txt`, body: body('x'), durability: group })));
    assert.ok(Date.now() - t0 < 30_000, 'not held for gatherMs');
    assert.deepEqual(sizes, [3]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
