import { REL_RESOURCESYNC } from '../core/constants.js';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import { htmlResourceSyncLinks, httpUrl } from '../core/discovery-hints.js';
import { parseLinkHeader } from '../core/link-header.js';
import type { DocumentKind } from '../core/model/document-kinds.js';
import type { Entry, Ln } from '../core/model/types.js';
import { readDocument } from '../core/xml/read-document.js';
import type { HttpGet, HttpResponse } from '../client/http.js';
import type { AuthorityCheck } from './links.js';
import { note, type DestinationNote, type NoteCode, type NoteData } from './notes.js';

/**
 * How discovery reads one URL: the bounds of the walk (visited, documents, depth, authority), the request, and the
 * classification of the answer as a ResourceSync (or Sitemap) document, an HTML page, text, or something else.
 * @see Z39.99 §6.2, §6.3
 */

/** Options of `discover`: the injected HTTP effect and authority check, and the bounds of the walk. */
export interface DiscoverOptions {
  http: HttpGet;
  authority: AuthorityCheck;
  signal?: AbortSignal;
  /** Most documents fetched in all. Default 32. */
  maxDocuments?: number;
  /** Longest chain of links followed from the start. Default 8. */
  maxDepth?: number;
  /** Largest HTML page or robots.txt read, bytes. Default 1 MiB. */
  maxTextBytes?: number;
}

/** One discovery under way: its options, what it noted, what failed, and its bounds. */
export interface DiscoveryWalk {
  options: DiscoverOptions;
  /** The notes that are warnings: something skipped, ignored, tolerated or failed. */
  warnings: DestinationNote[];
  /** What went wrong with the requests made: why a Source that cannot be read could not be. */
  failures: { url: string; status?: number; retryAfter?: string; error?: Error }[];
  fetched: number;
  visited: Set<string>;
  notes: DestinationNote[];
  maxDocuments: number;
  maxDepth: number;
  maxText: number;
}

/** A document read for its links: its kind, capability, links and (for small kinds) entries. */
export interface FetchedXml {
  type: 'xml';
  url: string;
  kind: DocumentKind | undefined;
  capability: string | undefined;
  ln: Ln[];
  entries: Entry[];
  linkHeader: string[];
}

/** A fetched response, classified. */
export type Fetched =
  | FetchedXml
  | { type: 'html'; url: string; links: string[]; linkHeader: string[] }
  | { type: 'text'; url: string; text: string; linkHeader: string[] }
  | { type: 'other'; url: string; status: number; linkHeader: string[] };

/**
 * Documents whose entries discovery reads in full (they are small): Source Descriptions and Capability Lists, and
 * their indexes; for the others only the header.
 */
const readsEntries = (kind: DocumentKind): boolean => kind.family === 'description' || kind.family === 'capability';

const XML_LIMITS = { maxBytes: 8 * 1024 * 1024, maxEntries: 10_000 };

/** Notes what discovery did; a note of severity `warning` is also one of the warnings. */
export function addNote<C extends NoteCode>(walk: DiscoveryWalk, code: C, data: NoteData<C>): void {
  const n = note(code, data);
  walk.notes.push(n);
  if (n.severity === 'warning') walk.warnings.push(n);
}

/**
 * Fetches and classifies a URL, or returns undefined when it is off-authority, already visited,
 * past the limits, or failed (each noted).
 */
export async function fetchClassified(walk: DiscoveryWalk, url: string, depth: number): Promise<Fetched | undefined> {
  if (!admits(walk, url, depth)) return undefined;
  walk.fetched++;
  const abort = new AbortController();
  const signal = walk.options.signal;
  const onAbort = () => abort.abort(signal?.reason);
  signal?.addEventListener('abort', onAbort, { once: true });
  let res: HttpResponse;
  try {
    res = await walk.options.http(url, {
      signal: abort.signal,
      headers: { accept: 'application/xml, text/xml;q=0.9, text/html;q=0.8, */*;q=0.5' },
    });
  } catch (err) {
    signal?.removeEventListener('abort', onAbort);
    if (signal?.aborted) throw err;
    walk.failures.push({ url, error: err instanceof Error ? err : new Error(String(err)) });
    addNote(walk, 'fetch-failed', { url, error: messageOf(err), ...(isResourceSyncError(err) ? { errorCode: err.code } : {}) });
    return undefined;
  }
  try {
    return await classify(walk, url, res, abort.signal);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    // Stop any unread body (a long list read for its header only): the connection is dropped.
    abort.abort();
  }
}

/** Whether the walk may fetch `url`: not visited yet, within depth and documents, on the authority (else noted). */
function admits(walk: DiscoveryWalk, url: string, depth: number): boolean {
  const key = url.replace(/#.*$/, '');
  if (walk.visited.has(key)) return false;
  walk.visited.add(key);
  if (depth > walk.maxDepth) {
    addNote(walk, 'discovery-depth-limit', { url, maxDepth: walk.maxDepth });
    return false;
  }
  if (walk.fetched >= walk.maxDocuments) {
    addNote(walk, 'discovery-document-limit', { url, maxDocuments: walk.maxDocuments });
    return false;
  }
  try {
    if (!walk.options.authority.allows(url))
      throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the Source's authority.`, { data: { url } });
    walk.options.authority.check(url);
  } catch (err) {
    if (!isResourceSyncError(err, 'RS_AUTHORITY')) throw err;
    addNote(walk, 'outside-authority', { url });
    return false;
  }
  return true;
}

/** What a response is, from its status, media type and first bytes; reads as much of the body as that needs. */
async function classify(walk: DiscoveryWalk, url: string, res: HttpResponse, signal: AbortSignal): Promise<Fetched> {
  const finalUrl = res.url || url;
  const linkHeader = parseLinkHeader(res.headers.link ?? '')
    .filter((l) => l.rel.includes(REL_RESOURCESYNC))
    .flatMap((l) => httpUrl(l.target, finalUrl) ?? []);
  if (res.status !== 200) {
    await res.discard();
    const retryAfter = res.headers['retry-after'];
    walk.failures.push({ url, status: res.status, ...(retryAfter !== undefined ? { retryAfter } : {}) });
    addNote(walk, 'http-status', { url, status: res.status });
    return { type: 'other', url: finalUrl, status: res.status, linkHeader };
  }
  const ctype = (res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const { head, body } = await peek(res.body);
  // The first bytes tell XML from HTML and text when the media type is vague.
  const sniff = Buffer.from(head.subarray(0, 512)).toString('latin1').trimStart().toLowerCase();
  const gz = head[0] === 0x1f && head[1] === 0x8b;
  const looksHtml =
    ctype === 'text/html' ||
    ctype === 'application/xhtml+xml' ||
    sniff.startsWith('<!doctype html') ||
    sniff.startsWith('<html');
  const looksXml =
    gz ||
    ctype.endsWith('/xml') ||
    ctype.endsWith('+xml') ||
    sniff.startsWith('<?xml') ||
    sniff.startsWith('<urlset') ||
    sniff.startsWith('<sitemapindex');
  if (looksHtml && (!sniff.startsWith('<?xml') || ctype === 'application/xhtml+xml')) {
    const text = await readText(body, walk.maxText);
    return { type: 'html', url: finalUrl, links: htmlResourceSyncLinks(text, finalUrl), linkHeader };
  }
  if (looksXml) {
    const xml = await readXml(walk, url, finalUrl, body, signal, linkHeader);
    return xml ?? { type: 'other', url: finalUrl, status: res.status, linkHeader };
  }
  if (ctype.startsWith('text/')) {
    return { type: 'text', url: finalUrl, text: await readText(body, walk.maxText), linkHeader };
  }
  return { type: 'other', url: finalUrl, status: res.status, linkHeader };
}

/** The first chunk of a body, and the whole body again (that chunk, then the rest). */
async function peek(source: AsyncIterable<Uint8Array>): Promise<{ head: Uint8Array; body: AsyncIterable<Uint8Array> }> {
  const iter = source[Symbol.asyncIterator]();
  const firstChunk = await iter.next();
  const head = firstChunk.done ? new Uint8Array(0) : firstChunk.value;
  const rest: AsyncIterable<Uint8Array> = {
    [Symbol.asyncIterator]: () => ({
      next: () => iter.next(),
      return: async () => (await iter.return?.()) ?? { done: true, value: undefined },
    }),
  };
  const body = (async function* () {
    if (head.byteLength > 0) yield head;
    yield* rest;
  })();
  return { head, body };
}

/** A ResourceSync or Sitemap document's header (and entries, for small kinds), or undefined when unreadable (noted). */
async function readXml(
  walk: DiscoveryWalk,
  url: string,
  finalUrl: string,
  body: AsyncIterable<Uint8Array>,
  signal: AbortSignal,
  linkHeader: string[],
): Promise<FetchedXml | undefined> {
  try {
    const reader = await readDocument(body, { limits: XML_LIMITS, signal });
    const kind = reader.kind;
    const entries: Entry[] = [];
    if (kind !== undefined && readsEntries(kind)) {
      for await (const e of reader.entries) entries.push(e);
    } else {
      await reader.close(); // only the header is needed (§6.2 `up` and `index` links)
    }
    return {
      type: 'xml',
      url: finalUrl,
      kind,
      capability: reader.header.md?.capability,
      ln: reader.header.ln,
      entries,
      linkHeader,
    };
  } catch (err) {
    if (walk.options.signal?.aborted) throw err;
    addNote(walk, 'document-unreadable', { url, error: messageOf(err) });
    return undefined;
  }
}

async function readText(body: AsyncIterable<Uint8Array>, max: number): Promise<string> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    const room = max - total;
    if (room <= 0) break;
    const part = chunk.byteLength > room ? chunk.subarray(0, room) : chunk;
    chunks.push(Buffer.from(part));
    total += part.byteLength;
  }
  return Buffer.concat(chunks).toString('utf8');
}
