/**
 * Resource List Index splitting: a list of any length written as parts plus an index, each document
 * within the limits of the Sitemaps protocol. Each document is serialized by write-document.ts.
 * @see Z39.99 §10.2 (Resource List Index), §12.2 (Change List Index), §7 (limits)
 */

import { Buffer } from 'node:buffer';
import { LIMITS } from '../constants.js';
import { ResourceSyncError } from '../errors.js';
import type { DocumentHeader, Entry, Ln } from '../model/types.js';
import {
  byteLength,
  checkBatchBytes,
  compressed,
  documentChunks,
  invalid,
  isAsyncIterable,
  openDocument,
  serializeEntry,
  type Compress,
  type OpenDocument,
} from './write-document.js';

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
  /** Gzip every document of the set, as `writeDocument`'s `gzip` option. Default false. */
  gzip?: boolean | Compress;
  /** As `writeDocument`'s `batchBytes`. */
  batchBytes?: number;
  /** Stops the writing with `RS_ABORTED`. */
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
  const limits = setLimits(options);
  const { indexUrl } = options;
  const indexLn: Ln = { rel: 'index', href: indexUrl };
  const partOpen = openDocument(header, [indexLn]);
  const parts = new PartFiller(entryStrings(entries, partOpen), limits, byteLength(partOpen.text) + byteLength(partOpen.close), options.signal);
  let partNo = 1;
  if (!options.alwaysIndex) {
    const split = await writeFirstPart(header, options, parts, partOpen);
    if (!split) return { indexed: false, parts: [parts.single(indexUrl, openDocument(header))] };
    partNo = 2;
  }
  for (;;) {
    if (partNo > 1 && !(await parts.hasMore())) break;
    if (partNo > limits.maxParts) {
      throw new ResourceSyncError(
        'RS_LIMIT_ENTRIES',
        `Document set ${JSON.stringify(indexUrl)} needs more than ${limits.maxParts} parts, more than its index may list.`,
        { data: { indexUrl, maxParts: limits.maxParts } },
      );
    }
    const stats = parts.newPart(partNo, options.partUrl(partNo));
    await toSink(options, { index: partNo, url: stats.url, role: 'part' }, partChunks(partOpen, parts.fill(stats)));
    parts.written.push(stats);
    partNo++;
  }
  const indexHeader: DocumentHeader = { ...header, root: 'sitemapindex' };
  const indexEntries = parts.written.map((p): Entry => ({ ...(options.partEntry?.(p) ?? {}), loc: p.url }));
  await toSink(
    options,
    { index: 0, url: indexUrl, role: 'index' },
    documentChunks(indexHeader, indexEntries, limits.batchBytes),
  );
  return { indexed: true, parts: parts.written, indexUrl };
}

/** The bounds of a set, checked: entries and bytes per part, parts per index, bytes per batch. */
interface SetLimits {
  maxEntries: number;
  maxBytes: number;
  maxParts: number;
  batchBytes: number;
}

function setLimits(options: DocumentSetOptions): SetLimits {
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
  return { maxEntries, maxBytes, maxParts, batchBytes: checkBatchBytes(options.batchBytes) };
}

/**
 * Writes the first part when it may be the only one: its bytes are held until it is known whether a second part is
 * needed. Returns false when the entries fit in one document, which is then written at the index URL without an
 * index link (its summary is `parts.single`); true when the set is split, the first part written as part 1.
 */
async function writeFirstPart(header: DocumentHeader, options: DocumentSetOptions, parts: PartFiller, partOpen: OpenDocument): Promise<boolean> {
  const stats = parts.newPart(1, options.partUrl(1));
  const held: Uint8Array[] = [];
  for await (const chunk of parts.fill(stats)) held.push(chunk);
  if (!(await parts.hasMore())) {
    const singleOpen = openDocument(header);
    parts.written.push(stats);
    await toSink(options, { index: 0, url: options.indexUrl, role: 'single' }, [
      Buffer.from(singleOpen.text, 'utf8'),
      ...held,
      Buffer.from(singleOpen.close, 'utf8'),
    ]);
    return false;
  }
  await toSink(options, { index: 1, url: stats.url, role: 'part' }, [
    Buffer.from(partOpen.text, 'utf8'),
    ...held,
    Buffer.from(partOpen.close, 'utf8'),
  ]);
  held.length = 0;
  parts.written.push(stats);
  return true;
}

/** The serialized entries of a set, dealt out part by part within the limits; keeps the parts written. */
class PartFiller {
  /** The summaries of the parts written, in order. */
  readonly written: PartSummary[] = [];
  readonly #source: EntrySource;
  readonly #limits: SetLimits;
  /** Bytes of a part's opening and closing (with its index link). */
  readonly #partOverhead: number;
  readonly #signal: AbortSignal | undefined;
  /** An entry read that did not fit in the part before: the first of the next part. */
  #pending: SerializedEntry | undefined;
  #ended = false;

  constructor(source: EntrySource, limits: SetLimits, partOverhead: number, signal: AbortSignal | undefined) {
    this.#source = source;
    this.#limits = limits;
    this.#partOverhead = partOverhead;
    this.#signal = signal;
  }

  /** The summary of an empty part. */
  newPart(index: number, url: string): PartSummary {
    return { index, url, entries: 0, bytes: this.#partOverhead, first: undefined, last: undefined };
  }

  /** The summary of the first part written as the single document at `url` (its own opening, no index link). */
  single(url: string, singleOpen: OpenDocument): PartSummary {
    const stats = this.written[0]!;
    return { ...stats, index: 0, url, bytes: stats.bytes - this.#partOverhead + byteLength(singleOpen.text) + byteLength(singleOpen.close) };
  }

  /** Whether an entry is left for another part. */
  async hasMore(): Promise<boolean> {
    this.#pending ??= await this.#next();
    return this.#pending !== undefined;
  }

  /** Pulls entries for one part, yields encoded batches of their text, fills `stats`. */
  async *fill(stats: PartSummary): AsyncGenerator<Uint8Array, void, undefined> {
    const { maxEntries, maxBytes, batchBytes } = this.#limits;
    let buf = '';
    for (;;) {
      const e = await this.#next();
      if (e === undefined) break;
      if (stats.entries >= maxEntries || stats.bytes + e.bytes > maxBytes) {
        if (stats.entries === 0) {
          throw new ResourceSyncError(
            'RS_LIMIT_BYTES',
            `Entry ${JSON.stringify(e.entry.loc)} needs ${e.bytes} bytes, more than a document of at most ${maxBytes} bytes can hold.`,
            { data: { loc: e.entry.loc, bytes: e.bytes, maxBytes } },
          );
        }
        this.#pending = e;
        break;
      }
      stats.entries++;
      stats.bytes += e.bytes;
      stats.first ??= e.entry;
      stats.last = e.entry;
      buf += e.text;
      if (buf.length >= batchBytes) {
        if (this.#signal?.aborted) throw aborted(this.#signal);
        yield Buffer.from(buf, 'utf8');
        buf = '';
      }
    }
    if (buf !== '') yield Buffer.from(buf, 'utf8');
  }

  async #next(): Promise<SerializedEntry | undefined> {
    if (this.#pending) {
      const p = this.#pending;
      this.#pending = undefined;
      return p;
    }
    if (this.#ended) return undefined;
    const e = await this.#source.next();
    if (e === undefined) this.#ended = true;
    return e;
  }
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
    const out = compressed(plain, options.gzip);
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

/** Serialized entries, one at a time; `next()` returns undefined at the end. */
interface EntrySource {
  next(): SerializedEntry | undefined | Promise<SerializedEntry | undefined>;
}

/** Serializes entries one at a time. */
function entryStrings(entries: Iterable<Entry> | AsyncIterable<Entry>, open: OpenDocument): EntrySource {
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

async function* fromIterable<T>(items: Iterable<T>): AsyncGenerator<T, void, undefined> {
  for (const item of items) yield await Promise.resolve(item);
}

function aborted(signal: AbortSignal): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', 'Writing the document set was aborted.', { cause: signal.reason });
}
