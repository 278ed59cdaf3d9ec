/**
 * A thin `node:http` adapter for web-standard handlers (the hub, the subscriber's callback): each
 * request becomes a `Request` whose body streams from the socket (the handler reads it with a size
 * limit), and the `Response` is written back. Closing stops accepting, closes idle keep-alive
 * connections and waits for requests in flight, at most 2 s: then their connections are cut (the binding and
 * closing are ../node/http-listener.ts's, shared with the Source server's adapter).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import { startHttpListener, urlHost } from '../node/http-listener.js';

/** How long `close()` waits for requests in flight before it cuts their connections. */
const CLOSE_GRACE_MS = 2_000;

/** A web-standard request handler. */
export type FetchHandler = (request: Request) => Promise<Response>;

/** A listening server. */
export interface Listener {
  /** `http://host:port` (IPv6 hosts in brackets). */
  url: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

function toRequest(req: IncomingMessage, origin: string): Request {
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  // `duplex: 'half'` is required by undici for a streamed request body (not yet in the DOM typings).
  const init: RequestInit & { duplex: 'half' } = {
    method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null,
    duplex: 'half',
  };
  return new Request(new URL(req.url ?? '/', origin), init);
}

async function writeResponse(res: ServerResponse, out: Response, head: boolean): Promise<void> {
  const headers: Record<string, string> = {};
  out.headers.forEach((v, k) => (headers[k] = v));
  const body = head || out.body === null ? undefined : new Uint8Array(await out.arrayBuffer());
  if (body !== undefined) headers['content-length'] = String(body.byteLength);
  res.writeHead(out.status, headers);
  res.end(body);
}

/**
 * A `node:http` request listener that answers with `handler` (for mounting a handler on a server
 * made elsewhere, e.g. the hub inside `resourcesync serve`).
 */
export function nodeListener(
  handler: FetchHandler,
  origin: string,
  onError?: (e: unknown) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return translating(handler, () => origin, onError);
}

/** The translation of one request to `handler` and of its answer back; `origin` is asked for per request. */
function translating(
  handler: FetchHandler,
  origin: () => string,
  onError: ((e: unknown) => void) | undefined,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    let request: Request;
    try {
      request = toRequest(req, origin());
    } catch {
      res.writeHead(400).end();
      return;
    }
    handler(request)
      .then((out) => writeResponse(res, out, req.method === 'HEAD'))
      .catch((e: unknown) => {
        onError?.(e);
        if (!res.headersSent)
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('500 Internal Server Error\n');
        else res.destroy();
      });
  };
}

/**
 * Serves `handler` on `host:port` (port 0 picks a free one).
 * @example const l = await listen(hub.handle, { port: 0 }); console.log(l.url);
 */
export async function listen(
  handler: FetchHandler,
  options: { port?: number; host?: string; onError?: (e: unknown) => void } = {},
): Promise<Listener> {
  const host = options.host ?? '127.0.0.1';
  // the origin of requests names the host as given (a name stays a name), with the port bound
  let origin = '';
  const listener = await startHttpListener(translating(handler, () => origin, options.onError), {
    port: options.port ?? 0,
    host,
    closeGraceMs: CLOSE_GRACE_MS,
    keepAliveTimeout: 5000,
  });
  origin = `http://${urlHost(host)}:${listener.port}`;
  return { url: origin, port: listener.port, server: listener.server, close: listener.close };
}
