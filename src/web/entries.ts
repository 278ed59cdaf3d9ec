/**
 * Pages of a document's entries, read by streaming: page N of a list skips the entries before it as they
 * are parsed and stops once the page (and one more, to know whether another page follows) is read, so
 * memory holds one page whatever the size of the list. A search keeps the entries whose `loc` contains
 * the query and reads at most `scanLimit` entries, saying so when it stopped there.
 * @see Z39.99 §7 (documents are Sitemaps: `<url>` or `<sitemap>` entries in document order)
 */
import { ResourceSyncError } from '../core/errors.js';
import type { DocumentHeader, Entry, Ln, Md } from '../core/model/types.js';
import { readDocument, type DocumentReader } from '../core/xml/read-document.js';
import type { HttpGet } from '../client/http.js';

/** One entry as the page shows it. */
export interface EntryRow {
  /** Position of the entry in the document, 0-based. */
  position: number;
  loc: string;
  lastmod?: string;
  md?: Md;
  ln?: Ln[];
}

/** A page of a document's entries. */
export interface EntriesPage {
  doc: string;
  /** Document kind id (`resource-list`…), undefined when the root and capability name none. */
  kind?: string;
  root: DocumentHeader['root'];
  md?: Md;
  ln: Ln[];
  /** 0-based page number. */
  page: number;
  pageSize: number;
  /** The search: entries whose `loc` contains it (case-insensitive). */
  q?: string;
  entries: EntryRow[];
  /** Another page follows. */
  more: boolean;
  /** Entries read from the document to build this page. */
  scanned: number;
  /** Matching entries in the whole document, when the whole document was read. */
  total?: number;
  /** Reading stopped at `scanLimit` entries before the end of the document. */
  scanLimitHit: boolean;
  /** Entries the document had when the tree was last read (the explorer adds it when it knows). */
  listed?: number;
}

/** Bounds of {@link readEntriesPage}. */
export interface PageOptions {
  page: number;
  pageSize: number;
  /** Most entries read for one page (skipped ones included). */
  scanLimit: number;
  q?: string;
  signal?: AbortSignal;
}

/**
 * The reading limits of a document whose reader is bounded by its caller (a page by `scanLimit`, a range by
 * its end): the Sitemaps limit of 50,000 entries does not apply, so that a longer list is read up to the
 * caller's bound instead of failing part way.
 */
export const PAGED_READ = { limits: { maxEntries: Number.MAX_SAFE_INTEGER } } as const;

/**
 * GETs a document and opens it for streaming. Throws `RS_HTTP_STATUS` for any status but 200.
 * @example const reader = await openDocument(http, 'https://example.com/resourcelist.xml');
 */
async function openDocument(http: HttpGet, url: string, signal?: AbortSignal): Promise<DocumentReader> {
  const res = await http(url, signal === undefined ? {} : { signal });
  if (res.status !== 200) {
    await res.discard();
    throw new ResourceSyncError('RS_HTTP_STATUS', `GET '${url}' answered HTTP ${res.status}.`, {
      data: { url, actual: res.status, expected: 200 },
    });
  }
  return readDocument(res.body, signal === undefined ? PAGED_READ : { ...PAGED_READ, signal });
}

function row(position: number, e: Entry): EntryRow {
  return {
    position,
    loc: e.loc,
    ...(e.lastmod === undefined ? {} : { lastmod: e.lastmod }),
    ...(e.md === undefined ? {} : { md: e.md }),
    ...(e.ln === undefined || e.ln.length === 0 ? {} : { ln: e.ln }),
  };
}

/**
 * Reads one page of a document's entries (or of those matching `q`), streaming.
 * @example const p = await readEntriesPage(http, url, { page: 2, pageSize: 100, scanLimit: 50_000 });
 */
export async function readEntriesPage(http: HttpGet, url: string, o: PageOptions): Promise<EntriesPage> {
  return pageOfEntries(await openDocument(http, url, o.signal), url, o);
}

/**
 * One page of the entries of a document opened for streaming; closes the reader.
 * @example const p = await pageOfEntries(await readDocument(bytes), 'manifest.xml', { page: 0, pageSize: 100, scanLimit: 50_000 });
 */
export async function pageOfEntries(reader: DocumentReader, doc: string, o: PageOptions): Promise<EntriesPage> {
  const q = o.q === undefined || o.q === '' ? undefined : o.q.toLowerCase();
  const skip = o.page * o.pageSize;
  const entries: EntryRow[] = [];
  let matched = 0;
  let scanned = 0;
  let more = false;
  let ended = true;
  try {
    outer: for await (const batch of reader.batches) {
      for (const e of batch) {
        if (scanned >= o.scanLimit) {
          ended = false;
          break outer;
        }
        const position = scanned++;
        if (q !== undefined && !e.loc.toLowerCase().includes(q)) continue;
        matched++;
        if (matched <= skip) continue;
        if (entries.length < o.pageSize) entries.push(row(position, e));
        else {
          more = true;
          ended = false;
          break outer;
        }
      }
    }
  } finally {
    await reader.close();
  }
  const { header } = reader;
  return {
    doc,
    ...(reader.kind === undefined ? {} : { kind: reader.kind.id }),
    root: header.root,
    ...(header.md === undefined ? {} : { md: header.md }),
    ln: header.ln,
    page: o.page,
    pageSize: o.pageSize,
    ...(q === undefined ? {} : { q: o.q }),
    entries,
    more,
    scanned,
    ...(ended ? { total: matched } : {}),
    scanLimitHit: !ended && !more,
  };
}

/**
 * Reads the entries at positions `[start, end)` of a document (fewer when it is shorter), streaming.
 * @example const rows = await readRange(http, changeListUrl, 900, 1000);
 */
export async function readRange(http: HttpGet, url: string, start: number, end: number, signal?: AbortSignal): Promise<EntryRow[]> {
  const reader = await openDocument(http, url, signal);
  const rows: EntryRow[] = [];
  let position = 0;
  try {
    outer: for await (const batch of reader.batches) {
      for (const e of batch) {
        if (position >= end) break outer;
        if (position >= start) rows.push(row(position, e));
        position++;
      }
    }
  } finally {
    await reader.close();
  }
  return rows;
}
