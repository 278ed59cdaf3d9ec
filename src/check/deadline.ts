/**
 * The whole-body deadline of `check` and `explore`: every request they make (discovery's included) must deliver
 * its head and its whole body within `deadlineMs`, however slowly the bytes trickle in (the client's idle timeout
 * alone never ends a document that drips a byte a second). Past the deadline the request is aborted and its reader
 * gets `RS_HTTP_TIMEOUT` with `data.phase` `'deadline'`.
 */
import { isResourceSyncError, ResourceSyncError } from '../core/errors.js';
import type { HttpGet, HttpResponse } from '../destination/http.js';

/** True for the error of a read cut off by {@link withDeadline}. */
export function isPastDeadline(error: unknown): error is ResourceSyncError {
  return isResourceSyncError(error, 'RS_HTTP_TIMEOUT') && error.data['phase'] === 'deadline';
}

/**
 * Wraps a client so that each request, body included, ends within `deadlineMs`; `onLate` hears of each one cut off.
 * Discarding a body that is being read aborts its request (a reader that gave up does not wait for the rest).
 * @example const http = withDeadline(createHttpClient({ authority }), 60_000);
 */
export function withDeadline(http: HttpGet, deadlineMs: number, onLate?: (error: ResourceSyncError) => void): HttpGet {
  return async (url, init) => {
    const ac = new AbortController();
    let late: ResourceSyncError | undefined;
    const timer = setTimeout(() => {
      late = new ResourceSyncError('RS_HTTP_TIMEOUT', `URL '${url}' did not arrive whole within ${deadlineMs} ms.`, {
        data: { url, phase: 'deadline', deadlineMs },
        recoverable: true,
      });
      onLate?.(late);
      ac.abort();
    }, deadlineMs);
    const outer = init?.signal;
    const done = (): void => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', follow);
    };
    const follow = (): void => {
      done();
      ac.abort(outer?.reason);
    };
    if (outer?.aborted === true) follow();
    else outer?.addEventListener('abort', follow, { once: true });
    let res: HttpResponse;
    try {
      res = await http(url, { ...init, signal: ac.signal });
    } catch (error) {
      done();
      throw late ?? error;
    }
    let reading = false;
    const source = res.body;
    async function* body(): AsyncGenerator<Uint8Array> {
      reading = true;
      try {
        for await (const chunk of source) yield chunk;
      } catch (error) {
        throw late ?? error;
      } finally {
        done();
      }
    }
    return {
      ...res,
      body: body(),
      discard: async () => {
        if (reading) ac.abort();
        try {
          await res.discard();
        } finally {
          done();
        }
      },
    };
  };
}
