/**
 * `check`: crawls a live Source from any URL and judges it whole. Every document reached is streamed through
 * the validator under the version of the standard it implies; the rules that span documents (up and index
 * links, one capability per document and set, Change List Index intervals, archives, dump packages and
 * their manifests, discovery) are checked from what the crawl keeps, which is bounded by the number of
 * documents, never by the number of resources; a sample of resources is fetched and compared with what
 * the lists claim. Requests are sequential and paced (`rate`).
 * @see Z39.99 §6 (structure, navigation, discovery), §8–13, ResourceSync Archives
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { WELL_KNOWN_PATH, REL_RESOURCESYNC } from '../core/constants.js';
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { nodeHashName, parseHashes, parseLength, isKnownHashAlgorithm } from '../core/hash.js';
import { parseLinkHeader } from '../core/link-header.js';
import type { DocumentHeader, Entry, Md } from '../core/model/types.js';
import { createValidator, type Severity, type ValidationIssue, type Validator } from '../core/validate/index.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { readDocument } from '../core/xml/read-document.js';
import type { Authority } from '../destination/authority.js';
import { htmlResourceSyncLinks, robotsSitemaps } from '../core/discovery-hints.js';
import { discover, type Discovery } from '../destination/discover.js';
import { kindOf } from '../destination/documents.js';
import type { DestinationNote } from '../destination/notes.js';
import type { HttpGet, HttpResponse } from '../destination/http.js';
import { CHECK_MESSAGES, checkMessage, type CheckCode } from './issues.js';
import { readPackage, type PackageContents } from './package.js';

/** One issue found by `check`: a validator issue of a document, or a cross-document, package or resource rule. */
export interface CheckIssue {
  /** Validator code (src/core/validate) or check code (`CHECK_CODES`). */
  code: string;
  severity: Severity;
  /** The document, package or resource concerned. */
  url: string;
  message: string;
  section: string;
  line?: number;
  path?: string;
}

/** A document (or package) reached. */
export interface CheckedDocument {
  url: string;
  /** Document kind id (`change-list`…), `package` for a ZIP package of a dump, null when unidentified. */
  kind: string | null;
  capability?: string;
  /** The version of the standard it was validated under: the one it implies (1.1 when it uses `datetime`). */
  spec?: '1.0' | '1.1';
  /** The document that lists it (or links to it); none for the starting points. */
  parent?: string;
  at?: string;
  completed?: string;
  from?: string;
  until?: string;
  /** Entries (URLs or sitemaps) read, or files in a package. */
  entries: number;
  /** Bytes received (decoded), or the package's listed length when it was not downloaded. */
  bytes: number;
  /** HTTP status when it was not 200. */
  status?: number;
  errors: number;
  warnings: number;
}

/** Progress of a check. */
export interface CheckProgress {
  phase: 'discovery' | 'documents' | 'packages' | 'resources';
  documents: number;
  entries: number;
  resources: number;
  requests: number;
}

/** Options of `check`. */
export interface CheckOptions {
  /** Where to start: an origin, a Source Description, Capability List, list, resource or HTML page. */
  url: string;
  http: HttpGet;
  authority: Authority;
  signal?: AbortSignal;
  /** Resources to fetch and compare with the lists, spread over all lists. Default 300. */
  sample?: number;
  /** Most documents fetched (packages included). Default 1000. */
  maxDocuments?: number;
  /** Requests per second at most; 0 for no pacing. Default 20. */
  rate?: number;
  /** Download and open dump packages. Default true. */
  packages?: boolean;
  /** Largest package downloaded, bytes. Default 256 MiB. */
  maxPackageBytes?: number;
  /** Where packages are downloaded (a temporary folder inside it, removed at the end). Default the OS's. */
  tmpDir?: string;
  /** Levels of documents below the starting points that are fetched (the Source Description is level 0). Default no limit. */
  maxDepth?: number;
  /** Check discovery by every route (well-known URI, robots.txt, HTML links). Default true. */
  discoveryRules?: boolean;
  /** Random numbers in [0, 1) for the sample. Default `Math.random`. */
  random?: () => number;
  onProgress?: (p: CheckProgress) => void;
}

/** What `check` found. */
export interface CheckReport {
  start: string;
  sourceDescription?: string;
  capabilityLists: string[];
  documents: CheckedDocument[];
  issues: CheckIssue[];
  /** Resources fetched and compared. */
  sampled: number;
  /** Resources listed in the Resource Lists read. */
  resources: number;
  /** Sampled resources that sent a Link rel="resourcesync" header. */
  linkHeaders: number;
  errors: number;
  warnings: number;
  /** No error: every MUST that was checked holds. */
  conformant: boolean;
  durationMs: number;
  /** Notes of discovery, with their codes (see `NOTES` of the Destination). */
  notes: DestinationNote[];
}

/** Why a document is fetched: what its lister says about it. */
interface Expectation {
  url: string;
  parent?: string;
  /** Capability the lister gives it. */
  capability?: string;
  /** How it was listed. */
  via: 'start' | 'description' | 'capabilitylist' | 'index' | 'archive';
  /** The URL its `up` link must point to, when known. */
  up?: string;
  /** The interval the index gives it. */
  interval?: { from?: string; until?: string };
  /** Listed by an archive (or below one): a past snapshot, never sampled. */
  archived?: boolean;
}

interface SampleItem {
  loc: string;
  list: string;
  listAt?: string;
  md?: Md;
  lastmod?: string;
  /** Capability Lists of the set it belongs to. */
  set: string | undefined;
}

interface PackageJob {
  url: string;
  dump: string;
  md?: Md;
  manifestCapability: 'resourcedump-manifest' | 'changedump-manifest';
}

const DEFAULTS = { sample: 300, maxDocuments: 1000, rate: 20, maxPackageBytes: 256 * 1024 * 1024 };
const CHANGE_KINDS = new Set(['change-list', 'change-dump-manifest', 'change-notification']);
const ARCHIVE_OF: Readonly<Record<string, string>> = {
  'resourcelist-archive': 'resourcelist',
  'resourcedump-archive': 'resourcedump',
  'changelist-archive': 'changelist',
  'changedump-archive': 'changedump',
};

function norm(url: string, base?: string): string {
  try {
    return new URL(url.trim(), base).href;
  } catch {
    return url;
  }
}

function linkOf(header: DocumentHeader, rel: string): string | undefined {
  return header.ln.find((l) => (l.rel ?? '').split(/\s+/).includes(rel))?.href;
}

function ms(value: string | undefined): number | undefined {
  return value === undefined ? undefined : parseW3CDatetime(value, true)?.ms;
}

function interval(md: { from?: string | undefined; until?: string | undefined } | undefined): string {
  return `[${md?.from ?? '–'}, ${md?.until ?? 'open'}]`;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Counts bytes of a body as it is read. */
async function* counted(body: AsyncIterable<Uint8Array>, counter: { bytes: number }): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    counter.bytes += chunk.length;
    yield chunk;
  }
}

/**
 * Crawls and judges a Source. Throws (`RS_NETWORK`, `RS_HTTP_TIMEOUT`, `RS_NOT_RESOURCESYNC`, `RS_AUTHORITY`…)
 * only when nothing of the Source can be reached; everything found after that becomes an issue.
 * @example
 * const authority = createAuthority({ origins: [new URL(url).origin] });
 * const http = createHttpClient({ authority });
 * const report = await check({ url, http, authority, sample: 100 });
 * report.conformant; // true when no MUST is broken
 */
export async function check(options: CheckOptions): Promise<CheckReport> {
  const started = performance.now();
  const crawler = new Crawler(options);
  return crawler.run().then((r) => ({ ...r, durationMs: Math.round(performance.now() - started) }));
}

class Crawler {
  readonly #o: CheckOptions;
  readonly #sampleSize: number;
  readonly #maxDocuments: number;
  readonly #interval: number;
  readonly #random: () => number;
  readonly documents: CheckedDocument[] = [];
  readonly issues: CheckIssue[] = [];
  readonly #seen = new Set<string>();
  /** Level of each document enqueued (bounded by the number of documents). */
  readonly #depth = new Map<string, number>();
  readonly #queue: Expectation[] = [];
  readonly #packages: PackageJob[] = [];
  /** Notification channels (WebSub topics) advertised by Capability Lists. */
  readonly #channels: Array<{ url: string; list: string }> = [];
  /** Resource Lists (not indexes) by their `at`, for the dump manifests of the same time. */
  readonly #listsAt = new Map<string, string[]>();
  /** Capability List of each document reached below one. */
  readonly #setOf = new Map<string, string>();
  readonly #sample: SampleItem[] = [];
  #resources = 0;
  #entries = 0;
  #requests = 0;
  #nextRequest = 0;
  #truncated = 0;
  #linkHeaders = 0;
  #sampled = 0;
  #capabilityLists: string[] = [];
  /** Documents whose `index` link names another index than the one that listed them, by that other index. */
  readonly #otherIndexes = new Map<string, Array<{ url: string; expected: string }>>();

  constructor(options: CheckOptions) {
    this.#o = options;
    this.#sampleSize = options.sample ?? DEFAULTS.sample;
    this.#maxDocuments = options.maxDocuments ?? DEFAULTS.maxDocuments;
    const rate = options.rate ?? DEFAULTS.rate;
    this.#interval = rate > 0 ? 1000 / rate : 0;
    this.#random = options.random ?? Math.random;
  }

  #issue(code: CheckCode, url: string, params: Record<string, string | number | undefined>, line?: number): void {
    const def = CHECK_MESSAGES[code];
    this.issues.push({
      code,
      severity: def.severity,
      url,
      message: checkMessage(code, params),
      section: def.section,
      ...(line === undefined ? {} : { line }),
    });
  }

  #progress(phase: CheckProgress['phase']): void {
    this.#o.onProgress?.({
      phase,
      documents: this.documents.length,
      entries: this.#entries,
      resources: this.#sampled,
      requests: this.#requests,
    });
  }

  /** One paced request. */
  async #request(url: string, method: 'GET' | 'HEAD' = 'GET'): Promise<HttpResponse> {
    const wait = this.#nextRequest - performance.now();
    if (wait > 0) await sleep(wait, undefined, this.#o.signal ? { signal: this.#o.signal } : {});
    this.#nextRequest = performance.now() + this.#interval;
    this.#requests++;
    this.#o.authority.check(url);
    return this.#o.http(url, { method, ...(this.#o.signal ? { signal: this.#o.signal } : {}) });
  }

  #enqueue(e: Expectation): void {
    if (this.#seen.has(e.url)) return;
    const depth = this.#depthBelow(e.parent);
    if (depth > (this.#o.maxDepth ?? Infinity)) return;
    this.#seen.add(e.url);
    this.#depth.set(e.url, depth);
    this.#queue.push(e);
  }

  /** The level of a document listed by `parent`. */
  #depthBelow(parent: string | undefined): number {
    return parent === undefined ? 0 : (this.#depth.get(parent) ?? 0) + 1;
  }

  async run(): Promise<Omit<CheckReport, 'durationMs'>> {
    this.#progress('discovery');
    const discovery: Discovery = await discover(this.#o.url, {
      http: (url, init) => {
        this.#requests++;
        return this.#o.http(url, init);
      },
      authority: this.#o.authority,
      ...(this.#o.signal ? { signal: this.#o.signal } : {}),
    });
    const sd = discovery.sourceDescription;
    // The Source Description first; then the sets discovery found that it did not list.
    if (sd !== undefined) {
      this.#enqueue({ url: norm(sd), via: 'start', capability: 'description' });
      await this.#crawl();
    }
    for (const cl of discovery.capabilityLists) {
      if (cl.synthetic === true) {
        for (const urls of Object.values(cl.capabilities))
          for (const u of urls ?? []) this.#enqueue({ url: norm(u), via: 'start' });
      } else this.#enqueue({ url: norm(cl.url), via: 'start', capability: 'capabilitylist' });
    }
    await this.#crawl();
    await this.#checkOtherIndexes();
    if (this.#o.packages !== false) await this.#checkPackages();
    else {
      for (const p of this.#packages) {
        this.documents.push({
          url: p.url,
          kind: 'package',
          parent: p.dump,
          entries: 0,
          bytes: parseLength(p.md?.length) ?? 0,
          errors: 0,
          warnings: 0,
        });
      }
    }
    await this.#checkChannels();
    if (this.#o.discoveryRules !== false) await this.#checkDiscovery(discovery);
    await this.#checkResources();
    if (this.#truncated > 0)
      this.#issue('crawl-truncated', this.#o.url, { what: `${this.#truncated} documents`, limit: this.#maxDocuments });

    // count issues per document
    const byUrl = new Map(this.documents.map((d) => [d.url, d]));
    for (const i of this.issues) {
      const d = byUrl.get(i.url);
      if (d === undefined) continue;
      if (i.severity === 'error') d.errors++;
      else d.warnings++;
    }
    const errors = this.issues.filter((i) => i.severity === 'error').length;
    return {
      start: this.#o.url,
      ...(sd === undefined ? {} : { sourceDescription: norm(sd) }),
      capabilityLists: this.#capabilityLists,
      documents: this.documents,
      issues: this.issues,
      sampled: this.#sampled,
      resources: this.#resources,
      linkHeaders: this.#linkHeaders,
      errors,
      warnings: this.issues.length - errors,
      conformant: errors === 0,
      notes: discovery.notes,
    };
  }

  /** Breadth first: a Source Description before its Capability Lists, an index before its lists. */
  async #crawl(): Promise<void> {
    while (this.#queue.length > 0) {
      this.#o.signal?.throwIfAborted();
      if (this.documents.length >= this.#maxDocuments) {
        this.#truncated += this.#queue.length;
        this.#queue.length = 0;
        return;
      }
      await this.#document(this.#queue.shift()!);
      this.#progress('documents');
    }
  }

  /** Fetches, streams, validates one document and applies the rules that need its lister. */
  async #document(x: Expectation): Promise<void> {
    const doc: CheckedDocument = {
      url: x.url,
      kind: null,
      entries: 0,
      bytes: 0,
      errors: 0,
      warnings: 0,
      ...(x.parent === undefined ? {} : { parent: x.parent }),
    };
    this.documents.push(doc);
    let res: HttpResponse;
    try {
      res = await this.#request(x.url);
    } catch (error) {
      if (x.via === 'start' || this.#o.signal?.aborted === true) throw error;
      this.#issue('document-unreachable', x.url, {
        from: x.parent,
        status: isResourceSyncError(error) ? error.code : reason(error),
      });
      return;
    }
    if (res.status !== 200) {
      await res.discard();
      doc.status = res.status;
      this.#issue('document-unreachable', x.url, { from: x.parent ?? x.url, status: `HTTP ${res.status}` });
      return;
    }
    const counter = { bytes: 0 };
    const set = x.via === 'capabilitylist' ? x.parent : x.parent === undefined ? undefined : this.#setOf.get(x.parent);
    if (set !== undefined) this.#setOf.set(x.url, set);
    try {
      const reader = await readDocument(counted(res.body, counter), this.#o.signal ? { signal: this.#o.signal } : {});
      const header = reader.header;
      const kind = kindOf(header);
      doc.kind = kind?.id ?? null;
      const md = header.md;
      if (md?.capability !== undefined) doc.capability = md.capability;
      for (const k of ['at', 'completed', 'from', 'until'] as const) if (md?.[k] !== undefined) doc[k] = md[k];
      this.#expectations(x, header, kind?.capability ?? md?.capability);

      // Validators: change documents under both versions until their entries say which one they follow.
      const both = kind !== undefined && CHANGE_KINDS.has(kind.id);
      const v11 = createValidator(header, { spec: '1.1', mode: 'strict' });
      const v10: Validator | undefined = both ? createValidator(header, { spec: '1.0', mode: 'strict' }) : undefined;
      let usesDatetime = md?.datetime !== undefined;
      let usesLastmod = false;
      const indexEntries: Array<{ loc: string; from?: string; until?: string; line?: number }> = [];
      const id = kind?.id;
      const isIndex = header.root === 'sitemapindex';
      const capabilityName = kind?.capability;
      for await (const batch of reader.batches) {
        for (const e of batch) {
          v11.entry(e);
          v10?.entry(e);
          if (e.md?.datetime !== undefined) usesDatetime = true;
          else if (e.lastmod !== undefined) usesLastmod = true;
          doc.entries++;
          this.#entries++;
          this.#entry(x, doc, e, id, isIndex, capabilityName, header, indexEntries);
        }
      }
      doc.bytes = counter.bytes;
      // a change document timed by lastmod alone follows 1.0; one that uses datetime, or neither, 1.1
      const as10 = v10 !== undefined && !usesDatetime && usesLastmod;
      const issues: ValidationIssue[] = as10 ? v10.end(reader.notes) : v11.end(reader.notes);
      doc.spec = as10 ? '1.0' : '1.1';
      for (const i of issues)
        this.issues.push({
          code: i.code,
          severity: i.severity,
          url: x.url,
          message: i.message,
          section: i.section,
          ...(i.line === undefined ? {} : { line: i.line }),
          ...(i.path === undefined ? {} : { path: i.path }),
        });
      if (id === 'change-list-index') this.#intervals(x.url, indexEntries);
      if (id === 'resource-list' && md?.at !== undefined) {
        const key = String(ms(md.at));
        const lists = this.#listsAt.get(key) ?? [];
        lists.push(x.url);
        this.#listsAt.set(key, lists);
      }
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
      doc.bytes = counter.bytes;
      this.#issue('document-unreadable', x.url, { reason: reason(error) });
    }
  }

  /** Rules that compare a document's header with what its lister said. */
  #expectations(x: Expectation, header: DocumentHeader, capability: string | undefined): void {
    const actual = capability ?? '(none)';
    if (x.capability !== undefined && x.capability !== actual) {
      if (x.via === 'archive')
        this.#issue('archive-capability-mismatch', x.url, { from: x.parent, expected: x.capability, actual });
      else
        this.#issue(
          'capability-mismatch',
          x.url,
          { from: x.parent ?? x.url, expected: x.capability, actual },
          header.mdLine,
        );
    }
    const up = linkOf(header, 'up');
    if (x.up !== undefined && up !== undefined && norm(up, x.url) !== x.up) {
      this.#issue('up-link-elsewhere', x.url, { actual: norm(up, x.url), expected: x.up });
    }
    if (x.via === 'index' && x.parent !== undefined) {
      const index = linkOf(header, 'index');
      if (index === undefined) this.#issue('index-link-missing', x.url, { expected: x.parent });
      else if (norm(index, x.url) !== x.parent) {
        // another index may list it too (an archived generation of the same index): resolved after the crawl
        const target = norm(index, x.url);
        const pending = this.#otherIndexes.get(target) ?? [];
        if (pending.length < this.#maxDocuments) pending.push({ url: x.url, expected: x.parent });
        this.#otherIndexes.set(target, pending);
      }
    }
    if (x.interval !== undefined && capability === 'changelist' && header.root === 'urlset') {
      const md = header.md;
      if (ms(md?.from) !== ms(x.interval.from) || ms(md?.until) !== ms(x.interval.until)) {
        this.#issue(
          'changelist-interval-disagrees',
          x.url,
          { from: x.parent, expected: interval(x.interval), actual: interval(md) },
          header.mdLine,
        );
      }
    }
  }

  /** What one entry adds to the crawl: documents to fetch, packages, sampled resources, facts for later rules. */
  #entry(
    x: Expectation,
    doc: CheckedDocument,
    e: Entry,
    id: string | undefined,
    isIndex: boolean,
    capability: string | undefined,
    header: DocumentHeader,
    indexEntries: Array<{ loc: string; from?: string; until?: string; line?: number }>,
  ): void {
    const loc = norm(e.loc, x.url);
    const allowed = this.#o.authority.allows(loc);
    if (id === 'source-description' || id === 'source-description-index') {
      if (!allowed) return;
      if (id === 'source-description-index' || e.md?.capability === 'description')
        this.#enqueue({ url: loc, parent: x.url, via: 'description', capability: 'description' });
      else {
        this.#capabilityLists.push(loc);
        this.#enqueue({ url: loc, parent: x.url, via: 'description', capability: 'capabilitylist', up: x.url });
      }
      return;
    }
    if (id === 'capability-list') {
      if (!this.#capabilityLists.includes(x.url)) this.#capabilityLists.push(x.url);
      // a capability advertised twice is the validator's capability-duplicate
      const c = e.md?.capability;
      if (c === undefined) return;
      if (c === 'change-notification' || c === 'framework-notification') {
        // a WebSub topic, not a document: its hub link and discovery are checked after the crawl
        const hub = (e.ln ?? []).find((l) => (l.rel ?? '').split(/\s+/).includes('hub'))?.href;
        if (hub === undefined) this.#issue('channel-hub-missing', x.url, { loc }, e.line);
        if (!this.#seen.has(loc) && this.#channels.length < this.#maxDocuments) {
          this.#seen.add(loc);
          this.#channels.push({ url: loc, list: x.url });
        }
        return;
      }
      if (allowed) this.#enqueue({ url: loc, parent: x.url, via: 'capabilitylist', capability: c, up: x.url });
      return;
    }
    if (isIndex && capability !== undefined) {
      indexEntries.push({
        loc,
        ...(e.md?.from === undefined ? {} : { from: e.md.from }),
        ...(e.md?.until === undefined ? {} : { until: e.md.until }),
        ...(e.line === undefined ? {} : { line: e.line }),
      });
      const up = linkOf(header, 'up');
      if (allowed) {
        this.#enqueue({
          url: loc,
          parent: x.url,
          via: 'index',
          capability,
          ...(up === undefined ? {} : { up: norm(up, x.url) }),
          ...(x.archived === true ? { archived: true } : {}),
          ...(capability === 'changelist'
            ? {
                interval: {
                  ...(e.md?.from === undefined ? {} : { from: e.md.from }),
                  ...(e.md?.until === undefined ? {} : { until: e.md.until }),
                },
              }
            : {}),
        });
      }
      return;
    }
    const archived = capability === undefined ? undefined : ARCHIVE_OF[capability];
    if (archived !== undefined) {
      if (allowed) this.#enqueue({ url: loc, parent: x.url, via: 'archive', capability: archived, archived: true });
      return;
    }
    if (id === 'resource-dump' || id === 'change-dump') {
      if (allowed && !this.#seen.has(loc) && this.#depthBelow(x.url) <= (this.#o.maxDepth ?? Infinity)) {
        this.#seen.add(loc);
        this.#packages.push({
          url: loc,
          dump: x.url,
          ...(e.md === undefined ? {} : { md: e.md }),
          manifestCapability: id === 'resource-dump' ? 'resourcedump-manifest' : 'changedump-manifest',
        });
      }
      return;
    }
    if (id === 'resource-list' && x.archived !== true) {
      this.#resources++;
      // reservoir sampling: every listed resource has the same chance, whatever the list
      const item: SampleItem = {
        loc,
        list: x.url,
        ...(doc.at === undefined ? {} : { listAt: doc.at }),
        ...(e.md === undefined ? {} : { md: e.md }),
        ...(e.lastmod === undefined ? {} : { lastmod: e.lastmod }),
        set: this.#setOf.get(x.url),
      };
      if (this.#sample.length < this.#sampleSize) this.#sample.push(item);
      else {
        const j = Math.floor(this.#random() * this.#resources);
        if (j < this.#sampleSize) this.#sample[j] = item;
      }
    }
  }

  /** Change Lists of an index: forward chronological, contiguous, not overlapping, only the last one open. @see Z39.99 §12.2 */
  #intervals(url: string, entries: Array<{ loc: string; from?: string; until?: string; line?: number }>): void {
    for (let i = 1; i < entries.length; i++) {
      const prev = entries[i - 1]!;
      const cur = entries[i]!;
      const prevUntil = ms(prev.until);
      const from = ms(cur.from);
      if (prev.until === undefined) {
        this.#issue('changelist-open-not-last', url, { loc: prev.loc }, prev.line);
        continue;
      }
      if (prevUntil === undefined || from === undefined) continue;
      if (from < prevUntil)
        this.#issue('changelists-overlap', url, { loc: cur.loc, from: cur.from, until: prev.until }, cur.line);
      else if (from > prevUntil)
        this.#issue('changelists-gap', url, { loc: cur.loc, from: cur.from, until: prev.until }, cur.line);
    }
  }

  /**
   * An `index` link must name an index that lists the document: one that is not the index it was reached
   * from is fetched (once) and read for it. @see Z39.99 §6.2, §10.2
   */
  async #checkOtherIndexes(): Promise<void> {
    for (const [target, docs] of this.#otherIndexes) {
      const listed = new Set<string>();
      if (this.#o.authority.allows(target)) {
        try {
          const res = await this.#request(target);
          if (res.status === 200) {
            const reader = await readDocument(res.body, this.#o.signal ? { signal: this.#o.signal } : {});
            if (reader.header.root === 'sitemapindex') {
              const wanted = new Set(docs.map((d) => d.url));
              for await (const e of reader.entries) {
                const loc = norm(e.loc, target);
                if (wanted.has(loc)) listed.add(loc);
              }
            } else await reader.close();
          } else await res.discard();
        } catch (error) {
          if (this.#o.signal?.aborted === true) throw error;
        }
      }
      for (const d of docs)
        if (!listed.has(d.url)) this.#issue('index-link-elsewhere', d.url, { actual: target, expected: d.expected });
    }
  }

  /** Downloads each package, checks it against the dump's metadata, opens its manifest. @see Z39.99 §11 */
  async #checkPackages(): Promise<void> {
    if (this.#packages.length === 0) return;
    const dir = await mkdtemp(join(this.#o.tmpDir ?? tmpdir(), 'rs-check-'));
    try {
      for (const p of this.#packages) {
        if (this.documents.length >= this.#maxDocuments) {
          this.#truncated++;
          continue;
        }
        await this.#package(p, dir);
        this.#progress('packages');
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async #package(p: PackageJob, dir: string): Promise<void> {
    const doc: CheckedDocument = {
      url: p.url,
      kind: 'package',
      parent: p.dump,
      entries: 0,
      bytes: 0,
      errors: 0,
      warnings: 0,
    };
    this.documents.push(doc);
    let res: HttpResponse;
    try {
      res = await this.#request(p.url);
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
      this.#issue('package-unreachable', p.url, { from: p.dump, status: reason(error) });
      return;
    }
    if (res.status !== 200) {
      await res.discard();
      doc.status = res.status;
      this.#issue('package-unreachable', p.url, { from: p.dump, status: `HTTP ${res.status}` });
      return;
    }
    const file = join(dir, `package-${this.documents.length}.zip`);
    const declared = parseHashes(p.md?.hash).filter((h) => isKnownHashAlgorithm(h.algorithm));
    const hashes = declared.map((h) => ({
      h,
      hash: createHash(nodeHashName(h.algorithm as Parameters<typeof nodeHashName>[0])),
    }));
    const max = this.#o.maxPackageBytes ?? DEFAULTS.maxPackageBytes;
    try {
      const out = createWriteStream(file);
      try {
        for await (const chunk of res.body) {
          doc.bytes += chunk.length;
          if (doc.bytes > max)
            throw new ResourceSyncError('RS_LIMIT_BYTES', `Package '${p.url}' is larger than ${max} bytes.`, {
              data: { url: p.url, max },
            });
          for (const { hash } of hashes) hash.update(chunk);
          if (!out.write(chunk))
            await new Promise<void>((resolve, reject) => out.once('drain', resolve).once('error', reject));
        }
      } finally {
        await new Promise<void>((resolve) => out.end(resolve));
      }
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
      this.#issue('package-unreadable', p.url, { reason: reason(error) });
      return;
    }
    const length = parseLength(p.md?.length);
    if (length !== undefined && length !== doc.bytes)
      this.#issue('package-length-mismatch', p.url, { from: p.dump, expected: length, actual: doc.bytes });
    for (const { h, hash } of hashes) {
      const actual = hash.digest('hex');
      if (actual !== h.digest)
        this.#issue('package-hash-mismatch', p.url, {
          from: p.dump,
          algorithm: h.algorithm,
          expected: h.digest,
          actual,
        });
    }
    let contents: PackageContents;
    try {
      contents = await readPackage(file);
    } catch (error) {
      this.#issue('package-unreadable', p.url, { reason: reason(error) });
      return;
    }
    doc.entries = contents.files.size;
    const manifestUrl = `${p.url}#manifest.xml`;
    if (contents.manifest === undefined) {
      this.#issue('manifest-missing', p.url, {});
      return;
    }
    const manifestDoc: CheckedDocument = {
      url: manifestUrl,
      kind: null,
      parent: p.url,
      entries: 0,
      bytes: contents.manifest.length,
      errors: 0,
      warnings: 0,
    };
    this.documents.push(manifestDoc);
    try {
      const reader = await readDocument(contents.manifest);
      const kind = kindOf(reader.header);
      manifestDoc.kind = kind?.id ?? null;
      if (reader.header.md?.capability !== undefined) manifestDoc.capability = reader.header.md.capability;
      const mdAt = reader.header.md?.at;
      if (mdAt !== undefined) manifestDoc.at = mdAt;
      if (reader.header.md?.from !== undefined) manifestDoc.from = reader.header.md.from;
      if (reader.header.md?.until !== undefined) manifestDoc.until = reader.header.md.until;
      this.#expectations(
        { url: manifestUrl, parent: p.dump, via: 'capabilitylist', capability: p.manifestCapability },
        reader.header,
        kind?.capability ?? reader.header.md?.capability,
      );
      const validator = createValidator(reader.header, { spec: '1.1', mode: 'strict' });
      // what the manifest says of each resource, for the Resource List of the same time (bounded by the manifest's size)
      const claims = new Map<string, { length?: string; hash?: string }>();
      for await (const e of reader.entries) {
        validator.entry(e);
        manifestDoc.entries++;
        const path = e.md?.path;
        if (e.md?.change === 'deleted') continue;
        if (path !== undefined) {
          const name = path.replace(/^\/+/, '');
          const size = contents.files.get(name);
          if (size === undefined) this.#issue('manifest-bitstream-missing', manifestUrl, { loc: e.loc, path }, e.line);
          else {
            const expected = parseLength(e.md?.length);
            if (expected !== undefined && expected !== size)
              this.#issue('manifest-bitstream-length', manifestUrl, { path, expected, actual: size }, e.line);
          }
        }
        if (p.manifestCapability === 'resourcedump-manifest')
          claims.set(norm(e.loc, p.url), {
            ...(e.md?.length === undefined ? {} : { length: e.md.length }),
            ...(e.md?.hash === undefined ? {} : { hash: e.md.hash }),
          });
      }
      for (const i of validator.end(reader.notes))
        this.issues.push({
          code: i.code,
          severity: i.severity,
          url: manifestUrl,
          message: i.message,
          section: i.section,
          ...(i.line === undefined ? {} : { line: i.line }),
          ...(i.path === undefined ? {} : { path: i.path }),
        });
      const lists = mdAt === undefined ? undefined : this.#listsAt.get(String(ms(mdAt)));
      if (lists !== undefined && claims.size > 0) await this.#compareWithLists(manifestUrl, claims, lists);
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
      this.#issue('document-unreadable', manifestUrl, { reason: reason(error) });
    }
  }

  /** A Resource Dump's manifest and the Resource List of the same `at` describe the same resources alike. @see Z39.99 §11.2 */
  async #compareWithLists(
    manifest: string,
    claims: Map<string, { length?: string; hash?: string }>,
    lists: string[],
  ): Promise<void> {
    for (const list of lists) {
      let res: HttpResponse;
      try {
        res = await this.#request(list);
      } catch {
        continue;
      }
      if (res.status !== 200) {
        await res.discard();
        continue;
      }
      const reader = await readDocument(res.body);
      for await (const e of reader.entries) {
        const loc = norm(e.loc, list);
        const claim = claims.get(loc);
        if (claim === undefined) continue;
        claims.delete(loc);
        const sameLength =
          claim.length === undefined ||
          e.md?.length === undefined ||
          parseLength(claim.length) === parseLength(e.md.length);
        const listHashes = new Map(parseHashes(e.md?.hash).map((h) => [h.algorithm, h.digest]));
        const sameHash = parseHashes(claim.hash).every(
          (h) => listHashes.get(h.algorithm) === undefined || listHashes.get(h.algorithm) === h.digest,
        );
        if (!sameLength || !sameHash) {
          this.#issue('manifest-resourcelist-disagrees', manifest, {
            loc,
            manifest: `length ${claim.length ?? '–'}, hash ${claim.hash ?? '–'}`,
            list,
            list_value: `length ${e.md?.length ?? '–'}, hash ${e.md?.hash ?? '–'}`,
          });
        }
      }
    }
    for (const loc of claims.keys()) {
      this.#issue('manifest-resourcelist-disagrees', manifest, {
        loc,
        manifest: 'it is in the dump',
        list: lists.join("', '"),
        list_value: 'it is not listed',
      });
    }
  }

  /**
   * Notification channels: the topic URL answers with WebSub's discovery links (`rel="hub"` and
   * `rel="self"`). The hub itself is never contacted. @see ResourceSync Change Notification §5, WebSub §4
   */
  async #checkChannels(): Promise<void> {
    for (const ch of this.#channels) {
      const doc: CheckedDocument = {
        url: ch.url,
        kind: 'notification-channel',
        parent: ch.list,
        entries: 0,
        bytes: 0,
        errors: 0,
        warnings: 0,
      };
      this.documents.push(doc);
      if (this.#o.discoveryRules === false || !this.#o.authority.allows(ch.url)) continue;
      let res: HttpResponse;
      try {
        res = await this.#request(ch.url, 'HEAD');
      } catch (error) {
        if (this.#o.signal?.aborted === true) throw error;
        this.#issue('channel-discovery-missing', ch.url, { problem: `cannot be reached (${reason(error)})` });
        continue;
      }
      await res.discard();
      if (res.status < 200 || res.status > 299) {
        doc.status = res.status;
        this.#issue('channel-discovery-missing', ch.url, { problem: `answered HTTP ${res.status}` });
        continue;
      }
      const rels = new Set(parseLinkHeader(res.headers.link ?? '').flatMap((l) => l.rel));
      const missing = ['hub', 'self'].filter((r) => !rels.has(r));
      if (missing.length > 0)
        this.#issue('channel-discovery-missing', ch.url, {
          problem: `sends no Link header with rel="${missing.join('" or rel="')}"`,
        });
    }
  }

  /** Discovery by every route agrees with what the crawl found. @see Z39.99 §6.3 */
  async #checkDiscovery(discovery: Discovery): Promise<void> {
    const origin = new URL(this.#o.url).origin;
    const known = new Set(this.documents.map((d) => d.url));
    const wk = new URL(WELL_KNOWN_PATH, origin).href;
    const wkDoc = this.documents.find((d) => d.url === wk);
    if (wkDoc === undefined) {
      try {
        const res = await this.#request(wk);
        if (res.status !== 200) {
          await res.discard();
          this.#issue('well-known-missing', wk, { url: wk, status: `HTTP ${res.status}` });
        } else {
          const reader = await readDocument(res.body);
          await reader.close();
          if (reader.header.md?.capability !== 'description')
            this.#issue('well-known-not-description', wk, {
              url: wk,
              actual: reader.header.md?.capability ?? '(none)',
            });
        }
      } catch (error) {
        if (this.#o.signal?.aborted === true) throw error;
        this.#issue('well-known-not-description', wk, { url: wk, actual: reason(error) });
      }
    } else if (wkDoc.capability !== 'description' && wkDoc.status === undefined) {
      this.#issue('well-known-not-description', wk, { url: wk, actual: wkDoc.capability ?? '(none)' });
    } else if (wkDoc.status !== undefined) {
      this.#issue('well-known-missing', wk, { url: wk, status: `HTTP ${wkDoc.status}` });
    }
    // robots.txt Sitemap directives name documents of this Source
    const robots = new URL('/robots.txt', origin).href;
    try {
      const res = await this.#request(robots);
      if (res.status === 200) {
        let text = '';
        for await (const chunk of res.body) {
          if (text.length < 1024 * 1024) text += Buffer.from(chunk).toString('utf8');
        }
        for (const target of robotsSitemaps(text, robots)) {
          if (this.#o.authority.allows(target) && !known.has(norm(target)))
            this.#issue('robots-sitemap-unknown', robots, { target });
        }
      } else await res.discard();
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
    }
    // an HTML start page links to this Source's documents
    if (discovery.start.kind === 'html') {
      try {
        const res = await this.#request(this.#o.url);
        let html = '';
        for await (const chunk of res.body) {
          if (html.length < 1024 * 1024) html += Buffer.from(chunk).toString('utf8');
        }
        for (const target of htmlResourceSyncLinks(html, res.url)) {
          const t = norm(target);
          if (!this.#capabilityLists.includes(t) && t !== discovery.sourceDescription)
            this.#issue('html-link-elsewhere', this.#o.url, { target: t });
        }
      } catch (error) {
        if (this.#o.signal?.aborted === true) throw error;
      }
    }
  }

  /** Fetches the sampled resources and compares them with their lists. @see Z39.99 §10.1 */
  async #checkResources(): Promise<void> {
    for (const item of this.#sample) {
      this.#o.signal?.throwIfAborted();
      await this.#resource(item);
      this.#sampled++;
      this.#progress('resources');
    }
  }

  async #resource(item: SampleItem): Promise<void> {
    const declared = parseHashes(item.md?.hash).filter((h) => isKnownHashAlgorithm(h.algorithm));
    const length = parseLength(item.md?.length);
    let res: HttpResponse;
    try {
      res = await this.#request(item.loc, declared.length > 0 ? 'GET' : 'HEAD');
    } catch (error) {
      if (this.#o.signal?.aborted === true) throw error;
      this.#issue('resource-unreachable', item.loc, { list: item.list, status: reason(error) });
      return;
    }
    if (res.status !== 200) {
      await res.discard();
      this.#issue('resource-unreachable', item.loc, { list: item.list, status: `HTTP ${res.status}` });
      return;
    }
    // Link: rel="resourcesync" names a Capability List of this Source
    const link = res.headers.link;
    if (link !== undefined) {
      const targets = parseLinkHeader(link)
        .filter((l) => l.rel.includes(REL_RESOURCESYNC))
        .map((l) => norm(l.target, res.url));
      if (targets.length > 0) this.#linkHeaders++;
      for (const t of targets) {
        const ok = item.set === undefined ? this.#capabilityLists.includes(t) : t === item.set;
        if (!ok) this.#issue('resource-link-elsewhere', item.loc, { target: t });
      }
    }
    let size: number | undefined;
    const digests = new Map<string, string>();
    if (declared.length > 0) {
      const hashes = declared.map((h) => ({
        algorithm: h.algorithm,
        hash: createHash(nodeHashName(h.algorithm as Parameters<typeof nodeHashName>[0])),
      }));
      size = 0;
      for await (const chunk of res.body) {
        size += chunk.length;
        for (const { hash } of hashes) hash.update(chunk);
      }
      for (const { algorithm, hash } of hashes) digests.set(algorithm, hash.digest('hex'));
    } else {
      await res.discard();
      const cl = res.headers['content-length'];
      size = cl === undefined || res.headers['content-encoding'] !== undefined ? undefined : Number(cl);
    }
    const lastModified =
      res.headers['last-modified'] === undefined ? undefined : Date.parse(res.headers['last-modified']);
    const listAt = ms(item.listAt);
    const changedSince = lastModified !== undefined && listAt !== undefined && lastModified > listAt + 999;
    const differences: Array<() => void> = [];
    if (length !== undefined && size !== undefined && size !== length) {
      differences.push(() =>
        this.#issue('resource-length-mismatch', item.loc, { list: item.list, expected: length, actual: size }),
      );
    }
    for (const h of declared) {
      const actual = digests.get(h.algorithm);
      if (actual !== undefined && actual !== h.digest) {
        differences.push(() =>
          this.#issue('resource-hash-mismatch', item.loc, {
            list: item.list,
            algorithm: h.algorithm,
            expected: h.digest,
            actual,
          }),
        );
      }
    }
    if (differences.length > 0) {
      if (changedSince) {
        this.#issue('resource-changed-since-list', item.loc, {
          list: item.list,
          what: 'length or hash',
          lastModified: new Date(lastModified).toISOString(),
          at: item.listAt,
        });
      } else for (const d of differences) d();
    } else if (item.lastmod !== undefined && lastModified !== undefined && !Number.isNaN(lastModified)) {
      const lm = ms(item.lastmod);
      // HTTP dates have whole seconds
      if (lm !== undefined && Math.abs(Math.floor(lm / 1000) * 1000 - lastModified) >= 1000) {
        this.#issue('resource-lastmod-mismatch', item.loc, {
          list: item.list,
          expected: item.lastmod,
          actual: new Date(lastModified).toISOString(),
        });
      }
    }
  }
}
