import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SmallFileWriter, SmallFileWriterStopped } from './small-file-writer.js';

void test('small-file thread: many files in batches, written with their time and renamed into new folders', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-sfw-'));
  const w = new SmallFileWriter();
  try {
    const mtime = Date.UTC(2013, 0, 2, 13, 0, 0);
    const n = 150; // more than one batch of 64
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        w.run({ tmp: join(root, 'tmp', `${i}.tmp`), data: Buffer.from(`file ${i}`), mtime, to: join(root, `d${i % 7}`, 'sub', `f${i}.txt`) }),
      ),
    );
    assert.equal(w.pendingBytes, 0);
    for (const i of [0, 63, 64, 149]) {
      const p = join(root, `d${i % 7}`, 'sub', `f${i}.txt`);
      assert.equal(await readFile(p, 'utf8'), `file ${i}`);
      assert.equal((await stat(p)).mtime.getTime(), mtime);
    }
    assert.deepEqual(await readdir(join(root, 'tmp')), [], 'every temporary file was renamed');
    // staged now, renamed later (a group commit's order); an empty body; no time given
    await w.run({ tmp: join(root, 'tmp', 'e.tmp'), data: new Uint8Array(0) });
    assert.equal((await stat(join(root, 'tmp', 'e.tmp'))).size, 0);
    await w.run({ tmp: join(root, 'tmp', 'e.tmp'), to: join(root, 'empty.txt') });
    assert.equal(await readFile(join(root, 'empty.txt'), 'utf8'), '');
  } finally {
    await w.close();
    await rm(root, { recursive: true, force: true });
  }
});

void test('small-file thread: a failed operation rejects with the file-system error; the rest of its batch is written', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-sfw-'));
  const w = new SmallFileWriter();
  try {
    mkdirSync(join(root, 'tmp'));
    writeFileSync(join(root, 'tmp', 'taken.tmp'), 'someone else');
    writeFileSync(join(root, 'file'), 'not a folder');
    const results = await Promise.allSettled([
      w.run({ tmp: join(root, 'tmp', 'a.tmp'), data: Buffer.from('a'), to: join(root, 'a.txt') }),
      w.run({ tmp: join(root, 'tmp', 'taken.tmp'), data: Buffer.from('b'), to: join(root, 'b.txt') }),
      w.run({ tmp: join(root, 'tmp', 'c.tmp'), data: Buffer.from('c'), to: join(root, 'file', 'c.txt') }),
      w.run({ tmp: join(root, 'tmp', 'd.tmp'), data: Buffer.from('d'), to: join(root, 'd.txt') }),
    ]);
    assert.deepEqual(results.map((r) => r.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    const [, taken, notDir] = results as PromiseRejectedResult[];
    assert.equal((taken!.reason as { code?: string }).code, 'EEXIST', 'a temporary file is never overwritten');
    assert.equal((notDir!.reason as { code?: string }).code, 'ENOTDIR');
    assert.equal(await readFile(join(root, 'tmp', 'taken.tmp'), 'utf8'), 'someone else');
    assert.equal(await readFile(join(root, 'a.txt'), 'utf8'), 'a');
    assert.equal(await readFile(join(root, 'd.txt'), 'utf8'), 'd');
    assert.ok(existsSync(join(root, 'tmp', 'c.tmp')), 'a failed rename leaves the temporary file to its caller');
    assert.equal(w.pendingBytes, 0);
  } finally {
    await w.close();
    await rm(root, { recursive: true, force: true });
  }
});

void test('small-file thread: durable operations are committed by its own group commit, then renamed; a failure rejects', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-sfw-'));
  const roots = [root];
  const w = new SmallFileWriter();
  try {
    writeFileSync(join(root, 'file'), 'not a folder');
    const mtime = Date.UTC(2013, 0, 2, 13, 0, 0);
    const n = 150; // several messages, and one batch of the thread's group commit or more
    const ops = Array.from({ length: n }, (_, i) =>
      w.run({ tmp: join(root, 'tmp', `${i}.tmp`), data: Buffer.from(`file ${i}`), mtime, to: join(root, `d${i % 7}`, `f${i}.txt`), durable: true }),
    );
    const bad = w.run({ tmp: join(root, 'tmp', 'bad.tmp'), data: Buffer.from('bad'), to: join(root, 'file', 'bad.txt'), durable: true });
    // a second destination at the same time, in its own batches (its own file system where /dev/shm exists)
    const other = await mkdtemp(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'rs-sfw-'));
    roots.push(other);
    const others = Array.from({ length: 20 }, (_, i) => w.run({ tmp: join(other, 'tmp', `${i}.tmp`), data: Buffer.from(`other ${i}`), to: join(other, `o${i}.txt`), durable: true }));
    const results = await Promise.allSettled([...ops, bad]);
    await Promise.all(others);
    assert.equal(await readFile(join(other, 'o19.txt'), 'utf8'), 'other 19');
    assert.deepEqual(await readdir(join(other, 'tmp')), []);
    assert.deepEqual(results.slice(0, n).map((r) => r.status), Array.from({ length: n }, () => 'fulfilled'));
    const last = results[n] as PromiseRejectedResult;
    assert.equal(last.status, 'rejected');
    assert.equal((last.reason as { code?: string }).code, 'ENOTDIR', 'the rename after the barrier failed');
    for (const i of [0, 64, 149]) {
      const p = join(root, `d${i % 7}`, `f${i}.txt`);
      assert.equal(await readFile(p, 'utf8'), `file ${i}`);
      assert.equal((await stat(p)).mtime.getTime(), mtime);
    }
    assert.deepEqual(await readdir(join(root, 'tmp')), ['bad.tmp'], 'renamed, but for the failed one, left to its caller');
    assert.equal(w.pendingBytes, 0);
  } finally {
    await w.close();
    for (const r of roots) await rm(r, { recursive: true, force: true });
  }
});

void test('small-file thread: one that cannot start, or is closed, rejects every operation as stopped', async () => {
  const broken = new SmallFileWriter(new URL('./no-such-thread.js', import.meta.url));
  await assert.rejects(broken.run({ tmp: join(tmpdir(), 'never.tmp'), data: Buffer.from('x') }), SmallFileWriterStopped);
  assert.equal(broken.stopped, true);
  await assert.rejects(broken.run({ tmp: join(tmpdir(), 'never.tmp'), data: Buffer.from('x') }), SmallFileWriterStopped);
  assert.equal(existsSync(join(tmpdir(), 'never.tmp')), false);

  const w = new SmallFileWriter();
  const root = await mkdtemp(join(tmpdir(), 'rs-sfw-'));
  try {
    const pending = assert.rejects(w.run({ tmp: join(root, 'x.tmp'), data: Buffer.from('x') }), SmallFileWriterStopped);
    await w.close();
    await pending;
    assert.equal(w.pendingBytes, 0);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('small-file thread: a process whose writer was started, used or not, exits by itself', async () => {
  const { spawn } = await import('node:child_process');
  const root = await mkdtemp(join(tmpdir(), 'rs-sfw-'));
  const writer = new URL('./small-file-writer.js', import.meta.url).href;
  try {
    for (const use of [false, true]) {
      // the writer is started and, in the second round, used once; nothing else keeps the process alive
      const script = `import { SmallFileWriter } from ${JSON.stringify(writer)};
const w = SmallFileWriter.shared();
if (${use}) await w.run({ tmp: ${JSON.stringify(join(root, 'f.tmp'))}, data: new Uint8Array([1]) });`;
      const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
      const code = await new Promise<number | string>((resolve) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          resolve('still running after 10 s');
        }, 10_000);
        child.on('exit', (c) => {
          clearTimeout(timer);
          resolve(c ?? 'killed');
        });
      });
      assert.equal(code, 0, use ? 'used once' : 'never used');
    }
    assert.equal(existsSync(join(root, 'f.tmp')), true);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
