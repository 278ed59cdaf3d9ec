import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument, readDocument } from './read-document.js';
import { isResourceSyncError } from '../errors.js';
import { RS_NS, SITEMAP_NS } from '../constants.js';
import { SPEC_DIR } from '../../../test/helpers/paths.js';

const HEAD = `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}">\n`;

/** A deterministic PRNG so that failures can be reproduced from the seed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function* randomSplits(bytes: Uint8Array, random: () => number): Generator<Uint8Array> {
  let i = 0;
  while (i < bytes.length) {
    const n = 1 + Math.floor(random() * (random() < 0.5 ? 4 : 300));
    yield bytes.subarray(i, i + n);
    i += n;
  }
}

const TRICKY = `<?xml version="1.0" encoding="UTF-8"?>
<!-- a comment before the root -->
<?some-pi with data?>
<urlset xmlns="${SITEMAP_NS}" xmlns:r="${RS_NS}" xmlns:dc="http://purl.org/dc/terms/" dc:note="root &amp; attr">
  <r:ln rel="up" href="http://example.com/cap.xml?a=1&amp;b=2"/>
  <r:md capability="resourcelist" at="2013-01-03T09:00:00Z" dc:x="y"/>
  <url>
    <loc> http://example.com/r%C3%A9s&#x31;?q=&lt;&gt;&quot;&apos; </loc>
    <lastmod>2013-01-02T13:00:00+01:00</lastmod>
    <changefreq>daily</changefreq>
    <r:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6 sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784" length="8876" type="text/plain"/>
    <r:ln rel="duplicate" href="http://mirror.example.com/res1" pri="1" modified="2013-01-02T13:00:00Z"/>
    <dc:title xml:lang="fr">Résumé — <![CDATA[<not markup>]]> &#233;t&#xE9; 😀</dc:title>
    <!-- comment inside -->
  </url>
  <url><loc>http://example.com/two</loc></url>
</urlset>
`;

test('parses a document with namespaces, references, CDATA and extensions', async () => {
  const doc = await parseDocument(TRICKY);
  assert.equal(doc.root, 'urlset');
  assert.deepEqual(doc.md, { capability: 'resourcelist', at: '2013-01-03T09:00:00Z', extra: [{ ns: 'http://purl.org/dc/terms/', prefix: 'dc', local: 'x', value: 'y' }] });
  assert.deepEqual(doc.ln, [{ rel: 'up', href: 'http://example.com/cap.xml?a=1&b=2' }]);
  assert.deepEqual(doc.namespaces, { dc: 'http://purl.org/dc/terms/' });
  assert.deepEqual(doc.attributes, [{ ns: 'http://purl.org/dc/terms/', prefix: 'dc', local: 'note', value: 'root & attr' }]);
  assert.equal(doc.entries.length, 2);
  const e = doc.entries[0]!;
  assert.equal(e.loc, `http://example.com/r%C3%A9s1?q=<>"'`);
  assert.equal(e.lastmod, '2013-01-02T13:00:00+01:00');
  assert.equal(e.changefreq, 'daily');
  assert.equal(e.md?.length, '8876');
  assert.deepEqual(e.ln, [{ rel: 'duplicate', href: 'http://mirror.example.com/res1', pri: '1', modified: '2013-01-02T13:00:00Z' }]);
  assert.equal(e.extensions?.length, 1);
  assert.equal(
    e.extensions[0]!.xml,
    '<dc:title xmlns:dc="http://purl.org/dc/terms/" xml:lang="fr">Résumé — &lt;not markup&gt; été 😀</dc:title>',
  );
  assert.equal(e.line, 7);
  assert.equal(doc.entries[1]!.line, 16);
  assert.equal(doc.notes, undefined);
});

test('gives the same result whatever the chunk boundaries (random splits, gzip too)', async () => {
  const inputs = [TRICKY, ...readdirSync(join(SPEC_DIR, 'examples')).map((f) => readFileSync(join(SPEC_DIR, 'examples', f), 'utf8'))];
  const random = rng(42);
  for (const xml of inputs) {
    const expected = await parseDocument(xml);
    const bytes = new TextEncoder().encode(xml);
    for (let round = 0; round < 5; round++) {
      assert.deepEqual(await parseDocument(randomSplits(bytes, random)), expected);
    }
    assert.deepEqual(await parseDocument(randomSplits(gzipSync(bytes), random)), expected);
  }
});

test('streams entries and reports the header first', async () => {
  const n = 3000;
  let xml = `${HEAD}<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>\n`;
  for (let i = 0; i < n; i++) xml += `<url><loc>http://example.com/${i}</loc></url>\n`;
  xml += '</urlset>';
  async function* chunks(): AsyncGenerator<Uint8Array> {
    const b = Buffer.from(xml);
    for (let i = 0; i < b.length; i += 4096) yield b.subarray(i, i + 4096);
  }
  const reader = await readDocument(chunks());
  assert.equal(reader.header.md?.capability, 'resourcelist');
  assert.equal(reader.kind?.id, 'resource-list');
  let i = 0;
  for await (const e of reader.entries) assert.equal(e.loc, `http://example.com/${i++}`);
  assert.equal(i, n);
  assert.equal(reader.entryCount, n);
});

test('close() releases the input when entries are not read to the end', async () => {
  let released = false;
  async function* chunks(): AsyncGenerator<Uint8Array> {
    try {
      yield Buffer.from(`${HEAD}<rs:md capability="resourcelist"/><url><loc>a</loc></url>`);
      for (;;) yield Buffer.from('<url><loc>b</loc></url>');
    } finally {
      released = true;
    }
  }
  const reader = await readDocument(chunks());
  for await (const e of reader.entries) {
    assert.equal(e.loc, 'a');
    break;
  }
  await reader.close();
  assert.equal(released, true);
});

test('works with a prefix other than rs and a redeclared default namespace', async () => {
  const doc = await parseDocument(
    `<s:urlset xmlns:s="${SITEMAP_NS}" xmlns:sync="${RS_NS}"><sync:md capability="changelist" from="2013-01-01T00:00:00Z"/>` +
      `<s:url><s:loc>http://e.com/x</s:loc><sync:md change="created"/></s:url>` +
      `<url xmlns="${SITEMAP_NS}"><loc>http://e.com/y</loc></url></s:urlset>`,
  );
  assert.equal(doc.md?.capability, 'changelist');
  assert.deepEqual(
    doc.entries.map((e) => [e.loc, e.md?.change]),
    [
      ['http://e.com/x', 'created'],
      ['http://e.com/y', undefined],
    ],
  );
});

test('records structural problems as notes', async () => {
  const doc = await parseDocument(
    `${HEAD}<rs:md capability="resourcelist" rs:at="x" bogus="1"/><rs:md capability="changelist"/>` +
      `<sitemap><loc>a</loc><loc>b</loc><rs:md/><rs:md/><lastmod>x<b/></lastmod></sitemap>text<rs:ln rel="up" href="u"/></urlset>`,
  );
  assert.deepEqual(
    doc.notes?.map((n) => n.code),
    ['rs-attribute-prefixed', 'unknown-attribute', 'md-repeated', 'child-element-mismatch', 'element-repeated', 'md-repeated', 'unexpected-element', 'unexpected-text', 'header-after-entries'],
  );
  assert.equal(doc.entries[0]!.loc, 'b');
  assert.equal(doc.md?.capability, 'resourcelist');
  assert.equal(doc.ln.length, 1);
  const wrong = await parseDocument('<urlset xmlns="http://example.com/not-sitemaps"><url><loc>a</loc></url></urlset>');
  assert.deepEqual(wrong.notes?.map((n) => n.code), ['wrong-namespace']);
});

test('decodes declared encodings and UTF-16 with a BOM, and refuses bad bytes', async () => {
  const latin1 = Buffer.from(`<?xml version="1.0" encoding="ISO-8859-1"?><urlset xmlns="${SITEMAP_NS}"><url><loc>caf\u00e9</loc></url></urlset>`, 'latin1');
  assert.equal((await parseDocument(latin1)).entries[0]!.loc, 'café');
  const utf16 = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(`<urlset xmlns="${SITEMAP_NS}"><url><loc>ü</loc></url></urlset>`, 'utf16le')]);
  assert.equal((await parseDocument(utf16)).entries[0]!.loc, 'ü');
  const bad = Buffer.concat([Buffer.from(`<urlset xmlns="${SITEMAP_NS}"><url><loc>`), Buffer.from([0xc3, 0x28]), Buffer.from('</loc></url></urlset>')]);
  await assert.rejects(parseDocument(bad), (e) => isResourceSyncError(e, 'RS_XML_ENCODING'));
  await assert.rejects(parseDocument(Buffer.from('<?xml version="1.0" encoding="x-no-such"?><urlset/>')), (e) => isResourceSyncError(e, 'RS_XML_ENCODING'));
  const badSjis = Buffer.concat([Buffer.from(`<?xml version="1.0" encoding="shift_jis"?><urlset xmlns="${SITEMAP_NS}"><url><loc>`), Buffer.from([0x81, 0x20, 0xff]), Buffer.from('</loc></url></urlset>')]);
  await assert.rejects(parseDocument(badSjis), (e) => isResourceSyncError(e, 'RS_XML_ENCODING') && e.data.encoding === 'shift_jis');
});

test('every example of the standard parses', async () => {
  for (const dir of ['examples', 'examples-1.1', 'examples-archives']) {
    for (const f of readdirSync(join(SPEC_DIR, dir))) {
      const doc = await parseDocument(readFileSync(join(SPEC_DIR, dir, f)));
      assert.ok(doc.md?.capability, `${dir}/${f} has a capability`);
      assert.ok(doc.entries.length > 0, `${dir}/${f} has entries`);
      assert.equal(doc.notes, undefined, `${dir}/${f} has no structural notes`);
    }
  }
});

test('the fast path for entries reads exactly what the general path reads', async () => {
  const random = rng(7);
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)]!;
  const space = (): string => pick(['', ' ', '\n  ', '\t', '\r\n ']);
  const values = ['http://e.com/a', ' http://e.com/b ', 'x&amp;y', 'a]b', '<![CDATA[c]]>', 'é😀', '2013-01-01T00:00:00Z', ''];
  const attrs = ['hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6"', "length='12'", 'type="text/plain"', 'change="created"', 'path="/a"', 'x:y="1"', 'bogus="2"', 'rel="up"', 'href="h&amp;i"', 'pri="1"', 'at="a\tb"'];
  const children = (): string => {
    const parts: string[] = [];
    const n = 1 + Math.floor(random() * 5);
    for (let i = 0; i < n; i++) {
      const kind = pick(['loc', 'loc', 'lastmod', 'changefreq', 'priority', 'md', 'ln', 'other', 'comment']);
      if (kind === 'md' || kind === 'ln') {
        const a = Array.from({ length: Math.floor(random() * 4) }, () => pick(attrs));
        if (new Set(a.map((x) => x.split('=')[0])).size !== a.length) continue; // duplicates are not well-formed
        parts.push(`<rs:${kind}${a.map((x) => ` ${x}`).join('')}${space()}/>`);
      } else if (kind === 'other') parts.push('<x:e>v</x:e>');
      else if (kind === 'comment') parts.push('<!-- c -->');
      else parts.push(`<${kind}>${pick(values)}</${kind}>`);
    }
    return parts.map((p) => space() + p).join('') + space();
  };
  for (let round = 0; round < 300; round++) {
    const entries = Array.from({ length: 1 + Math.floor(random() * 4) }, children);
    const doc = (open: string): string =>
      `<urlset xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}" xmlns:x="http://x">\n<rs:md capability="resourcelist"/>\n` +
      entries.map((e) => `${open}${e}</url>\n`).join('') +
      '</urlset>';
    const fast = await parseDocument(doc('<url>'));
    const general = await parseDocument(doc('<url >')); // the fast path only takes '<url>'
    assert.deepEqual(fast, general, doc('<url>'));
  }
});

test('a second rs:md is merged into the first (the first wins), in entries and at the top level, whatever the chunk boundaries', async () => {
  const xml =
    `${HEAD}<rs:md capability="changelist"/><rs:md from="2013-01-02T00:00:00Z" capability="resourcelist"/>` +
    `<url><loc>http://e.com/a</loc><rs:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6" length="8876" xmlns:x="urn:x" x:k="1"/>` +
    `<rs:md change="created" datetime="2013-01-02T12:00:00Z" length="1" x:k="2" xmlns:x="urn:x"/></url>` +
    `<url><loc>http://e.com/b</loc><rs:md change="updated"/></url></urlset>`;
  const bytes = Buffer.from(xml);
  const random = rng(7);
  for (let run = 0; run < 20; run++) {
    const doc = await parseDocument(run === 0 ? bytes : randomSplits(bytes, random));
    assert.deepEqual(doc.md, { capability: 'changelist', from: '2013-01-02T00:00:00Z' });
    const md = doc.entries[0]!.md!;
    assert.equal(md.change, 'created');
    assert.equal(md.datetime, '2013-01-02T12:00:00Z');
    assert.equal(md.length, '8876');
    assert.equal(md.hash, 'md5:1584abdf8ebdc9802ac0c6a7402c03b6');
    assert.deepEqual(md.extra?.map((a) => a.value), ['1', '2']);
    assert.deepEqual(doc.entries[1]!.md, { change: 'updated' });
    assert.deepEqual(doc.notes?.map((n) => [n.code, n.line]), [['md-repeated', 3], ['md-repeated', 3]]);
  }
});

test('a draft-era modified= on the top-level rs:md is read as at (snapshots) or until (lists of changes), and noted', async () => {
  const rl = await parseDocument(`${HEAD}<rs:md capability="resourcelist" modified="2013-01-03T09:00:00Z"/><url><loc>http://e.com/a</loc></url></urlset>`);
  assert.deepEqual(rl.md, { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' });
  assert.deepEqual(rl.notes?.filter((n) => n.code === 'draft-modified').map((n) => n.params), [{ value: '2013-01-03T09:00:00Z', attribute: 'at' }]);
  const cl = await parseDocument(`${HEAD}<rs:md modified="2013-01-03T11:00:00Z" capability="changelist"/><url><loc>http://e.com/a</loc></url></urlset>`);
  assert.deepEqual(cl.md, { capability: 'changelist', until: '2013-01-03T11:00:00Z' });
  // the modern attribute wins; a Capability List has no equivalent: kept as an unknown attribute
  const both = await parseDocument(`${HEAD}<rs:md capability="resourcelist" at="2013-01-04T00:00:00Z" modified="2013-01-03T09:00:00Z"/></urlset>`);
  assert.equal(both.md?.at, '2013-01-04T00:00:00Z');
  assert.deepEqual(both.md?.extra?.map((a) => a.local), ['modified']);
  assert.ok(!both.notes?.some((n) => n.code === 'draft-modified'));
  const cap = await parseDocument(`${HEAD}<rs:md capability="capabilitylist" modified="2013-01-02T14:00:00Z"/></urlset>`);
  assert.deepEqual(cap.md?.extra?.map((a) => a.local), ['modified']);
  // in an entry, `modified` is no draft form: kept as written
  const entry = await parseDocument(`${HEAD}<rs:md capability="resourcelist" at="2013-01-04T00:00:00Z"/><url><loc>http://e.com/a</loc><rs:md modified="2013-01-03T09:00:00Z"/></url></urlset>`);
  assert.equal(entry.entries[0]!.md?.at, undefined);
  assert.deepEqual(entry.entries[0]!.md?.extra?.map((a) => a.local), ['modified']);
});
