import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { downloadToFile } from './download-to-file.js';
import type { HttpResponse } from './http.js';

/** A response whose body comes in the given chunks. */
function response(chunks: Uint8Array[]): HttpResponse & { returned: boolean } {
  const res = {
    url: 'http://127.0.0.1/p.zip',
    status: 200,
    headers: {},
    returned: false,
    body: {
      [Symbol.asyncIterator]() {
        let i = 0;
        return {
          next: () => Promise.resolve(i < chunks.length ? { done: false as const, value: chunks[i++]! } : { done: true as const, value: undefined }),
          return: () => {
            res.returned = true;
            return Promise.resolve({ done: true as const, value: undefined });
          },
        };
      },
    },
    discard: () => Promise.resolve(),
  };
  return res;
}

const md5 = (data: Uint8Array): string => createHash('md5').update(data).digest('hex');
const url = 'http://127.0.0.1/p.zip';

void test('downloadToFile: the body in several chunks is saved whole, its length and digests checked', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-dl-'));
  try {
    const parts = [Buffer.from('hello '), Buffer.from('wide '), Buffer.from('world')];
    const whole = Buffer.concat(parts);
    const seen: number[] = [];
    const file = join(dir, 'a.zip');
    const got = await downloadToFile(response(parts), file, {
      url,
      length: whole.length,
      hashes: [{ algorithm: 'md5', digest: md5(whole) }],
      onBytes: (n) => seen.push(n),
    });
    assert.deepEqual(got, { bytes: whole.length, digests: { md5: md5(whole) } });
    assert.deepEqual(await readFile(file), whole);
    assert.deepEqual(seen, [6, 11, 16]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('downloadToFile: caps, a wrong length or hash and an abort fail with their codes and leave no file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-dl-'));
  try {
    const parts = [Buffer.alloc(100, 1), Buffer.alloc(100, 2), Buffer.alloc(100, 3)];
    const tooBig = response(parts);
    await assert.rejects(downloadToFile(tooBig, join(dir, 'a'), { url, maxBytes: 150 }), {
      code: 'RS_LIMIT_BYTES',
      message: `Package '${url}' is larger than 150 bytes.`,
    });
    assert.equal(tooBig.returned, true, 'the rest of the body is let go');
    await assert.rejects(downloadToFile(response(parts), join(dir, 'b'), { url, length: 250 }), {
      code: 'RS_LENGTH_MISMATCH',
      message: `Package '${url}' is longer than its length '250'.`,
    });
    await assert.rejects(downloadToFile(response(parts), join(dir, 'c'), { url, length: 400 }), {
      code: 'RS_LENGTH_MISMATCH',
      message: `Package '${url}' has 300 bytes, not '400'.`,
    });
    await assert.rejects(
      downloadToFile(response(parts), join(dir, 'd'), { url, hashes: [{ algorithm: 'md5', digest: '0'.repeat(32) }] }),
      { code: 'RS_HASH_MISMATCH', message: `Package '${url}' has md5 '${md5(Buffer.concat(parts))}', not '${'0'.repeat(32)}'.` },
    );
    await assert.rejects(downloadToFile(response(parts), join(dir, 'e'), { url, signal: AbortSignal.abort() }), {
      code: 'RS_ABORTED',
    });
    assert.deepEqual(await readdir(dir), [], 'every file removed');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('downloadToFile: without verify, a body that differs from its declarations is kept and its digests returned', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-dl-'));
  try {
    const data = Buffer.from('some package bytes');
    const file = join(dir, 'a.zip');
    const got = await downloadToFile(response([data]), file, {
      url,
      length: 3,
      hashes: [{ algorithm: 'sha-256', digest: 'ab' }],
      verify: false,
    });
    assert.equal(got.bytes, data.length);
    assert.equal(got.digests['sha-256'], createHash('sha256').update(data).digest('hex'));
    assert.deepEqual(await readFile(file), data);
    await assert.rejects(downloadToFile(response([data]), file, { url }), { code: 'EEXIST' }, 'an existing file is never overwritten');
    assert.deepEqual(await readFile(file), data);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
