import { ResourceSyncError } from '../core/errors.js';
import type { DocumentHeader, Entry, ResourceSyncDocument } from '../core/model/types.js';
import { documentKind, type DocumentKind } from '../core/model/document-kinds.js';
import { readDocument, parseDocument } from '../core/xml/read-document.js';
import type { Authority } from './authority.js';
import type { HttpGet } from './http.js';

/** A ResourceSync document being read from the Source. */
export interface RemoteDocument {
  /** The URL asked for. */
  url: string;
  /** The URL after redirects. */
  finalUrl: string;
  header: DocumentHeader;
  kind: DocumentKind | undefined;
  /** Single pass, streamed. */
  entries: AsyncIterable<Entry>;
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

async function get(ctx: DocumentContext, url: string): Promise<{ finalUrl: string; body: AsyncIterable<Uint8Array> }> {
  ctx.authority.check(url);
  const res = await ctx.http(url, ctx.signal ? { signal: ctx.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw new ResourceSyncError('RS_HTTP_STATUS', `Document '${url}' answered HTTP ${res.status}.`, { data: { url, status: res.status }, recoverable: true });
  }
  return { finalUrl: res.url, body: res.body };
}

/**
 * Fetches a document and opens it for streaming (`readDocument`): the header is read, entries come one at a
 * time with bounded memory. Throws `RS_HTTP_STATUS` for a non-200 answer and the parser's errors.
 * @see Z39.99 §10.1 (lists are read in full, one entry at a time)
 */
export async function openDocument(ctx: DocumentContext, url: string): Promise<RemoteDocument> {
  const { finalUrl, body } = await get(ctx, url);
  const reader = await readDocument(body, ctx.signal ? { signal: ctx.signal } : {});
  return { url, finalUrl, header: reader.header, kind: kindOf(reader.header), entries: reader.entries };
}

/** Fetches a (small) document whole: a Capability List, an index, a Change List. */
export async function loadDocument(ctx: DocumentContext, url: string): Promise<ResourceSyncDocument & { url: string; finalUrl: string; kind: DocumentKind | undefined }> {
  const { finalUrl, body } = await get(ctx, url);
  const doc = await parseDocument(body, ctx.signal ? { signal: ctx.signal } : {});
  return Object.assign(doc, { url, finalUrl, kind: kindOf(doc) });
}

/** Resolves a possibly relative `loc` against the document it came from. */
export function resolveLoc(loc: string, base: string): string {
  try {
    return new URL(loc.trim(), base).href;
  } catch {
    return loc;
  }
}
