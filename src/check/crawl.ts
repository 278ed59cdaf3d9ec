/**
 * The crawl of `check`: breadth first from the starting points, every document is fetched, streamed through
 * the validator under the version of the standard it implies, and compared with what its lister said of it
 * (capability, `up` and `index` links, Change List interval). Its entries add documents to fetch, dump
 * packages, notification channels and the resources to sample.
 * @see Z39.99 §6 (structure, navigation), §8–13, ResourceSync Archives
 */
import { archivedKind, indexedKind, type DocumentKind, type DocumentKindId } from '../core/model/document-kinds.js';
import type { DocumentHeader, Entry } from '../core/model/types.js';
import { createValidator, type ValidationIssue, type Validator } from '../core/validate/index.js';
import { readDocument } from '../core/xml/read-document.js';
import { isResourceSyncError } from '../core/errors.js';
import { kindOf } from '../destination/documents.js';
import type { HttpResponse } from '../client/http.js';
import { counted, interval, linkOf, ms, norm, reason, type CheckContext, type Expectation } from './context.js';
import { intervals, listedAs } from './cross-document.js';
import type { CheckedDocument } from './report.js';
import { isPastDeadline } from '../client/deadline.js';
import { sampleResource } from './resources.js';

/** Breadth first: a Source Description before its Capability Lists, an index before its lists. */
export async function crawl(c: CheckContext): Promise<void> {
  while (c.queue.length > 0) {
    c.o.signal?.throwIfAborted();
    if (c.documents.length >= c.maxDocuments) {
      c.truncated += c.queue.length;
      c.queue.length = 0;
      return;
    }
    await checkDocument(c, c.queue.shift()!);
    c.progress('documents');
  }
}

/** Fetches, streams, validates one document and applies the rules that need its lister. */
async function checkDocument(c: CheckContext, x: Expectation): Promise<void> {
  const doc: CheckedDocument = {
    url: x.url,
    kind: null,
    entries: 0,
    bytes: 0,
    errors: 0,
    warnings: 0,
    ...(x.parent === undefined ? {} : { parent: x.parent }),
  };
  c.documents.push(doc);
  const res = await fetchDocument(c, x, doc);
  if (res === undefined) return;
  const counter = { bytes: 0 };
  const set = x.via === 'capabilitylist' ? x.parent : x.parent === undefined ? undefined : c.setOf.get(x.parent);
  if (set !== undefined) c.setOf.set(x.url, set);
  try {
    await readDocumentChecked(c, x, doc, res.body, counter);
  } catch (error) {
    if (c.o.signal?.aborted === true) throw error;
    doc.bytes = counter.bytes;
    await res.discard().catch(() => undefined); // a reader that gave up mid-body: the rest is not waited for
    if (isPastDeadline(error))
      c.issue('document-too-slow', x.url, { from: x.parent ?? x.url, deadline: c.deadlineMs, bytes: counter.bytes });
    else c.issue('document-unreadable', x.url, { reason: reason(error) });
  }
}

/** The document's response when it answered 200; otherwise the issue is noted (a failed start throws). */
async function fetchDocument(c: CheckContext, x: Expectation, doc: CheckedDocument): Promise<HttpResponse | undefined> {
  let res: HttpResponse;
  try {
    res = await c.request(x.url);
  } catch (error) {
    if (x.via === 'start' || c.o.signal?.aborted === true) throw error;
    if (isPastDeadline(error)) {
      c.issue('document-too-slow', x.url, { from: x.parent ?? x.url, deadline: c.deadlineMs, bytes: 0 });
      return undefined;
    }
    c.issue('document-unreachable', x.url, {
      from: x.parent,
      status: isResourceSyncError(error) ? error.code : reason(error),
    });
    return undefined;
  }
  if (res.status !== 200) {
    await res.discard();
    doc.status = res.status;
    c.issue('document-unreachable', x.url, { from: x.parent ?? x.url, status: `HTTP ${res.status}` });
    return undefined;
  }
  return res;
}

/**
 * Streams a document through the validator and the crawl's entry rules. Documents of changes (entries in order of
 * their time) are validated under both versions until their entries say which one they follow.
 */
async function readDocumentChecked(
  c: CheckContext,
  x: Expectation,
  doc: CheckedDocument,
  body: AsyncIterable<Uint8Array>,
  counter: { bytes: number },
): Promise<void> {
  const reader = await readDocument(counted(body, counter), c.o.signal ? { signal: c.o.signal } : {});
  const header = reader.header;
  const kind = kindOf(header);
  doc.kind = kind?.id ?? null;
  const md = header.md;
  if (md?.capability !== undefined) doc.capability = md.capability;
  for (const k of ['at', 'completed', 'from', 'until'] as const) if (md?.[k] !== undefined) doc[k] = md[k];
  expectations(c, x, header, kind?.capability ?? md?.capability, kind?.id);

  const both = kind?.order === 'change';
  const v11 = createValidator(header, { spec: '1.1', mode: 'strict' });
  const v10: Validator | undefined = both ? createValidator(header, { spec: '1.0', mode: 'strict' }) : undefined;
  let usesDatetime = md?.datetime !== undefined;
  let usesLastmod = false;
  const indexEntries: IndexEntry[] = [];
  const id = kind?.id;
  const isIndex = header.root === 'sitemapindex';
  for await (const batch of reader.batches) {
    for (const e of batch) {
      v11.entry(e);
      v10?.entry(e);
      if (e.md?.datetime !== undefined) usesDatetime = true;
      else if (e.lastmod !== undefined) usesLastmod = true;
      doc.entries++;
      c.entries++;
      entry(c, x, doc, e, kind, isIndex, header, indexEntries);
    }
  }
  doc.bytes = counter.bytes;
  // a change document timed by lastmod alone follows 1.0; one that uses datetime, or neither, 1.1
  const as10 = v10 !== undefined && !usesDatetime && usesLastmod;
  const issues: ValidationIssue[] = as10 ? v10.end(reader.notes) : v11.end(reader.notes);
  doc.spec = as10 ? '1.0' : '1.1';
  c.addValidationIssues(x.url, issues);
  if (id === 'change-list-index') intervals(c, x.url, indexEntries);
  if (id === 'resource-list' && md?.at !== undefined) {
    const key = String(ms(md.at));
    const lists = c.listsAt.get(key) ?? [];
    lists.push(x.url);
    c.listsAt.set(key, lists);
  }
}

/** Rules that compare a document's header with what its lister said. */
export function expectations(
  c: CheckContext,
  x: Expectation,
  header: DocumentHeader,
  capability: string | undefined,
  kind: DocumentKindId | undefined,
): void {
  listedAs(c, x, capability, kind, header.mdLine);
  const up = linkOf(header, 'up');
  if (x.up !== undefined && up !== undefined && norm(up, x.url) !== x.up) {
    c.issue('up-link-elsewhere', x.url, { actual: norm(up, x.url), expected: x.up });
  }
  if (x.via === 'index' && x.parent !== undefined) {
    const index = linkOf(header, 'index');
    if (index === undefined) c.issue('index-link-missing', x.url, { expected: x.parent });
    else if (norm(index, x.url) !== x.parent) {
      // another index may list it too (an archived generation of the same index): resolved after the crawl
      const target = norm(index, x.url);
      const pending = c.otherIndexes.get(target) ?? [];
      if (pending.length < c.maxDocuments) pending.push({ url: x.url, expected: x.parent });
      c.otherIndexes.set(target, pending);
    }
  }
  if (x.interval !== undefined && capability === 'changelist' && header.root === 'urlset') {
    const md = header.md;
    if (ms(md?.from) !== ms(x.interval.from) || ms(md?.until) !== ms(x.interval.until)) {
      c.issue(
        'changelist-interval-disagrees',
        x.url,
        { from: x.parent, expected: interval(x.interval), actual: interval(md) },
        header.mdLine,
      );
    }
  }
}

/** An entry of an index, kept for the interval rules of a Change List Index. */
type IndexEntry = { loc: string; from?: string; until?: string; line?: number };

/** What one entry adds to the crawl: documents to fetch, packages, sampled resources, facts for later rules. */
function entry(
  c: CheckContext,
  x: Expectation,
  doc: CheckedDocument,
  e: Entry,
  kind: DocumentKind | undefined,
  isIndex: boolean,
  header: DocumentHeader,
  indexEntries: IndexEntry[],
): void {
  const id = kind?.id;
  const loc = norm(e.loc, x.url);
  const allowed = c.o.authority.allows(loc);
  if (id === 'source-description' || id === 'source-description-index') {
    if (allowed) sourceDescriptionEntry(c, x, e, id, loc);
    return;
  }
  if (id === 'capability-list') {
    capabilityListEntry(c, x, e, loc, allowed);
    return;
  }
  if (isIndex && kind !== undefined) {
    indexEntry(c, x, e, kind, header, loc, allowed, indexEntries);
    return;
  }
  const archived = kind === undefined ? undefined : archivedKind(kind);
  if (archived !== undefined) {
    if (allowed)
      c.enqueue({
        url: loc,
        parent: x.url,
        via: 'archive',
        capability: archived.capability,
        archived: true,
      });
    return;
  }
  if (id === 'resource-dump' || id === 'change-dump') {
    if (allowed && !c.seen.has(loc) && c.depthBelow(x.url) <= (c.o.maxDepth ?? Infinity)) {
      c.seen.add(loc);
      c.packages.push({
        url: loc,
        dump: x.url,
        ...(e.md === undefined ? {} : { md: e.md }),
        manifestCapability: id === 'resource-dump' ? 'resourcedump-manifest' : 'changedump-manifest',
      });
    }
    return;
  }
  if (id === 'resource-list' && x.archived !== true) {
    sampleResource(c, {
      loc,
      list: x.url,
      ...(doc.at === undefined ? {} : { listAt: doc.at }),
      ...(e.md === undefined ? {} : { md: e.md }),
      ...(e.lastmod === undefined ? {} : { lastmod: e.lastmod }),
      set: c.setOf.get(x.url),
    });
  }
}

/** An entry of a Source Description (a Capability List) or of its index (a Source Description): fetched next. */
function sourceDescriptionEntry(c: CheckContext, x: Expectation, e: Entry, id: DocumentKindId, loc: string): void {
  if (id === 'source-description-index' || e.md?.capability === 'description')
    c.enqueue({ url: loc, parent: x.url, via: 'description', capability: 'description' });
  else {
    c.capabilityLists.push(loc);
    c.enqueue({ url: loc, parent: x.url, via: 'description', capability: 'capabilitylist', up: x.url });
  }
}

/** An entry of a Capability List: a document to fetch, or a notification channel to check after the crawl. */
function capabilityListEntry(c: CheckContext, x: Expectation, e: Entry, loc: string, allowed: boolean): void {
  if (!c.capabilityLists.includes(x.url)) c.capabilityLists.push(x.url);
  // a capability advertised twice is the validator's capability-duplicate
  const advertised = e.md?.capability;
  if (advertised === undefined) return;
  if (advertised === 'change-notification' || advertised === 'framework-notification') {
    // a WebSub topic, not a document: its hub link and discovery are checked after the crawl
    const hub = (e.ln ?? []).find((l) => (l.rel ?? '').split(/\s+/).includes('hub'))?.href;
    if (hub === undefined) c.issue('channel-hub-missing', x.url, { loc }, e.line);
    if (!c.seen.has(loc) && c.channels.length < c.maxDocuments) {
      c.seen.add(loc);
      c.channels.push({ url: loc, list: x.url });
    }
    return;
  }
  if (allowed) c.enqueue({ url: loc, parent: x.url, via: 'capabilitylist', capability: advertised, up: x.url });
}

/** An entry of an index: kept for the interval rules, and the list it names fetched with what the index says of it. */
function indexEntry(
  c: CheckContext,
  x: Expectation,
  e: Entry,
  kind: DocumentKind,
  header: DocumentHeader,
  loc: string,
  allowed: boolean,
  indexEntries: IndexEntry[],
): void {
  indexEntries.push({
    loc,
    ...(e.md?.from === undefined ? {} : { from: e.md.from }),
    ...(e.md?.until === undefined ? {} : { until: e.md.until }),
    ...(e.line === undefined ? {} : { line: e.line }),
  });
  if (!allowed) return;
  const up = linkOf(header, 'up');
  const listed = indexedKind(kind);
  c.enqueue({
    url: loc,
    parent: x.url,
    via: 'index',
    capability: kind.capability,
    ...(listed === undefined ? {} : { kind: listed.id }),
    ...(up === undefined ? {} : { up: norm(up, x.url) }),
    ...(x.archived === true ? { archived: true } : {}),
    ...(kind.capability === 'changelist'
      ? {
          interval: {
            ...(e.md?.from === undefined ? {} : { from: e.md.from }),
            ...(e.md?.until === undefined ? {} : { until: e.md.until }),
          },
        }
      : {}),
  });
}
