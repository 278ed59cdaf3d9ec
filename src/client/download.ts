/**
 * One HTTP response as the Destination reads it: an undici dispatch handler that queues the body and hands it out
 * as an async iterable, with backpressure through the dispatch controller.
 *
 * Why not undici's `request()`: its body stream pauses the HTTP/1 parser when the reader falls behind, and when the
 * peer then closes a connection that is not kept alive (HTTP/1.0, `Connection: close`, a server ending its
 * keep-alive budget) the parser is asked to finish while paused and undici 7 throws an uncatchable assertion from
 * the socket's `end` handler (nodejs/undici#5360, fixed only in undici 8, which needs Node 22). Here every socket of
 * a pool passes through {@link EndGuard}: before undici sees a socket's `end`, the paused downloads of that pool are
 * resumed. By then the ending socket has handed every byte it had to its parser (a readable stream ends only when
 * drained), so its own download gains nothing to buffer and its parser can finish (a resumed parser first hands
 * over an empty chunk, which must not pause it again); a download on another socket takes in what its socket holds
 * and pauses again at its next chunk. At most {@link HIGH_WATER} bytes and a chunk wait in a download's queue.
 */
import type { Dispatcher } from 'undici';
import { buildConnector } from 'undici';

/** Bytes queued before the parser is paused, and the level at which it is resumed. */
const HIGH_WATER = 1024 * 1024;
const LOW_WATER = 256 * 1024;

/** The head of a response: status and lower-case headers (repeated ones joined with ', '). */
export interface ResponseHead {
  status: number;
  headers: Record<string, string>;
}

/** The paused downloads of one pool, resumed before any of its sockets ends. */
export class EndGuard {
  readonly #paused = new Set<Download>();

  pausing(d: Download): void {
    this.#paused.add(d);
  }

  resumed(d: Download): void {
    this.#paused.delete(d);
  }

  /** Resumes every paused download (see the module comment). */
  socketEnding(): void {
    for (const d of [...this.#paused]) d.resume();
  }

  /** An undici connector whose sockets call {@link socketEnding} before undici handles their `end`. */
  connector(options: buildConnector.BuildOptions): buildConnector.connector {
    const base = buildConnector(options);
    return (opts, callback) =>
      base(opts, (...args) => {
        if (args[0] === null) args[1].prependListener('end', () => this.socketEnding());
        callback(...args);
      });
  }
}

function flatten(h: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k in h) {
    const v = h[k];
    if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  }
  return out;
}

/**
 * The dispatch handler of one request. `head` settles with the status and headers (or the failure before them);
 * the body is then read with {@link next} or {@link all}, or thrown away with {@link discard}.
 */
export class Download implements Dispatcher.DispatchHandler {
  readonly head: Promise<ResponseHead>;
  #settleHead!: { resolve: (h: ResponseHead) => void; reject: (e: Error) => void };
  #headed = false;
  #controller: Dispatcher.DispatchController | undefined;
  #queue: Buffer[] = [];
  #queued = 0;
  #paused = false;
  #ended = false;
  #error: Error | undefined;
  /** Readers waiting for a chunk or the end (a reader and a discard may wait at once). */
  #wakers: Array<() => void> = [];
  /** Bytes still to be dropped by {@link discard} before the connection is given up instead. */
  #dropBudget = -1;
  /** Set before the request starts: abort it at once. */
  #abortReason: Error | undefined;
  readonly #guard: EndGuard;
  readonly #onSettled: (d: Download) => void;

  constructor(guard: EndGuard, onSettled: (d: Download) => void) {
    this.#guard = guard;
    this.#onSettled = onSettled;
    this.head = new Promise<ResponseHead>((resolve, reject) => (this.#settleHead = { resolve, reject }));
    this.head.catch(() => undefined); // a failure before the head is read from `head` by the caller
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    if (this.#abortReason !== undefined) controller.abort(this.#abortReason);
  }

  onResponseStart(_c: Dispatcher.DispatchController, status: number, headers: Record<string, string | string[] | undefined>): void {
    if (status < 200) return; // 1xx: the real head follows
    this.#headed = true;
    this.#settleHead.resolve({ status, headers: flatten(headers) });
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    // A resumed parser may deliver an empty chunk first; pausing on it would leave the parser paused for good.
    if (chunk.length === 0) return;
    if (this.#dropBudget >= 0) {
      this.#dropBudget -= chunk.length;
      if (this.#dropBudget < 0) controller.abort(new Error('response body discarded'));
      return;
    }
    this.#queue.push(chunk);
    this.#queued += chunk.length;
    if (this.#queued > HIGH_WATER && !this.#paused) {
      this.#paused = true;
      this.#guard.pausing(this);
      controller.pause();
    }
    this.#notify();
  }

  onResponseEnd(): void {
    this.#ended = true;
    this.#settled();
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    this.#error = err;
    if (!this.#headed) this.#settleHead.reject(err);
    this.#settled();
  }

  /** Resumes the parser (below the low-water mark, or asked by the {@link EndGuard}). */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#guard.resumed(this);
    this.#controller?.resume();
  }

  /** Aborts the request (before or after its head); the body then fails with `reason`. */
  abort(reason: Error): void {
    if (this.#ended || this.#error !== undefined) return;
    if (this.#controller === undefined) this.#abortReason = reason;
    else this.#controller.abort(reason);
  }

  /** The next chunk of the body, or undefined at its end; rejects with the transport's error. */
  async next(): Promise<Buffer | undefined> {
    for (;;) {
      const chunk = this.#queue.shift();
      if (chunk !== undefined) {
        this.#queued -= chunk.length;
        if (this.#paused && this.#queued <= LOW_WATER) this.resume();
        return chunk;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#ended) return undefined;
      await new Promise<void>((r) => this.#wakers.push(r));
    }
  }

  /** The whole body in one buffer (for bodies whose declared length is small). */
  async all(): Promise<Buffer> {
    while (!this.#ended && this.#error === undefined) {
      if (this.#paused) this.resume();
      await new Promise<void>((r) => this.#wakers.push(r));
    }
    if (this.#error !== undefined) throw this.#error;
    const q = this.#queue;
    this.#queue = [];
    this.#queued = 0;
    return q.length === 1 ? q[0]! : Buffer.concat(q);
  }

  /**
   * Stops reading: what is queued is dropped, and the rest of the body is read and dropped up to `limit` bytes so
   * that the connection can be reused; past that the request is aborted (its connection closed). Resolves when the
   * response is over either way.
   */
  async discard(limit = 256 * 1024): Promise<void> {
    this.#queue = [];
    this.#queued = 0;
    if (this.#ended || this.#error !== undefined) return;
    this.#dropBudget = limit;
    this.resume();
    while (!this.#ended && this.#error === undefined) await new Promise<void>((r) => this.#wakers.push(r));
  }

  #settled(): void {
    if (this.#paused) {
      this.#paused = false;
      this.#guard.resumed(this);
    }
    this.#onSettled(this);
    this.#notify();
  }

  #notify(): void {
    const wakers = this.#wakers;
    this.#wakers = [];
    for (const w of wakers) w();
  }
}
