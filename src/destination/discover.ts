import { CAPABILITY_LIST_ENTRIES, WELL_KNOWN_PATH } from '../core/constants.js';
import { CHANGE_NOTIFICATION, FRAMEWORK_NOTIFICATION, LEGACY_CHANGE_NOTIFICATION } from '../core/model/notification.js';
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { httpUrl, robotsSitemaps } from '../core/discovery-hints.js';
import { isIndex, type DocumentKind, type DocumentKindId } from '../core/model/document-kinds.js';
import type { Ln } from '../core/model/types.js';
import { unavailableStatus } from '../client/http-failure.js';
import type { DestinationNote } from './notes.js';
import { addNote, fetchClassified, type DiscoverOptions, type DiscoveryWalk, type Fetched, type FetchedXml } from './discover-fetch.js';

export type { DiscoverOptions } from './discover-fetch.js';

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
  const walk: DiscoveryWalk = {
    options,
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
  const result: Discovery = { capabilityLists: [], start: { url: start.href, kind: 'resource' }, notes: walk.notes, warnings: walk.warnings };
  const isRoot = start.pathname === '/' && start.search === '';

  if (isRoot) {
    const wk = new URL(WELL_KNOWN_PATH, start).href;
    addNote(walk, 'discovery-tried-well-known', { start: start.href, url: wk, origin: true });
    if (await fromWellKnown(walk, result, wk)) {
      result.start.kind = 'well-known';
      return result;
    }
  }
  const first = await fetchClassified(walk, start.href, 0);
  if (first) {
    const kind = await follow(walk, result, first, 0);
    if (kind !== undefined) result.start.kind = kind;
    if (result.capabilityLists.length > 0) return result;
  }
  if (!isRoot) {
    const wk = new URL(WELL_KNOWN_PATH, start).href;
    addNote(walk, 'discovery-tried-well-known', { start: start.href, url: wk, origin: false });
    if (await fromWellKnown(walk, result, wk)) return result;
  }
  const robots = new URL('/robots.txt', start).href;
  addNote(walk, 'discovery-tried-robots', { url: robots });
  const r = await fetchClassified(walk, robots, 0);
  if (r?.type === 'text') {
    for (const sm of robotsSitemaps(r.text, robots)) {
      const doc = await fetchClassified(walk, sm, 1);
      if (doc) await follow(walk, result, doc, 1);
    }
    if (result.capabilityLists.length > 0 && result.start.kind === 'resource') result.start.kind = 'robots';
  }
  if (result.capabilityLists.length === 0) throw notFound(start.href, walk);
  return result;
}

/**
 * Why discovery found nothing, as the error a person can act on: credentials refused (401/403), the Source out of
 * reach (network failures and 5xx after retries, `RS_NETWORK`), unavailable for now (a 5xx or 429 answered on the
 * way, `RS_HTTP_STATUS` with its status and `Retry-After`), or reached but with no ResourceSync document.
 * Every variant carries the notes of what was tried.
 */
function notFound(start: string, walk: DiscoveryWalk): ResourceSyncError {
  const data = {
    url: start,
    notes: walk.notes,
    tried: walk.failures.map((f) => ({
      url: f.url,
      ...(f.status !== undefined ? { status: f.status } : {}),
      ...(f.retryAfter !== undefined ? { retryAfter: f.retryAfter } : {}),
      ...(f.error !== undefined ? { error: f.error.message } : {}),
    })),
  };
  const denied = walk.failures.find((f) => f.status === 401 || f.status === 403);
  if (denied !== undefined) {
    return new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Source '${start}' refused access: '${denied.url}' answered HTTP ${denied.status}. Give credentials with RESOURCESYNC_BEARER=<token>, RESOURCESYNC_BASIC=<user:password> or RESOURCESYNC_AUTH_<HOST>=<Authorization value> (or the 'auth' option).`,
      { data: { ...data, status: denied.status } },
    );
  }
  const reached = walk.failures.length < walk.fetched || walk.failures.some((f) => f.status !== undefined && f.status < 500);
  if (!reached && walk.failures.length > 0) {
    const first = walk.failures[0]!;
    const cause = first.error !== undefined ? first.error.message : `HTTP ${first.status}${retryAfterText(first.retryAfter)}`;
    const code = isResourceSyncError(first.error, 'RS_HTTP_TIMEOUT') ? 'RS_HTTP_TIMEOUT' : 'RS_NETWORK';
    return new ResourceSyncError(code, `Source '${start}' could not be reached: ${cause}`, { data, cause: first.error, recoverable: true });
  }
  // a 5xx or 429 on the way may be why nothing was found: the Source is unavailable for now, not without documents
  const busy = walk.failures.find((f) => f.status !== undefined && unavailableStatus(f.status));
  if (busy !== undefined) {
    return new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Source '${start}' is unavailable: '${busy.url}' answered HTTP ${busy.status}${retryAfterText(busy.retryAfter)}; try again later.`,
      { data: { ...data, status: busy.status, ...(busy.retryAfter !== undefined ? { retryAfter: busy.retryAfter } : {}) }, recoverable: true },
    );
  }
  return new ResourceSyncError('RS_NOT_RESOURCESYNC', `Start '${start}' leads to no Capability List (tried: ${walk.notes.length} steps; see the notes).`, { data });
}

const retryAfterText = (value: string | undefined): string => (value === undefined ? '' : ` (Retry-After: ${value.slice(0, 64)})`);

async function fromWellKnown(walk: DiscoveryWalk, result: Discovery, url: string): Promise<boolean> {
  const doc = await fetchClassified(walk, url, 0);
  if (doc?.type !== 'xml') return false;
  if (doc.kind?.family !== 'description') {
    addNote(walk, 'not-source-description', { url, capability: doc.capability ?? '' });
    await follow(walk, result, doc, 0);
    return result.capabilityLists.length > 0;
  }
  await follow(walk, result, doc, 0);
  return true;
}

/** Acts on one fetched document; returns how it was understood. */
async function follow(walk: DiscoveryWalk, result: Discovery, doc: Fetched, depth: number): Promise<StartKind | undefined> {
  if (doc.type !== 'xml') return followLinks(walk, result, doc, depth);
  const kind = doc.kind;
  if (kind === undefined) {
    addNote(walk, 'sitemap-ignored', { url: doc.url });
    return undefined;
  }
  switch (kind.family) {
    case 'description':
      await followSourceDescription(walk, result, doc, kind, depth);
      return kind.id;
    case 'capability':
      await followCapabilityList(walk, result, doc, kind, depth);
      return kind.id;
    default:
      await followToCapabilityList(walk, result, doc, kind, depth);
      return kind.id;
  }
}

/** Fetches `url` one link deeper and follows what it is. */
async function fetchAndFollow(walk: DiscoveryWalk, result: Discovery, url: string, depth: number): Promise<void> {
  const doc = await fetchClassified(walk, url, depth);
  if (doc) await follow(walk, result, doc, depth);
}

/** An HTML page, text or other answer: follows its `Link: rel="resourcesync"` headers and HTML links. */
async function followLinks(walk: DiscoveryWalk, result: Discovery, doc: Exclude<Fetched, FetchedXml>, depth: number): Promise<StartKind | undefined> {
  const targets: Array<{ t: string; how: 'html' | 'link-header' }> = doc.linkHeader.map((t) => ({
    t,
    how: 'link-header',
  }));
  if (doc.type === 'html') targets.push(...doc.links.map((t) => ({ t, how: 'html' as const })));
  for (const { t, how } of targets) {
    addNote(walk, 'discovery-link', { url: doc.url, target: t, via: how });
    await fetchAndFollow(walk, result, t, depth + 1);
  }
  if (targets.length === 0) return undefined;
  return doc.type === 'html' && targets.some((x) => x.how === 'html') ? 'html' : 'link-header';
}

/** A Source Description (§8), or an index of them: each Capability List it lists. */
async function followSourceDescription(walk: DiscoveryWalk, result: Discovery, doc: FetchedXml, kind: DocumentKind, depth: number): Promise<void> {
  result.sourceDescription ??= doc.url;
  for (const e of doc.entries) {
    const loc = httpUrl(e.loc, doc.url);
    if (loc === undefined) continue;
    const describedby = (e.ln ?? []).find((l) => relIs(l, 'describedby'))?.href;
    if (isIndex(kind) || e.md?.capability === 'description') {
      await fetchAndFollow(walk, result, loc, depth + 1);
      continue;
    }
    // lenient: some producers give the Capability Lists of their Source Description capability 'resourcelist'
    if (e.md?.capability === 'resourcelist')
      addNote(walk, 'source-description-entry-as-capability-list', { url: loc, capability: e.md.capability });
    else if (e.md?.capability !== undefined && e.md.capability !== 'capabilitylist') {
      addNote(walk, 'source-description-entry-skipped', { url: loc, capability: e.md.capability });
      continue;
    }
    await fetchAndFollow(walk, result, loc, depth + 1);
    const found = result.capabilityLists.find((c) => c.url === loc);
    if (found && found.describedby === undefined && describedby !== undefined) {
      const d = httpUrl(describedby, doc.url);
      if (d !== undefined) found.describedby = d;
    }
  }
}

/** A Capability List (added to the result, its `up` learnt) or a Capability List Index (each of its lists). */
async function followCapabilityList(walk: DiscoveryWalk, result: Discovery, doc: FetchedXml, kind: DocumentKind, depth: number): Promise<void> {
  if (isIndex(kind)) {
    // a Capability List Index: each of its Capability Lists
    for (const e of doc.entries) {
      const loc = httpUrl(e.loc, doc.url);
      if (loc === undefined) continue;
      await fetchAndFollow(walk, result, loc, depth + 1);
    }
    return;
  }
  addCapabilityList(walk, result, doc);
  const up = upLink(doc);
  if (up !== undefined && result.sourceDescription === undefined) {
    // Learn the Source Description's URL; do not expand other sets the start did not name.
    result.sourceDescription = up;
    addNote(walk, 'capability-list-up', { url: doc.url, up });
  }
}

/**
 * A Resource List, Change List, Dump, or their index or manifest: walks `index` then `up` (§6.2) to its Capability
 * List; a document that leads to none is a set of its own.
 */
async function followToCapabilityList(walk: DiscoveryWalk, result: Discovery, doc: FetchedXml, kind: DocumentKind, depth: number): Promise<void> {
  const id = kind.id;
  const index = linkHref(doc, 'index');
  const up = upLink(doc);
  const before = result.capabilityLists.length;
  if (up !== undefined) {
    addNote(walk, 'discovery-up', { url: doc.url, kind: id, up });
    await fetchAndFollow(walk, result, up, depth + 1);
  } else if (index !== undefined) {
    addNote(walk, 'discovery-index', { url: doc.url, kind: id, index });
    await fetchAndFollow(walk, result, index, depth + 1);
  }
  const cap = doc.capability === undefined ? undefined : capabilityName(doc.capability);
  if (result.capabilityLists.length === before && cap !== undefined) {
    const own = index ?? doc.url;
    addNote(walk, 'set-of-its-own', { url: doc.url });
    result.capabilityLists.push({ url: doc.url, capabilities: { [cap]: [own] }, synthetic: true });
  } else if (cap !== undefined) {
    const listed = result.capabilityLists.some((c) => c.capabilities[cap]?.some((u) => u === doc.url || u === index));
    if (!listed) addNote(walk, 'not-in-capability-list', { url: doc.url });
  }
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

function addCapabilityList(walk: DiscoveryWalk, result: Discovery, doc: FetchedXml): void {
  if (result.capabilityLists.some((c) => c.url === doc.url)) return;
  const capabilities: Partial<Record<CapabilityName, string[]>> = {};
  for (const e of doc.entries) {
    const loc = httpUrl(e.loc, doc.url);
    const cap = e.md?.capability;
    if (loc === undefined || cap === undefined) {
      addNote(walk, 'capability-entry-invalid', { url: doc.url });
      continue;
    }
    // a notification channel (a topic to subscribe to, not a document to synchronize from)
    if (cap === CHANGE_NOTIFICATION || cap === FRAMEWORK_NOTIFICATION || cap === LEGACY_CHANGE_NOTIFICATION) continue;
    const name = capabilityName(cap);
    if (name === undefined) {
      addNote(walk, 'capability-unknown', { url: doc.url, capability: cap });
      continue;
    }
    if (name !== cap) addNote(walk, 'capability-legacy-name', { url: doc.url, capability: cap, name });
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

function linkHref(doc: FetchedXml, rel: string): string | undefined {
  const ln = doc.ln.find((l) => relIs(l, rel) && l.href !== undefined);
  return ln ? httpUrl(ln.href!, doc.url) : undefined;
}

function upLink(doc: FetchedXml): string | undefined {
  return linkHref(doc, 'up');
}

