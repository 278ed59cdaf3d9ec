/**
 * The streaming ResourceSync document writer: a header and entries (from an iterable or an async
 * iterable) to the bytes of a `<urlset>` or `<sitemapindex>` document, optionally gzipped; and
 * `writeDocumentSet`, which splits a long list into parts plus an index.
 *
 * Output follows the layout of the standard's examples: the XML declaration, the root element with
 * the Sitemap namespace as default and `rs` for ResourceSync, the top-level `<rs:ln>`s and then
 * `<rs:md>`, then one element per line with two-space indents.
 * @see Z39.99 §4 (namespaces), §7 (document formats), §10.2 and §12.2 (indexes)
 */

import { Buffer } from 'node:buffer';
import { pipeline, Readable, type TransformOptions } from 'node:stream';
import { createGzip, type ZlibOptions } from 'node:zlib';
import { LIMITS, RS_NS, SITEMAP_NS } from '../constants.js';
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

/** Default size of the string batches that are encoded and handed on as one chunk. */
export const DEFAULT_BATCH_BYTES = 256 * 1024;

const XML_NS = 'http://www.w3.org/XML/1998/namespace';
const XMLNS_NS = 'http://www.w3.org/2000/xmlns/';

/** Options of `writeDocument`. */
export interface WriteDocumentOptions {
  /** Gzip the output (streamed through node:zlib). Default false. */
  gzip?: boolean;
  /** zlib options for gzip (e.g. `{ level: 6 }`). */
  gzipOptions?: ZlibOptions;
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
  return options.gzip ? gzipChunks(plain, options.gzipOptions) : plain;
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

async function* documentChunks(
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

/**
 * Gzips a stream of chunks through node:zlib, pulling from `source` only as fast as the output is
 * consumed. Stopping the iteration early ends the source too.
 */
export function gzipChunks(source: AsyncIterable<Uint8Array>, zlibOptions?: ZlibOptions): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      // Room for a few batches on each side of zlib, so that the next batch is serialized on the
      // main thread while zlib compresses the previous one in the thread pool (bounded: ~2 MiB).
      const streamOptions: ZlibOptions & TransformOptions = {
        chunkSize: 64 * 1024,
        writableHighWaterMark: 1024 * 1024,
      };
      const gz = createGzip({ ...streamOptions, ...zlibOptions });
      const input = Readable.from(source, { objectMode: true, highWaterMark: 4 });
      // The callback form: errors reach the iterator below through gz being destroyed with them.
      pipeline(input, gz, () => {});
      return gz[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Serialization

/** The root start tag and everything before the first entry, plus what entries need to know. */
interface OpenDocument {
  text: string;
  close: string;
  /** `url` or `sitemap`. */
  tag: string;
  /** Prefix → namespace bindings in scope for entries (declared on the root). */
  scope: Map<string, string>;
}

function openDocument(header: DocumentHeader, extraLn?: Ln[]): OpenDocument {
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

function serializeEntry(e: Entry, open: OpenDocument, n: number): string {
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
// Splitting into parts plus an index

/** Receives the bytes of one document of a set. Each chunk is awaited (backpressure). */
export interface PartSink {
  write(chunk: Uint8Array): Promise<void>;
  /** All bytes are written: make the document visible (e.g. rename a temp file). */
  close(): Promise<void>;
  /** Writing failed: discard what was written. */
  abort?(err: unknown): Promise<void>;
}

/** Which document of a set a sink is opened for. */
export interface PartInfo {
  /** 1-based part number; 0 for the index, and for a single document written in place of an index. */
  index: number;
  url: string;
  /** `part` of a split list, the `index` document, or the `single` document when no split was needed. */
  role: 'part' | 'index' | 'single';
}

/** What was written for one part. */
export interface PartSummary {
  /** 1-based part number. */
  index: number;
  url: string;
  entries: number;
  /** Uncompressed bytes of the part's document. */
  bytes: number;
  /** The part's first and last entries (undefined for an empty single document). */
  first: Entry | undefined;
  last: Entry | undefined;
}

/** Options of `writeDocumentSet`. */
export interface DocumentSetOptions {
  /** Entries per part. Default `LIMITS.maxEntries` (50,000, Sitemaps protocol). */
  maxEntries?: number;
  /** Uncompressed bytes per document. Default `LIMITS.maxBytes` (50 MB, Sitemaps protocol). */
  maxBytes?: number;
  /** Parts the index may list. Default `LIMITS.maxEntries` (50,000 sitemaps per index, Sitemaps protocol). */
  maxParts?: number;
  /** URL of part `n` (1-based), e.g. `n => \`https://example.com/resourcelist-part${n}.xml\``. */
  partUrl: (n: number) => string;
  /** URL of the index; also the URL of the single document when one part suffices. */
  indexUrl: string;
  /** Opens the sink that receives one document of the set. */
  sink: (part: PartInfo) => PartSink;
  /**
   * Extra fields for the part's `<sitemap>` entry in the index (`lastmod`, `md` such as
   * `{ at }` or `{ from, until }`); `loc` is always the part's URL.
   */
  partEntry?: (part: PartSummary) => Omit<Partial<Entry>, 'loc'> | undefined;
  /**
   * Always write parts plus an index, even for one part. Parts then stream straight to their sinks;
   * otherwise the first part's uncompressed bytes (at most `maxBytes`) are held until it is known
   * whether a second part is needed. Default false.
   */
  alwaysIndex?: boolean;
  gzip?: boolean;
  gzipOptions?: ZlibOptions;
  batchBytes?: number;
  signal?: AbortSignal;
}

/** What `writeDocumentSet` wrote. */
export interface DocumentSetResult {
  /** True when parts plus an index were written; false when a single document was written at `indexUrl`. */
  indexed: boolean;
  parts: PartSummary[];
  /** Set when an index was written. */
  indexUrl?: string;
}

/**
 * Writes a list of any length as a set of documents that respect the Sitemaps limits: when the
 * entries fit in one document (≤ `maxEntries`, ≤ `maxBytes` uncompressed) it writes that single
 * document at `indexUrl`, without an index link; otherwise it writes part after part at
 * `partUrl(1)`, `partUrl(2)`… each with `<rs:ln rel="index" href=indexUrl>` after the header's own
 * links (the `up` link is kept), and finally the index: a `<sitemapindex>` with the header's
 * `rs:md` and links and one `<sitemap>` per part. This is how a Resource List Index (§10.2), a
 * Change List Index (§12.2) and the dump indexes group their lists.
 *
 * Entries are never held in memory: they stream into the current part. Since the header of the
 * first part must say whether an index exists before that is known, the first part's serialized
 * entries (at most `maxBytes`) are buffered until the part is full or the entries end; pass
 * `alwaysIndex: true` to stream every part directly and always write an index.
 *
 * The byte budget of every part reserves room for the index link, so a list that would just fit
 * in one document without it may still be split in two.
 *
 * Every part carries the header's `rs:md` as given. That is right for a Resource List (Example 16
 * repeats the index's `at` in the part); a Change List split by count gets the list's `from` in
 * every part and no `until`, so a Source that publishes Change Lists per period should rather write
 * one document per period with `writeDocument` and its own index. The index's `<sitemap>` entries
 * can carry each part's interval through `partEntry`, which sees the part's first and last entry.
 *
 * On failure the open sink's `abort` is called and the error is rethrown; parts already closed
 * stay as written.
 * @see Z39.99 §10.2, §12.2, §7 (limits of the Sitemaps protocol)
 * @example
 * const result = await writeDocumentSet(header, entries, {
 *   indexUrl: 'https://example.com/resourcelist.xml',
 *   partUrl: (n) => `https://example.com/resourcelist-part${n}.xml`,
 *   sink: ({ url }) => fileSink(join(dir, basename(new URL(url).pathname))),
 *   partEntry: () => ({ md: { at: header.md?.at } }),
 * });
 */
export async function writeDocumentSet(
  header: DocumentHeader,
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  options: DocumentSetOptions,
): Promise<DocumentSetResult> {
  const maxEntries = options.maxEntries ?? LIMITS.maxEntries;
  const maxBytes = options.maxBytes ?? LIMITS.maxBytes;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) {
    throw invalid(`Option maxEntries ${JSON.stringify(maxEntries)} is not a positive integer.`, { maxEntries });
  }
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw invalid(`Option maxBytes ${JSON.stringify(maxBytes)} is not a positive integer.`, { maxBytes });
  }
  const maxParts = options.maxParts ?? LIMITS.maxEntries;
  if (!Number.isSafeInteger(maxParts) || maxParts < 1) {
    throw invalid(`Option maxParts ${JSON.stringify(maxParts)} is not a positive integer.`, { maxParts });
  }
  const batchBytes = checkBatchBytes(options.batchBytes);
  const { indexUrl, signal } = options;
  const indexLn: Ln = { rel: 'index', href: indexUrl };
  const partOpen = openDocument(header, [indexLn]);
  const singleOpen = openDocument(header);
  const partOverhead = byteLength(partOpen.text) + byteLength(partOpen.close);

  const source = entryStrings(entries, partOpen);
  let pending: SerializedEntry | undefined;
  let ended = false;
  const next = async (): Promise<SerializedEntry | undefined> => {
    if (pending) {
      const p = pending;
      pending = undefined;
      return p;
    }
    if (ended) return undefined;
    const e = await source.next();
    if (e === undefined) ended = true;
    return e;
  };

  /** Pulls entries for one part, yields encoded batches of their text, fills `stats`. */
  async function* fillPart(stats: PartSummary): AsyncGenerator<Uint8Array, void, undefined> {
    let buf = '';
    for (;;) {
      const e = await next();
      if (e === undefined) break;
      if (stats.entries >= maxEntries || stats.bytes + e.bytes > maxBytes) {
        if (stats.entries === 0) {
          throw new ResourceSyncError(
            'RS_LIMIT_BYTES',
            `Entry ${JSON.stringify(e.entry.loc)} needs ${e.bytes} bytes, more than a document of at most ${maxBytes} bytes can hold.`,
            { data: { loc: e.entry.loc, bytes: e.bytes, maxBytes } },
          );
        }
        pending = e;
        break;
      }
      stats.entries++;
      stats.bytes += e.bytes;
      stats.first ??= e.entry;
      stats.last = e.entry;
      buf += e.text;
      if (buf.length >= batchBytes) {
        if (signal?.aborted) throw aborted(signal);
        yield Buffer.from(buf, 'utf8');
        buf = '';
      }
    }
    if (buf !== '') yield Buffer.from(buf, 'utf8');
  }

  const newStats = (index: number, url: string): PartSummary => ({
    index,
    url,
    entries: 0,
    bytes: partOverhead,
    first: undefined,
    last: undefined,
  });

  const parts: PartSummary[] = [];
  let partNo = 1;
  if (!options.alwaysIndex) {
    // Hold the first part until we know whether it is the only one.
    const stats = newStats(1, options.partUrl(1));
    const held: Uint8Array[] = [];
    for await (const chunk of fillPart(stats)) held.push(chunk);
    pending ??= await next();
    if (pending === undefined) {
      // One document: no index, no index link, written at the index URL.
      const single: PartSummary = {
        ...stats,
        index: 0,
        url: indexUrl,
        bytes: stats.bytes - partOverhead + byteLength(singleOpen.text) + byteLength(singleOpen.close),
      };
      await toSink(options, { index: 0, url: indexUrl, role: 'single' }, [
        Buffer.from(singleOpen.text, 'utf8'),
        ...held,
        Buffer.from(singleOpen.close, 'utf8'),
      ]);
      return { indexed: false, parts: [single] };
    }
    await toSink(options, { index: 1, url: stats.url, role: 'part' }, [
      Buffer.from(partOpen.text, 'utf8'),
      ...held,
      Buffer.from(partOpen.close, 'utf8'),
    ]);
    held.length = 0;
    parts.push(stats);
    partNo = 2;
  }
  for (;;) {
    if (partNo > 1) {
      pending ??= await next();
      if (pending === undefined) break;
    }
    if (partNo > maxParts) {
      throw new ResourceSyncError(
        'RS_LIMIT_ENTRIES',
        `Document set ${JSON.stringify(indexUrl)} needs more than ${maxParts} parts, more than its index may list.`,
        { data: { indexUrl, maxParts } },
      );
    }
    const stats = newStats(partNo, options.partUrl(partNo));
    await toSink(options, { index: partNo, url: stats.url, role: 'part' }, partChunks(partOpen, fillPart(stats)));
    parts.push(stats);
    partNo++;
  }
  const indexHeader: DocumentHeader = { ...header, root: 'sitemapindex' };
  const indexEntries = parts.map((p): Entry => ({ ...(options.partEntry?.(p) ?? {}), loc: p.url }));
  await toSink(
    options,
    { index: 0, url: indexUrl, role: 'index' },
    documentChunks(indexHeader, indexEntries, batchBytes),
  );
  return { indexed: true, parts, indexUrl };
}

async function* partChunks(
  open: OpenDocument,
  body: AsyncIterable<Uint8Array>,
): AsyncGenerator<Uint8Array, void, undefined> {
  yield Buffer.from(open.text, 'utf8');
  yield* body;
  yield Buffer.from(open.close, 'utf8');
}

async function toSink(
  options: DocumentSetOptions,
  info: PartInfo,
  chunks: Iterable<Uint8Array> | AsyncIterable<Uint8Array>,
): Promise<void> {
  if (options.signal?.aborted) throw aborted(options.signal);
  const sink = options.sink(info);
  try {
    const plain = isAsyncIterable(chunks) ? chunks : fromIterable(chunks);
    const out = options.gzip ? gzipChunks(plain, options.gzipOptions) : plain;
    for await (const chunk of out) await sink.write(chunk);
    await sink.close();
  } catch (err) {
    if (sink.abort) {
      try {
        await sink.abort(err);
      } catch {
        // The original error is the one to report.
      }
    }
    throw err;
  }
}

interface SerializedEntry {
  entry: Entry;
  text: string;
  bytes: number;
}

/** Serializes entries one at a time; `next()` returns undefined at the end. */
function entryStrings(
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  open: OpenDocument,
): { next(): SerializedEntry | undefined | Promise<SerializedEntry | undefined> } {
  let n = 0;
  const wrap = (r: IteratorResult<Entry>): SerializedEntry | undefined => {
    if (r.done) return undefined;
    const text = serializeEntry(r.value, open, ++n);
    return { entry: r.value, text, bytes: byteLength(text) };
  };
  if (isAsyncIterable(entries)) {
    const it = entries[Symbol.asyncIterator]();
    return { next: async () => wrap(await it.next()) };
  }
  const it = entries[Symbol.iterator]();
  return { next: () => wrap(it.next()) };
}

// ---------------------------------------------------------------------------------------------

async function* fromIterable<T>(items: Iterable<T>): AsyncGenerator<T, void, undefined> {
  for (const item of items) yield await Promise.resolve(item);
}

function isAsyncIterable<T>(x: Iterable<T> | AsyncIterable<T>): x is AsyncIterable<T> {
  return typeof (x as Partial<AsyncIterable<T>>)[Symbol.asyncIterator] === 'function';
}

function byteLength(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

function checkBatchBytes(batchBytes: number | undefined): number {
  const b = batchBytes ?? DEFAULT_BATCH_BYTES;
  if (!Number.isSafeInteger(b) || b < 1) {
    throw invalid(`Option batchBytes ${JSON.stringify(b)} is not a positive integer.`, { batchBytes: b });
  }
  return b;
}

function invalid(message: string, data: Record<string, unknown>, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_ARGUMENT', message, cause === undefined ? { data } : { data, cause });
}

function aborted(signal: AbortSignal): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', 'Writing the document set was aborted.', { cause: signal.reason });
}
