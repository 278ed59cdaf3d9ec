/**
 * A thin `node:http` adapter for the server core: the core's response description is written straight to the
 * socket (no `Request`/`Response` objects per request), file bodies are streamed with backpressure, and an
 * `AbortSignal` shuts the server down cleanly (stop accepting, close idle keep-alive connections, let
 * in-flight responses finish, then force-close after a grace period).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { decodablePath } from '../node/request-guard.js';
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
  const host = options.host ?? '127.0.0.1';
  const grace = options.shutdownGraceMs ?? 5000;
  const { onResponse, onError } = options;
  let closing = false;

  const server = createServer({ keepAlive: true }, (req: IncomingMessage, res: ServerResponse) => {
    const t0 = onResponse === undefined ? 0 : performance.now();
    const request: ResponderRequest = { method: req.method ?? 'GET', target: req.url ?? '/', headers: req.headers };
    if (closing) res.shouldKeepAlive = false;
    if (onResponse !== undefined) {
      res.once('finish', () => {
        onResponse({ method: request.method, target: request.target, status: res.statusCode, ms: performance.now() - t0 });
      });
    }
    if (closing) res.once('finish', () => server.closeIdleConnections());
    // a path that does not percent-decode is refused before any route sees it (quietly: no error to log)
    if (!decodablePath(request.target)) {
      writeResponse(res, BAD_REQUEST, onError);
      return;
    }
    if (options.intercept?.(req, res) === true) return;
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
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8080, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const shownHost = addr.family === 'IPv6' || addr.address.includes(':') ? `[${addr.address}]` : addr.address;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const close = (): Promise<void> => {
    if (!closing) {
      closing = true;
      const timer = setTimeout(() => server.closeAllConnections(), grace);
      timer.unref();
      server.close(() => {
        clearTimeout(timer);
        resolveClosed();
      });
      server.closeIdleConnections();
    }
    return closed;
  };
  const signal = options.signal;
  if (signal !== undefined) {
    if (signal.aborted) void close();
    else signal.addEventListener('abort', () => void close(), { once: true });
  }
  return { url: `http://${shownHost}:${addr.port}`, port: addr.port, host: addr.address, server, close, closed };
}
