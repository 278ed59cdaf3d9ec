import { ResourceSyncError } from '../core/errors.js';
import type { DocumentHeader, Entry, ResourceSyncDocument } from '../core/model/types.js';
import { documentKind, type DocumentKind } from '../core/model/document-kinds.js';
import { readDocument, parseDocument } from '../core/xml/read-document.js';
import { createValidator, validateDocument, type ValidationIssue } from '../core/validate/index.js';
import type { Authority } from '../client/authority.js';
import type { HttpGet, HttpResponse } from '../client/http.js';
import { note, type DestinationNote } from './notes.js';

/** A ResourceSync document being read from the Source. */
export interface RemoteDocument {
  /** The URL asked for. */
  url: string;
  /** The URL after redirects. */
  finalUrl: string;
  header: DocumentHeader;
  kind: DocumentKind | undefined;
  /** Single pass, streamed. Read either `entries` or `batches`. */
  entries: AsyncIterable<Entry>;
  /** The same entries in the parser's chunks (one await per chunk). */
  batches: AsyncIterable<Entry[]>;
  /**
   * The share of the body read so far (0 to 1), when its length is known (a `Content-Length`, no
   * `Content-Encoding`); else undefined.
   */
  readShare(): number | undefined;
  /** Throws the rest of the body away, for a document whose entries are not read (the connection is freed). */
  discard(): Promise<void>;
}

/** What a document fetch needs. */
export interface DocumentContext {
  http: HttpGet;
  authority: Authority;
  signal?: AbortSignal;
}

/**
 * The kind of a document, tolerating capability names seen in the wild (`changelistindex`,
 * `resourcelistindex`, `resourcedumpindex`) that the lenient validator also accepts.
 */
export function kindOf(header: DocumentHeader): DocumentKind | undefined {
  const cap = header.md?.capability;
  const k = documentKind(header.root, cap);
  if (k !== undefined || cap === undefined) return k;
  const m = /^(resourcelist|changelist|resourcedump|changedump)index$/.exec(cap);
  return m ? documentKind(header.root, m[1]) : undefined;
}

/** A body that counts its bytes against the response's `Content-Length` (of the bytes as they come, not encoded). */
function counting(res: HttpResponse): { body: AsyncIterable<Uint8Array>; share: () => number | undefined } {
  const length = res.headers['content-encoding'] === undefined ? Number(res.headers['content-length']) : NaN;
  let read = 0;
  const body = async function* (): AsyncGenerator<Uint8Array> {
    for await (const chunk of res.body) {
      read += chunk.byteLength;
      yield chunk;
    }
  };
  return { body: body(), share: () => (Number.isFinite(length) && length > 0 ? Math.min(1, read / length) : undefined) };
}

async function get(ctx: DocumentContext, url: string): Promise<{ finalUrl: string; body: AsyncIterable<Uint8Array>; share: () => number | undefined; discard: () => Promise<void> }> {
  ctx.authority.check(url);
  const res = await ctx.http(url, ctx.signal ? { signal: ctx.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw new ResourceSyncError('RS_HTTP_STATUS', `Document '${url}' answered HTTP ${res.status}.`, { data: { url, status: res.status }, recoverable: true });
  }
  return { finalUrl: res.url, ...counting(res), discard: () => res.discard() };
}

/**
 * Fetches a document and opens it for streaming (`readDocument`): the header is read, entries come one at a
 * time with bounded memory. Throws `RS_HTTP_STATUS` for a non-200 answer and the parser's errors.
 * @see Z39.99 §10.1 (lists are read in full, one entry at a time)
 */
export async function openDocument(ctx: DocumentContext, url: string): Promise<RemoteDocument> {
  const { finalUrl, body, share, discard } = await get(ctx, url);
  let reader;
  try {
    reader = await readDocument(body, ctx.signal ? { signal: ctx.signal } : {});
  } catch (err) {
    await discard().catch(() => undefined);
    throw err;
  }
  return { url, finalUrl, header: reader.header, kind: kindOf(reader.header), entries: reader.entries, batches: reader.batches, readShare: share, discard };
}

/** Fetches a (small) document whole: a Capability List, an index, a Change List. */
export async function loadDocument(ctx: DocumentContext, url: string): Promise<ResourceSyncDocument & { url: string; finalUrl: string; kind: DocumentKind | undefined }> {
  const { finalUrl, body } = await get(ctx, url);
  const doc = await parseDocument(body, ctx.signal ? { signal: ctx.signal } : {});
  return Object.assign(doc, { url, finalUrl, kind: kindOf(doc) });
}

/** True for a `loc` that starts with its scheme, as the Sitemap protocol requires (the common case, checked cheaply). */
export function isAbsoluteLoc(loc: string): boolean {
  return loc.startsWith('http://') || loc.startsWith('https://');
}

/** Resolves a possibly relative `loc` against the document it came from. */
export function resolveLoc(loc: string, base: string): string {
  try {
    return new URL(loc.trim(), base).href;
  } catch {
    return loc;
  }
}

/** Summarizes the issues of one document as warnings: one per issue code (with its count), at most 8. */
function issueWarnings(url: string, issues: readonly ValidationIssue[]): DestinationNote[] {
  const byCode = new Map<string, { first: ValidationIssue; n: number }>();
  for (const i of issues) {
    const e = byCode.get(i.code);
    if (e === undefined) byCode.set(i.code, { first: i, n: 1 });
    else e.n++;
  }
  return [...byCode.values()].slice(0, 8).map(({ first, n }) =>
    note('document-issues', { url, issue: first.code, section: first.section, issueMessage: first.message, ...(first.line !== undefined ? { line: first.line } : {}), count: n }),
  );
}

/**
 * Passes a streamed document's entries through the validator in lenient mode and reports what it tolerated or
 * found wrong through `warn` when the stream ends; the entries are not changed.
 * @see Z39.99 §7 (lenient consumption: the Destination continues and reports)
 */
export async function* validating(doc: RemoteDocument, warn: (note: DestinationNote) => void): AsyncGenerator<Entry> {
  const v = createValidator(doc.header, { mode: 'lenient' });
  for await (const batch of doc.batches) {
    for (const e of batch) {
      v.entry(e);
      // a relative `loc` (tolerated) is read against the document's own URL, as the validator reports
      yield isAbsoluteLoc(e.loc) ? e : { ...e, loc: resolveLoc(e.loc, doc.finalUrl) };
    }
  }
  for (const w of issueWarnings(doc.url, v.end())) warn(w);
}

/** Validates a whole document in lenient mode and reports through `warn`. */
export function checkDocument(url: string, doc: ResourceSyncDocument, warn: (note: DestinationNote) => void): void {
  for (const w of issueWarnings(url, validateDocument(doc, { mode: 'lenient' }))) warn(w);
}
