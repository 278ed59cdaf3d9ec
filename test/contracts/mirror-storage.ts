/**
 * The contract of a {@link MirrorStorage}: what every implementation (the local folder here; an S3 bucket, a
 * shared service later) must do, observed through the interface alone. Run it with
 * `describeMirrorStorageContract('my storage', async () => ({ impl, cleanup }))`.
 */

import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { isResourceSyncError } from '../../src/core/errors.js';
import type { MirrorStorage, StagedWrite } from '../../src/destination/mirror-storage.js';

/** A fresh, empty storage; `cleanup` removes everything it holds; `reopen`, when given, opens it again (another process would). */
export interface MirrorStorageUnderTest {
  impl: MirrorStorage;
  cleanup: () => Promise<void>;
  reopen?: () => Promise<MirrorStorage>;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);
const md5 = (b: Uint8Array): string => createHash('md5').update(b).digest('hex');
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

async function put(storage: MirrorStorage, key: string, body: Uint8Array, mtimeMs?: number): Promise<void> {
  const staged = await storage.stage(key, { mtimeMs });
  await staged.write(body);
  await staged.commit();
}

async function keysOf(storage: MirrorStorage): Promise<Map<string, number>> {
  const keys = new Map<string, number>();
  for await (const item of storage.list()) keys.set(item.key, item.size);
  return keys;
}

async function readAll(storage: MirrorStorage, key: string): Promise<string | undefined> {
  const bytes = await storage.read(key, { maxBytes: 64 * 1024 * 1024 });
  return bytes === undefined ? undefined : Buffer.from(bytes).toString('utf8');
}

async function rejectsUnsafe(what: string, call: () => Promise<unknown>): Promise<void> {
  await assert.rejects(call, (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'), what);
}

/** Registers the contract's tests for the implementation `makeImplementation` opens. */
export function describeMirrorStorageContract(name: string, makeImplementation: () => Promise<MirrorStorageUnderTest>): void {
  const withStorage = (title: string, body: (storage: MirrorStorage, under: MirrorStorageUnderTest) => Promise<void>): void => {
    void test(title, async () => {
      const under = await makeImplementation();
      try {
        await body(under.impl, under);
      } finally {
        await under.cleanup();
      }
    });
  };

  void describe(`MirrorStorage contract: ${name}`, () => {
    withStorage('stat, read, openRead and hash of a missing key answer undefined; an empty storage lists nothing', async (storage) => {
      assert.equal(await storage.stat('a/missing.txt'), undefined);
      assert.equal(await storage.read('a/missing.txt', { maxBytes: 10 }), undefined);
      assert.equal(await storage.openRead('a/missing.txt'), undefined);
      assert.equal(await storage.hash('a/missing.txt', ['md5']), undefined);
      assert.deepEqual(await keysOf(storage), new Map());
      assert.equal(await storage.isEmpty(), true);
    });

    withStorage('a committed copy is visible with its size, time, bytes and digests', async (storage) => {
      const body = text('hello, mirror');
      const mtimeMs = Date.parse('2024-05-06T07:08:09Z');
      await put(storage, 'a/b/c.txt', body, mtimeMs);
      const st = await storage.stat('a/b/c.txt');
      assert.equal(st?.size, body.length);
      assert.ok(Math.abs(st.mtimeMs - mtimeMs) < 1000, `mtime ${st.mtimeMs} is the one given (${mtimeMs}), to the second`);
      assert.equal(await readAll(storage, 'a/b/c.txt'), 'hello, mirror');
      const stream = await storage.openRead('a/b/c.txt');
      assert.ok(stream !== undefined);
      const chunks: Uint8Array[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      assert.equal(Buffer.concat(chunks).toString('utf8'), 'hello, mirror');
      const digests = await storage.hash('a/b/c.txt', ['md5', 'sha-256']);
      assert.equal(digests?.length, body.length);
      assert.equal(digests.hashes.md5, md5(body));
      assert.equal(digests.hashes['sha-256'], sha256(body));
      assert.equal(await storage.isEmpty(), false);
    });

    withStorage('an empty body commits an empty copy', async (storage) => {
      const staged = await storage.stage('empty.txt');
      await staged.commit();
      assert.equal((await storage.stat('empty.txt'))?.size, 0);
      assert.equal(await readAll(storage, 'empty.txt'), '');
    });

    withStorage('staged bytes are invisible until commit', async (storage) => {
      const staged = await storage.stage('x/y.txt');
      await staged.write(text('not yet'));
      assert.equal(await storage.stat('x/y.txt'), undefined);
      assert.equal(await storage.read('x/y.txt', { maxBytes: 100 }), undefined);
      assert.deepEqual(await keysOf(storage), new Map(), 'list shows no staged write');
      assert.equal(await storage.isEmpty(), true);
      await staged.commit();
      assert.equal(await readAll(storage, 'x/y.txt'), 'not yet');
      assert.deepEqual(await keysOf(storage), new Map([['x/y.txt', 7]]));
    });

    withStorage('abort leaves nothing, twice is harmless, and the previous copy stays', async (storage) => {
      const staged = await storage.stage('gone.txt');
      await staged.write(text('dropped'));
      await staged.abort();
      await staged.abort();
      assert.equal(await storage.stat('gone.txt'), undefined);
      assert.deepEqual(await keysOf(storage), new Map());
      await put(storage, 'kept.txt', text('old'));
      const again = await storage.stage('kept.txt');
      await again.write(text('new bytes'));
      await again.abort();
      assert.equal(await readAll(storage, 'kept.txt'), 'old');
    });

    withStorage('a stage commits once: a second commit rejects', async (storage) => {
      const staged = await storage.stage('once.txt');
      await staged.write(text('1'));
      await staged.commit();
      await assert.rejects(() => staged.commit());
      assert.equal(await readAll(storage, 'once.txt'), '1');
    });

    withStorage('commit replaces a copy atomically: readers see the old or the new, whole', async (storage) => {
      const old = 'o'.repeat(300 * 1024);
      const fresh = 'n'.repeat(700 * 1024);
      await put(storage, 'r.txt', text(old));
      const staged = await storage.stage('r.txt');
      for (let i = 0; i < 7; i++) await staged.write(text('n'.repeat(100 * 1024)));
      assert.equal(await readAll(storage, 'r.txt'), old, 'the old copy until the commit');
      let committed = false;
      const committing = staged.commit().then(() => {
        committed = true;
      });
      const seen = new Set<string>();
      for (let i = 0; i < 1000 && !committed; i++) {
        const now = await readAll(storage, 'r.txt');
        assert.ok(now === old || now === fresh, `a reader saw ${now?.length ?? 'no'} bytes: neither copy`);
        seen.add(now === old ? 'old' : 'new');
      }
      await committing;
      assert.equal(await readAll(storage, 'r.txt'), fresh);
      assert.equal((await storage.stat('r.txt'))?.size, fresh.length);
    });

    withStorage('a large body written in reused buffers arrives whole and in order', async (storage) => {
      const buffers = [new Uint8Array(64 * 1024), new Uint8Array(64 * 1024)];
      const expected = createHash('md5');
      const staged: StagedWrite = await storage.stage('big.bin', { sizeHint: 40 * 64 * 1024 });
      for (let k = 0; k < 40; k++) {
        const buffer = buffers[k % 2]!;
        buffer.fill(k); // read into again: the write before the previous one resolved is done with it
        expected.update(buffer);
        await staged.write(buffer, { reused: true });
      }
      await staged.write(new Uint8Array(0), { reused: true });
      buffers[0]!.fill(255);
      buffers[1]!.fill(255);
      await staged.commit();
      const digests = await storage.hash('big.bin', ['md5']);
      assert.equal(digests?.length, 40 * 64 * 1024);
      assert.equal(digests.hashes.md5, expected.digest('hex'));
    });

    withStorage('read refuses a copy larger than maxBytes with RS_LIMIT_BYTES', async (storage) => {
      await put(storage, 'capped.txt', text('0123456789'));
      assert.equal(Buffer.from((await storage.read('capped.txt', { maxBytes: 10 }))!).toString(), '0123456789');
      await assert.rejects(() => storage.read('capped.txt', { maxBytes: 9 }), (err: unknown) => isResourceSyncError(err, 'RS_LIMIT_BYTES'));
    });

    withStorage('remove answers whether there was a copy; a missing key is not an error; the others stay', async (storage) => {
      await put(storage, 'd/e/f.txt', text('f'));
      await put(storage, 'd/g.txt', text('g'));
      assert.equal(await storage.remove('d/e/f.txt'), true);
      assert.equal(await storage.remove('d/e/f.txt'), false);
      assert.equal(await storage.remove('never/was.txt'), false);
      assert.equal(await storage.stat('d/e/f.txt'), undefined);
      assert.deepEqual(await keysOf(storage), new Map([['d/g.txt', 1]]));
      assert.equal(await storage.remove('d/g.txt'), true);
      assert.equal(await storage.isEmpty(), true);
      await put(storage, 'd/e/f.txt', text('again'));
      assert.equal(await readAll(storage, 'd/e/f.txt'), 'again');
    });

    withStorage('list yields every committed key once, with its size', async (storage) => {
      const want = new Map<string, number>();
      for (let i = 0; i < 30; i++) {
        const key = `list/${i % 3}/${i % 5}/item-${i}.txt`;
        const body = text('x'.repeat(i));
        await put(storage, key, body);
        want.set(key, body.length);
      }
      const seen: string[] = [];
      for await (const item of storage.list()) seen.push(item.key);
      assert.equal(seen.length, new Set(seen).size, 'no key twice');
      assert.deepEqual(await keysOf(storage), want);
    });

    withStorage('keys that are not safe relative paths are refused with RS_UNSAFE_PATH, before anything is stored', async (storage) => {
      for (const key of ['../x', '/abs/olute', 'a/../../b', '', 'a//b', './a', 'a\\b', '.resourcesync/state.db', 'a/\u0000b']) {
        await rejectsUnsafe(`stage '${key}'`, () => storage.stage(key));
        await rejectsUnsafe(`stat '${key}'`, () => storage.stat(key));
        await rejectsUnsafe(`read '${key}'`, () => storage.read(key, { maxBytes: 10 }));
        await rejectsUnsafe(`hash '${key}'`, () => storage.hash(key, ['md5']));
        await rejectsUnsafe(`remove '${key}'`, () => storage.remove(key));
      }
      assert.deepEqual(await keysOf(storage), new Map());
    });

    withStorage('settle after many concurrent commits: every copy is there', async (storage) => {
      const keys = Array.from({ length: 200 }, (_, i) => `many/${i % 10}/${i}.txt`);
      await Promise.all(keys.map((key) => put(storage, key, text(key))));
      await storage.settle();
      await storage.settle(); // nothing under way: resolves
      const listed = await keysOf(storage);
      assert.equal(listed.size, keys.length);
      for (const key of keys) assert.equal(await readAll(storage, key), key);
    });

    withStorage('stages of different keys are independent: interleaved writes, commits in another order', async (storage) => {
      const stages = await Promise.all(Array.from({ length: 20 }, (_, i) => storage.stage(`c/${i}.txt`)));
      for (let round = 0; round < 3; round++) {
        await Promise.all(stages.map((staged, i) => staged.write(text(`${i}:${round};`))));
      }
      for (const [i, staged] of [...stages.entries()].reverse()) {
        if (i % 4 === 0) await staged.abort();
        else await staged.commit();
      }
      for (let i = 0; i < 20; i++) {
        assert.equal(await readAll(storage, `c/${i}.txt`), i % 4 === 0 ? undefined : `${i}:0;${i}:1;${i}:2;`);
      }
    });

    withStorage('discardStaged drops what a killed run left staged; committed copies stay', async (storage) => {
      await put(storage, 'held.txt', text('held'));
      const left = await storage.stage('left.txt');
      await left.write(text('left behind'));
      await storage.discardStaged();
      assert.deepEqual(await keysOf(storage), new Map([['held.txt', 4]]));
      await put(storage, 'left.txt', text('written again'));
      assert.equal(await readAll(storage, 'left.txt'), 'written again');
    });

    withStorage('a scratch file is outside every key', async (storage) => {
      const a = await storage.scratchFile();
      const b = await storage.scratchFile();
      assert.notEqual(a, b);
      assert.deepEqual(await keysOf(storage), new Map());
    });

    withStorage('what is committed and settled is there when the storage is opened again', async (storage, under) => {
      if (under.reopen === undefined) return;
      await put(storage, 'p/q.txt', text('persisted'));
      await storage.settle();
      const again = await under.reopen();
      assert.equal(await readAll(again, 'p/q.txt'), 'persisted');
      assert.deepEqual(await keysOf(again), new Map([['p/q.txt', 9]]));
    });
  });
}
