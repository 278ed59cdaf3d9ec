import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { SaxesParser } from 'saxes';
import { writeDocument, writeDocumentString } from './write-document.js';
import type { DocumentHeader, Entry, ResourceSyncDocument } from '../model/types.js';
import { isResourceSyncError } from '../errors.js';
import { RS_NS, SITEMAP_NS } from '../constants.js';

const NS = `xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}"`;

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

async function* asAsync<T>(items: Iterable<T>): AsyncGenerator<T> {
  for (const x of items) {
    await Promise.resolve();
    yield x;
  }
}

/** Parses with saxes (namespace-aware) and returns every element with its resolved attributes. */
function oracle(xml: string): { name: string; uri: string; attrs: Record<string, { uri: string; value: string }> }[] {
  const out: { name: string; uri: string; attrs: Record<string, { uri: string; value: string }> }[] = [];
  const p = new SaxesParser({ xmlns: true });
  p.on('error', (e) => {
    throw e;
  });
  p.on('opentag', (t) => {
    const attrs: Record<string, { uri: string; value: string }> = {};
    for (const a of Object.values(t.attributes)) {
      if (a.prefix === 'xmlns' || a.name === 'xmlns') continue;
      attrs[a.local] = { uri: a.uri, value: a.value };
    }
    out.push({ name: t.local, uri: t.uri, attrs });
  });
  p.write(xml).close();
  return out;
}

const RESOURCE_LIST: ResourceSyncDocument = {
  root: 'urlset',
  md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z', completed: '2013-01-03T09:01:00Z' },
  ln: [{ rel: 'up', href: 'http://example.com/dataset1/capabilitylist.xml' }],
  entries: [
    {
      loc: 'http://example.com/res1?a=1&b=2',
      lastmod: '2013-01-02T13:00:00Z',
      changefreq: 'daily',
      priority: '0.5',
      md: { hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6', length: '8876', type: 'text/html' },
      ln: [
        { rel: 'duplicate', pri: '1', href: 'http://mirror1.example.com/res1', modified: '2013-01-03T18:00:00Z' },
        { rel: 'describedby', href: 'http://example.com/res1.meta', type: 'application/xml' },
      ],
    },
    {
      loc: 'http://example.com/res2',
      md: { change: 'updated', datetime: '2013-01-03T18:00:00Z', path: '/res2', encoding: 'gzip' },
    },
  ],
};

const RESOURCE_LIST_XML = `<?xml version="1.0" encoding="UTF-8"?>
<urlset ${NS}>
  <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z" completed="2013-01-03T09:01:00Z"/>
  <url>
    <loc>http://example.com/res1?a=1&amp;b=2</loc>
    <lastmod>2013-01-02T13:00:00Z</lastmod>
    <changefreq>daily</changefreq>
    <priority>0.5</priority>
    <rs:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6" length="8876" type="text/html"/>
    <rs:ln rel="duplicate" pri="1" href="http://mirror1.example.com/res1" modified="2013-01-03T18:00:00Z"/>
    <rs:ln rel="describedby" href="http://example.com/res1.meta" type="application/xml"/>
  </url>
  <url>
    <loc>http://example.com/res2</loc>
    <rs:md change="updated" datetime="2013-01-03T18:00:00Z" encoding="gzip" path="/res2"/>
  </url>
</urlset>
`;

void test('a small document is written exactly as expected', async () => {
  assert.equal(writeDocumentString(RESOURCE_LIST), RESOURCE_LIST_XML);
  const bytes = await collect(writeDocument(RESOURCE_LIST, RESOURCE_LIST.entries));
  assert.equal(bytes.toString('utf8'), RESOURCE_LIST_XML);
});

void test('rs:md attributes come in the fixed order, whatever the object order', () => {
  const doc: ResourceSyncDocument = {
    root: 'sitemapindex',
    ln: [],
    md: {
      path: '/p',
      encoding: 'e',
      type: 't',
      length: '1',
      hash: 'md5:00',
      datetime: 'd',
      change: 'c',
      until: 'u',
      from: 'f',
      completed: 'co',
      at: 'a',
      capability: 'changelist',
    },
    entries: [{ loc: 'http://example.com/cl1.xml' }],
  };
  assert.equal(
    writeDocumentString(doc),
    `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex ${NS}>
  <rs:md capability="changelist" at="a" completed="co" from="f" until="u" change="c" datetime="d" hash="md5:00" length="1" type="t" encoding="e" path="/p"/>
  <sitemap>
    <loc>http://example.com/cl1.xml</loc>
  </sitemap>
</sitemapindex>
`,
  );
});

void test('an empty document and an empty rs:md are well-formed', () => {
  const xml = writeDocumentString({ root: 'urlset', md: {}, ln: [], entries: [] });
  assert.equal(xml, `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n  <rs:md/>\n</urlset>\n`);
  assert.equal(oracle(xml).length, 2);
});

void test('foreign namespaces, attributes and elements are written with their declarations', () => {
  const doc: ResourceSyncDocument = {
    root: 'urlset',
    namespaces: { dc: 'http://purl.org/dc/terms/' },
    attributes: [{ ns: 'urn:root', prefix: 'r', local: 'id', value: 'R1' }],
    md: {
      capability: 'resourcelist',
      at: '2013-01-03T09:00:00Z',
      extra: [
        { ns: 'http://purl.org/dc/terms/', prefix: 'dc', local: 'creator', value: 'Me & "you"' },
        { ns: 'urn:top', prefix: 't', local: 'x', value: 'line1\nline2\ttab' },
      ],
    },
    ln: [
      { rel: 'up', href: 'http://example.com/cap.xml', extra: [{ ns: '', prefix: '', local: 'unknown', value: 'u' }] },
    ],
    extensions: [{ ns: 'urn:ext', local: 'note', xml: '<e:note xmlns:e="urn:ext">top <b/></e:note>' }],
    entries: [
      {
        loc: 'http://example.com/res1',
        md: {
          hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6',
          extra: [
            { ns: 'urn:top', prefix: 't', local: 'y', value: '1' }, // bound on the root
            { ns: 'urn:local', prefix: 'l', local: 'z', value: '2' }, // declared locally
            { ns: 'urn:other', prefix: 'rs', local: 'clash', value: '3' }, // prefix taken: renamed
            { ns: 'urn:noprefix', prefix: '', local: 'np', value: '4' }, // needs a generated prefix
            { ns: 'http://www.w3.org/XML/1998/namespace', prefix: 'xml', local: 'lang', value: 'en' },
          ],
        },
        ln: [
          {
            rel: 'alternate',
            href: 'http://example.com/res1.pdf',
            extra: [{ ns: 'urn:local', prefix: 'l', local: 'z', value: '5' }],
          },
        ],
        extensions: [
          {
            ns: 'http://purl.org/dc/terms/',
            local: 'title',
            xml: '<dc:title xmlns:dc="http://purl.org/dc/terms/">T &amp; U</dc:title>',
          },
        ],
      },
    ],
  };
  const xml = writeDocumentString(doc);
  assert.match(
    xml,
    /<urlset [^>]*xmlns:dc="http:\/\/purl.org\/dc\/terms\/" xmlns:r="urn:root" xmlns:t="urn:top" r:id="R1">/,
  );
  assert.match(xml, /\n {2}<e:note xmlns:e="urn:ext">top <b\/><\/e:note>\n/);
  assert.match(xml, /dc:creator="Me &amp; &quot;you&quot;" t:x="line1&#10;line2&#9;tab"/);
  assert.match(xml, /\n {4}<dc:title xmlns:dc="http:\/\/purl.org\/dc\/terms\/">T &amp; U<\/dc:title>\n/);
  const els = oracle(xml);
  const root = els[0]!;
  assert.deepEqual(root.attrs.id, { uri: 'urn:root', value: 'R1' });
  const topMd = els.find((e) => e.name === 'md')!;
  assert.deepEqual(topMd.attrs.creator, { uri: 'http://purl.org/dc/terms/', value: 'Me & "you"' });
  assert.deepEqual(topMd.attrs.x, { uri: 'urn:top', value: 'line1\nline2\ttab' });
  const topLn = els.find((e) => e.name === 'ln')!;
  assert.deepEqual(topLn.attrs.unknown, { uri: '', value: 'u' });
  const mds = els.filter((e) => e.name === 'md');
  const entryMd = mds[1]!;
  assert.equal(entryMd.uri, RS_NS);
  assert.deepEqual(entryMd.attrs.y, { uri: 'urn:top', value: '1' });
  assert.deepEqual(entryMd.attrs.z, { uri: 'urn:local', value: '2' });
  assert.deepEqual(entryMd.attrs.clash, { uri: 'urn:other', value: '3' });
  assert.deepEqual(entryMd.attrs.np, { uri: 'urn:noprefix', value: '4' });
  assert.deepEqual(entryMd.attrs.lang, { uri: 'http://www.w3.org/XML/1998/namespace', value: 'en' });
  assert.doesNotMatch(xml, /xmlns:xml=/);
  const entryLn = els.filter((e) => e.name === 'ln')[1]!;
  assert.deepEqual(entryLn.attrs.z, { uri: 'urn:local', value: '5' });
  const title = els.find((e) => e.name === 'title')!;
  assert.equal(title.uri, 'http://purl.org/dc/terms/');
});

void test('bad names and namespace bindings are refused', () => {
  const base: ResourceSyncDocument = { root: 'urlset', ln: [], entries: [] };
  const bad: ResourceSyncDocument[] = [
    { ...base, namespaces: { rs: 'urn:not-rs' } },
    { ...base, namespaces: { '': 'urn:default' } },
    { ...base, namespaces: { 'a b': 'urn:x' } },
    { ...base, namespaces: { x: '' } },
    { ...base, md: { extra: [{ ns: 'urn:x', prefix: 'x', local: 'a:b', value: '' }] } },
    { ...base, md: { extra: [{ ns: '', prefix: '', local: 'xmlns', value: 'urn:x' }] } },
    {
      ...base,
      md: {
        extra: [
          { ns: 'urn:x', prefix: 'x', local: 'a', value: '1' },
          { ns: 'urn:x', prefix: 'y', local: 'a', value: '2' },
        ],
      },
    },
    { ...base, root: 'feed' as 'urlset' },
    { ...base, extensions: [{ ns: 'urn:x', local: 'a', xml: 'text' }] },
    { ...base, entries: [{ loc: 'http://x/', extensions: [{ ns: 'urn:x', local: 'a', xml: '<a>\u0000</a>' }] }] },
  ];
  for (const doc of bad) {
    assert.throws(
      () => writeDocumentString(doc),
      (err: unknown) => isResourceSyncError(err, 'RS_INVALID_ARGUMENT'),
      JSON.stringify(doc),
    );
  }
});

void test('an entry with a character XML 1.0 forbids throws, naming the entry and the field', async () => {
  const entries: Entry[] = [
    { loc: 'http://example.com/ok' },
    { loc: 'http://example.com/bad', md: { type: 'text/\u0001html' } },
  ];
  await assert.rejects(collect(writeDocument({ root: 'urlset', ln: [] }, entries)), (err: unknown) => {
    assert.ok(isResourceSyncError(err, 'RS_INVALID_ARGUMENT'));
    assert.match(
      err.message,
      /^Entry 2 \("http:\/\/example.com\/bad"\): rs:md type "text\/\\u0001html" contains U\+0001/,
    );
    assert.equal(err.data.loc, 'http://example.com/bad');
    return true;
  });
  assert.throws(
    () => writeDocumentString({ root: 'urlset', ln: [{ rel: 'up', href: 'http://x/\uFFFF' }], entries: [] }),
    /^ResourceSyncError: Document header: rs:ln href/,
  );
  assert.throws(
    () => writeDocumentString({ root: 'urlset', ln: [], entries: [{ lastmod: 'x' } as unknown as Entry] }),
    /Entry 1 has no 'loc' string/,
  );
});

function generated(n: number): Entry[] {
  const out: Entry[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      loc: `http://example.com/res/${i}?q=${i % 3 === 0 ? 'a&b' : 'é'}`,
      lastmod: '2013-01-02T13:00:00Z',
      md: { hash: `md5:${i.toString(16).padStart(32, '0')}`, length: String(i * 7), type: 'text/plain' },
    });
  }
  return out;
}

void test('batching gives identical output whatever batchBytes, for sync and async entries', async () => {
  const header: DocumentHeader = {
    root: 'urlset',
    md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
    ln: [],
  };
  const entries = generated(500);
  const expected = writeDocumentString({ ...header, entries });
  for (const batchBytes of [1, 7, 100, 4096, 256 * 1024]) {
    const chunks: Uint8Array[] = [];
    for await (const c of writeDocument(header, entries, { batchBytes })) chunks.push(c);
    assert.equal(Buffer.concat(chunks).toString('utf8'), expected, `batchBytes ${batchBytes}`);
    if (batchBytes === 1) assert.equal(chunks.length, 501);
    if (batchBytes === 256 * 1024) assert.equal(chunks.length, 1);
    const fromAsync = await collect(writeDocument(header, asAsync(entries), { batchBytes }));
    assert.equal(fromAsync.toString('utf8'), expected);
  }
  assert.throws(() => writeDocument(header, entries, { batchBytes: 0 }), /batchBytes/);
});

void test('gzip output decompresses to the same bytes', async () => {
  const header: DocumentHeader = {
    root: 'urlset',
    md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' },
    ln: [],
  };
  const entries = generated(3000);
  const plain = await collect(writeDocument(header, entries, { batchBytes: 10_000 }));
  const gz = await collect(writeDocument(header, asAsync(entries), { gzip: true, batchBytes: 10_000 }));
  assert.equal(gz[0], 0x1f);
  assert.equal(gz[1], 0x8b);
  assert.ok(gz.length < plain.length / 3);
  assert.deepEqual(gunzipSync(gz), plain);
});

void test('an error from the entry source reaches the consumer, gzipped or not', async () => {
  async function* failing(): AsyncGenerator<Entry> {
    await Promise.resolve();
    yield { loc: 'http://example.com/1' };
    throw new Error('source broke');
  }
  await assert.rejects(collect(writeDocument({ root: 'urlset', ln: [] }, failing())), /source broke/);
  await assert.rejects(collect(writeDocument({ root: 'urlset', ln: [] }, failing(), { gzip: true })), /source broke/);
});

void test('stopping a gzipped stream early ends the entry source', async () => {
  let finished = false;
  let pulled = 0;
  async function* many(): AsyncGenerator<Entry> {
    await Promise.resolve();
    try {
      for (let i = 0; i < 1_000_000; i++) {
        pulled++;
        yield { loc: `http://example.com/${i}` };
      }
    } finally {
      finished = true;
    }
  }
  for await (const chunk of writeDocument({ root: 'urlset', ln: [] }, many(), { gzip: true, batchBytes: 1024 })) {
    assert.ok(chunk.length > 0);
    break;
  }
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(finished, true);
  assert.ok(pulled < 1_000_000);
});

void test('writeDocument pulls entries only as fast as chunks are consumed', async () => {
  let pulled = 0;
  function* many(): Generator<Entry> {
    for (let i = 0; i < 200_000; i++) {
      pulled++;
      yield { loc: `http://example.com/${String(i).padStart(8, '0')}` };
    }
  }
  const entryChars = '  <url>\n    <loc>http://example.com/00000000</loc>\n  </url>\n'.length;
  const batchBytes = 16 * 1024;
  const perBatch = Math.ceil(batchBytes / entryChars);
  const plain = writeDocument({ root: 'urlset', ln: [] }, many(), { batchBytes })[Symbol.asyncIterator]();
  await plain.next();
  assert.ok(pulled <= perBatch + 1, `pulled ${pulled}`);
  await plain.next();
  assert.ok(pulled <= 2 * perBatch + 1, `pulled ${pulled}`);
  await plain.return?.();

  pulled = 0;
  const gz = writeDocument({ root: 'urlset', ln: [] }, many(), { batchBytes, gzip: true })[Symbol.asyncIterator]();
  await gz.next();
  await new Promise((r) => setTimeout(r, 50));
  // Read-ahead is bounded by the stream buffers (a few batches and zlib's 1 MiB input buffer).
  const bound = (1024 * 1024) / entryChars + 8 * perBatch;
  assert.ok(pulled < bound, `pulled ${pulled}, bound ${bound}`);
  await gz.return?.();
});
