/**
 * A whole-request deadline over any client: every request must deliver its head and its whole body within
 * `deadlineMs` of waiting on the server, however slowly the bytes trickle in (the client's idle timeout alone never
 * ends a document that drips a byte a second). The clock stops while the reader holds a chunk it was given, so a
 * streamed list read at the pace of the work it feeds (a baseline's resources) is bounded by the Source's slowness
 * only. Past the deadline the request is aborted and its reader gets `RS_HTTP_TIMEOUT` with `data.phase`
 * `'deadline'`. `check` and `explore` bound every request with it; `sync` and `audit` their documents.
 */
import { isResourceSyncError, ResourceSyncError } from '../core/errors.js';
import type { HttpGet, HttpResponse } from './http.js';

/** True for the error of a read cut off by {@link withDeadline}. */
export function isPastDeadline(error: unknown): error is ResourceSyncError {
  return isResourceSyncError(error, 'RS_HTTP_TIMEOUT') && error.data['phase'] === 'deadline';
}

/** The time left to one request, spent only while it runs (stopped while its reader holds a chunk). */
class Budget {
  #left: number;
  #since: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #ended = false;
  readonly #onOut: () => void;
  constructor(ms: number, onOut: () => void) {
    this.#left = ms;
    this.#onOut = onOut;
  }
  /** Starts (or goes on) spending the time left; past it, `onOut` is called once. */
  run(): void {
    if (this.#since !== undefined || this.#ended) return;
    this.#since = Date.now();
    this.#timer = setTimeout(() => {
      this.#ended = true;
      this.#onOut();
    }, Math.max(0, this.#left));
  }
  /** Stops the clock for good: the request is over. */
  end(): void {
    this.stop();
    this.#ended = true;
  }
  /** Stops the clock (the time spent so far is kept). */
  stop(): void {
    if (this.#since === undefined) return;
    clearTimeout(this.#timer);
    this.#left -= Date.now() - this.#since;
    this.#since = undefined;
  }
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
    const budget = new Budget(deadlineMs, () => {
      late = new ResourceSyncError('RS_HTTP_TIMEOUT', `URL '${url}' did not arrive whole within ${deadlineMs} ms.`, {
        data: { url, phase: 'deadline', deadlineMs },
        recoverable: true,
      });
      onLate?.(late);
      ac.abort();
    });
    budget.run();
    const outer = init?.signal;
    const done = (): void => {
      budget.end();
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
        for await (const chunk of source) {
          budget.stop();
          yield chunk;
          budget.run();
        }
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
