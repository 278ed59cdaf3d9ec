/**
 * Rules of `check` that span documents, checked from what the crawl kept: Change List Index intervals,
 * documents listed again by an index or archive (their kind, index cycles), `index` links to another index, notification channels, and discovery by every route.
 * @see Z39.99 §6.2, §6.3, §12.2, ResourceSync Change Notification §5
 */
import { WELL_KNOWN_PATH } from '../core/constants.js';
import { htmlResourceSyncLinks, robotsSitemaps } from '../core/discovery-hints.js';
import { parseLinkHeader } from '../core/link-header.js';
import { readDocument } from '../core/xml/read-document.js';
import type { Discovery } from '../destination/discover.js';
import type { HttpResponse } from '../client/http.js';
import { ms, norm, reason, type CheckContext, type Expectation } from './context.js';
import type { CheckedDocument } from './report.js';
import { documentKindById, type DocumentKindId } from '../core/model/document-kinds.js';

/** Change Lists of an index: forward chronological, contiguous, not overlapping, only the last one open. @see Z39.99 §12.2 */
export function intervals(
  c: CheckContext,
  url: string,
  entries: Array<{ loc: string; from?: string; until?: string; line?: number }>,
): void {
  for (let i = 1; i < entries.length; i++) {
    const prev = entries[i - 1]!;
    const cur = entries[i]!;
    const prevUntil = ms(prev.until);
    const from = ms(cur.from);
    if (prev.until === undefined) {
      c.issue('changelist-open-not-last', url, { loc: prev.loc }, prev.line);
      continue;
    }
    if (prevUntil === undefined || from === undefined) continue;
    if (from < prevUntil)
      c.issue('changelists-overlap', url, { loc: cur.loc, from: cur.from, until: prev.until }, cur.line);
    else if (from > prevUntil)
      c.issue('changelists-gap', url, { loc: cur.loc, from: cur.from, until: prev.until }, cur.line);
  }
}

/**
 * The document is of the capability its lister gives it, and of the kind an index lists (a Resource List Index
 * lists Resource Lists, never another index). An archive lists documents of its capability, indexes included.
 */
export function listedAs(
  c: CheckContext,
  x: Expectation,
  capability: string | undefined,
  kind: DocumentKindId | undefined,
  line?: number,
): void {
  const actual = capability ?? '(none)';
  if (x.capability !== undefined && x.capability !== actual) {
    if (x.via === 'archive')
      c.issue('archive-capability-mismatch', x.url, { from: x.parent, expected: x.capability, actual });
    else c.issue('capability-mismatch', x.url, { from: x.parent ?? x.url, expected: x.capability, actual }, line);
  } else if (x.kind !== undefined && kind !== undefined && kind !== x.kind) {
    const expected = documentKindById(x.kind).name;
    c.issue('listed-kind-mismatch', x.url, { from: x.parent, expected, actual: documentKindById(kind).name }, line);
  }
}

/**
 * Documents that an index or archive lists but that were reached first from another lister: each is of the kind
 * the index or archive lists, and an index that lists itself, or an index above it, closes a cycle.
 * @see Z39.99 §6.2, §10.2, §12.2; ResourceSync Archives §3–6
 */
export function checkRelisted(c: CheckContext): void {
  const byUrl = new Map(c.documents.map((d) => [d.url, d]));
  for (const x of c.relisted) {
    if (x.parent === undefined) continue;
    if (x.via === 'index' && leadsTo(byUrl, x.url, x.parent)) {
      c.issue('index-cycle', x.parent, { from: x.parent, loc: x.url });
      continue;
    }
    const d = byUrl.get(x.url);
    if (d === undefined || d.status !== undefined || (d.kind === null && d.capability === undefined)) continue;
    listedAs(c, x, d.capability, (d.kind ?? undefined) as DocumentKindId | undefined);
  }
}

/** True when `url` is `from` or a document above it (its lister, its lister's lister…). */
function leadsTo(byUrl: ReadonlyMap<string, CheckedDocument>, url: string, from: string): boolean {
  let at: string | undefined = from;
  for (let steps = 0; at !== undefined && steps <= byUrl.size; steps++) {
    if (at === url) return true;
    at = byUrl.get(at)?.parent;
  }
  return false;
}

/**
 * An `index` link must name an index that lists the document: one that is not the index it was reached
 * from is fetched (once) and read for it. @see Z39.99 §6.2, §10.2
 */
export async function checkOtherIndexes(c: CheckContext): Promise<void> {
  for (const [target, docs] of c.otherIndexes) {
    const listed = new Set<string>();
    if (c.o.authority.allows(target)) {
      try {
        const res = await c.request(target);
        if (res.status === 200) {
          const reader = await readDocument(res.body, c.o.signal ? { signal: c.o.signal } : {});
          if (reader.header.root === 'sitemapindex') {
            const wanted = new Set(docs.map((d) => d.url));
            for await (const e of reader.entries) {
              const loc = norm(e.loc, target);
              if (wanted.has(loc)) listed.add(loc);
            }
          } else await reader.close();
        } else await res.discard();
      } catch (error) {
        if (c.o.signal?.aborted === true) throw error;
      }
    }
    for (const d of docs)
      if (!listed.has(d.url)) c.issue('index-link-elsewhere', d.url, { actual: target, expected: d.expected });
  }
}

/**
 * Notification channels: the topic URL answers with WebSub's discovery links (`rel="hub"` and
 * `rel="self"`). The hub itself is never contacted. @see ResourceSync Change Notification §5, WebSub §4
 */
export async function checkChannels(c: CheckContext): Promise<void> {
  for (const ch of c.channels) {
    const doc: CheckedDocument = {
      url: ch.url,
      kind: 'notification-channel',
      parent: ch.list,
      entries: 0,
      bytes: 0,
      errors: 0,
      warnings: 0,
    };
    c.documents.push(doc);
    if (c.o.discoveryRules === false || !c.o.authority.allows(ch.url)) continue;
    let res: HttpResponse;
    try {
      res = await c.request(ch.url, 'HEAD');
    } catch (error) {
      if (c.o.signal?.aborted === true) throw error;
      c.issue('channel-discovery-missing', ch.url, { problem: `cannot be reached (${reason(error)})` });
      continue;
    }
    await res.discard();
    if (res.status < 200 || res.status > 299) {
      doc.status = res.status;
      c.issue('channel-discovery-missing', ch.url, { problem: `answered HTTP ${res.status}` });
      continue;
    }
    const rels = new Set(parseLinkHeader(res.headers.link ?? '').flatMap((l) => l.rel));
    const missing = ['hub', 'self'].filter((r) => !rels.has(r));
    if (missing.length > 0)
      c.issue('channel-discovery-missing', ch.url, {
        problem: `sends no Link header with rel="${missing.join('" or rel="')}"`,
      });
  }
}

/** Discovery by every route agrees with what the crawl found. @see Z39.99 §6.3 */
export async function checkDiscovery(c: CheckContext, discovery: Discovery): Promise<void> {
  const origin = new URL(c.o.url).origin;
  const known = new Set(c.documents.map((d) => d.url));
  const wk = new URL(WELL_KNOWN_PATH, origin).href;
  const wkDoc = c.documents.find((d) => d.url === wk);
  if (wkDoc === undefined) {
    try {
      const res = await c.request(wk);
      if (res.status !== 200) {
        await res.discard();
        c.issue('well-known-missing', wk, { url: wk, status: `HTTP ${res.status}` });
      } else {
        const reader = await readDocument(res.body);
        await reader.close();
        if (reader.header.md?.capability !== 'description')
          c.issue('well-known-not-description', wk, {
            url: wk,
            actual: reader.header.md?.capability ?? '(none)',
          });
      }
    } catch (error) {
      if (c.o.signal?.aborted === true) throw error;
      c.issue('well-known-not-description', wk, { url: wk, actual: reason(error) });
    }
  } else if (wkDoc.capability !== 'description' && wkDoc.status === undefined) {
    c.issue('well-known-not-description', wk, { url: wk, actual: wkDoc.capability ?? '(none)' });
  } else if (wkDoc.status !== undefined) {
    c.issue('well-known-missing', wk, { url: wk, status: `HTTP ${wkDoc.status}` });
  }
  // robots.txt Sitemap directives name documents of this Source
  const robots = new URL('/robots.txt', origin).href;
  try {
    const res = await c.request(robots);
    if (res.status === 200) {
      let text = '';
      for await (const chunk of res.body) {
        if (text.length < 1024 * 1024) text += Buffer.from(chunk).toString('utf8');
      }
      for (const target of robotsSitemaps(text, robots)) {
        if (c.o.authority.allows(target) && !known.has(norm(target)))
          c.issue('robots-sitemap-unknown', robots, { target });
      }
    } else await res.discard();
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
  }
  // an HTML start page links to this Source's documents
  if (discovery.start.kind === 'html') {
    try {
      const res = await c.request(c.o.url);
      let html = '';
      for await (const chunk of res.body) {
        if (html.length < 1024 * 1024) html += Buffer.from(chunk).toString('utf8');
      }
      for (const target of htmlResourceSyncLinks(html, res.url)) {
        const t = norm(target);
        if (!c.capabilityLists.includes(t) && t !== discovery.sourceDescription)
          c.issue('html-link-elsewhere', c.o.url, { target: t });
      }
    } catch (error) {
      if (c.o.signal?.aborted === true) throw error;
    }
  }
}
