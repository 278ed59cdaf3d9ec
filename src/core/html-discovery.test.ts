import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HTML_LINK_MAX_BYTES, withResourceSyncLink } from './html-discovery.js';

const CAP = 'http://example.org/.resourcesync/data/capabilitylist.xml';
const LINK = `<link rel="resourcesync" href="${CAP}">`;

function rewrite(html: string | Buffer, href = CAP): string {
  return Buffer.from(withResourceSyncLink(Buffer.isBuffer(html) ? html : Buffer.from(html, 'utf8'), href)).toString('utf8');
}

void test('the link goes right after the <head> start tag, whatever its case and attributes', () => {
  assert.equal(rewrite('<!DOCTYPE html><html><head><title>t</title></head><body>b</body></html>'), `<!DOCTYPE html><html><head>${LINK}<title>t</title></head><body>b</body></html>`);
  assert.equal(rewrite('<HTML>\n<HEAD profile="a>b">\n</HEAD></HTML>'), `<HTML>\n<HEAD profile="a>b">${LINK}\n</HEAD></HTML>`);
  assert.equal(rewrite('<head\n lang=en>x'), `<head\n lang=en>${LINK}x`);
  // a <header> is not a <head>; a commented-out <head> is skipped
  assert.equal(rewrite('<!-- <head> --><header></header><head></head>'), `<!-- <head> --><header></header><head>${LINK}</head>`);
});

void test('bytes that are not ASCII are kept as they are, in any ASCII-compatible encoding', () => {
  const latin1 = Buffer.concat([Buffer.from('<head><title>'), Buffer.from([0xe9, 0xff]), Buffer.from('</title></head>')]);
  const out = Buffer.from(withResourceSyncLink(latin1, CAP));
  assert.deepEqual(out, Buffer.concat([Buffer.from(`<head>${LINK}<title>`), Buffer.from([0xe9, 0xff]), Buffer.from('</title></head>')]));
  assert.equal(rewrite('<head><title>naïve €</title></head>'), `<head>${LINK}<title>naïve €</title></head>`);
});

void test('the href is escaped as an attribute value', () => {
  assert.equal(rewrite('<head></head>', 'http://x/a?b=1&c="2"'), '<head><link rel="resourcesync" href="http://x/a?b=1&amp;c=&quot;2&quot;"></head>');
});

void test('left as it is: an existing resourcesync link, no head before the body, no head at all, an unclosed comment or tag, too large', () => {
  const cases = [
    `<head><link rel="resourcesync" href="http://other/cap.xml"></head>`,
    `<head><LINK href="x" REL='alternate resourcesync'></head>`,
    `<head><link rel=resourcesync href=x></head>`,
    '<html><body><head></head></body></html>',
    '<p>fragment</p>',
    'plain text, no tags',
    '<!-- never closed <head>',
    '<head title="never closed',
    '',
  ];
  for (const html of cases) {
    const input = Buffer.from(html);
    assert.equal(withResourceSyncLink(input, CAP), input, html);
  }
  const big = Buffer.alloc(HTML_LINK_MAX_BYTES + 1, 0x20);
  big.write('<head></head>', 0);
  assert.equal(withResourceSyncLink(big, CAP), big);
  // a link of another relation does not count
  assert.equal(rewrite('<head><link rel="stylesheet" href="s.css"></head>'), `<head>${LINK}<link rel="stylesheet" href="s.css"></head>`);
  // a link in the body does not count either
  assert.equal(rewrite('<head></head><body><link rel="resourcesync" href="x"></body>'), `<head>${LINK}</head><body><link rel="resourcesync" href="x"></body>`);
});
