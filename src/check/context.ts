/**
 * The state of one `check` run, shared by its parts (crawl, cross-document rules, dump packages, resource
 * sampling): the options, the documents and issues found, the queue of documents to fetch, and the facts kept
 * for the rules checked after the crawl. Everything kept is bounded by the number of documents, never by the
 * number of resources. Requests go through `request`, which paces them (`rate`).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DocumentKindId } from '../core/model/document-kinds.js';
import type { DocumentHeader, Md } from '../core/model/types.js';
import type { ValidationIssue } from '../core/validate/index.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import type { ResourceSyncError } from '../core/errors.js';
import type { HttpGet, HttpResponse } from '../client/http.js';
import { withDeadline } from '../client/deadline.js';
import { CHECK_MESSAGES, checkMessage, type CheckCode } from './issues.js';
import type { CheckedDocument, CheckIssue, CheckOptions, CheckProgress } from './report.js';
import { messageOf } from '../core/errors.js';

/** Why a document is fetched: what its lister says about it. */
export interface Expectation {
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
  /** The kind an index lists (`indexedKind`): the kind this document must be. */
  kind?: DocumentKindId;
}

export interface SampleItem {
  loc: string;
  list: string;
  listAt?: string;
  md?: Md;
  lastmod?: string;
  /** Capability Lists of the set it belongs to. */
  set: string | undefined;
}

export interface PackageJob {
  url: string;
  dump: string;
  md?: Md;
  manifestCapability: 'resourcedump-manifest' | 'changedump-manifest';
}

/** Defaults of `CheckOptions`. */
export const DEFAULTS = {
  sample: 300,
  maxDocuments: 1000,
  rate: 20,
  maxPackageBytes: 256 * 1024 * 1024,
  deadlineMs: 120_000,
};

export function norm(url: string, base?: string): string {
  try {
    return new URL(url.trim(), base).href;
  } catch {
    return url;
  }
}

export function linkOf(header: DocumentHeader, rel: string): string | undefined {
  return header.ln.find((l) => (l.rel ?? '').split(/\s+/).includes(rel))?.href;
}

export function ms(value: string | undefined): number | undefined {
  return value === undefined ? undefined : parseW3CDatetime(value, true)?.ms;
}

export function interval(md: { from?: string | undefined; until?: string | undefined } | undefined): string {
  return `[${md?.from ?? '–'}, ${md?.until ?? 'open'}]`;
}

export function reason(error: unknown): string {
  return messageOf(error);
}

/** Counts bytes of a body as it is read. */
export async function* counted(
  body: AsyncIterable<Uint8Array>,
  counter: { bytes: number },
): AsyncGenerator<Uint8Array> {
  for await (const chunk of body) {
    counter.bytes += chunk.length;
    yield chunk;
  }
}

/** One check run's state; see the module comment. */
export class CheckContext {
  readonly o: CheckOptions;
  readonly sampleSize: number;
  readonly maxDocuments: number;
  readonly #interval: number;
  readonly random: () => number;
  /** The client, each request bounded by the whole-body deadline. */
  readonly http: HttpGet;
  readonly deadlineMs: number;
  /** Requests cut off by the deadline. */
  readonly late: ResourceSyncError[] = [];
  readonly documents: CheckedDocument[] = [];
  readonly issues: CheckIssue[] = [];
  /** Documents, packages and channels enqueued (each is fetched once). */
  readonly seen = new Set<string>();
  /** Level of each document enqueued (bounded by the number of documents). */
  readonly #depth = new Map<string, number>();
  readonly queue: Expectation[] = [];
  readonly packages: PackageJob[] = [];
  /** Notification channels (WebSub topics) advertised by Capability Lists. */
  readonly channels: Array<{ url: string; list: string }> = [];
  /** Resource Lists (not indexes) by their `at`, for the dump manifests of the same time. */
  readonly listsAt = new Map<string, string[]>();
  /** Capability List of each document reached below one. */
  readonly setOf = new Map<string, string>();
  readonly sample: SampleItem[] = [];
  /** Resources listed in the Resource Lists read. */
  resources = 0;
  entries = 0;
  requests = 0;
  #nextRequest = 0;
  /** Documents not fetched because of `maxDocuments`. */
  truncated = 0;
  linkHeaders = 0;
  sampled = 0;
  readonly capabilityLists: string[] = [];
  /** Documents an index or archive lists that were already enqueued by another lister: judged after the crawl. */
  readonly relisted: Expectation[] = [];
  /** Documents whose `index` link names another index than the one that listed them, by that other index. */
  readonly otherIndexes = new Map<string, Array<{ url: string; expected: string }>>();

  constructor(options: CheckOptions) {
    this.o = options;
    this.sampleSize = options.sample ?? DEFAULTS.sample;
    this.maxDocuments = options.maxDocuments ?? DEFAULTS.maxDocuments;
    const rate = options.rate ?? DEFAULTS.rate;
    this.#interval = rate > 0 ? 1000 / rate : 0;
    this.random = options.random ?? Math.random;
    this.deadlineMs = options.deadlineMs ?? DEFAULTS.deadlineMs;
    this.http = withDeadline(options.http, this.deadlineMs, (e) => {
      if (this.late.length < this.maxDocuments) this.late.push(e);
    });
  }

  /** Reports an issue of the check's own rules (`CHECK_CODES`). */
  issue(code: CheckCode, url: string, params: Record<string, string | number | undefined>, line?: number): void {
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

  /** Reports the validator's issues of the document at `url`. */
  addValidationIssues(url: string, issues: readonly ValidationIssue[]): void {
    for (const i of issues)
      this.issues.push({
        code: i.code,
        severity: i.severity,
        url,
        message: i.message,
        section: i.section,
        ...(i.line === undefined ? {} : { line: i.line }),
        ...(i.path === undefined ? {} : { path: i.path }),
      });
  }

  progress(phase: CheckProgress['phase']): void {
    this.o.onProgress?.({
      phase,
      documents: this.documents.length,
      entries: this.entries,
      resources: this.sampled,
      requests: this.requests,
    });
  }

  /** One paced request. */
  async request(url: string, method: 'GET' | 'HEAD' = 'GET'): Promise<HttpResponse> {
    const wait = this.#nextRequest - performance.now();
    if (wait > 0) await sleep(wait, undefined, this.o.signal ? { signal: this.o.signal } : {});
    this.#nextRequest = performance.now() + this.#interval;
    this.requests++;
    this.o.authority.check(url);
    return this.http(url, { method, ...(this.o.signal ? { signal: this.o.signal } : {}) });
  }

  enqueue(e: Expectation): void {
    if (this.seen.has(e.url)) {
      if ((e.via === 'index' || e.via === 'archive') && this.relisted.length < this.maxDocuments) this.relisted.push(e);
      return;
    }
    const depth = this.depthBelow(e.parent);
    if (depth > (this.o.maxDepth ?? Infinity)) return;
    this.seen.add(e.url);
    this.#depth.set(e.url, depth);
    this.queue.push(e);
  }

  /** The level of a document listed by `parent`. */
  depthBelow(parent: string | undefined): number {
    return parent === undefined ? 0 : (this.#depth.get(parent) ?? 0) + 1;
  }
}
