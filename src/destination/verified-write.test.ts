import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { writeVerified } from './verified-write.js';
import { isResourceSyncError } from '../core/errors.js';
import { GroupCommit } from '../node/group-commit.js';
import { FsyncEach, RenameOnly, type Durability } from '../node/durability.js';
import { DestinationRoot } from '../node/destination-root.js';
import { SmallFileThread } from '../node/small-file-thread.js';

const tempDir = (root: string): string => join(root, '.resourcesync', 'tmp');

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

void test('every durability: the file is verified, then committed; onVerified is called once before the commit', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-vw-'));
  try {
    const mtime = new Date('2013-01-02T13:00:00Z');
    const dest = new DestinationRoot(root);
    const thread = new SmallFileThread();
    const ways: [string, Durability | undefined][] = [
      ['default', undefined],
      ['rename-only', new RenameOnly()],
      ['fsync-each', new FsyncEach()],
      ['group', new GroupCommit({ gatherMs: 5, idleMs: 1 })],
      ['thread-rename', new RenameOnly({ thread })],
      ['thread-fsync-each', new FsyncEach({ thread })],
      ['thread-group', new GroupCommit({ gatherMs: 5, idleMs: 1, thread })],
    ];
    for (const [name, durability] of ways) {
      for (const size of [5, 300 * 1024]) {
        const data = Buffer.alloc(size, name);
        const events: string[] = [];
        const relPath = `${name}/f${size}.bin`;
        const written = writeVerified({
          root: dest,
          relPath,
          body: chunks(data, 64 * 1024),
          expected: { length: data.length, hashes: [{ algorithm: 'md5', digest: md5(data) }] },
          mtime,
          ...(durability === undefined ? {} : { durability }),
          onVerified: () => events.push(existsSync(join(root, relPath)) ? 'verified after commit' : 'verified'),
        });
        const r = await written;
        events.push('resolved');
        assert.deepEqual(events, ['verified', 'resolved'], `${name} ${size}`);
        assert.deepEqual(await readFile(r.path), data, `${name} ${size}`);
        assert.equal((await stat(r.path)).mtime.getTime(), mtime.getTime());
        // the same path again: the new bytes replace the old ones
        const again = Buffer.from(`${name} again`);
        await writeVerified({ root: dest, relPath, body: chunks(again, 64), ...(durability === undefined ? {} : { durability }) });
        assert.deepEqual(await readFile(r.path), again);
      }
      await durability?.settle();
    }
    // an error of the file system is a recoverable RS_IO, and leaves no temporary file
    await writeFile(join(root, 'blocker'), 'a file where a folder should be');
    for (const durability of [new RenameOnly(), new GroupCommit({ gatherMs: 1, idleMs: 1 }), new RenameOnly({ thread })]) {
      await assert.rejects(
        writeVerified({ root, relPath: 'blocker/x.txt', body: chunks(Buffer.from('x'), 64), durability }),
        (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable,
      );
    }
    // a failed flush is a recoverable RS_IO of that file
    const failing = new GroupCommit({ gatherMs: 1, idleMs: 1, flush: () => Promise.reject(new Error('EIO: simulated')) });
    await assert.rejects(
      writeVerified({ root, relPath: 'flush/x.txt', body: chunks(Buffer.from('x'), 64), durability: failing }),
      (e: unknown) => isResourceSyncError(e, 'RS_IO') && e.recoverable && /EIO: simulated/.test(e.message),
    );
    assert.ok(!existsSync(join(root, 'flush', 'x.txt')));
    assert.deepEqual(await readdir(tempDir(root)), []);
    await thread.close();
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
  const { mkdir: mkdirP } = await import('node:fs/promises');
  const base = await mkdtemp(join(tmpdir(), 'rs-vw-link-'));
  try {
    const root = join(base, 'mirror');
    const outside = join(base, 'outside');
    await mkdirP(root, { recursive: true });
    await mkdirP(outside, { recursive: true });
    await writeFile(join(outside, 'keep.txt'), 'keep');
    await symlink(outside, join(root, 'escape'));
    const thread = new SmallFileThread();
    for (const relPath of ['escape/x.txt', 'escape/new/deeper/x.txt']) {
      for (const durability of [new RenameOnly(), new RenameOnly({ thread }), new GroupCommit({ gatherMs: 1, idleMs: 1, thread })]) {
        await assert.rejects(
          writeVerified({ root, relPath, body: Readable.from([Buffer.from('evil')]), durability }),
          (e) => isResourceSyncError(e, 'RS_UNSAFE_PATH') && e.recoverable,
          relPath,
        );
      }
    }
    await thread.close();
    assert.deepEqual(await readdir(outside), ['keep.txt']);
    // A real folder next to it is fine.
    await writeVerified({ root, relPath: 'inside/x.txt', body: Readable.from([Buffer.from('ok')]), durability: new RenameOnly() });
    assert.equal(await readFile(join(root, 'inside', 'x.txt'), 'utf8'), 'ok');
  } finally {
    await rm(base, { recursive: true, force: true });
  }
});

void test('a folder replaced by a symbolic link between two writes of one run: the second write is refused', async () => {
  const base = await mkdtemp(join(tmpdir(), 'rs-vw-link-'));
  try {
    const root = join(base, 'mirror');
    const outside = join(base, 'outside');
    const { mkdir: mkdirP } = await import('node:fs/promises');
    await mkdirP(outside, { recursive: true });
    const dest = new DestinationRoot(root); // one run: the same object for both writes
    const thread = new SmallFileThread();
    const durability = new GroupCommit({ gatherMs: 1, idleMs: 1, thread }); // checked on the thread
    await writeVerified({ root: dest, relPath: 'sub/a.txt', body: Readable.from([Buffer.from('first')]), durability });
    assert.equal(await readFile(join(root, 'sub', 'a.txt'), 'utf8'), 'first');
    // the folder is moved away and a link to outside the destination takes its place
    await rename(join(root, 'sub'), join(base, 'moved'));
    await symlink(outside, join(root, 'sub'));
    for (const relPath of ['sub/b.txt', 'sub/deeper/c.txt']) {
      await assert.rejects(
        writeVerified({ root: dest, relPath, body: Readable.from([Buffer.from('evil')]), durability }),
        (e: unknown) => isResourceSyncError(e, 'RS_UNSAFE_PATH') && e.recoverable,
        relPath,
      );
    }
    await durability.settle();
    await thread.close();
    assert.deepEqual(await readdir(outside), [], 'nothing written outside');
    assert.deepEqual(await readdir(tempDir(root)), []);
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
