/**
 * The streaming ResourceSync document writer: a header and entries (from an iterable or an async
 * iterable) to the bytes of a `<urlset>` or `<sitemapindex>` document, optionally gzipped.
 * Splitting a long list into parts plus an index is `writeDocumentSet` (write-document-set.ts).
 *
 * Output follows the layout of the standard's examples: the XML declaration, the root element with
 * the Sitemap namespace as default and `rs` for ResourceSync, the top-level `<rs:ln>`s and then
 * `<rs:md>`, then one element per line with two-space indents.
 * @see Z39.99 §4 (namespaces), §7 (document formats), §10.2 and §12.2 (indexes)
 */

import { Buffer } from 'node:buffer';
import { RS_NS, SITEMAP_NS } from '../constants.js';
import { ResourceSyncError } from '../errors.js';
import type {
  DocumentHeader,
  Entry,
  ForeignAttribute,
  ForeignElement,
  Ln,
  Md,
  ResourceSyncDocument,
} from '../model/types.js';
import { escapeAttribute, escapeText, isNcName, isXmlChars } from './escape.js';
import { XML_NS, XMLNS_NS } from './namespaces.js';

/** Default size of the string batches that are encoded and handed on as one chunk. */
const DEFAULT_BATCH_BYTES = 256 * 1024;

/**
 * Compresses a stream of chunks, pulling from its source only as fast as its output is read. From
 * Node, `gzipChunks` of `resourcesync` is one that takes zlib options:
 * `gzip: (chunks) => gzipChunks(chunks, { level: 9 })`.
 */
export type Compress = (chunks: AsyncIterable<Uint8Array>) => AsyncIterable<Uint8Array>;

/** Options of `writeDocument`. */
export interface WriteDocumentOptions {
  /**
   * Gzip the output: `true` for the web-standard `CompressionStream('gzip')` (zlib's default level),
   * or the {@link Compress} function to use. Default false.
   */
  gzip?: boolean | Compress;
  /** Entries are serialized into strings of about this many characters before encoding. Default 256 KiB. */
  batchBytes?: number;
}

/**
 * Writes a ResourceSync document as a stream of UTF-8 (or gzip) chunks. Memory stays bounded:
 * entries are pulled one at a time and handed on in batches of about `batchBytes`, so a consumer
 * that awaits each write (backpressure) paces the producer.
 *
 * The result is single-pass (like the entries it pulls) and lazy: nothing happens until it is
 * iterated. Stopping the iteration early stops pulling entries.
 *
 * Throws (when iterated) `RS_INVALID_ARGUMENT` for a value that cannot be written as XML 1.0 (a
 * forbidden character, a bad prefix or attribute name), naming the entry and the field. Values are
 * otherwise written as given: checking dates, hashes and capabilities is the validator's job.
 * @see Z39.99 §7
 * @example
 * const chunks = writeDocument(
 *   { root: 'urlset', md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z' }, ln: [] },
 *   [{ loc: 'http://example.com/res1', md: { hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6' } }],
 *   { gzip: true },
 * );
 * await writeFileAtomic('resourcelist.xml.gz', chunks); // from src/node/file-sink.ts
 */
export function writeDocument(
  header: DocumentHeader,
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  options: WriteDocumentOptions = {},
): AsyncIterable<Uint8Array> {
  const batchBytes = checkBatchBytes(options.batchBytes);
  const plain = documentChunks(header, entries, batchBytes);
  return compressed(plain, options.gzip);
}

/** `chunks` compressed as `gzip` asks (see {@link WriteDocumentOptions.gzip}). */
export function compressed(
  chunks: AsyncIterable<Uint8Array>,
  gzip: boolean | Compress | undefined,
): AsyncIterable<Uint8Array> {
  if (gzip === undefined || gzip === false) return chunks;
  return gzip === true ? webGzip(chunks) : gzip(chunks);
}

/**
 * Gzips through the web-standard `CompressionStream`, which Node, Deno and browsers provide. The
 * next chunk of `source` is written only while the reader waits for output and the previous write
 * was accepted, so the source is read only as fast as the output is (backpressure). Stopping the
 * iteration early ends the source.
 */
async function* webGzip(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array, void, undefined> {
  const gzip = new CompressionStream('gzip');
  const writer = gzip.writable.getWriter();
  const reader = gzip.readable.getReader();
  let read = reader.read();
  let finished = false;
  try {
    for await (const chunk of source) {
      const written = writer.write(chunk).then(() => undefined);
      written.catch(() => {}); // seen by the race below, or moot once the iteration stopped
      for (;;) {
        const out = await Promise.race([read, written]);
        if (out === undefined) break; // accepted: take the next chunk of the source
        if (out.done) return;
        yield out.value;
        read = reader.read();
      }
    }
    const closed = writer.close();
    closed.catch(() => {});
    for (let out = await read; !out.done; out = await read) {
      yield out.value;
      read = reader.read();
    }
    await closed;
    finished = true;
  } finally {
    if (!finished) {
      read.catch(() => {});
      await Promise.allSettled([writer.abort(), reader.cancel()]);
    }
  }
}

/**
 * Serializes a whole (small) document to a string, exactly the text `writeDocument` encodes.
 * @see Z39.99 §7
 * @example writeDocumentString({ root: 'urlset', md: { capability: 'description' }, ln: [], entries: [] })
 */
export function writeDocumentString(doc: ResourceSyncDocument): string {
  const open = openDocument(doc);
  let out = open.text;
  let n = 0;
  for (const e of doc.entries) out += serializeEntry(e, open, ++n);
  return out + open.close;
}

/** @internal A document's bytes, in batches of about `batchBytes` characters. */
export async function* documentChunks(
  header: DocumentHeader,
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  batchBytes: number,
): AsyncGenerator<Uint8Array, void, undefined> {
  const open = openDocument(header);
  let buf = open.text;
  let n = 0;
  if (isAsyncIterable(entries)) {
    for await (const e of entries) {
      buf += serializeEntry(e, open, ++n);
      if (buf.length >= batchBytes) {
        yield Buffer.from(buf, 'utf8');
        buf = '';
      }
    }
  } else {
    for (const e of entries) {
      buf += serializeEntry(e, open, ++n);
      if (buf.length >= batchBytes) {
        yield Buffer.from(buf, 'utf8');
        buf = '';
      }
    }
  }
  yield Buffer.from(buf + open.close, 'utf8');
}

// ---------------------------------------------------------------------------------------------
// Serialization

/** @internal The root start tag and everything before the first entry, plus what entries need to know. */
export interface OpenDocument {
  text: string;
  close: string;
  /** `url` or `sitemap`. */
  tag: string;
  /** Prefix → namespace bindings in scope for entries (declared on the root). */
  scope: Map<string, string>;
}

/** @internal */
export function openDocument(header: DocumentHeader, extraLn?: Ln[]): OpenDocument {
  try {
    return openDocumentUnchecked(header, extraLn);
  } catch (err) {
    if (err instanceof ResourceSyncError && err.code === 'RS_INVALID_ARGUMENT') {
      throw invalid(`Document header: ${err.message}`, err.data, err);
    }
    throw err;
  }
}

function openDocumentUnchecked(header: DocumentHeader, extraLn: Ln[] | undefined): OpenDocument {
  const root = header.root;
  if (root !== 'urlset' && root !== 'sitemapindex') {
    throw invalid(`Document root ${JSON.stringify(String(root))} is neither 'urlset' nor 'sitemapindex'.`, { root });
  }
  const scope = new Map<string, string>([
    ['', SITEMAP_NS],
    ['rs', RS_NS],
    ['xml', XML_NS],
  ]);
  let decl = `<${root} xmlns="${SITEMAP_NS}" xmlns:rs="${RS_NS}"`;
  if (header.namespaces) {
    for (const [prefix, uri] of Object.entries(header.namespaces)) {
      const bound = scope.get(prefix);
      if (bound === uri) continue;
      if (bound !== undefined || prefix === 'xmlns' || !isNcName(prefix) || uri === XML_NS || uri === XMLNS_NS) {
        throw invalid(
          `Document namespaces: prefix ${JSON.stringify(prefix)} cannot be bound to ${JSON.stringify(uri)}.`,
          {
            prefix,
            uri,
          },
        );
      }
      if (uri === '')
        throw invalid(`Document namespaces: prefix ${JSON.stringify(prefix)} has an empty namespace name.`, { prefix });
      scope.set(prefix, uri);
      decl += ` xmlns:${prefix}="${escapeAttribute(uri, `xmlns:${prefix}`)}"`;
    }
  }
  // Prefixes used by foreign attributes in the header are declared on the root too, so that the
  // entries can use them without local declarations.
  const headerAttrs: ForeignAttribute[][] = [];
  if (header.attributes) headerAttrs.push(header.attributes);
  if (header.md?.extra) headerAttrs.push(header.md.extra);
  const headerLn = header.ln ?? []; // tolerate plain-JavaScript callers that omit it
  for (const l of headerLn) if (l.extra) headerAttrs.push(l.extra);
  if (extraLn) for (const l of extraLn) if (l.extra) headerAttrs.push(l.extra);
  for (const list of headerAttrs) {
    for (const a of list) {
      if (a.ns === '' || a.prefix === '' || scope.has(a.prefix)) continue;
      if (!isNcName(a.prefix) || a.prefix === 'xmlns' || a.ns === XMLNS_NS || a.ns === XML_NS) continue; // handled locally
      scope.set(a.prefix, a.ns);
      decl += ` xmlns:${a.prefix}="${escapeAttribute(a.ns, `xmlns:${a.prefix}`)}"`;
    }
  }
  if (header.attributes) decl += foreignAttributes(header.attributes, scope, root).text;
  let text = `<?xml version="1.0" encoding="UTF-8"?>\n${decl}>\n`;
  for (const l of headerLn) text += '  ' + serializeLn(l, scope) + '\n';
  if (extraLn) for (const l of extraLn) text += '  ' + serializeLn(l, scope) + '\n';
  if (header.md) text += '  ' + serializeMd(header.md, scope) + '\n';
  if (header.extensions) for (const x of header.extensions) text += '  ' + foreignElement(x) + '\n';
  return { text, close: `</${root}>\n`, tag: root === 'urlset' ? 'url' : 'sitemap', scope };
}

/** @internal One entry's text, `n` its 1-based number for error messages. */
export function serializeEntry(e: Entry, open: OpenDocument, n: number): string {
  try {
    if (typeof e.loc !== 'string') throw invalid(`Entry ${n} has no 'loc' string.`, { entry: n });
    let s = `  <${open.tag}>\n    <loc>${escapeText(e.loc, 'loc')}</loc>\n`;
    if (e.lastmod !== undefined) s += `    <lastmod>${escapeText(e.lastmod, 'lastmod')}</lastmod>\n`;
    if (e.changefreq !== undefined) s += `    <changefreq>${escapeText(e.changefreq, 'changefreq')}</changefreq>\n`;
    if (e.priority !== undefined) s += `    <priority>${escapeText(e.priority, 'priority')}</priority>\n`;
    if (e.md !== undefined) s += '    ' + serializeMd(e.md, open.scope) + '\n';
    if (e.ln !== undefined) for (const l of e.ln) s += '    ' + serializeLn(l, open.scope) + '\n';
    if (e.extensions !== undefined) for (const x of e.extensions) s += '    ' + foreignElement(x) + '\n';
    return s + `  </${open.tag}>\n`;
  } catch (err) {
    if (typeof e.loc !== 'string') throw err;
    if (err instanceof ResourceSyncError && err.code === 'RS_INVALID_ARGUMENT') {
      throw invalid(
        `Entry ${n} (${JSON.stringify(e.loc)}): ${err.message}`,
        { entry: n, loc: e.loc, ...err.data },
        err,
      );
    }
    throw err;
  }
}

function serializeMd(md: Md, scope: Map<string, string>): string {
  let s = '<rs:md';
  // Order: what the document or change is, then the resource's fixity and format.
  if (md.capability !== undefined) s += ` capability="${escapeAttribute(md.capability, 'rs:md capability')}"`;
  if (md.at !== undefined) s += ` at="${escapeAttribute(md.at, 'rs:md at')}"`;
  if (md.completed !== undefined) s += ` completed="${escapeAttribute(md.completed, 'rs:md completed')}"`;
  if (md.from !== undefined) s += ` from="${escapeAttribute(md.from, 'rs:md from')}"`;
  if (md.until !== undefined) s += ` until="${escapeAttribute(md.until, 'rs:md until')}"`;
  if (md.change !== undefined) s += ` change="${escapeAttribute(md.change, 'rs:md change')}"`;
  if (md.datetime !== undefined) s += ` datetime="${escapeAttribute(md.datetime, 'rs:md datetime')}"`;
  if (md.hash !== undefined) s += ` hash="${escapeAttribute(md.hash, 'rs:md hash')}"`;
  if (md.length !== undefined) s += ` length="${escapeAttribute(md.length, 'rs:md length')}"`;
  if (md.type !== undefined) s += ` type="${escapeAttribute(md.type, 'rs:md type')}"`;
  if (md.encoding !== undefined) s += ` encoding="${escapeAttribute(md.encoding, 'rs:md encoding')}"`;
  if (md.path !== undefined) s += ` path="${escapeAttribute(md.path, 'rs:md path')}"`;
  if (md.extra !== undefined && md.extra.length > 0) {
    const f = foreignAttributes(md.extra, scope, 'rs:md');
    s += f.decl + f.text;
  }
  return s + '/>';
}

function serializeLn(ln: Ln, scope: Map<string, string>): string {
  let s = '<rs:ln';
  // Order as in the standard's examples (Example 24): rel, pri, href, modified, then the rest.
  if (ln.rel !== undefined) s += ` rel="${escapeAttribute(ln.rel, 'rs:ln rel')}"`;
  if (ln.pri !== undefined) s += ` pri="${escapeAttribute(ln.pri, 'rs:ln pri')}"`;
  if (ln.href !== undefined) s += ` href="${escapeAttribute(ln.href, 'rs:ln href')}"`;
  if (ln.modified !== undefined) s += ` modified="${escapeAttribute(ln.modified, 'rs:ln modified')}"`;
  if (ln.hash !== undefined) s += ` hash="${escapeAttribute(ln.hash, 'rs:ln hash')}"`;
  if (ln.length !== undefined) s += ` length="${escapeAttribute(ln.length, 'rs:ln length')}"`;
  if (ln.type !== undefined) s += ` type="${escapeAttribute(ln.type, 'rs:ln type')}"`;
  if (ln.encoding !== undefined) s += ` encoding="${escapeAttribute(ln.encoding, 'rs:ln encoding')}"`;
  if (ln.path !== undefined) s += ` path="${escapeAttribute(ln.path, 'rs:ln path')}"`;
  if (ln.extra !== undefined && ln.extra.length > 0) {
    const f = foreignAttributes(ln.extra, scope, 'rs:ln');
    s += f.decl + f.text;
  }
  return s + '/>';
}

/**
 * A foreign element is a standalone fragment written verbatim; only what can be checked cheaply is:
 * it is one element (starts with `<`, ends with `>`) made of characters XML 1.0 allows.
 */
function foreignElement(x: ForeignElement): string {
  const xml = x.xml;
  if (typeof xml !== 'string' || !xml.startsWith('<') || !xml.endsWith('>') || !isXmlChars(xml)) {
    throw invalid(`Foreign element ${JSON.stringify(x.local)} is not an XML fragment of allowed characters.`, {
      ns: x.ns,
      local: x.local,
    });
  }
  return xml;
}

/**
 * Writes foreign attributes. A prefix bound to the same namespace in `scope` is used as is; an
 * unbound prefix is declared on the element itself; a prefix that is missing, reserved or bound to
 * another namespace is replaced by a generated one (`ns1`, `ns2`…), declared locally.
 */
function foreignAttributes(
  attrs: ForeignAttribute[],
  scope: Map<string, string>,
  where: string,
): { decl: string; text: string } {
  let decl = '';
  let text = '';
  let local: Map<string, string> | undefined;
  const seen = new Set<string>();
  for (const a of attrs) {
    const name = `${where} attribute ${JSON.stringify(a.prefix ? `${a.prefix}:${a.local}` : a.local)}`;
    if (!isNcName(a.local)) throw invalid(`${name} is not a valid attribute name.`, { attribute: a.local });
    if (!isXmlChars(a.ns))
      throw invalid(`${name} has a namespace with characters XML 1.0 does not allow.`, { ns: a.ns });
    let qname: string;
    if (a.ns === '') {
      if (a.local === 'xmlns') throw invalid(`${name} is a namespace declaration, not an attribute.`, {});
      qname = a.local;
    } else if (a.ns === XMLNS_NS) {
      throw invalid(`${name} is a namespace declaration, not an attribute.`, {});
    } else {
      let prefix = a.ns === XML_NS ? 'xml' : a.prefix;
      const bound = local?.get(prefix) ?? scope.get(prefix);
      const usable = prefix !== '' && prefix !== 'xmlns' && isNcName(prefix) && (prefix !== 'xml' || a.ns === XML_NS);
      if (!usable || (bound !== undefined && bound !== a.ns)) {
        // Reuse a prefix already bound to this namespace, else generate one.
        prefix = '';
        for (const [p, u] of local ?? []) if (u === a.ns) prefix = p;
        for (const [p, u] of scope) if (prefix === '' && p !== '' && u === a.ns && !local?.has(p)) prefix = p;
        for (let i = 1; prefix === ''; i++) {
          const p = `ns${i}`;
          if (!scope.has(p) && !local?.has(p)) prefix = p;
        }
      }
      if ((local?.get(prefix) ?? scope.get(prefix)) === undefined) {
        local ??= new Map();
        local.set(prefix, a.ns);
        decl += ` xmlns:${prefix}="${escapeAttribute(a.ns, `xmlns:${prefix}`)}"`;
      }
      qname = `${prefix}:${a.local}`;
    }
    const key = a.ns === '' ? a.local : `{${a.ns}}${a.local}`;
    if (seen.has(key)) throw invalid(`${name} appears twice.`, { attribute: qname });
    seen.add(key);
    text += ` ${qname}="${escapeAttribute(a.value, name)}"`;
  }
  return { decl, text };
}

// ---------------------------------------------------------------------------------------------
// Helpers shared with write-document-set.ts

/** @internal */
export function isAsyncIterable<T>(x: Iterable<T> | AsyncIterable<T>): x is AsyncIterable<T> {
  return typeof (x as Partial<AsyncIterable<T>>)[Symbol.asyncIterator] === 'function';
}

/** @internal UTF-8 length of a string. */
export function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** @internal */
export function checkBatchBytes(batchBytes: number | undefined): number {
  const b = batchBytes ?? DEFAULT_BATCH_BYTES;
  if (!Number.isSafeInteger(b) || b < 1) {
    throw invalid(`Option batchBytes ${JSON.stringify(b)} is not a positive integer.`, { batchBytes: b });
  }
  return b;
}

/** @internal An `RS_INVALID_ARGUMENT` error. */
export function invalid(message: string, data: Record<string, unknown>, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_ARGUMENT', message, cause === undefined ? { data } : { data, cause });
}

