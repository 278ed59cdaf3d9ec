import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResourceSyncError } from '../core/errors.js';
import { parseDocument } from '../core/xml/read-document.js';
import { attr, element, elementDocument, StanzaReader, textOf, xml, type XmppElement } from './xmpp-xml.js';

const STREAM =
  `<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' from='localhost' version='1.0'>` +
  `<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism></mechanisms></stream:features> ` +
  `<message from='pubsub.localhost' to='d@localhost/r' xmlns:e='http://jabber.org/protocol/pubsub#event'><e:event><e:items node='n'><e:item id='1'>` +
  `<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'><md xmlns='http://www.openarchives.org/rs/terms/' capability='change-notification' from='2024-01-01T00:00:00Z' until='2024-01-01T00:00:01Z'/>` +
  `<url><loc>http://example.org/d\u00e9j\u00e0 &amp; \u65e5\u672c-\ud83d\ude00</loc><rs:md xmlns:rs='http://www.openarchives.org/rs/terms/' change='created'/></url></urlset>` +
  `</e:item></e:items></e:event></message>\n</stream:stream>`;

function read(bytes: Uint8Array, chunk: number, max = 1 << 20): { stanzas: XmppElement[]; oversized: number[]; closed: boolean } {
  const out = { stanzas: [] as XmppElement[], oversized: [] as number[], closed: false };
  const r = new StanzaReader({ stanza: (el) => out.stanzas.push(el), oversized: (_n, size) => out.oversized.push(size), close: () => (out.closed = true) }, max);
  for (let i = 0; i < bytes.length; i += chunk) r.write(bytes.subarray(i, i + chunk));
  return out;
}

void test('StanzaReader: the same stanzas whatever the chunks (multi-byte characters split too)', async () => {
  const bytes = Buffer.from(STREAM);
  const whole = read(bytes, bytes.length);
  assert.equal(whole.stanzas.length, 2);
  assert.equal(whole.closed, true);
  const payload = element(element(element(element(whole.stanzas[1]!, 'event')!, 'items')!, 'item')!, 'urlset')!;
  const doc = await parseDocument(Buffer.from(elementDocument(payload)));
  assert.equal(doc.entries[0]!.loc, 'http://example.org/d\u00e9j\u00e0 & \u65e5\u672c-\ud83d\ude00');
  assert.equal(doc.md?.until, '2024-01-01T00:00:01Z');
  assert.equal(doc.entries[0]!.md?.change, 'created');
  for (const chunk of [1, 2, 3, 7, 64]) {
    const r = read(bytes, chunk);
    assert.equal(elementDocument(r.stanzas[1]!), elementDocument(whole.stanzas[1]!), `chunks of ${chunk}`);
  }
  assert.equal(attr(whole.stanzas[1]!, 'from'), 'pubsub.localhost');
  assert.equal(textOf(element(element(whole.stanzas[0]!, 'mechanisms')!, 'mechanism')!), 'SCRAM-SHA-1');
});

void test('StanzaReader: a stanza over the limit is dropped and reported, the next one kept', () => {
  const big = `<message><body>${'x'.repeat(5000)}</body></message>`;
  const bytes = Buffer.from(`<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>${big}<message><body>ok</body></message>`);
  const r = read(bytes, 100, 1000);
  assert.equal(r.oversized.length, 1);
  assert.ok(r.oversized[0]! > 1000);
  assert.equal(r.stanzas.length, 1);
  assert.equal(textOf(element(r.stanzas[0]!, 'body')!), 'ok');
});

void test('StanzaReader: a text node longer than the value limit (64 KiB) but within the stanza limit is kept; a stanza past the limit is dropped', () => {
  const open = `<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>`;
  const body = 'x'.repeat(70_000);
  // the default stanza limit (1 MiB), and one of 100,000 characters
  for (const max of [1 << 20, 100_000]) {
    const r = read(Buffer.from(`${open}<message><body>${body}</body></message><message><body>ok</body></message>`), 4096, max);
    assert.deepEqual(r.oversized, [], `limit ${max}`);
    assert.equal(r.stanzas.length, 2, `limit ${max}`);
    assert.equal(textOf(element(r.stanzas[0]!, 'body')!), body);
    assert.equal(textOf(element(r.stanzas[1]!, 'body')!), 'ok');
  }
  // two such text nodes pass the limit of 100,000: that stanza is dropped and reported, the stream goes on
  const r = read(Buffer.from(`${open}<message><body>${body}</body><body>${body}</body></message><message><body>ok</body></message>`), 4096, 100_000);
  assert.equal(r.oversized.length, 1);
  assert.ok(r.oversized[0]! > 140_000);
  assert.equal(r.stanzas.length, 1);
  assert.equal(textOf(element(r.stanzas[0]!, 'body')!), 'ok');
  // a single text node past both limits cannot be read on (the reader would have to hold it): the stream ends
  assert.throws(
    () => read(Buffer.from(`${open}<message><body>${'x'.repeat(120_000)}</body></message>`), 4096, 100_000),
    (e: unknown) => isResourceSyncError(e, 'RS_LIMIT_VALUE'),
  );
});

void test('StanzaReader: a DOCTYPE, an undeclared entity and bytes that are not UTF-8 end the stream', () => {
  const open = `<stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams'>`;
  assert.throws(() => read(Buffer.from(`<!DOCTYPE x [<!ENTITY a "b">]>${open}`), 16), (e: unknown) => isResourceSyncError(e, 'RS_XML_DTD_FORBIDDEN'));
  assert.throws(() => read(Buffer.from(`${open}<message><body>&a;</body></message>`), 16), (e: unknown) => isResourceSyncError(e, 'RS_XML_MALFORMED'));
  assert.throws(() => read(Buffer.concat([Buffer.from(`${open}<message><body>`), Buffer.from([0xff, 0xfe])]), 16), (e: unknown) => isResourceSyncError(e, 'RS_XML_ENCODING'));
});

void test('xml: escapes attribute values and text', () => {
  assert.equal(xml('iq', { type: 'set', to: 'a"<b', skipped: undefined }, xml('x', { xmlns: 'urn:x' }, 'a & <b>')).xml, '<iq type="set" to="a&quot;&lt;b"><x xmlns="urn:x">a &amp; &lt;b&gt;</x></iq>');
});
