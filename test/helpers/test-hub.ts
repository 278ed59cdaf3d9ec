/**
 * A hub for tests: `createHub` over a fresh SQLite store (or the one at `file`), listening on 127.0.0.1, with
 * fast retries; its events and the URLs it fetched are recorded.
 */
import { join } from 'node:path';
import { createHub, type Hub, type HubEvent, type HubOptions } from '../../src/notify/hub.js';
import type { HubStore } from '../../src/notify/hub-store.js';
import { openSqliteHubStore } from '../../src/notify/sqlite-hub-store.js';
import { listen, type Listener } from '../../src/notify/node-listener.js';
import { tempDir } from './tmp.js';

export interface TestHub {
  hub: Hub;
  /** The hub's URL, ending in `/`. */
  url: string;
  store: HubStore;
  events: HubEvent[];
  /** Every URL the hub fetched (topics of publishes, callbacks), in order. */
  fetched: string[];
  /** The store's file. */
  file: string;
  listener: Listener;
  stop(): Promise<void>;
}

/** Starts a hub with `opts` over the store at `file` (default: a new one in a temporary folder). */
export async function startHub(opts: Partial<HubOptions> = {}, file?: string): Promise<TestHub> {
  const tmp = file === undefined ? await tempDir('rs-hub-') : undefined;
  const path = file ?? join(tmp!.dir, 'hub.sqlite');
  const store: HubStore = openSqliteHubStore(path);
  const events: HubEvent[] = [];
  const fetched: string[] = [];
  const ref: { hub?: Hub } = {};
  const listener = await listen((r) => ref.hub!.handle(r));
  const url = `${listener.url}/`;
  const hub = (ref.hub = createHub({
    store,
    hubUrl: url,
    retry: { baseMs: 10, maxMs: 80 },
    onEvent: (e) => events.push(e),
    fetch: (input, init) => {
      fetched.push(typeof input === 'string' ? input : input instanceof URL ? input.href : input.url);
      return fetch(input, init);
    },
    ...opts,
  }));
  return {
    hub,
    url,
    store,
    events,
    fetched,
    file: path,
    listener,
    async stop() {
      await listener.close();
      await hub.close();
      await store.close();
      await tmp?.cleanup();
    },
  };
}

/** POSTs `params` to the hub as a form. */
export function form(hubUrl: string, params: Record<string, string>): Promise<Response> {
  return fetch(hubUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
}
