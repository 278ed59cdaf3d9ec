import { createRequire } from 'node:module';
import { env as processEnv } from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Transform } from 'node:stream';
import { Pool } from 'undici';
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
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
}

const MAX_REDIRECTS = 5;
/** Printable ASCII without `#` or `\`: a request target the URL parser would leave as it is. */
const PLAIN_TARGET = /^[\x21-\x22\x24-\x5b\x5d-\x7e]+$/;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

let cachedVersion: string | undefined;
/** The package version, for the User-Agent. */
export function packageVersion(): string {
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
  const msg = err instanceof Error ? err.message : String(err);
  return new ResourceSyncError('RS_NETWORK', `URL '${url}' failed (${phase}): ${msg}.`, { data: { url, phase, code }, cause: err, recoverable: true });
}

function flattenHeaders(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

async function* guarded(body: AsyncIterable<Uint8Array>, url: string): AsyncGenerator<Uint8Array> {
  try {
    for await (const chunk of body) yield chunk;
  } catch (err) {
    throw wrapError(err, url, 'body');
  }
}

/** Bodies with a declared Content-Length up to this size are read in one piece (no stream iterator per response). */
const WHOLE_BODY = 256 * 1024;

/** The undici body of a response, until it was read whole (then dropped: see {@link wholeBody}). */
interface RawRef {
  raw: { bytes(): Promise<Uint8Array>; dump(o: { limit: number }): Promise<void> } | undefined;
}

/**
 * A small body read whole with undici's `bytes()` (the length is declared, so the memory is bounded) and handed
 * out as one chunk; a failure reads as `guarded`'s. Cheaper per response than a stream's async iterator. Once
 * read, the undici body (and through it the request and its handler) is let go: a response kept while its file
 * waits for a group commit then holds its bytes only (fewer objects for each scavenge to copy).
 */
function wholeBody(ref: RawRef, url: string): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
      let done = false;
      return {
        async next(): Promise<IteratorResult<Uint8Array>> {
          const raw = ref.raw;
          if (done || raw === undefined) return { done: true, value: undefined };
          done = true;
          let bytes: Uint8Array;
          try {
            bytes = await raw.bytes();
          } catch (err) {
            throw wrapError(err, url, 'body');
          }
          ref.raw = undefined;
          return bytes.byteLength === 0 ? { done: true, value: undefined } : { done: false, value: bytes };
        },
        return(): Promise<IteratorResult<Uint8Array>> {
          done = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      };
    },
  };
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

/**
 * The Destination's HTTP client: an undici `Pool` per origin (keep-alive, `concurrency` connections),
 * connect/headers/body timeouts, retries with jittered exponential backoff on 5xx/429/408 and network
 * errors (honouring `Retry-After`, bounded), redirects followed by hand (at most 5, each target checked
 * against the authority), `accept-encoding: gzip, deflate, br` with decoding, a `resourcesync/<version>`
 * User-Agent, and per-origin `Authorization` from `auth` or the environment ({@link authFromEnv}).
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
  const pools = new Map<string, Pool>();
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

  const poolFor = (origin: string): Pool => {
    let p = pools.get(origin);
    if (p === undefined) {
      p = new Pool(origin, {
        connections,
        pipelining: 1,
        connectTimeout: timeoutMs,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        keepAliveTimeout: 10_000,
      });
      pools.set(origin, p);
    }
    return p;
  };

  /** The client's signal and the request's; one combined signal only when they differ (the sync passes the same). */
  const signals = (init?: HttpRequestInit): AbortSignal | undefined => {
    const a = options.signal;
    const b = init?.signal;
    if (a === undefined || a === b) return b ?? a;
    return b === undefined ? a : AbortSignal.any([a, b]);
  };

  const once = async (url: string, init: HttpRequestInit | undefined, signal: AbortSignal | undefined): Promise<HttpResponse> => {
    const { origin, path } = split(url);
    const headers: Record<string, string> = {
      'user-agent': userAgent,
      'accept-encoding': 'gzip, deflate, br',
      ...init?.headers,
    };
    const a = auth[origin];
    if (a !== undefined && headers['authorization'] === undefined) headers['authorization'] = a;
    let res;
    try {
      res = await poolFor(origin).request({
        path,
        method: init?.method ?? 'GET',
        headers,
        signal: signal ?? null,
      });
    } catch (err) {
      throw wrapError(err, url, 'request');
    }
    const h = flattenHeaders(res.headers);
    const raw = res.body;
    let body: AsyncIterable<Uint8Array> = raw;
    const dec = init?.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304 ? undefined : decoder(h['content-encoding']);
    if (dec !== undefined) {
      raw.on('error', (e) => dec.destroy(e));
      body = raw.pipe(dec);
      delete h['content-length'];
    }
    const declared = parseLength(h['content-length']);
    const whole = dec === undefined && declared !== undefined && declared <= WHOLE_BODY;
    const ref: RawRef = { raw };
    return {
      url,
      status: res.statusCode,
      headers: h,
      body: whole ? wholeBody(ref, url) : guarded(body, url),
      discard: async () => {
        try {
          dec?.destroy();
          await ref.raw?.dump({ limit: 256 * 1024 });
        } catch {
          /* the connection is dropped instead */
        }
      },
    };
  };

  const withRetries = async (url: string, init: HttpRequestInit | undefined): Promise<HttpResponse> => {
    const signal = signals(init);
    for (let attempt = 0; ; attempt++) {
      if (closed) throw new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: the client is closed.`, { data: { url } });
      let wait: number | undefined;
      try {
        const res = await once(url, init, signal);
        if (!retryableStatus(res.status) || attempt >= retries) return res;
        wait = retryAfterMs(res.headers['retry-after']);
        await res.discard();
      } catch (err) {
        const e = wrapError(err, url, 'request');
        if (e.code === 'RS_ABORTED' || e.code === 'RS_AUTHORITY' || attempt >= retries || signal?.aborted) throw e;
      }
      const backoff = baseDelay * 2 ** attempt * (0.5 + Math.random());
      const delay = Math.min(maxDelay, Math.max(wait ?? 0, backoff));
      try {
        await sleep(delay, undefined, signal ? { signal } : undefined);
      } catch (err) {
        throw wrapError(err, url, 'request');
      }
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
      const all = [...pools.values()];
      pools.clear();
      await Promise.all(all.map((p) => p.close().catch(() => p.destroy())));
    },
  });
}
