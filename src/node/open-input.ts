import { createReadStream } from 'node:fs';
import { ResourceSyncError } from '../core/errors.js';

export interface OpenInputOptions {
  signal?: AbortSignal;
  /** Request headers for http(s) inputs (e.g. Authorization). */
  headers?: Record<string, string>;
  /** Milliseconds to wait for response headers and between body chunks. Default 30 s. */
  timeoutMs?: number;
}

/**
 * Opens a file path or an http(s) URL as a stream of byte chunks for `readDocument`. Gzip is left
 * as is (the reader detects it). A non-2xx HTTP status is an `RS_HTTP_STATUS` error.
 * @example const doc = await readDocument(openInput('https://example.com/resourcelist.xml'));
 */
export async function* openInput(fileOrUrl: string, options: OpenInputOptions = {}): AsyncGenerator<Uint8Array> {
  if (/^https?:\/\//i.test(fileOrUrl)) {
    const { request, getGlobalDispatcher, interceptors } = await import('undici'); // loaded only for URLs: it costs start-up time
    let res;
    try {
      const timeout = options.timeoutMs ?? 30_000;
      res = await request(fileOrUrl, {
        method: 'GET',
        headers: { 'accept-encoding': 'identity', ...options.headers },
        headersTimeout: timeout,
        bodyTimeout: timeout,
        // undici 7 follows redirects through an interceptor (the maxRedirections option was removed)
        dispatcher: getGlobalDispatcher().compose(interceptors.redirect({ maxRedirections: 5 })),
        ...(options.signal ? { signal: options.signal } : {}),
      });
    } catch (e) {
      throw new ResourceSyncError('RS_NETWORK', `${fileOrUrl}: ${(e as Error).message}.`, { cause: e, data: { url: fileOrUrl } });
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      await res.body.dump();
      throw new ResourceSyncError('RS_HTTP_STATUS', `${fileOrUrl}: HTTP status ${res.statusCode}.`, { data: { url: fileOrUrl, status: res.statusCode } });
    }
    for await (const chunk of res.body as AsyncIterable<Buffer>) yield chunk;
    return;
  }
  const path = fileOrUrl.startsWith('file://') ? new URL(fileOrUrl) : fileOrUrl;
  const stream = createReadStream(path, { highWaterMark: 64 * 1024, ...(options.signal ? { signal: options.signal } : {}) });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) yield chunk;
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ENOENT' || err.code === 'ENOTDIR' || err.code === 'EACCES' || err.code === 'EISDIR') {
      // a file on the path (ENOTDIR) means, as ENOENT does, that there is no such file
      throw new ResourceSyncError('RS_IO', `${fileOrUrl}: ${err.code === 'ENOENT' || err.code === 'ENOTDIR' ? 'no such file' : err.message}.`, { cause: e, data: { path: fileOrUrl } });
    }
    throw e;
  } finally {
    stream.destroy();
  }
}
