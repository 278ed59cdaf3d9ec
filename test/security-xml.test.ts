import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseDocument, readDocument } from '../src/core/xml/read-document.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { RS_NS, SITEMAP_NS } from '../src/core/constants.js';

const NS = `xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}"`;

async function rejectsFast(input: Parameters<typeof parseDocument>[0], code: string, options = {}): Promise<void> {
  const t0 = performance.now();
  await assert.rejects(parseDocument(input, options), (e) => isResourceSyncError(e) && e.code === code);
  const ms = performance.now() - t0;
  assert.ok(ms < 1000, `rejected in ${ms.toFixed(0)} ms`);
}

test('billion laughs: a DOCTYPE with entity declarations is refused at once', async () => {
  const bomb = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<urlset ${NS}><url><loc>&lol9;</loc></url></urlset>`;
  await rejectsFast(bomb, 'RS_XML_DTD_FORBIDDEN');
});

test('XXE: external entities are never resolved, nothing is read from disk', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'rs-xxe-'));
  try {
    const secret = join(dir, 'secret.txt');
    writeFileSync(secret, 'TOP-SECRET');
    const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file://${secret}">]><urlset ${NS}><url><loc>&x;</loc></url></urlset>`;
    await rejectsFast(xxe, 'RS_XML_DTD_FORBIDDEN');
    const param = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY % p SYSTEM "file://${secret}"> %p;]><urlset ${NS}/>`;
    await rejectsFast(param, 'RS_XML_DTD_FORBIDDEN');
    // Without a DOCTYPE the reference is simply undeclared.
    await rejectsFast(`<urlset ${NS}><url><loc>&x;</loc></url></urlset>`, 'RS_XML_MALFORMED');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a gzip bomb stops at the uncompressed size limit', async () => {
  const inner = Buffer.alloc(60 * 1024 * 1024, '<!---->'); // 60 MB of comments compresses to ~60 KB
  const bomb = gzipSync(Buffer.concat([Buffer.from(`<urlset ${NS}>`), inner, Buffer.from('</urlset>')]));
  assert.ok(bomb.length < 1024 * 1024);
  // The limit is enforced while inflating: the error names it, nothing past it is decoded.
  await assert.rejects(parseDocument(bomb), (e) => isResourceSyncError(e, 'RS_LIMIT_BYTES') && e.data.limit === 50 * 1024 * 1024);
  // Long runs of white space are bounded too.
  await rejectsFast(gzipSync(Buffer.alloc(1024 * 1024, 0x20)), 'RS_LIMIT_VALUE');
});

test('limits: entries, bytes, depth, value length, attributes', async () => {
  const entries = `<urlset ${NS}>${'<url><loc>a</loc></url>'.repeat(11)}</urlset>`;
  await rejectsFast(entries, 'RS_LIMIT_ENTRIES', { limits: { maxEntries: 10 } });
  assert.equal((await parseDocument(entries, { limits: { maxEntries: 11 } })).entries.length, 11);
  await rejectsFast(Buffer.from(entries), 'RS_LIMIT_BYTES', { limits: { maxBytes: 100 } });
  await rejectsFast(`<urlset ${NS}>${'<a>'.repeat(100)}${'</a>'.repeat(100)}</urlset>`, 'RS_LIMIT_DEPTH');
  await rejectsFast(`<urlset ${NS}><url><loc>${'x'.repeat(70_000)}</loc></url></urlset>`, 'RS_LIMIT_VALUE');
  await rejectsFast(`<urlset ${NS}><rs:md capability="${'x'.repeat(70_000)}"/></urlset>`, 'RS_LIMIT_VALUE');
  const attrs = Array.from({ length: 300 }, (_, i) => `a${i}="1"`).join(' ');
  await rejectsFast(`<urlset ${NS}><rs:md ${attrs}/></urlset>`, 'RS_LIMIT_ATTRIBUTES');
});

test('an endless stream without markup end is cut by the value limit, not buffered forever', async () => {
  async function* endless(): AsyncGenerator<Uint8Array> {
    yield Buffer.from(`<urlset ${NS}><url><loc>`);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    for (let i = 0; i < 10_000; i++) yield chunk;
  }
  const t0 = performance.now();
  await assert.rejects(
    (async () => {
      const r = await readDocument(endless());
      for await (const _ of r.entries) void _;
    })(),
    (e) => isResourceSyncError(e, 'RS_LIMIT_VALUE'),
  );
  assert.ok(performance.now() - t0 < 1000);
});
