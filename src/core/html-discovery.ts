/**
 * The HTML discovery link of a Source: `<link rel="resourcesync" href="<Capability List>">` in the `<head>` of
 * an HTML resource (Z39.99 §6.3.3, Example 9). A pure function from the stored bytes to the published bytes, so
 * that the Source's inventory (which lists length and hashes) and its server (which serves the bytes) apply
 * exactly the same change.
 *
 * The bytes are scanned as single bytes (any ASCII-compatible encoding works: UTF-8, ISO-8859-1, windows-1252),
 * comments are skipped, and the link is inserted right after the `<head …>` start tag. The document is left as
 * it is when a `<body>` start tag, or the end, comes before any `<head>`; when the head already has a link whose
 * `rel` includes `resourcesync`; or when the file is larger than {@link HTML_LINK_MAX_BYTES}.
 * @see Z39.99 §6.3.3 (Example 9: an HTML link to a Capability List)
 */
import { Buffer } from 'node:buffer';
import { REL_RESOURCESYNC } from './constants.js';

/** HTML files larger than this are published and served as stored (the `Link` header still applies). */
export const HTML_LINK_MAX_BYTES = 1024 * 1024;

/** The media type whose resources get the link. */
export const HTML_LINK_MEDIA_TYPE = 'text/html';

const HEAD_START = /^<head(?=[\s/>])/i;
const BODY_START = /^<body(?=[\s/>])/i;
const HEAD_END = /<\/head\s*>|<body(?=[\s/>])/i;
const EXISTING = /<link\b[^>]*?\brel\s*=\s*(?:"[^"]*\bresourcesync\b[^"]*"|'[^']*\bresourcesync\b[^']*'|resourcesync(?=[\s/>]))/i;

function escapeAttribute(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** End (exclusive) of the start tag that begins at `from` (at a `<`), honouring quoted attribute values; -1 if it never ends. */
function tagEnd(text: string, from: number): number {
  let quote = '';
  for (let i = from + 1; i < text.length; i++) {
    const c = text[i]!;
    if (quote !== '') {
      if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '>') return i + 1;
  }
  return -1;
}

/**
 * The bytes of an HTML document with `<link rel="resourcesync" href="…">` inserted after its `<head>` start tag,
 * or the same `html` object when the document is left as it is (see the module comment).
 * @example
 * const out = withResourceSyncLink(Buffer.from('<html><head><title>t</title></head></html>'), 'https://example.com/capabilitylist.xml');
 * // <html><head><link rel="resourcesync" href="https://example.com/capabilitylist.xml"><title>t</title></head></html>
 * @see Z39.99 §6.3.3
 */
export function withResourceSyncLink(html: Uint8Array, href: string): Uint8Array {
  if (html.length > HTML_LINK_MAX_BYTES) return html;
  const text = Buffer.from(html.buffer, html.byteOffset, html.byteLength).toString('latin1');
  let i = text.indexOf('<');
  // bounded: every step moves i forward
  while (i >= 0) {
    if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4);
      if (end < 0) return html;
      i = text.indexOf('<', end + 3);
      continue;
    }
    const rest = text.slice(i, i + 6);
    if (BODY_START.test(rest)) return html;
    if (HEAD_START.test(rest)) {
      const end = tagEnd(text, i);
      if (end < 0) return html;
      const headEnd = HEAD_END.exec(text.slice(end));
      const head = text.slice(end, headEnd === null ? text.length : end + headEnd.index);
      if (EXISTING.test(head)) return html;
      const link = Buffer.from(`<link rel="${REL_RESOURCESYNC}" href="${escapeAttribute(href)}">`, 'utf8');
      return Buffer.concat([html.subarray(0, end), link, html.subarray(end)]);
    }
    i = text.indexOf('<', i + 1);
  }
  return html;
}
