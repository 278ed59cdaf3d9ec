/**
 * The explorer: a web page that shows a Source's document tree, pages through any document's entries
 * (searchable by URL), shows the Change Lists as a time line, opens dump packages and their manifests and
 * runs `check`, plus the JSON endpoints behind it. Everything is fetched on the server side, through the
 * Destination's client and its authority check: a document URL given to an endpoint must be one the
 * Source's authority allows (its origin, and those allowed with it), so the page is never an open proxy.
 * Lists are streamed and paged, never held whole.
 *
 * Routes, under `basePath` (default `/`): the page (`basePath`), `app.js`, `app.css`, and
 * `api/tree[?refresh=1]`, `api/entries?doc=URL&page=N&q=TEXT`, `api/changes?page=N`,
 * `api/package?doc=URL&page=N&q=TEXT`, `api/check[?refresh=1]`, `api/channels` (when `channels` is given),
 * `api/views` (which status views are offered), `api/aggregate` and `api/queue` (when `aggregate`, `queue` are given).
 * @see Z39.99 §6.1 (structure), §7 (documents), §11–13 (dumps and Change Lists)
 */
import { isResourceSyncError, messageOf } from '../core/errors.js';
import { check, type CheckReport } from '../check/check.js';
import { explore, type ExploreOptions, type ExploreResult, type TreeNode } from '../check/explore.js';
import { originOf, type Authority } from '../client/authority.js';
import type { HttpGet } from '../client/http.js';
import { APP_CSS, APP_JS, INDEX_HTML } from './assets.js';
import { STATUS_CSS, STATUS_JS } from './status-assets.js';
import type { AggregateStatusView, QueueStatusView } from './status-views.js';
import { readEntriesPage } from './entries.js';
import { decodablePath } from '../node/request-guard.js';
import { PackageReader } from './packages.js';
import { readTimeline } from './timeline.js';

/** A web-standard request handler. */
export type ExplorerHandler = (request: Request) => Promise<Response>;

/** A Source's notification channels and their subscribers, as `serve` shows them. */
export interface ChannelSummary {
  hub: string;
  channels: Array<{ topic: string; subscribers: number }>;
  /**
   * The subscriptions, when the hub is embedded: verified (getting deliveries), pending (being verified)
   * or given up (its callback failed for too long); the callback without its credentials or query.
   */
  subscriptions?: Array<{
    topic: string;
    callback: string;
    state: 'verified' | 'pending' | 'given-up';
    expiresAt?: number;
    failures: number;
    lastDeliveryAt?: number;
  }>;
}

/** Options of {@link createExplorerHandler}. */
export interface ExplorerOptions {
  /** Where to start exploring: an origin, a Source Description, Capability List, list or HTML page. */
  source: string;
  /** The client every document is fetched with (its authority check applies to redirects too). */
  http: HttpGet;
  /** The origins the explorer may read; a `doc` parameter outside them is refused (403). */
  authority: Authority;
  /** Path the page is mounted at, ending in `/`. Default `/`. */
  basePath?: string;
  /** Entries per page, at most 500. Default 100. */
  pageSize?: number;
  /** Most entries read for one page of a document or one search. Default 50,000 (the Sitemaps limit). */
  scanLimit?: number;
  /** Most documents the tree and `check` fetch. Default 1000. */
  maxDocuments?: number;
  /** Requests per second of the tree's crawl and of `check`; 0 for no pacing. Default 20. */
  rate?: number;
  /** Resources `check` fetches and compares. Default 50. */
  checkSample?: number;
  /** Largest package downloaded, bytes. Default 256 MiB. */
  maxPackageBytes?: number;
  /** Where packages are downloaded while they are read. Default the OS's temporary folder. */
  tmpDir?: string;
  /** How long the tree of a crawl is reused, ms. Default: until the page asks to reload it. */
  treeMaxAgeMs?: number;
  /** The notification channels to show (the Channels tab). Default: none. */
  channels?: () => ChannelSummary | Promise<ChannelSummary>;
  /** The status of every Source of an aggregate (the Aggregate tab), read on each request. Default: none. */
  aggregate?: () => Promise<AggregateStatusView>;
  /** The runs of a sync job queue (the Queue tab), read on each request. Default: none. */
  queue?: () => Promise<QueueStatusView>;
  /** Aborts crawls, checks and reads in flight. */
  signal?: AbortSignal;
  /**
   * Which `Host` header values the page answers (see `hostCheck` in `request-guard.ts`); any other is refused
   * with 421, so that a page whose DNS name is rebound to this server cannot read it. Default: any.
   */
  allowHost?: (host: string | null) => boolean;
}

/** The page's script and styles: its own, then the status views'. */
const PAGE_JS = `${APP_JS}${STATUS_JS}`;
const PAGE_CSS = `${APP_CSS}${STATUS_CSS}`;

/** Most entries per page a caller may ask for. */
const MAX_PAGE_SIZE = 500;
/** Longest search text. */
const MAX_QUERY = 200;
/** Highest page number accepted. */
const MAX_PAGE = 1_000_000;

const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** A request the handler refuses, with its status. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

function respond(status: number, body: string, type: string, extra: Record<string, string> = {}): Response {
  return new Response(body, {
    status,
    headers: { ...SECURITY_HEADERS, 'content-type': type, 'cache-control': 'no-store', ...extra },
  });
}

function json(value: unknown, status = 200): Response {
  return respond(status, JSON.stringify(value), 'application/json; charset=utf-8');
}

function errorResponse(error: unknown): Response {
  if (error instanceof Refusal) return json({ error: { code: error.code, message: error.message } }, error.status);
  if (isResourceSyncError(error)) {
    const status = error.code === 'RS_AUTHORITY' ? 403 : error.code === 'RS_ABORTED' ? 503 : 502;
    return json({ error: { code: error.code, message: error.message } }, status);
  }
  return json({ error: { code: 'RS_INTERNAL', message: messageOf(error) } }, 500);
}

function pageParam(params: URLSearchParams): number {
  const raw = params.get('page') ?? '0';
  if (!/^\d{1,7}$/.test(raw) || Number(raw) > MAX_PAGE)
    throw new Refusal(400, 'RS_INVALID_ARGUMENT', `page '${raw.slice(0, 20)}' is not a page number (0 to ${MAX_PAGE}).`);
  return Number(raw);
}

function queryParam(params: URLSearchParams): string {
  const q = params.get('q') ?? '';
  if (q.length > MAX_QUERY) throw new Refusal(400, 'RS_INVALID_ARGUMENT', `q is longer than ${MAX_QUERY} characters.`);
  return q;
}

/**
 * Creates the explorer's handler for one Source.
 * @example
 * const authority = createAuthority({ origins: ['https://example.com'] });
 * const http = createHttpClient({ authority });
 * const handler = createExplorerHandler({ source: 'https://example.com/', http, authority });
 * const res = await handler(new Request('http://127.0.0.1:8090/api/tree'));
 */
export function createExplorerHandler(options: ExplorerOptions): ExplorerHandler {
  const explorer = new Explorer(options);
  return (request) => explorer.handle(request);
}

/** A crawl of the tree under way or done, and when it started. */
interface TreeRead {
  at: number;
  result: Promise<ExploreResult>;
}

/** The explorer of one Source: its settings, the last tree read, the check under way, and the routes. */
class Explorer {
  readonly #options: ExplorerOptions;
  readonly #basePath: string;
  readonly #pageSize: number;
  readonly #scanLimit: number;
  readonly #packages: PackageReader;
  /** What the tree's crawl and `check` are given: the Source, the client, the authority and the bounds. */
  readonly #crawl: ExploreOptions;
  #tree: TreeRead | undefined;
  /** Entries of each document of the last tree read (as many as the crawl's documents). */
  #counts = new Map<string, number>();
  #checking: { done: boolean; report: Promise<CheckReport> } | undefined;

  constructor(options: ExplorerOptions) {
    const basePath = options.basePath ?? '/';
    if (!basePath.startsWith('/') || !basePath.endsWith('/')) throw new TypeError(`basePath '${basePath}' must start and end with '/'.`);
    this.#options = options;
    this.#basePath = basePath;
    this.#pageSize = Math.min(Math.max(options.pageSize ?? 100, 1), MAX_PAGE_SIZE);
    this.#scanLimit = Math.max(options.scanLimit ?? 50_000, 1);
    const maxDocuments = options.maxDocuments ?? 1000;
    const rate = options.rate ?? 20;
    const { http, authority, signal } = options;
    this.#packages = new PackageReader({
      http,
      maxBytes: options.maxPackageBytes ?? 256 * 1024 * 1024,
      ...(options.tmpDir === undefined ? {} : { tmpDir: options.tmpDir }),
    });
    this.#crawl = { url: options.source, http, authority, maxDocuments, rate, ...(signal === undefined ? {} : { signal }) };
  }

  /** The page, its assets, or an endpoint under `api/`; a refused request answers with its status. */
  async handle(request: Request): Promise<Response> {
    const options = this.#options;
    const basePath = this.#basePath;
    if (options.allowHost !== undefined && !options.allowHost(request.headers.get('host')))
      return respond(421, 'Misdirected Request: this page answers only requests addressed to its own host.\n', 'text/plain; charset=utf-8');
    const url = new URL(request.url);
    const path = url.pathname;
    if (!decodablePath(path)) return respond(400, 'Bad Request\n', 'text/plain; charset=utf-8');
    if (request.method !== 'GET' && request.method !== 'HEAD')
      return respond(405, 'Method Not Allowed\n', 'text/plain; charset=utf-8', { allow: 'GET, HEAD' });
    if (`${path}/` === basePath) return respond(301, '', 'text/plain; charset=utf-8', { location: basePath });
    if (!path.startsWith(basePath)) return respond(404, 'Not Found\n', 'text/plain; charset=utf-8');
    const rest = path.slice(basePath.length);
    if (rest === '' || rest === 'index.html') return respond(200, INDEX_HTML, 'text/html; charset=utf-8');
    if (rest === 'app.js') return respond(200, PAGE_JS, 'text/javascript; charset=utf-8');
    if (rest === 'app.css') return respond(200, PAGE_CSS, 'text/css; charset=utf-8');
    if (rest.startsWith('api/')) {
      try {
        return await this.#api(rest.slice(4), url.searchParams);
      } catch (error) {
        return errorResponse(error);
      }
    }
    return respond(404, 'Not Found\n', 'text/plain; charset=utf-8');
  }

  /** The JSON endpoints. */
  async #api(route: string, params: URLSearchParams): Promise<Response> {
    const { http, signal } = this.#options;
    const pageSize = this.#pageSize;
    const scanLimit = this.#scanLimit;
    switch (route) {
      case 'tree': {
        const { at, result } = this.#readTree(params.get('refresh') === '1');
        return json({ source: this.#options.source, crawledAt: at, channels: this.#options.channels !== undefined, ...(await result) });
      }
      case 'entries': {
        const doc = this.#docParam(params);
        const page = pageParam(params);
        const q = queryParam(params);
        const result = await readEntriesPage(http, doc, { page, pageSize, scanLimit, q, ...(signal === undefined ? {} : { signal }) });
        const listed = this.#counts.get(doc);
        return json(listed === undefined ? result : { ...result, listed });
      }
      case 'changes': {
        const page = pageParam(params);
        const { roots } = await this.#readTree(false).result;
        return json(await readTimeline(http, roots, page, pageSize, signal));
      }
      case 'package': {
        const doc = this.#docParam(params);
        const page = pageParam(params);
        const q = queryParam(params);
        return json(await this.#packages.read(doc, page, pageSize, scanLimit, q, signal));
      }
      case 'check':
        return json(await this.#runCheck(params.get('refresh') === '1'));
      case 'channels':
        if (this.#options.channels === undefined) break;
        return json(await this.#options.channels());
      case 'views':
        return json({ aggregate: this.#options.aggregate !== undefined, queue: this.#options.queue !== undefined, channels: this.#options.channels !== undefined });
      case 'aggregate':
        if (this.#options.aggregate === undefined) break;
        return json(await this.#options.aggregate());
      case 'queue':
        if (this.#options.queue === undefined) break;
        return json(await this.#options.queue());
    }
    return json({ error: { code: 'RS_NOT_FOUND', message: `no endpoint api/${route}.` } }, 404);
  }

  /** The tree of the last crawl, or a new crawl when asked, when none succeeded, or when it is older than allowed. */
  #readTree(refresh: boolean): TreeRead {
    const maxAge = this.#options.treeMaxAgeMs ?? Infinity;
    if (this.#tree === undefined || refresh || Date.now() - this.#tree.at > maxAge) {
      const entry = { at: Date.now(), result: explore(this.#crawl) };
      this.#tree = entry;
      entry.result.then(
        (r) => {
          if (this.#tree === entry) this.#counts = entriesByDocument(r);
        },
        () => {
          if (this.#tree === entry) this.#tree = undefined;
        },
      );
    }
    return this.#tree;
  }

  /** The report of the check under way or last done; a new one when asked and the last is done. */
  #runCheck(refresh: boolean): Promise<CheckReport> {
    // A check in flight is shared by the requests that arrive meanwhile, even those asking for a new one.
    if (this.#checking === undefined || (refresh && this.#checking.done)) {
      const options = this.#options;
      const entry = {
        done: false,
        report: check({ ...this.#crawl, sample: options.checkSample ?? 50, ...(options.tmpDir === undefined ? {} : { tmpDir: options.tmpDir }) }),
      };
      entry.report.then(
        () => (entry.done = true),
        () => {
          if (this.#checking === entry) this.#checking = undefined;
        },
      );
      this.#checking = entry;
    }
    return this.#checking.report;
  }

  /** The `doc` parameter: an http(s) URL on the Source's authority. */
  #docParam(params: URLSearchParams): string {
    const authority = this.#options.authority;
    const doc = params.get('doc');
    if (doc === null || doc === '') throw new Refusal(400, 'RS_INVALID_ARGUMENT', 'the doc parameter (a document URL) is missing.');
    if (originOf(doc) === undefined) throw new Refusal(400, 'RS_INVALID_ARGUMENT', 'doc is not an absolute http(s) URL.');
    const url = new URL(doc).href;
    if (!authority.allows(url))
      throw new Refusal(403, 'RS_AUTHORITY', `doc '${url}' is outside the explored Source (${authority.origins.join(', ')}).`);
    return url;
  }
}

/** Entries of each document of a tree that was read (packages and failed documents left out). */
function entriesByDocument(result: ExploreResult): Map<string, number> {
  const counts = new Map<string, number>();
  const walk = (n: TreeNode): void => {
    if (n.kind !== 'package' && n.status === undefined) counts.set(n.url, n.entries);
    n.children.forEach(walk);
  };
  result.roots.forEach(walk);
  return counts;
}
