import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { writeVerified, tempDir } from './verified-write.js';
import { isResourceSyncError } from '../core/errors.js';
import { GroupCommit } from '../node/group-commit.js';
import { SmallFileWriter } from '../node/small-file-writer.js';

function chunks(data: Buffer, size: number): AsyncIterable<Uint8Array> {
  const parts: Buffer[] = [];
  for (let i = 0; i < data.length; i += size) parts.push(data.subarray(i, i + size));
  return Readable.from(parts);
}
const md5 = (b: Buffer) => createHash('md5').update(b).digest('hex');
const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

void test('writes small and large bodies atomically with verified length and hashes', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  try {
    // one chunk (hashed at the end in one shot), a small body in several chunks, a large streamed one
    for (const [size, chunk] of [[0, 64 * 1024], [10, 64 * 1024], [1000, 64], [300 * 1024 + 7, 64 * 1024]] as const) {
      const data = Buffer.alloc(size, 'abc');
      const mtime = new Date('2013-01-02T13:00:00Z');
      const r = await writeVerified({
        root,
        relPath: `n${size}/file ${size}.bin`,
        body: chunks(data, chunk),
        expected: { length: size, hashes: [{ algorithm: 'sha-256', digest: sha256(data) }, { algorithm: 'x-unknown', digest: 'zz' }] },
        mtime,
      });
      assert.equal(r.length, size);
      assert.equal(r.hashes['md5'], md5(data));
      assert.equal(r.hashes['sha-256'], sha256(data));
      assert.deepEqual(await readFile(join(root, `n${size}`, `file ${size}.bin`)), data);
      assert.equal((await stat(r.path)).mtime.getTime(), mtime.getTime());
    }
    assert.deepEqual(await readdir(tempDir(root)), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('small bodies without an fsync of their own: by default, on the small-file thread, on this thread, or here when the thread stopped', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  const stopped = new SmallFileWriter(new URL('./no-such-thread.js', import.meta.url));
  const thread = SmallFileWriter.shared();
  assert.ok(thread !== undefined, 'the shared small-file thread starts');
  try {
    const mtime = new Date('2013-01-02T13:00:00Z');
    const ways = [
      ['default', {}],
      ['thread', { smallFiles: thread }],
      ['here', { smallFiles: false as const }],
      ['stopped', { smallFiles: stopped }],
    ] as const;
    for (const [name, how] of ways) {
      // no group commit (no fsync); one with a given barrier (it stays here); one with the default barrier (the
      // thread commits the file itself, and this one only makes the rename durable when it settles)
      for (const grouped of [false, 'given', 'default'] as const) {
        const group =
          grouped === 'given' ? new GroupCommit({ barrier: async () => undefined, gatherMs: 1, idleMs: 1 }) : grouped === 'default' ? new GroupCommit() : undefined;
        const data = Buffer.from(`${name} ${grouped}`);
        let staged = 0;
        const r = await writeVerified({
          root,
          relPath: `${name}/${grouped === false ? 'plain' : grouped}.txt`,
          body: chunks(data, 64),
          expected: { length: data.length, hashes: [{ algorithm: 'md5', digest: md5(data) }] },
          mtime,
          ...(group === undefined ? { fsync: false } : { groupCommit: group }),
          onStaged: () => staged++,
          ...how,
        });
        assert.deepEqual(await readFile(r.path), data, `${name}, grouped ${grouped}`);
        assert.equal((await stat(r.path)).mtime.getTime(), mtime.getTime());
        if (grouped !== false) assert.equal(staged, 1, 'onStaged is called once');
        // the same path again: the new bytes replace the old ones
        const again = Buffer.from(`${name} ${grouped} again`);
        await writeVerified({ root, relPath: `${name}/${grouped === false ? 'plain' : grouped}.txt`, body: chunks(again, 64), ...(group === undefined ? { fsync: false } : { groupCommit: group }), ...how });
        assert.deepEqual(await readFile(r.path), again);
        if (group !== undefined) {
          const before = group.barriers;
          await group.settle();
          assert.equal(group.barriers, before + 1, `${name}, ${grouped}: settle makes the renames durable`);
        }
      }
    }
    assert.ok(stopped.stopped);
    // an error of the file system on the thread is a recoverable RS_IO, and leaves no temporary file
    await writeFile(join(root, 'blocker'), 'a file where a folder should be');
    await assert.rejects(
      writeVerified({ root, relPath: 'blocker/x.txt', body: chunks(Buffer.from('x'), 64), fsync: false }),
      (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable,
    );
    // …and so is a rename that fails after the thread's own group commit
    await assert.rejects(
      writeVerified({ root, relPath: 'blocker/y.txt', body: chunks(Buffer.from('y'), 64), groupCommit: new GroupCommit() }),
      (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable && /ENOTDIR/.test(e.message),
    );
    assert.deepEqual(await readdir(tempDir(root)), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('a durable small file whose thread stops before or during its group commit is written here instead', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  // a thread that writes each temporary file and then hangs, as one stuck in its group commit would
  const hung = new URL(
    `data:text/javascript,${encodeURIComponent(`import { writeFileSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';
parentPort.on('message', ({ nums, paths, bytes }) => {
  const names = paths.split('\\0');
  let name = 0;
  let at = 0;
  for (let i = 0; i < nums.length; i += 4) {
    const tmp = names[name++];
    if (nums[i + 3] !== 0) name++;
    writeFileSync(tmp, new Uint8Array(bytes, at, nums[i + 1]));
    at += nums[i + 1];
  }
});`)}`,
  );
  try {
    // 'queued': the thread stops while the file waits in this side's batch; 'held': once the thread has written
    // the temporary file and holds it
    for (const when of ['queued', 'held'] as const) {
      const writer = new SmallFileWriter(when === 'queued' ? undefined : hung);
      const group = new GroupCommit();
      const data = Buffer.from(`stopped while ${when}`);
      let stop: Promise<void> | undefined;
      const written = writeVerified({
        root,
        relPath: `${when}.txt`,
        body: chunks(data, 64),
        expected: { length: data.length, hashes: [{ algorithm: 'md5', digest: md5(data) }] },
        groupCommit: group,
        smallFiles: writer,
        onStaged: () => {
          if (when === 'queued') stop ??= writer.close();
        },
      });
      if (when === 'held') {
        while ((await readdir(tempDir(root))).length === 0) await new Promise((r) => setTimeout(r, 2));
        assert.equal(writer.stopped, false, 'the temporary file was written by the thread');
        stop = writer.close();
      }
      const r = await written;
      await stop;
      assert.ok(writer.stopped);
      assert.deepEqual(await readFile(r.path), data, when);
      assert.equal(group.barriers, 1, `${when}: committed on this side, by its own group commit`);
      await group.settle();
      assert.deepEqual(await readdir(tempDir(root)), [], `${when}: no temporary file left`);
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('a mismatch is never committed and leaves no temporary file', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  try {
    const data = Buffer.alloc(400 * 1024, 'x');
    await assert.rejects(
      writeVerified({ root, relPath: 'a.bin', body: chunks(data, 1000), expected: { hashes: [{ algorithm: 'md5', digest: md5(Buffer.from('other')) }] } }),
      (e: unknown) => isResourceSyncError(e, 'RS_HASH_MISMATCH') && e.recoverable,
    );
    await assert.rejects(
      writeVerified({ root, relPath: 'b.bin', body: chunks(data, 1000), expected: { length: 10 } }),
      (e: unknown) => isResourceSyncError(e, 'RS_LENGTH_MISMATCH'),
    );
    await assert.rejects(
      writeVerified({ root, relPath: 'c.bin', body: chunks(data.subarray(0, 5), 1), expected: { length: 10 } }),
      (e: unknown) => isResourceSyncError(e, 'RS_LENGTH_MISMATCH'),
    );
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield data;
      await Promise.resolve();
      throw new Error('connection reset');
    }
    await assert.rejects(writeVerified({ root, relPath: 'd.bin', body: failing() }), /connection reset/);
    await assert.rejects(writeVerified({ root, relPath: '../e.bin', body: chunks(data, 10) }), (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH'));
    assert.deepEqual((await readdir(root)).sort(), ['.resourcesync']);
    assert.deepEqual(await readdir(tempDir(root)), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

void test('a symbolic link inside the destination never carries a write outside it', async () => {
  const { mkdir: mkdirP, symlink, writeFile } = await import('node:fs/promises');
  const base = await mkdtemp(join(tmpdir(), 'rs-vw-link-'));
  try {
    const root = join(base, 'mirror');
    const outside = join(base, 'outside');
    await mkdirP(root, { recursive: true });
    await mkdirP(outside, { recursive: true });
    await writeFile(join(outside, 'keep.txt'), 'keep');
    await symlink(outside, join(root, 'escape'));
    for (const relPath of ['escape/x.txt', 'escape/new/deeper/x.txt']) {
      await assert.rejects(
        writeVerified({ root, relPath, body: Readable.from([Buffer.from('evil')]), fsync: false }),
        (e) => isResourceSyncError(e, 'RS_UNSAFE_PATH'),
        relPath,
      );
    }
    assert.deepEqual(await readdir(outside), ['keep.txt']);
    // A real folder next to it is fine.
    await writeVerified({ root, relPath: 'inside/x.txt', body: Readable.from([Buffer.from('ok')]), fsync: false });
    assert.equal(await readFile(join(root, 'inside', 'x.txt'), 'utf8'), 'ok');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

/** A ByteSource over a buffer, handing out at most `step` bytes per read. */
function byteSource(data: Buffer, step: number): { read(into: Uint8Array): Promise<number> } {
  let pos = 0;
  return {
    read(into: Uint8Array): Promise<number> {
      const n = Math.min(step, into.byteLength, data.length - pos);
      data.copy(into, 0, pos, pos + n);
      pos += n;
      return Promise.resolve(n);
    },
  };
}

void test('a ByteSource body (read into pooled buffers): small and large, short reads, lengths checked', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  try {
    for (const size of [0, 100, 200 * 1024, 3 * 1024 * 1024 + 5]) {
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i += 4096) data.writeUInt32LE(i ^ size, i);
      for (const expected of [{ length: size, hashes: [{ algorithm: 'sha-256', digest: sha256(data) }] }, undefined]) {
        const r = await writeVerified({ root, relPath: `bs/${size}-${expected ? 'k' : 'u'}.bin`, body: byteSource(data, 700_000), ...(expected ? { expected } : {}) });
        assert.equal(r.length, size);
        assert.equal(r.hashes['md5'], md5(data));
        assert.ok((await readFile(r.path)).equals(data), `content of ${size}`);
      }
    }
    // a second large file from the same pooled buffers: no bytes of the first leak into it
    const other = Buffer.alloc(2 * 1024 * 1024 + 3, 9);
    const r2 = await writeVerified({ root, relPath: 'bs/other.bin', body: byteSource(other, 1 << 20) });
    assert.ok((await readFile(r2.path)).equals(other));
    // longer and shorter than declared: refused, nothing left behind
    const body = Buffer.alloc(300 * 1024, 1);
    for (const length of [body.length - 1, body.length + 1, 10]) {
      await assert.rejects(
        writeVerified({ root, relPath: `bs/bad-${length}.bin`, body: byteSource(body, 64 * 1024), expected: { length } }),
        (e: unknown) => isResourceSyncError(e, 'RS_LENGTH_MISMATCH'),
      );
    }
    await assert.rejects(
      writeVerified({ root, relPath: 'bs/bad-hash.bin', body: byteSource(body, 1 << 20), expected: { hashes: [{ algorithm: 'md5', digest: '0'.repeat(32) }] } }),
      (e: unknown) => isResourceSyncError(e, 'RS_HASH_MISMATCH'),
    );
    assert.deepEqual((await readdir(join(root, 'bs'))).filter((n) => n.startsWith('bad')), []);
    assert.deepEqual(await readdir(tempDir(root)), []);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
