/**
 * A thin `node:http` adapter for web-standard handlers (the hub, the subscriber's callback): each
 * request becomes a `Request` whose body streams from the socket (the handler reads it with a size
 * limit), and the `Response` is written back. Closing stops accepting, closes idle keep-alive
 * connections and waits for requests in flight, at most 2 s: then their connections are cut.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';

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
  return (req, res) => {
    let request: Request;
    try {
      request = toRequest(req, origin);
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
  const origin = (): string =>
    `http://${host.includes(':') ? `[${host}]` : host}:${(server.address() as AddressInfo).port}`;
  const server = createServer((req, res) => {
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
        options.onError?.(e);
        if (!res.headersSent)
          res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('500 Internal Server Error\n');
        else res.destroy();
      });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: origin(),
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        // requests in flight get a grace period; a connection still open after it (a peer that keeps its
        // keep-alive connection busy) is cut, so that closing is bounded
        const cut = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
        server.close(() => {
          clearTimeout(cut);
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
