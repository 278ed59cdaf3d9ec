import { LIMITS, type Limits } from '../constants.js';
import { ResourceSyncError } from '../errors.js';
import { documentKind, type DocumentKind } from '../model/document-kinds.js';
import type { DocumentHeader, Entry, ParseNote, ResourceSyncDocument } from '../model/types.js';
import { decodeInput, type ByteInput } from './decode-input.js';
import { DocumentBuilder } from './document-builder.js';
import { XmlReader } from './xml-reader.js';

export type { ByteInput } from './decode-input.js';

export interface ReadOptions {
  /** Raise or lower the default limits (Sitemaps: 50,000 entries, 50 MB uncompressed). */
  limits?: Partial<Limits>;
  signal?: AbortSignal;
}

/** A document being read: its header at once, its entries as a single-pass stream. */
export interface DocumentReader {
  header: DocumentHeader;
  /** The document kind from the root element and capability; undefined if unknown or missing. */
  kind: DocumentKind | undefined;
  /** Entries in document order; iterate once. Memory stays bounded whatever the number of entries. */
  entries: AsyncIterable<Entry>;
  /**
   * The same stream as `entries`, as arrays of the entries parsed from each chunk of input: one
   * `await` per chunk instead of one per entry, for consumers that go through entries fast. Use
   * either `entries` or `batches`.
   */
  batches: AsyncIterable<Entry[]>;
  /** Structural notes (Z39.99 §7 shape problems); grows while entries are read. */
  notes: ParseNote[];
  /** Entries read so far. */
  readonly entryCount: number;
  /** Stops reading and releases the input (needed only when entries are not read to the end). */
  close(): Promise<void>;
}

/**
 * Opens a ResourceSync document for streaming: resolves once the header (root, top-level
 * `rs:md`, `rs:ln`s) has been read, then hands out entries one at a time. No DTD is processed and
 * no entity is expanded; limits guard size, entries, nesting and value lengths.
 * @throws ResourceSyncError RS_XML_* (not well-formed), RS_LIMIT_*, RS_NOT_RESOURCESYNC
 * @example
 * const doc = await readDocument(openInput('resourcelist.xml'));
 * for await (const entry of doc.entries) console.log(entry.loc, entry.md?.hash);
 */
export async function readDocument(input: ByteInput, options: ReadOptions = {}): Promise<DocumentReader> {
  const limits: Limits = { ...LIMITS, ...options.limits };
  const builder = new DocumentBuilder(limits.maxEntries, limits.maxValueLength);
  const xml = new XmlReader(builder, limits);
  builder.lineAt = (pos) => xml.lineAt(pos);
  const text = decodeInput(input, limits.maxBytes, options.signal);
  let ended = false;

  const pump = async (): Promise<boolean> => {
    const r = await text.next();
    if (r.done) {
      xml.end();
      ended = true;
      return false;
    }
    xml.feed(r.value);
    return true;
  };

  try {
    while (!builder.headerReady && !ended) await pump();
  } catch (e) {
    await text.return(undefined);
    throw e;
  }
  const header = builder.header;
  if (!header) {
    await text.return(undefined);
    throw new ResourceSyncError('RS_XML_MALFORMED', 'Document has no root element.');
  }

  async function* batches(): AsyncGenerator<Entry[]> {
    const queue = builder.queue;
    try {
      for (;;) {
        // Take the whole queue at once: shifting one by one is quadratic.
        if (queue.length > 0) yield queue.splice(0, queue.length);
        else if (ended) return;
        else await pump();
      }
    } finally {
      if (!ended) await text.return(undefined);
    }
  }

  async function* entries(): AsyncGenerator<Entry> {
    const queue = builder.queue;
    try {
      for (;;) {
        if (queue.length > 0) {
          const batch = queue.splice(0, queue.length);
          for (const e of batch) yield e;
          continue;
        }
        if (ended) return;
        await pump();
      }
    } finally {
      if (!ended) await text.return(undefined);
    }
  }

  const iterator = entries();
  const batchIterator = batches();
  return {
    header,
    kind: documentKind(header.root, header.md?.capability),
    entries: iterator,
    batches: batchIterator,
    notes: builder.notes,
    get entryCount() {
      return builder.entryCount;
    },
    async close() {
      await iterator.return(undefined);
      await batchIterator.return(undefined);
      if (!ended) await text.return(undefined);
    },
  };
}

/**
 * Reads a whole document into memory. Meant for small documents (Source Descriptions, Capability
 * Lists, manifests, tests); use `readDocument` for lists.
 * @example const doc = await parseDocument('<urlset …>…</urlset>');
 */
export async function parseDocument(input: ByteInput, options: ReadOptions = {}): Promise<ResourceSyncDocument> {
  const reader = await readDocument(input, options);
  const entries: Entry[] = [];
  for await (const e of reader.entries) entries.push(e);
  const doc: ResourceSyncDocument = { ...reader.header, entries };
  if (reader.notes.length > 0) doc.notes = reader.notes;
  return doc;
}
