import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SPEC_DIR } from '../../../test/helpers/paths.js';
import { parseDocument, readDocument } from './read-document.js';
import { writeDocument, writeDocumentString } from './write-document.js';
import { writeDocumentSet, type PartInfo, type PartSink } from './write-document-set.js';
import type { DocumentHeader, Entry, ResourceSyncDocument } from '../model/types.js';

/** The model without source positions (`line`, `mdLine`) and with notes reduced to their codes. */
function comparable(doc: ResourceSyncDocument): unknown {
  const { mdLine: _mdLine, notes, entries, ...header } = doc;
  return {
    ...header,
    notes: (notes ?? []).map((n) => n.code),
    entries: entries.map(({ line: _line, ...e }) => e),
  };
}

const DIRS = ['examples', 'examples-1.1', 'examples-archives'];

void test('every example of the standard survives parse → write → parse', async () => {
  let count = 0;
  for (const dir of DIRS) {
    for (const f of readdirSync(join(SPEC_DIR, dir)).filter((x) => x.endsWith('.xml'))) {
      const first = await parseDocument(readFileSync(join(SPEC_DIR, dir, f)));
      const written = writeDocumentString(first);
      const second = await parseDocument(written);
      assert.deepEqual(comparable(second), comparable(first), `${dir}/${f}`);
      // Writing again gives the same text: the writer's output is a fixed point.
      assert.equal(writeDocumentString(second), written, `${dir}/${f}`);
      // The streaming writer, gzipped, gives the same model.
      const streamed = await parseDocument(writeDocument(first, first.entries, { gzip: true, batchBytes: 64 }));
      assert.deepEqual(comparable(streamed), comparable(first), `${dir}/${f} (gzip)`);
      count++;
    }
  }
  assert.ok(count >= 60, `only ${count} examples found`);
});

const TRICKY: ResourceSyncDocument = {
  root: 'urlset',
  namespaces: { dc: 'http://purl.org/dc/terms/' },
  attributes: [{ ns: 'urn:root', prefix: 'r', local: 'id', value: 'R & 1' }],
  md: {
    capability: 'changelist',
    from: '2013-01-03T00:00:00Z',
    extra: [
      {
        ns: 'http://purl.org/dc/terms/',
        prefix: 'dc',
        local: 'creator',
        value: 'A "quoted" <name>\twith\ttabs\nand lines\r\n',
      },
    ],
  },
  ln: [{ rel: 'up', href: 'http://example.com/cap.xml?a=1&b=2' }],
  extensions: [
    {
      ns: 'http://purl.org/dc/terms/',
      local: 'title',
      xml: '<dc:title xmlns:dc="http://purl.org/dc/terms/">Top &amp; title</dc:title>',
    },
  ],
  entries: [
    {
      loc: 'http://example.com/ré<s>?x=1&y="2"',
      lastmod: '2013-01-03T18:00:00Z',
      changefreq: 'daily',
      priority: '0.8',
      md: {
        change: 'updated',
        datetime: '2013-01-03T18:00:00Z',
        hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6 sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784',
        length: '8876',
        type: 'text/html; charset="utf-8"',
        encoding: 'gzip',
        path: '/ré s/1',
        extra: [
          { ns: 'urn:local', prefix: 'l', local: 'z', value: '😀 \uFFFD' },
          { ns: '', prefix: '', local: 'unknown', value: 'kept' },
        ],
      },
      ln: [
        { rel: 'duplicate', pri: '1', href: 'http://mirror.example.com/res1', modified: '2013-01-03T18:00:00Z' },
        {
          rel: 'http://www.openarchives.org/rs/terms/patch',
          href: 'http://example.com/p',
          type: 'application/json-patch',
          hash: 'md5:00',
          length: '3',
          path: '/p',
          encoding: 'gzip',
        },
      ],
      extensions: [{ ns: 'urn:ext', local: 'note', xml: '<e:note xmlns:e="urn:ext" e:a="1">x <e:b></e:b> y</e:note>' }],
    },
    { loc: 'http://example.com/2', md: { change: 'deleted' } },
  ],
};

void test('a document with foreign namespaces and every escape survives write → parse', async () => {
  const parsed = await parseDocument(writeDocumentString(TRICKY));
  // Prefixes of the header's foreign attributes are declared on the root, so the parser lists them.
  const expected = comparable({ ...TRICKY, namespaces: { ...TRICKY.namespaces, r: 'urn:root' } }) as {
    notes: string[];
  };
  const actual = comparable(parsed) as { notes: string[] };
  // The unknown unprefixed attribute is kept and noted by the parser.
  assert.deepEqual(actual.notes, ['unknown-attribute']);
  assert.deepEqual({ ...actual, notes: [] }, { ...expected, notes: [] });
});

function generated(n: number): Entry[] {
  return Array.from({ length: n }, (_, i) => ({
    loc: `http://example.com/res/${i}?q=${i % 2 ? 'a&b' : 'é'}`,
    lastmod: '2013-01-02T13:00:00Z',
    md: { hash: `md5:${i.toString(16).padStart(32, '0')}`, length: String(i), type: 'text/plain' },
  }));
}

void test('a streamed, gzipped list is read back entry by entry', async () => {
  const header: DocumentHeader = {
    root: 'urlset',
    md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
    ln: [],
  };
  const entries = generated(5000);
  const reader = await readDocument(writeDocument(header, entries, { gzip: true, batchBytes: 3000 }));
  assert.deepEqual(reader.header.md, header.md);
  let i = 0;
  for await (const e of reader.entries) {
    const { line: _line, ...rest } = e;
    assert.deepEqual(rest, entries[i], `entry ${i}`);
    i++;
  }
  assert.equal(i, entries.length);
});

void test('the parts and the index of a document set read back as one list', async () => {
  const files = new Map<string, Uint8Array[]>();
  const sink = (info: PartInfo): PartSink => {
    const chunks: Uint8Array[] = [];
    files.set(info.url, chunks);
    return { write: (c) => Promise.resolve(void chunks.push(c)), close: () => Promise.resolve() };
  };
  const header: DocumentHeader = {
    root: 'urlset',
    md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
    ln: [{ rel: 'up', href: 'http://example.com/capabilitylist.xml' }],
  };
  const entries = generated(1234);
  const indexUrl = 'http://example.com/resourcelist.xml';
  const result = await writeDocumentSet(header, entries, {
    maxEntries: 500,
    gzip: true,
    indexUrl,
    partUrl: (n) => `http://example.com/resourcelist-${n}.xml`,
    sink,
    partEntry: () => ({ md: { at: '2013-01-03T09:00:00Z' } }),
  });
  assert.equal(result.parts.length, 3);
  const index = await parseDocument(files.get(indexUrl)!);
  assert.equal(index.root, 'sitemapindex');
  assert.deepEqual(index.md, header.md);
  assert.deepEqual(index.ln, header.ln);
  const all: Entry[] = [];
  for (const s of index.entries) {
    assert.deepEqual(s.md, { at: '2013-01-03T09:00:00Z' });
    const part = await parseDocument(files.get(s.loc)!);
    assert.equal(part.root, 'urlset');
    assert.deepEqual(part.ln, [...header.ln, { rel: 'index', href: indexUrl }]);
    for (const { line: _line, ...e } of part.entries) all.push(e);
  }
  assert.deepEqual(all, entries);
});
