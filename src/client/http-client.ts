import { createRequire } from 'node:module';
import { env as processEnv } from 'node:process';
import { Pool } from 'undici';
import { Download, EndGuard, type ResponseHead } from './download.js';
import { ResourceSyncError } from '../core/errors.js';
import { parseLength } from '../core/hash.js';
import { originOf, type Authority } from './authority.js';
import type { HttpGet, HttpRequestInit, HttpResponse } from './http.js';
import { retryAfterMs, retryableStatus, wrapError } from './http-failure.js';
import { OriginPace, waits, type Pace, type Waits } from './origin-pace.js';
import { WHOLE_BODY, bodyOf, decodedBody, decoder } from './response-body.js';

/** Options of {@link createHttpClient}. */
export interface HttpClientOptions {
  /** Every URL requested, and every redirect target, must pass this check. */
  authority: Authority;
  /** Default `resourcesync/<version>`. */
  userAgent?: string;
  /** Connect, headers and body-idle timeout in milliseconds. Default 30,000. */
  timeoutMs?: number;
  /** Retries after the first attempt on 5xx, 429 and network errors. Default 3. */
  retries?: number;
  /** Connections per origin (keep-alive). Default 16. */
  concurrency?: number;
  /**
   * `Authorization` header values per origin, e.g. `{ 'https://example.com': 'Bearer abc' }`. They are only
   * ever sent to that origin (never to a redirect target or mirror on another origin).
   */
  auth?: Record<string, string>;
  /**
   * Environment to read credentials from (default `process.env`); see {@link authFromEnv}. Pass `{}` to
   * ignore the environment.
   */
  env?: Record<string, string | undefined>;
  /** Aborts every request in flight and every later one. */
  signal?: AbortSignal;
  /** Upper bound for a `Retry-After` wait and for backoff, in milliseconds. Default 10,000. */
  maxRetryDelayMs?: number;
  /** First backoff delay in milliseconds (doubled on each retry, with ±50% jitter). Default 200. */
  retryBaseMs?: number;
  /** At most this many requests per second to each origin (retries included). Default: no limit. */
  rate?: number;
  /**
   * A pace shared with other clients for an origin (e.g. a {@link SharedPaces} of an aggregate: every Source on one
   * origin together), kept after this client's own `rate`: a request goes when both allow it, at its place in the
   * shared pace. Undefined for an origin: none.
   */
  originPace?: (origin: string) => Pace | undefined;
}

const MAX_REDIRECTS = 5;
/** Printable ASCII without `#` or `\`: a request target the URL parser would leave as it is. */
const PLAIN_TARGET = /^[\x21-\x22\x24-\x5b\x5d-\x7e]+$/;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

let cachedVersion: string | undefined;
/** The package version, for the User-Agent. */
function packageVersion(): string {
  if (cachedVersion === undefined) {
    try {
      const pkg = createRequire(import.meta.url)('../../../package.json') as { version?: string };
      cachedVersion = pkg.version ?? '0.0.0';
    } catch {
      cachedVersion = '0.0.0';
    }
  }
  return cachedVersion;
}

/**
 * Reads per-origin credentials from the environment:
 * - `RESOURCESYNC_AUTH_<HOST>`: a whole `Authorization` value (`Bearer …`, `Basic …`) for the origin whose host
 *   (and port, if not the default) written in upper case with every other character as `_` matches, e.g.
 *   `RESOURCESYNC_AUTH_EXAMPLE_COM` or `RESOURCESYNC_AUTH_127_0_0_1_8080`;
 * - `RESOURCESYNC_BEARER` (a token) or `RESOURCESYNC_BASIC` (`user:password`): for the first origin (the Source's).
 * @example authFromEnv(['https://example.com'], { RESOURCESYNC_BEARER: 't0k' }) // { 'https://example.com': 'Bearer t0k' }
 */
export function authFromEnv(origins: readonly string[], env: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const origin of origins) {
    const key = `RESOURCESYNC_AUTH_${new URL(origin).host.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
    const v = env[key];
    if (v !== undefined && v !== '') out[origin] = v;
  }
  const first = origins[0];
  if (first !== undefined && out[first] === undefined) {
    const bearer = env['RESOURCESYNC_BEARER'];
    const basic = env['RESOURCESYNC_BASIC'];
    if (bearer !== undefined && bearer !== '') out[first] = `Bearer ${bearer}`;
    else if (basic !== undefined && basic !== '') out[first] = `Basic ${Buffer.from(basic, 'utf8').toString('base64')}`;
  }
  return out;
}

/**
 * The Destination's HTTP client: an undici `Pool` per origin (keep-alive, `concurrency` connections),
 * connect/headers/body timeouts, retries with jittered exponential backoff on 5xx/429/408 and network
 * errors (honouring `Retry-After` for the whole origin, bounded), an optional pace per origin (`rate`), redirects
 * followed by hand (at most 5, each target checked against the authority), `accept-encoding: gzip, deflate, br`
 * with decoding, a `resourcesync/<version>` User-Agent, and per-origin `Authorization` from `auth` or the
 * environment ({@link authFromEnv}). Every HTTP/1.x framing is read (Content-Length, chunked, close-delimited),
 * whatever the server does with the connection (see `download.ts`).
 *
 * Non-2xx final statuses are returned to the caller; network failures after the retries reject with
 * `RS_NETWORK` or `RS_HTTP_TIMEOUT` (recoverable), off-authority URLs with `RS_AUTHORITY`.
 * @example
 * const http = createHttpClient({ authority: createAuthority({ origins: ['http://127.0.0.1:8080'] }) });
 * const res = await http('http://127.0.0.1:8080/a.txt');
 * for await (const chunk of res.body) process(chunk);
 * await http.close();
 */
export function createHttpClient(options: HttpClientOptions): HttpGet & { close(): Promise<void> } {
  const client = new HttpClient(options);
  return Object.assign((url: string, init?: HttpRequestInit) => client.get(url, init), { close: () => client.close() });
}

/** The connections to one origin: its pool, the guard of its sockets and its pace. */
interface OriginConnection {
  pool: Pool;
  guard: EndGuard;
  pace: OriginPace;
  /** The pace shared with other clients, if any. */
  shared: Pace | undefined;
}

const abortError = (): Error => Object.assign(new Error('aborted'), { name: 'AbortError' });

/** The state behind {@link createHttpClient}: pools per origin, requests under way, timers, credentials. */
class HttpClient {
  readonly #options: HttpClientOptions;
  readonly #timeoutMs: number;
  readonly #retries: number;
  readonly #connections: number;
  readonly #maxRetryDelayMs: number;
  readonly #retryBaseMs: number;
  readonly #userAgent: string;
  /** `Authorization` values by normalised origin. */
  readonly #credentials: Record<string, string>;
  readonly #origins = new Map<string, OriginConnection>();
  /** `<origin>/` of each allowed origin, to split a URL written as normalised without the URL parser. */
  readonly #originPrefixes: string[];
  /** Requests under way, aborted together when a signal fires: one listener per signal, not one per request. */
  readonly #inflight = new Map<AbortSignal | undefined, Set<Download>>();
  readonly #listening = new WeakSet<AbortSignal>();
  readonly #waits: Waits = waits();
  #closed = false;

  constructor(options: HttpClientOptions) {
    this.#options = options;
    this.#timeoutMs = options.timeoutMs ?? 30_000;
    this.#retries = options.retries ?? 3;
    this.#connections = options.concurrency ?? 16;
    this.#maxRetryDelayMs = options.maxRetryDelayMs ?? 10_000;
    this.#retryBaseMs = options.retryBaseMs ?? 200;
    this.#userAgent = options.userAgent ?? `resourcesync/${packageVersion()}`;
    this.#credentials = { ...authFromEnv(options.authority.origins, options.env ?? processEnv) };
    for (const [origin, value] of Object.entries(options.auth ?? {})) {
      const normalised = originOf(origin);
      if (normalised !== undefined) this.#credentials[normalised] = value;
    }
    this.#originPrefixes = options.authority.origins.map((origin) => `${origin}/`);
    if (options.signal !== undefined) this.#watch(options.signal);
  }

  /** Follows redirects by hand (at most {@link MAX_REDIRECTS}), each target checked against the authority. */
  async get(url: string, init?: HttpRequestInit): Promise<HttpResponse> {
    let current = url;
    for (let hop = 0; ; hop++) {
      this.#options.authority.check(current);
      const res = await this.#withRetries(current, init);
      const location = res.headers['location'];
      if (!REDIRECTS.has(res.status) || location === undefined) return res;
      await res.discard();
      if (hop >= MAX_REDIRECTS) {
        throw new ResourceSyncError('RS_NETWORK', `URL '${url}' redirected more than ${MAX_REDIRECTS} times.`, { data: { url }, recoverable: true });
      }
      let next: string;
      try {
        next = new URL(location, current).href;
      } catch {
        throw new ResourceSyncError('RS_NETWORK', `URL '${current}' redirected to an invalid location '${location}'.`, { data: { url: current, location }, recoverable: true });
      }
      current = next;
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#waits.abortAll(abortError());
    const all = [...this.#origins.values()];
    this.#origins.clear();
    await Promise.all(all.map(({ pool }) => pool.close().catch(() => pool.destroy())));
  }

  /** Retries on a retryable status or a network failure, with jittered exponential backoff or the `Retry-After` asked for. */
  async #withRetries(url: string, init: HttpRequestInit | undefined): Promise<HttpResponse> {
    const clientSignal = this.#options.signal;
    const signal = init?.signal ?? clientSignal;
    if (clientSignal !== undefined && init?.signal !== undefined && init.signal !== clientSignal && clientSignal.aborted) {
      throw wrapError(abortError(), url, 'request');
    }
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: the client is closed.`, { data: { url } });
      let asked: number | undefined;
      try {
        const res = await this.#requestOnce(url, init, signal);
        if (!retryableStatus(res.status) || attempt >= this.#retries) return res;
        asked = retryAfterMs(res.headers['retry-after']);
        await res.discard();
      } catch (err) {
        const e = wrapError(err, url, 'request');
        if (e.code === 'RS_ABORTED' || e.code === 'RS_AUTHORITY' || attempt >= this.#retries || signal?.aborted) throw e;
      }
      const backoff = this.#retryBaseMs * 2 ** attempt * (0.5 + Math.random());
      await this.#sleepFor(Math.min(this.#maxRetryDelayMs, Math.max(asked ?? 0, backoff)), signal, url);
    }
  }

  /** One request to the origin's pool, after the origin's pace allows it; the response as the caller reads it. */
  async #requestOnce(url: string, init: HttpRequestInit | undefined, signal: AbortSignal | undefined): Promise<HttpResponse> {
    const { origin, path } = this.#splitTarget(url);
    const connection = this.#originFor(origin);
    await this.#sleepFor(connection.pace.delay(Date.now()), signal, url);
    // the shared pace is asked last, when the request is about to go: it goes at its place there, never earlier
    if (connection.shared !== undefined) await this.#sleepFor(connection.shared.delay(Date.now()), signal, url);
    if (signal?.aborted === true) throw wrapError(abortError(), url, 'request');
    const headers: Record<string, string> = {
      'user-agent': this.#userAgent,
      'accept-encoding': 'gzip, deflate, br',
      ...init?.headers,
    };
    const credential = this.#credentials[origin];
    if (credential !== undefined && headers['authorization'] === undefined) headers['authorization'] = credential;
    const method = init?.method ?? 'GET';
    const download = this.#track(signal, connection.guard);
    connection.pool.dispatch({ origin, path, method, headers }, download);
    let head;
    try {
      head = await download.head;
    } catch (err) {
      throw wrapError(err, url, 'request');
    }
    if (head.status === 429 || head.status === 503) {
      const after = retryAfterMs(head.headers['retry-after']);
      if (after !== undefined) {
        connection.pace.block(Date.now() + Math.min(after, this.#maxRetryDelayMs));
        connection.shared?.block(Date.now() + Math.min(after, this.#maxRetryDelayMs));
      }
    }
    return responseOf(url, method, head, download);
  }

  /** A new download, registered under `signal` until it is done so the signal's abort reaches it. */
  #track(signal: AbortSignal | undefined, guard: EndGuard): Download {
    if (signal !== undefined) this.#watch(signal);
    let group = this.#inflight.get(signal);
    if (group === undefined) this.#inflight.set(signal, (group = new Set()));
    const downloads = group;
    const download = new Download(guard, (done) => {
      downloads.delete(done);
      if (downloads.size === 0 && this.#inflight.get(signal) === downloads) this.#inflight.delete(signal);
    });
    downloads.add(download);
    return download;
  }

  /** Origin and request target; URLs written with an allowed origin as normalised skip the URL parser. */
  #splitTarget(url: string): { origin: string; path: string } {
    for (const prefix of this.#originPrefixes) {
      if (url.startsWith(prefix) && PLAIN_TARGET.test(url) && !url.includes('/.')) return { origin: prefix.slice(0, -1), path: url.slice(prefix.length - 1) };
    }
    const u = new URL(url);
    return { origin: u.origin, path: `${u.pathname}${u.search}` };
  }

  /** Aborts the requests under way for `signal` when it fires (and the client's waits, for the client's signal). */
  #watch(signal: AbortSignal): void {
    if (this.#listening.has(signal)) return;
    this.#listening.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const download of this.#inflight.get(signal) ?? []) download.abort(abortError());
        if (signal === this.#options.signal) this.#waits.abortAll(abortError());
      },
      { once: true },
    );
  }

  #originFor(origin: string): OriginConnection {
    let connection = this.#origins.get(origin);
    if (connection === undefined) {
      const guard = new EndGuard();
      const pool = new Pool(origin, {
        connections: this.#connections,
        pipelining: 1,
        headersTimeout: this.#timeoutMs,
        bodyTimeout: this.#timeoutMs,
        keepAliveTimeout: 10_000,
        connect: guard.connector({ timeout: this.#timeoutMs }),
      });
      connection = { pool, guard, pace: new OriginPace(this.#options.rate), shared: this.#options.originPace?.(origin) };
      this.#origins.set(origin, connection);
    }
    return connection;
  }

  async #sleepFor(ms: number, signal: AbortSignal | undefined, url: string): Promise<void> {
    if (ms <= 0) return;
    if (signal !== undefined && signal !== this.#options.signal) {
      // a signal of this request only: the wait below is ended by the client's signal, this one is polled
      for (let left = ms; left > 0; left -= 100) {
        if (signal.aborted) throw wrapError(abortError(), url, 'request');
        await this.#waits.sleep(Math.min(100, left));
      }
      return;
    }
    try {
      await this.#waits.sleep(ms);
    } catch (err) {
      throw wrapError(err, url, 'request');
    }
  }
}

/** The response handed to the caller: its body decoded, whole or streamed. */
function responseOf(url: string, method: string, head: ResponseHead, download: Download): HttpResponse {
  const headers = head.headers;
  const bodyless = method === 'HEAD' || head.status === 204 || head.status === 304;
  const dec = bodyless ? undefined : decoder(headers['content-encoding']);
  let body: AsyncIterable<Uint8Array>;
  if (dec !== undefined) {
    delete headers['content-length'];
    body = decodedBody(download, url, dec);
  } else {
    const declared = parseLength(headers['content-length']);
    body = bodyOf(download, url, declared !== undefined && declared <= WHOLE_BODY);
  }
  return {
    url,
    status: head.status,
    headers,
    body,
    discard: async () => {
      dec?.destroy();
      await download.discard();
    },
  };
}
