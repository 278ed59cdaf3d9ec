/**
 * The one `node:http` listener under both adapters (`server/node-adapter.ts` for the Source's responder,
 * `notify/node-listener.ts` for web-standard handlers): binds `host:port` (port 0 picks a free one), reports
 * the address it got, and closes cleanly: it stops accepting, closes idle keep-alive connections, lets requests
 * in flight finish (their connections are not kept alive), and cuts the connections still open after a grace
 * period, so that closing is bounded. The adapters keep only their translation of requests and responses.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Options of {@link startHttpListener}. */
export interface HttpListenerOptions {
  /** TCP port; 0 picks a free one. */
  port: number;
  /** Interface to listen on. */
  host: string;
  /** After closing starts, connections still open after this many ms are cut. */
  closeGraceMs: number;
  /** TCP keep-alive on accepted sockets (`createServer`'s `keepAlive`). Default false. */
  keepAlive?: boolean;
  /** How long an idle HTTP keep-alive connection stays open, ms. Default: Node's. */
  keepAliveTimeout?: number;
  /** Aborting it closes the listener, like `close()`. */
  signal?: AbortSignal;
}

/** A bound listener. */
export interface HttpListener {
  /** `http://address:port` of the listening socket (IPv6 addresses in brackets). */
  url: string;
  port: number;
  /** The address bound. */
  host: string;
  server: Server;
  /** True once closing has started. */
  readonly closing: boolean;
  /** Starts closing (once; later calls wait for the same end); resolves when every connection is closed. */
  close: () => Promise<void>;
  /** Resolves when the listener has closed. */
  closed: Promise<void>;
}

/** `host` as it goes into a URL: IPv6 addresses in brackets. */
export function urlHost(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * Binds `onRequest` to `host:port`; rejects when the address cannot be bound (in use, not an interface).
 * @example const l = await startHttpListener((req, res) => res.end('hi'), { port: 0, host: '127.0.0.1', closeGraceMs: 2000 });
 */
export async function startHttpListener(
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
  options: HttpListenerOptions,
): Promise<HttpListener> {
  let closing = false;
  const server = createServer({ keepAlive: options.keepAlive ?? false }, (req, res) => {
    if (closing) {
      // a request on a connection open when closing started: answered, then its connection is closed
      res.shouldKeepAlive = false;
      res.once('finish', () => server.closeIdleConnections());
    }
    onRequest(req, res);
  });
  if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;

  let resolveClosed!: () => void;
  const closed = new Promise<void>((resolve) => (resolveClosed = resolve));
  const close = (): Promise<void> => {
    if (!closing) {
      closing = true;
      const cut = setTimeout(() => server.closeAllConnections(), options.closeGraceMs);
      cut.unref();
      server.close(() => {
        clearTimeout(cut);
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
  return {
    url: `http://${urlHost(address.address)}:${address.port}`,
    port: address.port,
    host: address.address,
    server,
    get closing() {
      return closing;
    },
    close,
    closed,
  };
}
