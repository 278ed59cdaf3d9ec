import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { writeDocumentString } from './write-document.js';
import { writeDocumentSet, type PartInfo, type PartSink } from './write-document-set.js';
import type { DocumentHeader, Entry } from '../model/types.js';
import { isResourceSyncError } from '../errors.js';
import { RS_NS, SITEMAP_NS } from '../constants.js';

const NS = `xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}"`;

async function* asAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const x of items) {
    await Promise.resolve();
    yield x;
  }
}

interface Written {
  info: PartInfo;
  chunks: Uint8Array[];
  closed: boolean;
  aborted: unknown;
}

function memorySinks(): { sink: (info: PartInfo) => PartSink; written: Written[]; text(url: string): string } {
  const written: Written[] = [];
  return {
    written,
    sink(info) {
      const w: Written = { info, chunks: [], closed: false, aborted: undefined };
      written.push(w);
      return {
        async write(chunk) {
          assert.equal(w.closed, false);
          await new Promise<void>((r) => setImmediate(r));
          w.chunks.push(chunk);
        },
        close() {
          w.closed = true;
          return Promise.resolve();
        },
        abort(err) {
          w.aborted = err;
          return Promise.resolve();
        },
      };
    },
    text(url) {
      const w = written.find((x) => x.info.url === url);
      assert.ok(w, url);
      return Buffer.concat(w.chunks).toString('utf8');
    },
  };
}

const LIST_HEADER: DocumentHeader = {
  root: 'urlset',
  md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
  ln: [{ rel: 'up', href: 'http://example.com/capabilitylist.xml' }],
};
const INDEX_URL = 'http://example.com/resourcelist.xml';
const partUrl = (n: number): string => `http://example.com/resourcelist-part${n}.xml`;

function locs(xml: string): string[] {
  return [...xml.matchAll(/<loc>([^<]*)<\/loc>/g)].map((m) => m[1]!);
}

function simple(n: number): Entry[] {
  return Array.from({ length: n }, (_, i) => ({ loc: `http://example.com/r${String(i).padStart(3, '0')}` }));
}

void test('writeDocumentSet splits at maxEntries into parts with index links, then writes the index', async () => {
  const m = memorySinks();
  const entries = simple(7);
  const result = await writeDocumentSet(LIST_HEADER, asAsync(entries), {
    maxEntries: 3,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m.sink,
    batchBytes: 50,
    partEntry: (p) => ({ md: { at: '2013-01-03T09:00:00Z' }, lastmod: `2013-01-0${p.index}T00:00:00Z` }),
  });
  assert.equal(result.indexed, true);
  assert.equal(result.indexUrl, INDEX_URL);
  assert.deepEqual(
    result.parts.map((p) => [p.index, p.url, p.entries, p.first?.loc, p.last?.loc]),
    [
      [1, partUrl(1), 3, entries[0]!.loc, entries[2]!.loc],
      [2, partUrl(2), 3, entries[3]!.loc, entries[5]!.loc],
      [3, partUrl(3), 1, entries[6]!.loc, entries[6]!.loc],
    ],
  );
  assert.deepEqual(
    m.written.map((w) => [w.info.role, w.info.index, w.info.url, w.closed]),
    [
      ['part', 1, partUrl(1), true],
      ['part', 2, partUrl(2), true],
      ['part', 3, partUrl(3), true],
      ['index', 0, INDEX_URL, true],
    ],
  );
  for (const p of result.parts) {
    const xml = m.text(p.url);
    assert.equal(Buffer.byteLength(xml), p.bytes);
    assert.equal(
      xml,
      writeDocumentString({
        ...LIST_HEADER,
        ln: [...LIST_HEADER.ln, { rel: 'index', href: INDEX_URL }],
        entries: entries.slice((p.index - 1) * 3, p.index * 3),
      }),
    );
    assert.match(
      xml,
      /<rs:ln rel="up" href="http:\/\/example.com\/capabilitylist.xml"\/>\n {2}<rs:ln rel="index" href="http:\/\/example.com\/resourcelist.xml"\/>\n {2}<rs:md capability="resourcelist"/,
    );
  }
  assert.equal(
    m.text(INDEX_URL),
    `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex ${NS}>
  <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
  <sitemap>
    <loc>${partUrl(1)}</loc>
    <lastmod>2013-01-01T00:00:00Z</lastmod>
    <rs:md at="2013-01-03T09:00:00Z"/>
  </sitemap>
  <sitemap>
    <loc>${partUrl(2)}</loc>
    <lastmod>2013-01-02T00:00:00Z</lastmod>
    <rs:md at="2013-01-03T09:00:00Z"/>
  </sitemap>
  <sitemap>
    <loc>${partUrl(3)}</loc>
    <lastmod>2013-01-03T00:00:00Z</lastmod>
    <rs:md at="2013-01-03T09:00:00Z"/>
  </sitemap>
</sitemapindex>
`,
  );
});

void test('writeDocumentSet writes one document without index link when the entries fit, at the index URL', async () => {
  for (const n of [0, 1, 3]) {
    const m = memorySinks();
    const entries = simple(n);
    const result = await writeDocumentSet(LIST_HEADER, entries, {
      maxEntries: 3,
      indexUrl: INDEX_URL,
      partUrl,
      sink: m.sink,
    });
    assert.equal(result.indexed, false);
    assert.equal(result.indexUrl, undefined);
    assert.equal(result.parts.length, 1);
    assert.equal(result.parts[0]!.entries, n);
    assert.equal(result.parts[0]!.url, INDEX_URL);
    assert.deepEqual(
      m.written.map((w) => [w.info.role, w.info.url]),
      [['single', INDEX_URL]],
    );
    const xml = m.text(INDEX_URL);
    assert.equal(xml, writeDocumentString({ ...LIST_HEADER, entries }));
    assert.equal(Buffer.byteLength(xml), result.parts[0]!.bytes);
    assert.doesNotMatch(xml, /rel="index"/);
  }
  // One more entry than fits: two parts.
  const m = memorySinks();
  const result = await writeDocumentSet(LIST_HEADER, simple(4), {
    maxEntries: 3,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m.sink,
  });
  assert.deepEqual(
    result.parts.map((p) => p.entries),
    [3, 1],
  );
  assert.equal(m.written.length, 3);
});

void test('writeDocumentSet with alwaysIndex writes an index even for one part', async () => {
  const m = memorySinks();
  const result = await writeDocumentSet(LIST_HEADER, simple(2), {
    alwaysIndex: true,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m.sink,
  });
  assert.equal(result.indexed, true);
  assert.deepEqual(
    m.written.map((w) => [w.info.role, w.info.url]),
    [
      ['part', partUrl(1)],
      ['index', INDEX_URL],
    ],
  );
  assert.match(m.text(partUrl(1)), /<rs:ln rel="index" href="http:\/\/example.com\/resourcelist.xml"\/>/);
  assert.deepEqual(locs(m.text(INDEX_URL)), [partUrl(1)]);
});

void test('writeDocumentSet splits at maxBytes, counting UTF-8 bytes of the whole document', async () => {
  // Entries of equal size; 'é' takes two bytes in UTF-8.
  const entries = Array.from({ length: 10 }, (_, i) => ({ loc: `http://example.com/é${i}` }));
  const oneEntry = Buffer.byteLength(writeDocumentString({ root: 'urlset', ln: [], entries: [entries[0]!] }));
  const empty = Buffer.byteLength(writeDocumentString({ root: 'urlset', ln: [], entries: [] }));
  const entryBytes = oneEntry - empty;
  const withIndexLink = Buffer.byteLength(
    writeDocumentString({ root: 'urlset', ln: [{ rel: 'index', href: INDEX_URL }], entries: [] }),
  );
  // Room for exactly 4 entries in a part (not 5).
  const maxBytes = withIndexLink + 4 * entryBytes + entryBytes - 1;
  const m = memorySinks();
  const result = await writeDocumentSet({ root: 'urlset', ln: [] }, entries, {
    maxBytes,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m.sink,
  });
  assert.deepEqual(
    result.parts.map((p) => p.entries),
    [4, 4, 2],
  );
  for (const p of result.parts) {
    const xml = m.text(p.url);
    assert.equal(Buffer.byteLength(xml), p.bytes);
    assert.ok(p.bytes <= maxBytes);
    assert.deepEqual(
      locs(xml),
      entries.slice((p.index - 1) * 4, p.index * 4).map((e) => e.loc),
    );
  }
  assert.deepEqual(locs(m.text(INDEX_URL)), [partUrl(1), partUrl(2), partUrl(3)]);
  // Exactly at the limit: one part of 4 (the single header is smaller than the part header).
  const m2 = memorySinks();
  const exact = await writeDocumentSet({ root: 'urlset', ln: [] }, entries.slice(0, 4), {
    maxBytes: withIndexLink + 4 * entryBytes,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m2.sink,
  });
  assert.equal(exact.indexed, false);
  assert.equal(exact.parts[0]!.bytes, empty + 4 * entryBytes);
});

void test('writeDocumentSet refuses an entry larger than a document may be', async () => {
  const m = memorySinks();
  await assert.rejects(
    writeDocumentSet(LIST_HEADER, [{ loc: 'http://example.com/' + 'x'.repeat(1000) }], {
      maxBytes: 500,
      indexUrl: INDEX_URL,
      partUrl,
      sink: m.sink,
    }),
    (err: unknown) => isResourceSyncError(err, 'RS_LIMIT_BYTES'),
  );
  assert.equal(m.written.length, 0);
  await assert.rejects(
    writeDocumentSet(LIST_HEADER, [], { maxEntries: 0, indexUrl: INDEX_URL, partUrl, sink: m.sink }),
    /maxEntries/,
  );
});

void test('writeDocumentSet gzips every document of the set', async () => {
  const m = memorySinks();
  const entries = simple(5);
  const result = await writeDocumentSet(LIST_HEADER, entries, {
    maxEntries: 2,
    gzip: true,
    indexUrl: INDEX_URL,
    partUrl,
    sink: m.sink,
  });
  assert.equal(result.parts.length, 3);
  for (const w of m.written) {
    const xml = gunzipSync(Buffer.concat(w.chunks)).toString('utf8');
    if (w.info.role === 'index') assert.deepEqual(locs(xml), [partUrl(1), partUrl(2), partUrl(3)]);
    else assert.equal(Buffer.byteLength(xml), result.parts[w.info.index - 1]!.bytes);
  }
});

void test('writeDocumentSet aborts the open sink when the entries fail, keeping closed parts', async () => {
  async function* failing(): AsyncGenerator<Entry> {
    await Promise.resolve();
    yield* simple(5);
    throw new Error('source broke');
  }
  const m = memorySinks();
  await assert.rejects(
    writeDocumentSet(LIST_HEADER, failing(), {
      maxEntries: 2,
      indexUrl: INDEX_URL,
      partUrl,
      sink: m.sink,
      batchBytes: 1,
    }),
    /source broke/,
  );
  assert.deepEqual(
    m.written.map((w) => [w.info.url, w.closed, w.aborted instanceof Error]),
    [
      [partUrl(1), true, false],
      [partUrl(2), true, false],
      [partUrl(3), false, true],
    ],
  );
});

void test('writeDocumentSet stops on an aborted signal', async () => {
  const controller = new AbortController();
  async function* slow(): AsyncGenerator<Entry> {
    await Promise.resolve();
    for (let i = 0; i < 100; i++) {
      if (i === 30) controller.abort();
      yield { loc: `http://example.com/${i}` };
    }
  }
  const m = memorySinks();
  await assert.rejects(
    writeDocumentSet(LIST_HEADER, slow(), {
      maxEntries: 10,
      indexUrl: INDEX_URL,
      partUrl,
      sink: m.sink,
      batchBytes: 1,
      signal: controller.signal,
    }),
    (err: unknown) => isResourceSyncError(err, 'RS_ABORTED'),
  );
  assert.ok(m.written.length <= 4);
  assert.ok(!m.written.some((w) => w.info.role === 'index'));
});

void test('writeDocumentSet streams parts after the first without holding entries', async () => {
  let pulled = 0;
  function* many(n: number): Generator<Entry> {
    for (let i = 0; i < n; i++) {
      pulled++;
      yield { loc: `http://example.com/${String(i).padStart(8, '0')}` };
    }
  }
  const entryBytes = '  <url>\n    <loc>http://example.com/00000000</loc>\n  </url>\n'.length;
  const batchBytes = 4096;
  const perBatch = Math.ceil(batchBytes / entryBytes);
  let written = 0; // entries handed to sinks so far, from the bytes written
  let worst = 0;
  const sink = (info: PartInfo): PartSink => ({
    write(chunk) {
      if (info.role === 'part' && info.index > 1) {
        written += Buffer.from(chunk).toString('utf8').split('<url>').length - 1;
        worst = Math.max(worst, pulled - 2000 - written); // part 1 (2,000 entries) was held, then written
      }
      return Promise.resolve();
    },
    close: () => Promise.resolve(),
  });
  const result = await writeDocumentSet({ root: 'urlset', ln: [] }, many(10_000), {
    maxEntries: 2000,
    batchBytes,
    indexUrl: INDEX_URL,
    partUrl,
    sink,
  });
  assert.equal(result.parts.length, 5);
  // Ahead of what the sinks received: at most one batch plus the held-back entry.
  assert.ok(worst > 0 && worst <= perBatch + 1, `worst ${worst}, per batch ${perBatch}`);
});
