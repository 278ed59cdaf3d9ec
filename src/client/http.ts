/**
 * The HTTP effect the Destination depends on, injected so that discovery, dumps and sync can be tested
 * against any server and the client can be swapped. The default implementation (undici Pool per origin,
 * keep-alive, timeouts, retries) lives in `http-client.ts`.
 */

export interface HttpRequestInit {
  method?: 'GET' | 'HEAD';
  /** Extra request headers (lower-case names). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface HttpResponse {
  /** The final URL after redirects (each redirect target passes the authority check). */
  url: string;
  status: number;
  /** Response headers, lower-case names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** The body, decoded from Content-Encoding gzip/deflate/br when the client asked for it. Consume it or call `discard`. */
  body: AsyncIterable<Uint8Array>;
  /** Throws away an unread body so the connection can be reused. */
  discard(): Promise<void>;
}

/** Performs one request. Rejects with a ResourceSyncError (`RS_NETWORK`, `RS_HTTP_TIMEOUT`, `RS_AUTHORITY`). */
export type HttpGet = (url: string, init?: HttpRequestInit) => Promise<HttpResponse>;
