/** The body of a response as the HTTP client hands it out: whole or streamed, decoded from its Content-Encoding. */
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { Readable, type Transform } from 'node:stream';
import type { Download } from './download.js';
import { wrapError } from './http-failure.js';

/**
 * A body decoded from its Content-Encoding. A reader that stops early (a parse error, a limit) aborts the request:
 * the raw body it leaves behind is read by no one, so its download would stay paused with the connection, and
 * the pool would never close (a paused socket holds no event-loop reference, so the process would drain before).
 */
export async function* decodedBody(d: Download, url: string, dec: Transform): AsyncGenerator<Uint8Array> {
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
export const WHOLE_BODY = 256 * 1024;

/** The body of a {@link Download} as an async iterable; a failure reads as a `ResourceSyncError` of phase 'body'. */
export async function* bodyOf(d: Download, url: string, whole: boolean): AsyncGenerator<Uint8Array> {
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

/** The decompressor for a `Content-Encoding` (gzip, deflate, br), or undefined for an identity or unknown one. */
export function decoder(encoding: string | undefined): Transform | undefined {
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
