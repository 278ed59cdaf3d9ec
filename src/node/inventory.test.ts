import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { inventory, inventoryFiles, type InventoryEntry } from './inventory.js';

async function all(it: AsyncIterable<InventoryEntry>): Promise<InventoryEntry[]> {
  const out: InventoryEntry[] = [];
  for await (const e of it) out.push(e);
  return out;
}

function md5(b: Buffer): string {
  return createHash('md5').update(b).digest('hex');
}

void test('inventory lists published files in byte order with length, mtime, type and hashes', async () => {
  const { dir, cleanup } = await tempDir();
  const outside = await tempDir();
  try {
    const files: Record<string, string> = {
      'a.txt': 'alpha',
      'a b.html': '<p>space</p>',
      'a-c.txt': 'dash',
      'a/b.txt': 'nested',
      'é/ü #%.pdf': 'non-ascii and reserved',
      'z/y/x.bin': 'deep',
      '😀.png': 'astral',
      'empty.txt': '',
    };
    for (const [p, c] of Object.entries(files)) {
      mkdirSync(join(dir, ...p.split('/').slice(0, -1)), { recursive: true });
      writeFileSync(join(dir, p), c);
    }
    // never published: hidden files and folders, the state folder, links leaving the tree
    writeFileSync(join(dir, '.hidden'), 'x');
    writeFileSync(join(dir, 'ctrl\u0001name.txt'), 'x');
    writeFileSync(join(dir, 'back\\slash.txt'), 'x');
    writeFileSync(Buffer.from(join(dir, 'latin1-\xe9.txt'), 'latin1'), 'x');
    mkdirSync(join(dir, '.git'));
    writeFileSync(join(dir, '.git', 'config'), 'x');
    mkdirSync(join(dir, '.resourcesync'));
    writeFileSync(join(dir, '.resourcesync', 'source.sqlite'), 'x');
    mkdirSync(join(dir, 'sub', '.cache'), { recursive: true });
    writeFileSync(join(dir, 'sub', '.cache', 'k'), 'x');
    writeFileSync(join(outside.dir, 'secret.txt'), 'secret');
    symlinkSync(join(outside.dir, 'secret.txt'), join(dir, 'leak.txt'));
    symlinkSync(outside.dir, join(dir, 'leakdir'));
    symlinkSync(join(dir, 'a.txt'), join(dir, 'inside-link.txt'));
    symlinkSync(join(dir, 'a'), join(dir, 'dirlink'));

    const t = new Date('2020-01-02T03:04:05Z');
    utimesSync(join(dir, 'a.txt'), t, t);
    const entries = await all(inventory(dir, { hashes: ['md5', 'sha-1', 'sha-256'] }));
    const expected = [...Object.keys(files), 'inside-link.txt'].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    assert.deepEqual(
      entries.map((e) => e.path),
      expected,
    );
    for (const e of entries) {
      const content = readFileSync(join(dir, e.path));
      assert.equal(e.size, content.length, e.path);
      assert.equal(e.hashes.md5, md5(content));
      assert.equal(e.hashes['sha-1'], createHash('sha1').update(content).digest('hex'));
      assert.equal(e.hashes['sha-256'], createHash('sha256').update(content).digest('hex'));
    }
    const a = entries.find((e) => e.path === 'a.txt')!;
    assert.equal(a.mtimeMs, t.getTime());
    assert.equal(a.type, 'text/plain');
    assert.equal(entries.find((e) => e.path === 'é/ü #%.pdf')!.type, 'application/pdf');
  } finally {
    await cleanup();
    await outside.cleanup();
  }
});

void test('inventory streams large files through every hash and reuses unchanged hashes', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const big = Buffer.alloc(3 * 1024 * 1024 + 123);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    writeFileSync(join(dir, 'big.bin'), big);
    writeFileSync(join(dir, 'small.txt'), 'small');
    const first = await all(inventory(dir, { hashes: ['md5', 'sha-256'], smallFileLimit: 1024 }));
    assert.equal(first[0]!.size, big.length);
    assert.equal(first[0]!.hashes.md5, md5(big));
    assert.equal(first[0]!.hashes['sha-256'], createHash('sha256').update(big).digest('hex'));

    // previous state with equal size and mtime: the stored (here deliberately fake) hash is kept, no read
    const prev = new Map(first.map((e) => [e.path, { size: e.size, mtimeMs: e.mtimeMs, hashes: { md5: 'f'.repeat(32), 'sha-256': e.hashes['sha-256']! } }]));
    let hashed = -1;
    const second = await all(inventory(dir, { hashes: ['md5', 'sha-256'], previous: (p) => prev.get(p), onProgress: (p) => (hashed = p.hashed) }));
    assert.equal(second[0]!.hashes.md5, 'f'.repeat(32));
    assert.equal(hashed, 0);
    // a requested algorithm missing from the previous state forces a read
    const third = await all(inventory(dir, { hashes: ['sha-1'], previous: (p) => prev.get(p) }));
    assert.equal(third[1]!.hashes['sha-1'], createHash('sha1').update('small').digest('hex'));
    // no algorithms: no content read at all
    const none = await all(inventory(dir, { hashes: [] }));
    assert.deepEqual(none[0]!.hashes, {});
  } finally {
    await cleanup();
  }
});

void test('inventory refuses a missing directory and honours abort', async () => {
  await assert.rejects(all(inventory('/nonexistent/definitely')), { code: 'RS_IO' });
  const { dir, cleanup } = await tempDir();
  try {
    for (let i = 0; i < 50; i++) writeFileSync(join(dir, `f${i}`), String(i));
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(all(inventory(dir, { signal: ac.signal, batchSize: 10 })), { code: 'RS_ABORTED' });
  } finally {
    await cleanup();
  }
});

void test('rewrite: a file is listed with the length and hashes of its published bytes, read again on every run', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    writeFileSync(join(dir, 'p.html'), '<head></head>');
    writeFileSync(join(dir, 'big.html'), 'x'.repeat(100));
    writeFileSync(join(dir, 'q.txt'), 'as stored');
    const add = (stored: Buffer): Uint8Array => Buffer.concat([stored, Buffer.from('!')]);
    const rewrite = (path: string): ((b: Buffer) => Uint8Array) | undefined => (path.endsWith('.html') ? add : undefined);
    const first = await all(inventory(dir, { hashes: ['md5'], rewrite, rewriteLimit: 50 }));
    const by = new Map(first.map((e) => [e.path, e]));
    assert.deepEqual([by.get('p.html')!.size, by.get('p.html')!.hashes.md5], [14, md5(Buffer.from('<head></head>!'))]);
    // over the limit, or not rewritten: as stored
    assert.deepEqual([by.get('big.html')!.size, by.get('q.txt')!.hashes.md5], [100, md5(Buffer.from('as stored'))]);
    // a previous state with the size and mtime on disk is not reused for a rewritten file
    const previous = (path: string): { size: number; mtimeMs: number; hashes: { md5?: string } } => {
      const e = by.get(path)!;
      return path === 'p.html' ? { size: 13, mtimeMs: e.mtimeMs, hashes: { md5: 'stale' } } : e;
    };
    const second = await all(inventory(dir, { hashes: ['md5'], rewrite, rewriteLimit: 50, previous }));
    assert.equal(second.find((e) => e.path === 'p.html')!.hashes.md5, md5(Buffer.from('<head></head>!')));
  } finally {
    await cleanup();
  }
});

void test('inventoryFiles judges given paths as inventory does: files, absent (gone, hidden, excluded, linked folder), folders', async () => {
  const { dir, cleanup } = await tempDir();
  const outside = await tempDir();
  try {
    mkdirSync(join(dir, 'sub'));
    mkdirSync(join(dir, '.hidden'));
    mkdirSync(join(dir, 'skip'));
    writeFileSync(join(dir, 'a.txt'), 'alpha');
    writeFileSync(join(dir, 'sub', 'b.txt'), 'bravo');
    writeFileSync(join(dir, '.hidden', 'c.txt'), 'hidden');
    writeFileSync(join(dir, 'skip', 'd.txt'), 'excluded');
    writeFileSync(join(outside.dir, 'e.txt'), 'outside');
    symlinkSync(outside.dir, join(dir, 'linked'));
    const states = [];
    for await (const s of inventoryFiles(dir, ['a.txt', 'sub/b.txt', 'gone.txt', '.hidden/c.txt', 'skip/d.txt', 'linked/e.txt', 'sub', '../x.txt'], { exclude: [join(dir, 'skip')] })) {
      states.push(s.kind === 'file' ? [s.path, s.kind, s.entry.size, s.entry.hashes.md5] : [s.path, s.kind]);
    }
    assert.deepEqual(states, [
      ['a.txt', 'file', 5, md5(Buffer.from('alpha'))],
      ['sub/b.txt', 'file', 5, md5(Buffer.from('bravo'))],
      ['gone.txt', 'absent'],
      ['.hidden/c.txt', 'absent'],
      ['skip/d.txt', 'absent'],
      ['linked/e.txt', 'absent'],
      ['sub', 'folder'],
      ['../x.txt', 'absent'],
    ]);
  } finally {
    await cleanup();
    await outside.cleanup();
  }
});

void test('settleMs: a file modified just now that hold says nothing of keeps its previous state; hold false reads it; a future mtime is not a write', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    writeFileSync(join(dir, 'known.txt'), 'new content');
    writeFileSync(join(dir, 'new.txt'), 'being written');
    writeFileSync(join(dir, 'future.txt'), 'from a skewed clock');
    writeFileSync(join(dir, 'old.txt'), 'settled');
    const old = new Date(Date.now() - 60_000);
    utimesSync(join(dir, 'old.txt'), old, old);
    const future = new Date(Date.now() + 3_600_000);
    utimesSync(join(dir, 'future.txt'), future, future);
    const previous = (p: string) => (p === 'known.txt' ? { size: 3, mtimeMs: 1, hashes: { md5: md5(Buffer.from('old')) } } : undefined);
    const listed = async (hold?: (p: string) => boolean | undefined) =>
      (await all(inventory(dir, { previous, settleMs: 10_000, ...(hold ? { hold } : {}) }))).map((e) => [e.path, e.size]);
    // known.txt keeps its previous state, new.txt is left out; the others are read
    assert.deepEqual(await listed(), [['future.txt', 19], ['known.txt', 3], ['old.txt', 7]]);
    // what the watcher knows wins: settled files are read as they are, changing ones held
    assert.deepEqual(await listed((p) => (p === 'new.txt' ? false : p === 'old.txt' ? true : undefined)), [['future.txt', 19], ['known.txt', 3], ['new.txt', 13]]);
  } finally {
    await cleanup();
  }
});
