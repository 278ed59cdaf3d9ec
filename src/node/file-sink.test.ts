import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fileSink, writeFileAtomic } from './file-sink.js';
import { writeDocument, writeDocumentString } from '../core/xml/write-document.js';
import { writeDocumentSet } from '../core/xml/write-document-set.js';
import type { DocumentHeader, Entry } from '../core/model/types.js';
import { isResourceSyncError } from '../core/errors.js';

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'rs-file-sink-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const header: DocumentHeader = {
  root: 'urlset',
  md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
  ln: [],
};
const entries = (n: number): Entry[] =>
  Array.from({ length: n }, (_, i) => ({ loc: `http://example.com/r${i}`, md: { length: String(i) } }));

void test('writeFileAtomic writes the document and leaves no temporary file', async () => {
  await withDir(async (dir) => {
    const path = join(dir, 'resourcelist.xml');
    const list = entries(2000);
    await writeFileAtomic(path, writeDocument(header, list, { batchBytes: 4096 }), { fsync: true });
    assert.equal(await readFile(path, 'utf8'), writeDocumentString({ ...header, entries: list }));
    assert.deepEqual(await readdir(dir), ['resourcelist.xml']);
    // Replacing an existing file.
    await writeFileAtomic(path, writeDocument(header, list.slice(0, 1), { gzip: true }));
    assert.equal(
      gunzipSync(await readFile(path)).toString('utf8'),
      writeDocumentString({ ...header, entries: list.slice(0, 1) }),
    );
    assert.deepEqual(await readdir(dir), ['resourcelist.xml']);
  });
});

void test('writeFileAtomic removes the temporary file on error and keeps the old file', async () => {
  await withDir(async (dir) => {
    const path = join(dir, 'resourcelist.xml');
    await writeFile(path, 'old');
    async function* failing(): AsyncGenerator<Entry> {
      await Promise.resolve();
      yield* entries(3000);
      throw new Error('source broke');
    }
    await assert.rejects(writeFileAtomic(path, writeDocument(header, failing(), { batchBytes: 1024 })), /source broke/);
    assert.equal(await readFile(path, 'utf8'), 'old');
    assert.deepEqual(await readdir(dir), ['resourcelist.xml']);
    // An invalid character in an entry: same outcome.
    const bad = [{ loc: 'http://example.com/\u0000' }];
    await assert.rejects(writeFileAtomic(path, writeDocument(header, bad)), (err: unknown) =>
      isResourceSyncError(err, 'RS_INVALID_ARGUMENT'),
    );
    assert.deepEqual(await readdir(dir), ['resourcelist.xml']);
  });
});

void test('writeFileAtomic into a missing directory fails with RS_IO, unless asked to create it', async () => {
  await withDir(async (dir) => {
    await assert.rejects(writeFileAtomic(join(dir, 'missing', 'x.xml'), [new Uint8Array([60])]), (err: unknown) =>
      isResourceSyncError(err, 'RS_IO'),
    );
    assert.deepEqual(await readdir(dir), []);
    // With mkdir, the directory is created.
    await writeFileAtomic(join(dir, 'a', 'b', 'x.xml'), [new Uint8Array([60])], { mkdir: true, fsync: true });
    assert.equal(await readFile(join(dir, 'a', 'b', 'x.xml'), 'utf8'), '<');
  });
});

void test('fileSink: empty document, write after close, abort before any write', async () => {
  await withDir(async (dir) => {
    const empty = fileSink(join(dir, 'empty.xml'));
    await empty.close();
    assert.equal(await readFile(join(dir, 'empty.xml'), 'utf8'), '');
    await assert.rejects(empty.write(new Uint8Array([1])), (err: unknown) => isResourceSyncError(err, 'RS_IO'));
    const never = fileSink(join(dir, 'never.xml'));
    await never.abort(new Error('x'));
    const halfway = fileSink(join(dir, 'halfway.xml'));
    await halfway.write(new TextEncoder().encode('<urlset'));
    assert.equal((await readdir(dir)).length, 2); // empty.xml and the temporary file
    await halfway.abort();
    assert.deepEqual(await readdir(dir), ['empty.xml']);
  });
});

void test('writeDocumentSet into file sinks writes parts and index; an abort leaves no temporary file', async () => {
  await withDir(async (dir) => {
    const indexUrl = 'http://example.com/rl/resourcelist.xml';
    const partUrl = (n: number): string => `http://example.com/rl/resourcelist-${n}.xml`;
    const sink = ({ url }: { url: string }) => fileSink(join(dir, url.slice(url.lastIndexOf('/') + 1)));
    const result = await writeDocumentSet(header, entries(25), { maxEntries: 10, indexUrl, partUrl, sink });
    assert.equal(result.parts.length, 3);
    assert.deepEqual((await readdir(dir)).sort(), [
      'resourcelist-1.xml',
      'resourcelist-2.xml',
      'resourcelist-3.xml',
      'resourcelist.xml',
    ]);
    const index = await readFile(join(dir, 'resourcelist.xml'), 'utf8');
    assert.match(index, /^<\?xml[^>]*>\n<sitemapindex /);
    for (const p of result.parts) {
      const xml = await readFile(join(dir, `resourcelist-${p.index}.xml`), 'utf8');
      assert.equal(Buffer.byteLength(xml), p.bytes);
      assert.ok(xml.includes(`<rs:ln rel="index" href="${indexUrl}"/>`));
    }

    await rm(dir, { recursive: true });
    await mkdir(dir);
    await writeFile(join(dir, 'keep'), '');
    async function* failing(): AsyncGenerator<Entry> {
      await Promise.resolve();
      yield* entries(15);
      throw new Error('source broke');
    }
    await assert.rejects(
      writeDocumentSet(header, failing(), { maxEntries: 10, indexUrl, partUrl, sink }),
      /source broke/,
    );
    assert.deepEqual((await readdir(dir)).sort(), ['keep', 'resourcelist-1.xml']);
  });
});
