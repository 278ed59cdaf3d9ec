import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';

/** What the test server answers for one path. */
export interface Route {
  status?: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
}

/** A request the server saw. */
export interface SeenRequest {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
}

/**
 * A fault hook: return true when it answered the request itself (or destroyed the socket). `n` counts the
 * requests for this path so far (1 for the first).
 */
export type Fault = (req: IncomingMessage, res: ServerResponse, n: number) => boolean | Promise<boolean>;

/** A static HTTP server on 127.0.0.1, port 0, that records every request. */
export interface TestServer {
  readonly origin: string;
  readonly requests: SeenRequest[];
  routes: Map<string, Route>;
  /** Sets a route (path is the raw request path, e.g. `/a%20b.txt`). */
  set(path: string, route: Route | string | Uint8Array): void;
  delete(path: string): void;
  fault: Fault | undefined;
  /** gzip bodies when the client accepts it. */
  gzip: boolean;
  close(): Promise<void>;
}

/**
 * Starts a recording static server. ETags are the byte length + a cheap checksum; `If-None-Match` gives 304.
 * @example const s = await startTestServer(); s.set('/a.txt', 'hello'); await s.close();
 */
export async function startTestServer(): Promise<TestServer> {
  const routes = new Map<string, Route>();
  const counts = new Map<string, number>();
  const requests: SeenRequest[] = [];
  const state: { fault: Fault | undefined; gzip: boolean } = { fault: undefined, gzip: false };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const url = req.url ?? '/';
      requests.push({ method: req.method ?? 'GET', url, headers: req.headers });
      const path = url.split('?')[0]!;
      const n = (counts.get(path) ?? 0) + 1;
      counts.set(path, n);
      if (state.fault !== undefined && (await state.fault(req, res, n))) return;
      const route = routes.get(path);
      if (route === undefined) {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
        return;
      }
      const body = route.body === undefined ? Buffer.alloc(0) : Buffer.from(route.body);
      const etag = `"${body.length}-${checksum(body)}"`;
      const headers: Record<string, string> = { etag, ...route.headers };
      if ((route.status ?? 200) === 200 && req.headers['if-none-match'] === etag) {
        res.writeHead(304, { etag }).end();
        return;
      }
      let out = body;
      if (state.gzip && /gzip/.test(req.headers['accept-encoding'] ?? '')) {
        out = gzipSync(body);
        headers['content-encoding'] = 'gzip';
      }
      headers['content-length'] = String(out.length);
      res.writeHead(route.status ?? 200, headers);
      res.end(req.method === 'HEAD' ? undefined : out);
    })().catch((err: unknown) => {
      res.destroy(err instanceof Error ? err : new Error(String(err)));
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    routes,
    set(path, route) {
      routes.set(path, typeof route === 'string' || route instanceof Uint8Array ? { body: route } : route);
    },
    delete(path) {
      routes.delete(path);
    },
    get fault() {
      return state.fault;
    },
    set fault(f) {
      state.fault = f;
    },
    get gzip() {
      return state.gzip;
    },
    set gzip(g) {
      state.gzip = g;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function checksum(b: Buffer): string {
  let h = 0;
  for (let i = 0; i < b.length; i++) h = (h * 31 + b[i]!) | 0;
  return (h >>> 0).toString(16);
}
