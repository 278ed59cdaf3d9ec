import { createRequire } from 'node:module';
import { env as processEnv } from 'node:process';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Readable, type Transform } from 'node:stream';
import { Pool } from 'undici';
import { Download, EndGuard } from './download.js';
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import { parseLength } from '../core/hash.js';
import { originOf, type Authority } from './authority.js';
import type { HttpGet, HttpRequestInit, HttpResponse } from './http.js';

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

/** A status worth retrying: 5xx except 501/505, and 429. */
function retryableStatus(status: number): boolean {
  return status === 429 || status === 408 || (status >= 500 && status !== 501 && status !== 505);
}

/**
 * A status by which a server says it cannot answer now (any 5xx, and 429 Too Many Requests): the Source is
 * unavailable and may answer later, which is not the same as a Source that holds no ResourceSync document.
 */
export function unavailableStatus(status: number): boolean {
  return status === 429 || (status >= 500 && status <= 599);
}

/** Milliseconds asked for by a `Retry-After` header (seconds or HTTP-date), if any. */
export function retryAfterMs(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

function isTimeout(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' || code === 'ETIMEDOUT';
}

function isAbort(err: unknown): boolean {
  const e = err as { name?: string; code?: string } | null;
  return e?.name === 'AbortError' || e?.code === 'UND_ERR_ABORTED' || e?.code === 'ABORT_ERR';
}

function wrapError(err: unknown, url: string, phase: 'request' | 'body'): ResourceSyncError {
  if (isResourceSyncError(err)) return err;
  if (isAbort(err)) return new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: aborted.`, { data: { url }, cause: err });
  const code = (err as { code?: string } | null)?.code;
  if (isTimeout(err)) {
    return new ResourceSyncError('RS_HTTP_TIMEOUT', `URL '${url}' timed out (${phase}${code ? `, ${code}` : ''}).`, { data: { url, phase }, cause: err, recoverable: true });
  }
  return new ResourceSyncError('RS_NETWORK', `URL '${url}' failed (${phase}): ${causeOf(err)}.`, { data: { url, phase, code }, cause: err, recoverable: true });
}

/**
 * A body decoded from its Content-Encoding. A reader that stops early (a parse error, a limit) aborts the request:
 * the raw body it leaves behind is read by no one, so its download would stay paused with the connection, and
 * the pool would never close (a paused socket holds no event-loop reference, so the process would drain before).
 */
async function* decodedBody(d: Download, url: string, dec: Transform): AsyncGenerator<Uint8Array> {
  const raw = Readable.from(bodyOf(d, url, false), { objectMode: false });
  raw.on('error', (e) => dec.destroy(e));
  let complete = false;
  try {
    for await (const chunk of raw.pipe(dec) as AsyncIterable<Uint8Array>) yield chunk;
    complete = true;
  } catch (err) {
    throw wrapError(err, url, 'body');
  } finally {
    if (!complete) {
      d.abort(new Error('response body discarded'));
      raw.destroy();
      dec.destroy();
    }
  }
}

/** Bodies with a declared Content-Length up to this size are handed out as one chunk (no stream per response). */
const WHOLE_BODY = 256 * 1024;

/** The body of a {@link Download} as an async iterable; a failure reads as a `ResourceSyncError` of phase 'body'. */
async function* bodyOf(d: Download, url: string, whole: boolean): AsyncGenerator<Uint8Array> {
  try {
    if (whole) {
      const all = await d.all();
      if (all.length > 0) yield all;
      return;
    }
    for (let chunk = await d.next(); chunk !== undefined; chunk = await d.next()) yield chunk;
  } catch (err) {
    throw wrapError(err, url, 'body');
  } finally {
    void d.discard(0); // a reader that stopped early gives the connection up
  }
}

function decoder(encoding: string | undefined): Transform | undefined {
  switch (encoding?.trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return createGunzip();
    case 'deflate':
      return createInflate();
    case 'br':
      return createBrotliDecompress();
    default:
      return undefined;
  }
}

/** An abortable wait that adds no listener to `signal` (the client keeps one listener per signal). */
interface Waits {
  sleep(ms: number): Promise<void>;
  abortAll(reason: Error): void;
}

function waits(): Waits {
  const pending = new Set<{ timer: NodeJS.Timeout; reject: (e: Error) => void }>();
  return {
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        const w = {
          timer: setTimeout(() => {
            pending.delete(w);
            resolve();
          }, ms),
          reject,
        };
        pending.add(w);
      }),
    abortAll: (reason) => {
      for (const w of pending) {
        clearTimeout(w.timer);
        w.reject(reason);
      }
      pending.clear();
    },
  };
}

/**
 * When the next request to one origin may start: a pace of `rate` requests per second (none when undefined) and a
 * pause that a `Retry-After` on a 429 or 503 imposes on every request to the origin, not just the one answered.
 */
class OriginPace {
  #next = 0;
  #blockedUntil = 0;
  readonly #interval: number;

  constructor(rate: number | undefined) {
    this.#interval = rate !== undefined && rate > 0 ? 1000 / rate : 0;
  }

  /** Milliseconds to wait before this request may go (and reserves its place in the pace). */
  delay(now: number): number {
    const start = Math.max(now, this.#blockedUntil, this.#next);
    if (this.#interval > 0) this.#next = start + this.#interval;
    return start - now;
  }

  block(until: number): void {
    if (until > this.#blockedUntil) this.#blockedUntil = until;
  }
}

/** A one-line cause for a transport failure, for messages a person reads. */
function causeOf(err: unknown): string {
  const code = (err as { code?: string } | null)?.code;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found (DNS)';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection closed by the server';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return messageOf(err);
  }
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
  const timeoutMs = options.timeoutMs ?? 30_000;
  const retries = options.retries ?? 3;
  const connections = options.concurrency ?? 16;
  const maxDelay = options.maxRetryDelayMs ?? 10_000;
  const baseDelay = options.retryBaseMs ?? 200;
  const userAgent = options.userAgent ?? `resourcesync/${packageVersion()}`;
  const auth: Record<string, string> = { ...authFromEnv(options.authority.origins, options.env ?? processEnv) };
  for (const [o, v] of Object.entries(options.auth ?? {})) {
    const norm = originOf(o);
    if (norm !== undefined) auth[norm] = v;
  }
  const pools = new Map<string, { pool: Pool; guard: EndGuard; pace: OriginPace }>();
  const prefixes = options.authority.origins.map((o) => `${o}/`);
  /** Origin and request target; URLs written with an allowed origin as normalised skip the URL parser. */
  const split = (url: string): { origin: string; path: string } => {
    for (const p of prefixes) {
      if (url.startsWith(p) && PLAIN_TARGET.test(url) && !url.includes('/.')) return { origin: p.slice(0, -1), path: url.slice(p.length - 1) };
    }
    const u = new URL(url);
    return { origin: u.origin, path: `${u.pathname}${u.search}` };
  };
  let closed = false;
  /** Requests under way, aborted together when a signal fires: one listener per signal, not one per request. */
  const inflight = new Map<AbortSignal | undefined, Set<Download>>();
  const wait = waits();
  const abortError = (): Error => Object.assign(new Error('aborted'), { name: 'AbortError' });
  const listening = new WeakSet<AbortSignal>();
  const watch = (signal: AbortSignal): void => {
    if (listening.has(signal)) return;
    listening.add(signal);
    signal.addEventListener(
      'abort',
      () => {
        for (const d of inflight.get(signal) ?? []) d.abort(abortError());
        if (signal === options.signal) wait.abortAll(abortError());
      },
      { once: true },
    );
  };
  if (options.signal !== undefined) watch(options.signal);

  const originFor = (origin: string): { pool: Pool; guard: EndGuard; pace: OriginPace } => {
    let p = pools.get(origin);
    if (p === undefined) {
      const guard = new EndGuard();
      const pool = new Pool(origin, {
        connections,
        pipelining: 1,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        keepAliveTimeout: 10_000,
        connect: guard.connector({ timeout: timeoutMs }),
      });
      p = { pool, guard, pace: new OriginPace(options.rate) };
      pools.set(origin, p);
    }
    return p;
  };

  const sleepFor = async (ms: number, signal: AbortSignal | undefined, url: string): Promise<void> => {
    if (ms <= 0) return;
    if (signal !== undefined && signal !== options.signal) {
      // a signal of this request only: the wait below is ended by the client's signal, this one is polled
      for (let left = ms; left > 0; left -= 100) {
        if (signal.aborted) throw wrapError(abortError(), url, 'request');
        await wait.sleep(Math.min(100, left));
      }
      return;
    }
    try {
      await wait.sleep(ms);
    } catch (err) {
      throw wrapError(err, url, 'request');
    }
  };

  const once = async (url: string, init: HttpRequestInit | undefined, signal: AbortSignal | undefined): Promise<HttpResponse> => {
    const { origin, path } = split(url);
    const o = originFor(origin);
    await sleepFor(o.pace.delay(Date.now()), signal, url);
    if (signal?.aborted === true) throw wrapError(abortError(), url, 'request');
    const headers: Record<string, string> = {
      'user-agent': userAgent,
      'accept-encoding': 'gzip, deflate, br',
      ...init?.headers,
    };
    const a = auth[origin];
    if (a !== undefined && headers['authorization'] === undefined) headers['authorization'] = a;
    if (signal !== undefined) watch(signal);
    let set = inflight.get(signal);
    if (set === undefined) inflight.set(signal, (set = new Set()));
    const group = set;
    const d = new Download(o.guard, (done) => {
      group.delete(done);
      if (group.size === 0 && inflight.get(signal) === group) inflight.delete(signal);
    });
    group.add(d);
    o.pool.dispatch({ origin, path, method: init?.method ?? 'GET', headers }, d);
    let head;
    try {
      head = await d.head;
    } catch (err) {
      throw wrapError(err, url, 'request');
    }
    const h = head.headers;
    const method = init?.method ?? 'GET';
    const bodyless = method === 'HEAD' || head.status === 204 || head.status === 304;
    const dec = bodyless ? undefined : decoder(h['content-encoding']);
    let body: AsyncIterable<Uint8Array>;
    if (dec !== undefined) {
      delete h['content-length'];
      body = decodedBody(d, url, dec);
    } else {
      const declared = parseLength(h['content-length']);
      body = bodyOf(d, url, declared !== undefined && declared <= WHOLE_BODY);
    }
    if (head.status === 429 || head.status === 503) {
      const after = retryAfterMs(h['retry-after']);
      if (after !== undefined) o.pace.block(Date.now() + Math.min(after, maxDelay));
    }
    return {
      url,
      status: head.status,
      headers: h,
      body,
      discard: async () => {
        dec?.destroy();
        await d.discard();
      },
    };
  };

  const withRetries = async (url: string, init: HttpRequestInit | undefined): Promise<HttpResponse> => {
    const signal = init?.signal ?? options.signal;
    if (options.signal !== undefined && init?.signal !== undefined && init.signal !== options.signal && options.signal.aborted) {
      throw wrapError(abortError(), url, 'request');
    }
    for (let attempt = 0; ; attempt++) {
      if (closed) throw new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: the client is closed.`, { data: { url } });
      let asked: number | undefined;
      try {
        const res = await once(url, init, signal);
        if (!retryableStatus(res.status) || attempt >= retries) return res;
        asked = retryAfterMs(res.headers['retry-after']);
        await res.discard();
      } catch (err) {
        const e = wrapError(err, url, 'request');
        if (e.code === 'RS_ABORTED' || e.code === 'RS_AUTHORITY' || attempt >= retries || signal?.aborted) throw e;
      }
      const backoff = baseDelay * 2 ** attempt * (0.5 + Math.random());
      await sleepFor(Math.min(maxDelay, Math.max(asked ?? 0, backoff)), signal, url);
    }
  };

  const get = async (url: string, init?: HttpRequestInit): Promise<HttpResponse> => {
    let current = url;
    for (let hop = 0; ; hop++) {
      options.authority.check(current);
      const res = await withRetries(current, init);
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
  };

  return Object.assign(get, {
    async close(): Promise<void> {
      closed = true;
      wait.abortAll(abortError());
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map(({ pool }) => pool.close().catch(() => pool.destroy())));
    },
  });
}
