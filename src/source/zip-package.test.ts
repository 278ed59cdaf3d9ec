import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { unzipEntries } from '../../test/helpers/unzip.js';
import { splitPackages, writeZipPackage } from './zip-package.js';

void test('writeZipPackage writes manifest.xml and the bitstreams; every CRC checks out', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const a = randomBytes(3 * 1024 * 1024 + 17);
    const b = Buffer.from('ünïcödé');
    writeFileSync(join(dir, 'a.bin'), a);
    writeFileSync(join(dir, 'b.txt'), b);
    const md5 = (x: Buffer): string => createHash('md5').update(x).digest('hex');
    const out = join(dir, 'pkg.zip');
    const pkg = await writeZipPackage(out, Buffer.from('<urlset/>'), [
      { zipPath: 'resources/dir/a.bin', file: join(dir, 'a.bin'), size: a.length, mtimeMs: Date.UTC(2020, 0, 1), md5: md5(a) },
      { zipPath: 'resources/é #%.txt', file: join(dir, 'b.txt'), size: b.length, mtimeMs: Date.UTC(2020, 0, 1) },
    ]);
    const bytes = readFileSync(out);
    assert.equal(pkg.length, bytes.length);
    assert.equal(pkg.md5, md5(bytes));
    const got = await unzipEntries(out); // checks every CRC-32 and size
    assert.deepEqual([...got.keys()], ['manifest.xml', 'resources/dir/a.bin', 'resources/é #%.txt']);
    assert.ok(got.get('resources/dir/a.bin')!.equals(a));
    assert.ok(got.get('resources/é #%.txt')!.equals(b));
    assert.equal(got.get('manifest.xml')!.toString(), '<urlset/>');
  } finally {
    await cleanup();
  }
});

void test('writeZipPackage refuses a bitstream whose content no longer matches, and leaves nothing behind', async () => {
  const { dir, cleanup } = await tempDir();
  try {
    writeFileSync(join(dir, 'a.txt'), 'changed');
    const out = join(dir, 'pkg.zip');
    await assert.rejects(
      writeZipPackage(out, Buffer.from('<urlset/>'), [{ zipPath: 'a.txt', file: join(dir, 'a.txt'), size: 7, mtimeMs: 0, md5: '0'.repeat(32) }]),
      { code: 'RS_HASH_MISMATCH' },
    );
    await assert.rejects(
      writeZipPackage(out, Buffer.from('<urlset/>'), [{ zipPath: 'a.txt', file: join(dir, 'missing.txt'), size: 7, mtimeMs: 0 }]),
      { code: 'RS_ZIP' },
    );
    assert.deepEqual(readdirSync(dir), ['a.txt']);
    assert.throws(() => statSync(out));
  } finally {
    await cleanup();
  }
});

void test('splitPackages keeps order and puts an oversized item alone', () => {
  const sizes = [5, 5, 12, 1, 1, 9].map((size, i) => ({ size, i }));
  assert.deepEqual(
    splitPackages(sizes, 10).map((p) => p.map((x) => x.i)),
    [[0, 1], [2], [3, 4], [5]],
  );
});
