import { test } from 'node:test';
import assert from 'node:assert/strict';
import { textLines } from './text-lines.js';
import { ResourceSyncError } from '../core/errors.js';

async function lines(chunks: Array<string | Uint8Array>, maxLineBytes?: number): Promise<string[]> {
  const out: string[] = [];
  for await (const l of textLines((async function* () {
    yield* chunks;
  })(), maxLineBytes === undefined ? {} : { maxLineBytes })) out.push(`${l.line}:${l.text}`);
  return out;
}

void test('textLines: numbered lines, CRLF, a last line without newline, UTF-8 split between chunks', async () => {
  assert.deepEqual(await lines(['a\r\nb', 'c\n\n', 'é', 'z']), ['1:a', '2:bc', '3:', '4:éz']);
  const bytes = Buffer.from('{"loc":"https://ex.org/é"}\nsecond ligne ü\r\nthird');
  // every split of the bytes into chunks at random boundaries gives the same lines
  let seed = 7;
  for (let round = 0; round < 200; round++) {
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < bytes.length; ) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const n = 1 + (seed % 6);
      chunks.push(bytes.subarray(i, i + n));
      i += n;
    }
    assert.deepEqual(await lines(chunks), ['1:{"loc":"https://ex.org/é"}', '2:second ligne ü', '3:third']);
  }
});

void test('textLines: a line longer than the limit names its number, split or not', async () => {
  for (const chunks of [['ok\n', 'x'.repeat(20), '\n'], ['ok\nxxxxx', 'xxxxxxxxxxxxxxx'], ['ok\n' + 'x'.repeat(20)]]) {
    await assert.rejects(lines(chunks, 10), (err: unknown) => err instanceof ResourceSyncError && err.code === 'RS_LIMIT_BYTES' && err.data.line === 2);
  }
  assert.deepEqual(await lines(['0123456789\n'], 10), ['1:0123456789']);
});
