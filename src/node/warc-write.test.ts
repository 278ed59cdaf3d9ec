import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isResourceSyncError } from '../core/errors.js';
import { base32 } from '../core/warc.js';
import { WarcWriter } from './warc-write.js';
import { readWarcPayload, scanWarc } from './warc-read.js';

const sha1 = (b: Uint8Array): string => `sha1:${base32(createHash('sha1').update(b).digest())}`;

void test('records in memory and from files (digested, then compressed) read back at their offsets with their digests', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-warc-write-'));
  try {
    const big = Buffer.from(Array.from({ length: 3 * 1024 * 1024 + 1 }, (_, i) => (i * 11) % 256));
    await writeFile(join(dir, 'big.bin'), big);
    const file = join(dir, 'a.warc.gz');
    const w = await WarcWriter.open(file);
    const head = Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 3145729\r\n\r\n');
    const a = await w.write({ type: 'resource', date: 0, targetUri: 'http://x/a', block: Buffer.from('alpha') });
    const b = await w.write({ type: 'response', date: 0, targetUri: 'http://x/big', contentType: 'application/http; msgtype=response', block: { file: join(dir, 'big.bin'), size: big.length }, prefix: head });
    const c = await w.write({ type: 'resource', date: 0, targetUri: 'http://x/c', block: Buffer.alloc(0), md5: createHash('md5').update('').digest('hex') });
    await w.close();
    assert.equal(w.size, (await stat(file)).size);
    assert.deepEqual([a.payloadDigest, b.payloadDigest, c.payloadDigest], [sha1(Buffer.from('alpha')), sha1(big), sha1(Buffer.alloc(0))]);
    assert.equal(b.blockDigest, sha1(Buffer.concat([head, big])));
    const fh = await open(file, 'r');
    try {
      const seen = [];
      for await (const r of scanWarc(fh)) seen.push([r.offset, r.length, r.payloadStart, r.payloadDigest]);
      assert.deepEqual(seen, [
        [a.offset, a.length, 0, a.payloadDigest],
        [b.offset, b.length, head.length, b.payloadDigest],
        [c.offset, c.length, 0, c.payloadDigest],
      ]);
      const parts: Buffer[] = [];
      for await (const chunk of readWarcPayload(fh, b.offset, head.length)) parts.push(chunk);
      assert.ok(Buffer.concat(parts).equals(big));
    } finally {
      await fh.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('a payload that is not what was expected is refused and nothing is written: md5, a file of another size', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-warc-write-'));
  try {
    const file = join(dir, 'a.warc.gz');
    await writeFile(join(dir, 'f.bin'), Buffer.alloc(5 * 1024 * 1024, 1));
    const w = await WarcWriter.open(file);
    await w.write({ type: 'resource', date: 0, targetUri: 'http://x/ok', block: Buffer.from('ok') });
    const mismatch = (e: unknown): boolean => isResourceSyncError(e, 'RS_HASH_MISMATCH');
    await assert.rejects(w.write({ type: 'resource', date: 0, block: Buffer.from('x'), md5: '0'.repeat(32) }), mismatch);
    await assert.rejects(w.write({ type: 'resource', date: 0, block: { file: join(dir, 'f.bin'), size: 42 } }), mismatch);
    await assert.rejects(w.write({ type: 'resource', date: 0, block: { file: join(dir, 'f.bin'), size: 5 * 1024 * 1024 }, md5: '0'.repeat(32) }), mismatch);
    await w.close();
    const fh = await open(file, 'r');
    let n = 0;
    for await (const r of scanWarc(fh)) n += r.targetUri === 'http://x/ok' ? 1 : 100;
    await fh.close();
    assert.equal(n, 1, 'only the good record');
    assert.ok((await readFile(file)).length < 1000);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
