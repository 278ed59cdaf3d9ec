import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SaxesParser } from 'saxes';
import { parseDocument } from './read-document.js';
import { isResourceSyncError, type ResourceSyncError } from '../errors.js';
import { RS_NS, SITEMAP_NS } from '../constants.js';
import { SPEC_DIR } from '../../../test/helpers/paths.js';

const NS = `xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}"`;

/** Outcome of our parser: 'ok', or the error code of a well-formedness failure. */
async function ours(xml: string | Uint8Array): Promise<string> {
  try {
    await parseDocument(xml);
    return 'ok';
  } catch (e) {
    if (!isResourceSyncError(e)) throw e;
    return e.code;
  }
}

/** saxes, strict and namespace-aware, as the oracle of well-formedness. */
function oracle(xml: string): 'ok' | 'error' {
  const p = new SaxesParser({ xmlns: true, position: false });
  let failed = false;
  p.on('error', () => {
    failed = true;
  });
  try {
    p.write(xml).close();
  } catch {
    failed = true;
  }
  return failed ? 'error' : 'ok';
}

const MALFORMED: [string, string][] = [
  ['unclosed root', `<urlset ${NS}><url><loc>a</loc></url>`],
  ['mismatched tags', `<urlset ${NS}><url><loc>a</lastmod></url></urlset>`],
  ['two roots', `<urlset ${NS}></urlset><urlset ${NS}></urlset>`],
  ['text after root', `<urlset ${NS}></urlset>junk`],
  ['text before root', `junk<urlset ${NS}></urlset>`],
  ['duplicate attribute', `<urlset ${NS}><rs:md capability="a" capability="b"/></urlset>`],
  ['unquoted attribute', `<urlset ${NS}><rs:md capability=a/></urlset>`],
  ['< in attribute', `<urlset ${NS}><rs:md capability="a<b"/></urlset>`],
  ['bare &', `<urlset ${NS}><url><loc>a&b</loc></url></urlset>`],
  ['unknown entity', `<urlset ${NS}><url><loc>&nbsp;</loc></url></urlset>`],
  ['bad char ref', `<urlset ${NS}><url><loc>&#0;</loc></url></urlset>`],
  ['control char', `<urlset ${NS}><url><loc>a\u0001</loc></url></urlset>`],
  [']]> in text', `<urlset ${NS}><url><loc>a]]>b</loc></url></urlset>`],
  ['-- in comment', `<urlset ${NS}><!-- a -- b --></urlset>`],
  ['undeclared prefix', `<urlset ${NS}><x:md/></urlset>`],
  ['undeclared attribute prefix', `<urlset ${NS}><rs:md x:a="1"/></urlset>`],
  ['late XML declaration', `<urlset ${NS}><?xml version="1.0"?></urlset>`],
  ['bad name', `<urlset ${NS}><1url/></urlset>`],
  ['missing space between attributes', `<urlset ${NS}><rs:md a="1"b="2"/></urlset>`],
  ['truncated in a tag', `<urlset ${NS}><url><loc`],
  ['CDATA outside root', `<![CDATA[x]]><urlset ${NS}/>`],
  ['xmlns prefix declared', `<urlset ${NS} xmlns:xmlns="http://x"/>`],
  ['same expanded attribute', `<urlset ${NS} xmlns:a="http://x" xmlns:b="http://x"><rs:md a:c="1" b:c="2"/></urlset>`],
];

test('rejects malformed XML with a located error', async () => {
  for (const [name, xml] of MALFORMED) {
    assert.equal(oracle(xml), 'error', `oracle rejects: ${name}`);
    await assert.rejects(
      parseDocument(xml),
      (e: ResourceSyncError) => isResourceSyncError(e) && e.code.startsWith('RS_XML_') && /^Line \d+: /.test(e.message),
      name,
    );
  }
});

test('empty, blank and non-XML input give clear errors', async () => {
  await assert.rejects(parseDocument(''), (e) => isResourceSyncError(e, 'RS_XML_EMPTY'));
  await assert.rejects(parseDocument(new Uint8Array(0)), (e) => isResourceSyncError(e, 'RS_XML_EMPTY'));
  await assert.rejects(parseDocument('   \n'), (e) => isResourceSyncError(e, 'RS_XML_EMPTY'));
  await assert.rejects(parseDocument('{"json": true}'), (e) => isResourceSyncError(e, 'RS_XML_MALFORMED'));
  await assert.rejects(parseDocument('<html><body>hello</body></html>'), (e) => isResourceSyncError(e, 'RS_NOT_RESOURCESYNC'));
  await assert.rejects(parseDocument(`<urlset ${NS}><url><loc>a</loc>`), (e) => isResourceSyncError(e, 'RS_XML_TRUNCATED'));
  await assert.rejects(parseDocument(Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x01])), (e) => isResourceSyncError(e, 'RS_XML_MALFORMED'));
});

/** Mutations of valid documents, judged by our parser and by saxes: they must agree. */
test('agrees with saxes on well-formedness of 3,000 mutated documents', async () => {
  const seeds = readdirSync(join(SPEC_DIR, 'examples')).map((f) => readFileSync(join(SPEC_DIR, 'examples', f), 'utf8'));
  seeds.push(
    `<?xml version="1.0"?><urlset ${NS} xmlns:x="http://x"><rs:md capability="resourcelist"/><url><loc>a&amp;b&#x41;&#66;</loc><x:e x:a='v' b="&lt;"><![CDATA[<>&]]><!--c--><?pi d?></x:e></url></urlset>`,
  );
  const pieces = ['<', '>', '&', ';', '"', "'", '/', '=', ':', ']]>', '<!--', '-->', '&amp;', '&#', 'x', ' ', '<a>', '</a>', '<![CDATA[', '?>', '\u0002', 'é'];
  let s = 7;
  const random = (n: number): number => {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    return s % n;
  };
  let disagreements = 0;
  let skipped = 0;
  const examples: string[] = [];
  for (let i = 0; i < 3000; i++) {
    const seed = seeds[random(seeds.length)]!;
    let doc = seed;
    const edits = 1 + random(2);
    for (let k = 0; k < edits; k++) {
      const at = random(doc.length);
      const op = random(3);
      if (op === 0) doc = doc.slice(0, at) + doc.slice(at + 1 + random(3));
      else if (op === 1) doc = doc.slice(0, at) + pieces[random(pieces.length)]! + doc.slice(at);
      else doc = doc.slice(0, at) + pieces[random(pieces.length)]! + doc.slice(at + 1);
    }
    const expected = oracle(doc);
    const got = await ours(doc);
    // A root that is not <urlset>/<sitemapindex> is refused before the rest is read: no verdict on well-formedness.
    if (got === 'RS_NOT_RESOURCESYNC') {
      skipped++;
      continue;
    }
    if ((expected === 'ok') !== (got === 'ok')) {
      disagreements++;
      if (examples.length < 5) examples.push(`${got} vs saxes ${expected}: ${JSON.stringify(doc)}`);
    }
  }
  assert.equal(disagreements, 0, examples.join('\n'));
  assert.ok(skipped < 300, `only a few mutations hit the root name (${skipped})`);
});
