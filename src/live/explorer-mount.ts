/**
 * The explorer page inside a live Source (`resourcesync serve`), at `<base-url>/.resourcesync/ui/`: the same page as
 * `explore --web`, exploring the served Source itself (through the HTTP client, from its base URL), with
 * its notification channels and subscribers when push is on.
 * @see Z39.99 §6.1
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createAuthority, originOf } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import { nodeListener } from '../notify/node-listener.js';
import { DOCUMENTS_PREFIX } from '../source/url-path.js';
import { createExplorerHandler, type ChannelSummary } from '../web/explorer.js';
import type { AggregateStatusView } from '../web/status-views.js';
import { hostCheck } from '../node/request-guard.js';

/** The page as a live Source mounts it. */
export interface ExplorerMount {
  /** Path of the page, e.g. `/.resourcesync/ui/`. */
  path: string;
  /** Takes the requests under `path`; false for all others. */
  intercept(req: IncomingMessage, res: ServerResponse): boolean;
  close(): Promise<void>;
}

/** Mounts the explorer for the Source served at `baseUrl` (no trailing slash) by a server listening at `origin`. */
export function mountExplorer(options: {
  baseUrl: string;
  origin: string;
  /** The interface name it listens on as given (`--host`), also accepted as `Host`. */
  host?: string;
  channels?: () => ChannelSummary | Promise<ChannelSummary>;
  /** The status of an aggregate's Sources (the Aggregate tab), when the served Source is an aggregate. */
  aggregate?: () => Promise<AggregateStatusView>;
  signal: AbortSignal;
  /** Errors of the page's handler (answered 500). */
  onError: (error: unknown) => void;
}): ExplorerMount {
  const path = `${new URL(`${options.baseUrl}/`).pathname}${DOCUMENTS_PREFIX}/ui/`;
  const authority = createAuthority({ origins: [originOf(`${options.baseUrl}/`)!] });
  const http = createHttpClient({ authority, env: {}, retries: 0, signal: options.signal });
  const handler = createExplorerHandler({
    source: `${options.baseUrl}/`,
    http,
    authority,
    basePath: path,
    rate: 0,
    treeMaxAgeMs: 2000,
    signal: options.signal,
    allowHost: hostCheck(options.origin, [options.baseUrl, options.host ?? '']),
    ...(options.channels === undefined ? {} : { channels: options.channels }),
    ...(options.aggregate === undefined ? {} : { aggregate: options.aggregate }),
  });
  const listener = nodeListener(handler, options.origin, options.onError);
  return {
    path,
    intercept(req, res) {
      const p = (req.url ?? '/').split('?')[0]!;
      if (!p.startsWith(path) && `${p}/` !== path) return false;
      listener(req, res);
      return true;
    },
    close: () => http.close(),
  };
}
