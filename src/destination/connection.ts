import { ResourceSyncError } from '../core/errors.js';
import { createAuthority, originOf, type Authority } from '../client/authority.js';
import { withDeadline } from '../client/deadline.js';
import { createHttpClient } from '../client/http-client.js';
import type { HttpGet } from '../client/http.js';
import type { Pace } from '../client/origin-pace.js';
import { createMapper, type Mapper, type Mapping } from './mapper.js';

/** What `sync` and `audit` need to reach a Source: the injected or default HTTP client and the URL rules. */
export interface ConnectionOptions {
  /**
   * Where to start: a Capability List, Resource List (Index), Change List (Index) or Source Description URL (its
   * origin is the one authority allowed by default).
   */
  source: string;
  /** Further origins that may be contacted (mirrors, patches). */
  allowOrigins?: string[];
  /** URL prefix → local folder mappings (their origins are allowed too). */
  maps?: Mapping[];
  /** Base URL mapped to the destination root; default the Source's origin. */
  base?: string;
  /** An HTTP effect to use instead of the default undici client. */
  http?: HttpGet;
  /** Requests at once (for `sync`, resources fetched at once: default 16). */
  concurrency?: number;
  /** HTTP timeout (connect, headers, body idle), ms. Default 30,000. */
  timeoutMs?: number;
  /**
   * Most time for one ResourceSync document (head and whole body, spent waiting on the Source), ms; past it the read
   * ends with `RS_HTTP_TIMEOUT`. Resource bodies and dump packages are not bound by it. Default 600,000.
   */
  deadlineMs?: number;
  /** HTTP retries on 5xx/429/network errors. Default 3. */
  retries?: number;
  /** Authorization header values per origin (see `createHttpClient`). */
  auth?: Record<string, string>;
  /** At most this many requests per second to each origin. Default: no limit. */
  rate?: number;
  /** A pace shared with other calls for an origin (see `createHttpClient`'s `originPace`). Default none. */
  originPace?: (origin: string) => Pace | undefined;
  /** Aborts the call: every request, and the run between them. */
  signal?: AbortSignal;
}

export interface Connection {
  sourceOrigin: string;
  /** Every URL followed passes this check (Z39.99 §5.2: only the Source and origins the user allows). */
  authority: Authority;
  http: HttpGet;
  /** The same client, each request bound by the documents' deadline (`deadlineMs`): for ResourceSync documents. */
  documents: HttpGet;
  /** Maps a resource URL to its path under the destination. */
  mapper: Mapper;
  /** Closes the HTTP client if this connection created it. */
  close(): Promise<void>;
}

/**
 * The authority, HTTP client and URL → path mapper for one Source.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT when `source` is not an http(s) URL
 */
export function connect(options: ConnectionOptions): Connection {
  const sourceOrigin = originOf(options.source);
  if (sourceOrigin === undefined) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Source '${options.source}' is not an http(s) URL.`, { data: { source: options.source } });
  }
  const origins = [sourceOrigin, ...(options.allowOrigins ?? [])];
  for (const m of options.maps ?? []) {
    const o = originOf(m.url);
    if (o !== undefined) origins.push(o);
  }
  const authority = createAuthority({ origins });
  const own =
    options.http === undefined
      ? createHttpClient({
          authority,
          ...(options.concurrency !== undefined ? { concurrency: options.concurrency } : {}),
          ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
          ...(options.retries !== undefined ? { retries: options.retries } : {}),
          ...(options.signal !== undefined ? { signal: options.signal } : {}),
          ...(options.auth !== undefined ? { auth: options.auth } : {}),
          ...(options.rate !== undefined ? { rate: options.rate } : {}),
          ...(options.originPace !== undefined ? { originPace: options.originPace } : {}),
        })
      : undefined;
  const mapper = createMapper({ base: options.base ?? `${sourceOrigin}/`, ...(options.maps ? { maps: options.maps } : {}) });
  return {
    sourceOrigin,
    authority,
    http: options.http ?? own!,
    documents: withDeadline(options.http ?? own!, options.deadlineMs ?? 600_000),
    mapper,
    close: async () => {
      await own?.close();
    },
  };
}
