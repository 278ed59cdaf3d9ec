import { CAPABILITY_LIST_ENTRIES, REL_RESOURCESYNC, WELL_KNOWN_PATH } from '../core/constants.js';
import { CHANGE_NOTIFICATION, FRAMEWORK_NOTIFICATION, LEGACY_CHANGE_NOTIFICATION } from '../core/model/notification.js';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import { htmlResourceSyncLinks, httpUrl, robotsSitemaps } from '../core/discovery-hints.js';
import { parseLinkHeader } from '../core/link-header.js';
import { isIndex, type DocumentKind, type DocumentKindId } from '../core/model/document-kinds.js';
import type { Entry, Ln } from '../core/model/types.js';
import { readDocument } from '../core/xml/read-document.js';
import type { HttpGet, HttpResponse } from '../client/http.js';
import { unavailableStatus } from '../client/http-failure.js';
import type { AuthorityCheck } from './links.js';
import { note, type DestinationNote, type NoteCode, type NoteData } from './notes.js';

/**
 * Discovery of a Source's ResourceSync documents from any starting URL: the well-known Source
 * Description, Capability Lists given directly, Resource/Change Lists and Dumps (walking `up` and
 * `index`), `robots.txt` Sitemap directives, `Link: rel="resourcesync"` headers and HTML
 * `<link rel="resourcesync">`.
 * @see Z39.99 §6.2, §6.3
 */

/** A capability a Capability List may advertise. @see Z39.99 §9 */
export type CapabilityName = (typeof CAPABILITY_LIST_ENTRIES)[number];

/** One set of resources: a Capability List and the documents it advertises. @see Z39.99 §9 */
export interface DiscoveredCapabilityList {
  /** The Capability List's URL; for a list found without one, the URL of that list (see `synthetic`). */
  url: string;
  /** Advertised documents by capability, in document order, absolute URLs. */
  capabilities: Partial<Record<CapabilityName, string[]>>;
  /** `rs:ln rel="describedby"` of the Capability List (or of its Source Description entry). */
  describedby?: string;
  /** True when no Capability List was reachable and this set was built from the document given. */
  synthetic?: boolean;
}

/** How the starting URL was understood. */
export type StartKind = DocumentKindId | 'html' | 'link-header' | 'well-known' | 'robots' | 'resource';

/** What discovery found out about a Source. */
export interface Discovery {
  /** URL of the Source Description, when one was read. */
  sourceDescription?: string;
  capabilityLists: DiscoveredCapabilityList[];
  start: { url: string; kind: StartKind };
  /** How it was found and what was tolerated, each with its code (see `NOTES`). */
  notes: DestinationNote[];
  /** Those of the notes whose severity is `warning` (skipped, ignored, tolerated, failed). */
  warnings: DestinationNote[];
}

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

interface Ctx {
  opts: DiscoverOptions;
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

/** A fetched response, classified. */
type Fetched =
  | {
      type: 'xml';
      url: string;
      kind: DocumentKind | undefined;
      capability: string | undefined;
      ln: Ln[];
      entries: Entry[];
      linkHeader: string[];
    }
  | { type: 'html'; url: string; links: string[]; linkHeader: string[] }
  | { type: 'text'; url: string; text: string; linkHeader: string[] }
  | { type: 'other'; url: string; status: number; linkHeader: string[] };

/**
 * Documents whose entries discovery reads in full (they are small): Source Descriptions and Capability Lists, and
 * their indexes; for the others only the header.
 */
const readsEntries = (kind: DocumentKind): boolean => kind.family === 'description' || kind.family === 'capability';

const XML_LIMITS = { maxBytes: 8 * 1024 * 1024, maxEntries: 10_000 };

/**
 * Finds the Source Description and Capability Lists behind `startUrl`. Every URL passes
 * `authority.check` before it is requested (an off-authority link is noted and skipped; an
 * off-authority start throws `RS_AUTHORITY`); the walk is bounded in documents and depth and never
 * fetches a URL twice. Throws `RS_NOT_RESOURCESYNC` when no Capability List is found.
 * @example
 * const d = await discover('http://127.0.0.1:8080/', { http, authority });
 * d.capabilityLists[0]?.capabilities.resourcelist // ['http://127.0.0.1:8080/resourcelist.xml']
 * @see Z39.99 §6.3
 */
export async function discover(startUrl: string, options: DiscoverOptions): Promise<Discovery> {
  const ctx: Ctx = {
    opts: options,
    warnings: [],
    failures: [],
    fetched: 0,
    visited: new Set(),
    notes: [],
    maxDocuments: options.maxDocuments ?? 32,
    maxDepth: options.maxDepth ?? 8,
    maxText: options.maxTextBytes ?? 1024 * 1024,
  };
  const start = new URL(startUrl);
  options.authority.check(start.href); // the start itself must be on the authority (RS_AUTHORITY)
  const result: Discovery = { capabilityLists: [], start: { url: start.href, kind: 'resource' }, notes: ctx.notes, warnings: ctx.warnings };
  const isRoot = start.pathname === '/' && start.search === '';

  if (isRoot) {
    const wk = new URL(WELL_KNOWN_PATH, start).href;
    push(ctx, 'discovery-tried-well-known', { start: start.href, url: wk, origin: true });
    if (await fromWellKnown(ctx, result, wk)) {
      result.start.kind = 'well-known';
      return result;
    }
  }
  const first = await fetchClassified(ctx, start.href, 0);
  if (first) {
    const kind = await follow(ctx, result, first, 0);
    if (kind !== undefined) result.start.kind = kind;
    if (result.capabilityLists.length > 0) return result;
  }
  if (!isRoot) {
    const wk = new URL(WELL_KNOWN_PATH, start).href;
    push(ctx, 'discovery-tried-well-known', { start: start.href, url: wk, origin: false });
    if (await fromWellKnown(ctx, result, wk)) return result;
  }
  const robots = new URL('/robots.txt', start).href;
  push(ctx, 'discovery-tried-robots', { url: robots });
  const r = await fetchClassified(ctx, robots, 0);
  if (r?.type === 'text') {
    for (const sm of robotsSitemaps(r.text, robots)) {
      const doc = await fetchClassified(ctx, sm, 1);
      if (doc) await follow(ctx, result, doc, 1);
    }
    if (result.capabilityLists.length > 0 && result.start.kind === 'resource') result.start.kind = 'robots';
  }
  if (result.capabilityLists.length === 0) throw notFound(start.href, ctx);
  return result;
}

/**
 * Why discovery found nothing, as the error a person can act on: credentials refused (401/403), the Source out of
 * reach (network failures and 5xx after retries, `RS_NETWORK`), unavailable for now (a 5xx or 429 answered on the
 * way, `RS_HTTP_STATUS` with its status and `Retry-After`), or reached but with no ResourceSync document.
 * Every variant carries the notes of what was tried.
 */
function notFound(start: string, ctx: Ctx): ResourceSyncError {
  const data = {
    url: start,
    notes: ctx.notes,
    tried: ctx.failures.map((f) => ({
      url: f.url,
      ...(f.status !== undefined ? { status: f.status } : {}),
      ...(f.retryAfter !== undefined ? { retryAfter: f.retryAfter } : {}),
      ...(f.error !== undefined ? { error: f.error.message } : {}),
    })),
  };
  const denied = ctx.failures.find((f) => f.status === 401 || f.status === 403);
  if (denied !== undefined) {
    return new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Source '${start}' refused access: '${denied.url}' answered HTTP ${denied.status}. Give credentials with RESOURCESYNC_BEARER=<token>, RESOURCESYNC_BASIC=<user:password> or RESOURCESYNC_AUTH_<HOST>=<Authorization value> (or the 'auth' option).`,
      { data: { ...data, status: denied.status } },
    );
  }
  const reached = ctx.failures.length < ctx.fetched || ctx.failures.some((f) => f.status !== undefined && f.status < 500);
  if (!reached && ctx.failures.length > 0) {
    const first = ctx.failures[0]!;
    const cause = first.error !== undefined ? first.error.message : `HTTP ${first.status}${retryAfterText(first.retryAfter)}`;
    const code = isResourceSyncError(first.error, 'RS_HTTP_TIMEOUT') ? 'RS_HTTP_TIMEOUT' : 'RS_NETWORK';
    return new ResourceSyncError(code, `Source '${start}' could not be reached: ${cause}`, { data, cause: first.error, recoverable: true });
  }
  // a 5xx or 429 on the way may be why nothing was found: the Source is unavailable for now, not without documents
  const busy = ctx.failures.find((f) => f.status !== undefined && unavailableStatus(f.status));
  if (busy !== undefined) {
    return new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Source '${start}' is unavailable: '${busy.url}' answered HTTP ${busy.status}${retryAfterText(busy.retryAfter)}; try again later.`,
      { data: { ...data, status: busy.status, ...(busy.retryAfter !== undefined ? { retryAfter: busy.retryAfter } : {}) }, recoverable: true },
    );
  }
  return new ResourceSyncError('RS_NOT_RESOURCESYNC', `Start '${start}' leads to no Capability List (tried: ${ctx.notes.length} steps; see the notes).`, { data });
}

const retryAfterText = (value: string | undefined): string => (value === undefined ? '' : ` (Retry-After: ${value.slice(0, 64)})`);

async function fromWellKnown(ctx: Ctx, result: Discovery, url: string): Promise<boolean> {
  const doc = await fetchClassified(ctx, url, 0);
  if (doc?.type !== 'xml') return false;
  if (doc.kind?.family !== 'description') {
    push(ctx, 'not-source-description', { url, capability: doc.capability ?? '' });
    await follow(ctx, result, doc, 0);
    return result.capabilityLists.length > 0;
  }
  await follow(ctx, result, doc, 0);
  return true;
}

/** Acts on one fetched document; returns how it was understood. */
async function follow(ctx: Ctx, result: Discovery, doc: Fetched, depth: number): Promise<StartKind | undefined> {
  const viaHeader = doc.linkHeader;
  if (doc.type === 'html' || doc.type === 'other' || doc.type === 'text') {
    const targets: Array<{ t: string; how: 'html' | 'link-header' }> = viaHeader.map((t) => ({
      t,
      how: 'link-header',
    }));
    if (doc.type === 'html') targets.push(...doc.links.map((t) => ({ t, how: 'html' as const })));
    for (const { t, how } of targets) {
      push(ctx, 'discovery-link', { url: doc.url, target: t, via: how });
      const cl = await fetchClassified(ctx, t, depth + 1);
      if (cl) await follow(ctx, result, cl, depth + 1);
    }
    if (targets.length === 0) return undefined;
    return doc.type === 'html' && targets.some((x) => x.how === 'html') ? 'html' : 'link-header';
  }

  const kind = doc.kind;
  if (kind === undefined) {
    push(ctx, 'sitemap-ignored', { url: doc.url });
    return undefined;
  }
  switch (kind.family) {
    case 'description': {
      // a Source Description (§8), or an index of them
      result.sourceDescription ??= doc.url;
      for (const e of doc.entries) {
        const loc = httpUrl(e.loc, doc.url);
        if (loc === undefined) continue;
        const describedby = (e.ln ?? []).find((l) => relIs(l, 'describedby'))?.href;
        if (isIndex(kind) || e.md?.capability === 'description') {
          const sub = await fetchClassified(ctx, loc, depth + 1);
          if (sub) await follow(ctx, result, sub, depth + 1);
          continue;
        }
        // lenient: some producers give the Capability Lists of their Source Description capability 'resourcelist'
        if (e.md?.capability === 'resourcelist')
          push(ctx, 'source-description-entry-as-capability-list', { url: loc, capability: e.md.capability });
        else if (e.md?.capability !== undefined && e.md.capability !== 'capabilitylist') {
          push(ctx, 'source-description-entry-skipped', { url: loc, capability: e.md.capability });
          continue;
        }
        const cl = await fetchClassified(ctx, loc, depth + 1);
        if (cl) await follow(ctx, result, cl, depth + 1);
        const found = result.capabilityLists.find((c) => c.url === loc);
        if (found && found.describedby === undefined && describedby !== undefined) {
          const d = httpUrl(describedby, doc.url);
          if (d !== undefined) found.describedby = d;
        }
      }
      return kind.id;
    }
    case 'capability': {
      if (isIndex(kind)) {
        // a Capability List Index: each of its Capability Lists
        for (const e of doc.entries) {
          const loc = httpUrl(e.loc, doc.url);
          if (loc === undefined) continue;
          const cl = await fetchClassified(ctx, loc, depth + 1);
          if (cl) await follow(ctx, result, cl, depth + 1);
        }
        return kind.id;
      }
      addCapabilityList(ctx, result, doc);
      const up = upLink(doc);
      if (up !== undefined && result.sourceDescription === undefined) {
        // Learn the Source Description's URL; do not expand other sets the start did not name.
        result.sourceDescription = up;
        push(ctx, 'capability-list-up', { url: doc.url, up });
      }
      return kind.id;
    }
    default: {
      // A Resource List, Change List, Dump, or their index or manifest: walk `index` then `up` (§6.2).
      const id = kind.id;
      const index = linkHref(doc, 'index');
      const up = upLink(doc);
      const before = result.capabilityLists.length;
      if (up !== undefined) {
        push(ctx, 'discovery-up', { url: doc.url, kind: id, up });
        const cl = await fetchClassified(ctx, up, depth + 1);
        if (cl) await follow(ctx, result, cl, depth + 1);
      } else if (index !== undefined) {
        push(ctx, 'discovery-index', { url: doc.url, kind: id, index });
        const ix = await fetchClassified(ctx, index, depth + 1);
        if (ix) await follow(ctx, result, ix, depth + 1);
      }
      const cap = doc.capability === undefined ? undefined : capabilityName(doc.capability);
      if (result.capabilityLists.length === before && cap !== undefined) {
        const own = index ?? doc.url;
        push(ctx, 'set-of-its-own', { url: doc.url });
        result.capabilityLists.push({ url: doc.url, capabilities: { [cap]: [own] }, synthetic: true });
      } else if (cap !== undefined) {
        const listed = result.capabilityLists.some((c) => c.capabilities[cap]?.some((u) => u === doc.url || u === index));
        if (!listed) push(ctx, 'not-in-capability-list', { url: doc.url });
      }
      return id;
    }
  }
}

/** Notes what discovery did; a note of severity `warning` is also one of the warnings. */
function push<C extends NoteCode>(ctx: Ctx, code: C, data: NoteData<C>): void {
  const n = note(code, data);
  ctx.notes.push(n);
  if (n.severity === 'warning') ctx.warnings.push(n);
}

function isCapabilityName(c: string): c is CapabilityName {
  return (CAPABILITY_LIST_ENTRIES as readonly string[]).includes(c);
}

/** A capability as the standard names it, tolerating index names of 1.0-era producers (`changelistindex`). @see Z39.99 §6.1 */
function capabilityName(c: string): CapabilityName | undefined {
  if (isCapabilityName(c)) return c;
  const m = /^(resourcelist|changelist|resourcedump|changedump)index$/.exec(c);
  return m ? (m[1] as CapabilityName) : undefined;
}

function addCapabilityList(ctx: Ctx, result: Discovery, doc: Extract<Fetched, { type: 'xml' }>): void {
  if (result.capabilityLists.some((c) => c.url === doc.url)) return;
  const capabilities: Partial<Record<CapabilityName, string[]>> = {};
  for (const e of doc.entries) {
    const loc = httpUrl(e.loc, doc.url);
    const cap = e.md?.capability;
    if (loc === undefined || cap === undefined) {
      push(ctx, 'capability-entry-invalid', { url: doc.url });
      continue;
    }
    // a notification channel (a topic to subscribe to, not a document to synchronize from)
    if (cap === CHANGE_NOTIFICATION || cap === FRAMEWORK_NOTIFICATION || cap === LEGACY_CHANGE_NOTIFICATION) continue;
    const name = capabilityName(cap);
    if (name === undefined) {
      push(ctx, 'capability-unknown', { url: doc.url, capability: cap });
      continue;
    }
    if (name !== cap) push(ctx, 'capability-legacy-name', { url: doc.url, capability: cap, name });
    (capabilities[name] ??= []).push(loc);
  }
  const entry: DiscoveredCapabilityList = { url: doc.url, capabilities };
  const describedby = linkHref(doc, 'describedby');
  if (describedby !== undefined) entry.describedby = describedby;
  result.capabilityLists.push(entry);
}

function relIs(ln: Ln, rel: string): boolean {
  return (ln.rel ?? '').split(/\s+/).some((r) => r.toLowerCase() === rel);
}

function linkHref(doc: Extract<Fetched, { type: 'xml' }>, rel: string): string | undefined {
  const ln = doc.ln.find((l) => relIs(l, rel) && l.href !== undefined);
  return ln ? httpUrl(ln.href!, doc.url) : undefined;
}

function upLink(doc: Extract<Fetched, { type: 'xml' }>): string | undefined {
  return linkHref(doc, 'up');
}


/**
 * Fetches and classifies a URL, or returns undefined when it is off-authority, already visited,
 * past the limits, or failed (each noted).
 */
async function fetchClassified(ctx: Ctx, url: string, depth: number): Promise<Fetched | undefined> {
  const key = url.replace(/#.*$/, '');
  if (ctx.visited.has(key)) return undefined;
  ctx.visited.add(key);
  if (depth > ctx.maxDepth) {
    push(ctx, 'discovery-depth-limit', { url, maxDepth: ctx.maxDepth });
    return undefined;
  }
  if (ctx.fetched >= ctx.maxDocuments) {
    push(ctx, 'discovery-document-limit', { url, maxDocuments: ctx.maxDocuments });
    return undefined;
  }
  try {
    if (!ctx.opts.authority.allows(url))
      throw new ResourceSyncError('RS_AUTHORITY', `URL '${url}' is outside the Source's authority.`, { data: { url } });
    ctx.opts.authority.check(url);
  } catch (err) {
    if (!isResourceSyncError(err, 'RS_AUTHORITY')) throw err;
    push(ctx, 'outside-authority', { url });
    return undefined;
  }
  ctx.fetched++;
  const abort = new AbortController();
  const onAbort = () => abort.abort(ctx.opts.signal?.reason);
  ctx.opts.signal?.addEventListener('abort', onAbort, { once: true });
  let res: HttpResponse;
  try {
    res = await ctx.opts.http(url, {
      signal: abort.signal,
      headers: { accept: 'application/xml, text/xml;q=0.9, text/html;q=0.8, */*;q=0.5' },
    });
  } catch (err) {
    ctx.opts.signal?.removeEventListener('abort', onAbort);
    if (ctx.opts.signal?.aborted) throw err;
    ctx.failures.push({ url, error: err instanceof Error ? err : new Error(String(err)) });
    push(ctx, 'fetch-failed', { url, error: messageOf(err), ...(isResourceSyncError(err) ? { errorCode: err.code } : {}) });
    return undefined;
  }
  try {
    const finalUrl = res.url || url;
    const linkHeader = parseLinkHeader(res.headers.link ?? '')
      .filter((l) => l.rel.includes(REL_RESOURCESYNC))
      .flatMap((l) => httpUrl(l.target, finalUrl) ?? []);
    if (res.status !== 200) {
      await res.discard();
      const retryAfter = res.headers['retry-after'];
      ctx.failures.push({ url, status: res.status, ...(retryAfter !== undefined ? { retryAfter } : {}) });
      push(ctx, 'http-status', { url, status: res.status });
      return { type: 'other', url: finalUrl, status: res.status, linkHeader };
    }
    const ctype = (res.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const iter = res.body[Symbol.asyncIterator]();
    // Peek at the first bytes to tell XML from HTML and text when the media type is vague.
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
      const text = await readText(body, ctx.maxText);
      return { type: 'html', url: finalUrl, links: htmlResourceSyncLinks(text, finalUrl), linkHeader };
    }
    if (looksXml) {
      try {
        const reader = await readDocument(body, { limits: XML_LIMITS, signal: abort.signal });
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
        if (ctx.opts.signal?.aborted) throw err;
        push(ctx, 'document-unreadable', { url, error: messageOf(err) });
        return { type: 'other', url: finalUrl, status: res.status, linkHeader };
      }
    }
    if (ctype.startsWith('text/')) {
      return { type: 'text', url: finalUrl, text: await readText(body, ctx.maxText), linkHeader };
    }
    return { type: 'other', url: finalUrl, status: res.status, linkHeader };
  } finally {
    ctx.opts.signal?.removeEventListener('abort', onAbort);
    // Stop any unread body (a long list read for its header only): the connection is dropped.
    abort.abort();
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
