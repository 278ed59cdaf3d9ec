/**
 * A thin `node:http` adapter for the server core: the core's response description is written straight to the
 * socket (no `Request`/`Response` objects per request), file bodies are streamed with backpressure, and an
 * `AbortSignal` shuts the server down cleanly (stop accepting, close idle keep-alive connections, let
 * in-flight responses finish, then force-close after a grace period; see ../node/http-listener.ts, which
 * binds and closes).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { decodablePath } from '../node/request-guard.js';
import { startHttpListener } from '../node/http-listener.js';
import { statusResponse } from './file-response.js';
import type { ResponderHandler, ResponderRequest, ResponderResponse } from './request-response.js';

const BAD_REQUEST = statusResponse(400, 'Bad Request');

/** Options of `serve`. */
export interface ServeOptions {
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Aborting it shuts the server down cleanly. */
  signal?: AbortSignal;
  /** After shutdown starts, connections still open after this many ms are closed. Default 5000. */
  shutdownGraceMs?: number;
  /** Called once per finished response (for access logs). */
  onResponse?: (info: { method: string; target: string; status: number; ms: number }) => void;
  /** Called with errors while writing a response (the connection is closed). */
  onError?: (error: unknown) => void;
  /**
   * Answers requests before the core: returns true when it took the request (e.g. the embedded WebSub hub,
   * which reads request bodies). Default: none.
   */
  intercept?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port` of the listening socket (IPv6 hosts in brackets). */
  url: string;
  port: number;
  host: string;
  server: Server;
  /** Shuts down cleanly, like aborting the signal; resolves when every connection is closed. */
  close(): Promise<void>;
  /** Resolves when the server has shut down. */
  closed: Promise<void>;
}

function writeResponse(res: ServerResponse, out: ResponderResponse, onError: ((e: unknown) => void) | undefined): void {
  res.writeHead(out.status, out.headers);
  const body = out.body;
  if (body === undefined) {
    res.end();
    return;
  }
  if (body.type === 'bytes') {
    res.end(body.bytes);
    return;
  }
  if (body.end <= body.start) {
    void body.handle.close();
    res.end();
    return;
  }
  const file = body.handle.createReadStream({ start: body.start, end: body.end - 1, autoClose: true });
  // A file truncated while it is sent must not end a response shorter than its Content-Length.
  if (!body.gzip) res.strictContentLength = true;
  const done = body.gzip ? pipeline(file, createGzip(), res) : pipeline(file, res);
  done.catch((error: unknown) => {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ERR_STREAM_PREMATURE_CLOSE') onError?.(error);
    res.destroy();
  });
}

/**
 * Serves a server core over `node:http` with keep-alive.
 * @example
 * const ac = new AbortController();
 * const running = await serve(createSourceResponder({ sets, outDir }), { port: 0, signal: ac.signal });
 * console.log(`listening on ${running.url}`);
 * ac.abort(); await running.closed;
 */
export async function serve(core: ResponderHandler, options: ServeOptions = {}): Promise<RunningServer> {
  const { onResponse, onError } = options;
  const listener = await startHttpListener(
    (req: IncomingMessage, res: ServerResponse) => {
      const t0 = onResponse === undefined ? 0 : performance.now();
      const request: ResponderRequest = { method: req.method ?? 'GET', target: req.url ?? '/', headers: req.headers };
      if (onResponse !== undefined) {
        res.once('finish', () => {
          onResponse({ method: request.method, target: request.target, status: res.statusCode, ms: performance.now() - t0 });
        });
      }
      // a path that does not percent-decode is refused before any route sees it (quietly: no error to log)
      if (!decodablePath(request.target)) {
        writeResponse(res, BAD_REQUEST, onError);
        return;
      }
      if (options.intercept?.(req, res) === true) return;
      answer(core, request, res, onError);
    },
    {
      port: options.port ?? 8080,
      host: options.host ?? '127.0.0.1',
      closeGraceMs: options.shutdownGraceMs ?? 5000,
      keepAlive: true,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    },
  );
  const { url, port, host, server, close, closed } = listener;
  return { url, port, host, server, close, closed };
}

/** Writes the core's answer to `request`, at once when it answers synchronously (the fast path). */
function answer(core: ResponderHandler, request: ResponderRequest, res: ServerResponse, onError: ((e: unknown) => void) | undefined): void {
  let out: ResponderResponse | Promise<ResponderResponse>;
  try {
    out = core(request);
  } catch (error) {
    onError?.(error);
    res.statusCode = 500;
    res.end();
    return;
  }
  if (out instanceof Promise) {
    out.then(
      (o) => writeResponse(res, o, onError),
      (error: unknown) => {
        onError?.(error);
        res.statusCode = 500;
        res.end();
      },
    );
  } else {
    writeResponse(res, out, onError);
  }
}
