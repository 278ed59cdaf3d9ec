/**
 * The aggregator's push, both ways: its embedded WebSub hub (the live Source's, `../live/push.ts`), which takes
 * subscriptions to the aggregate's change and framework channels and relays the Change Notifications each
 * publication records; and the one callback endpoint of the Sources it follows by push (a path per Source), on
 * the aggregator's own port.
 * @see Change Notification §4; WebSub §5 (subscriber callbacks)
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { join } from 'node:path';
import { nodeListener, type FetchHandler } from '../notify/node-listener.js';
import type { CallbackMount } from '../destination/follow.js';
import { startPush, type Push, type PushEvent } from '../live/push.js';
import type { HubStore } from '../notify/hub-store.js';

/** The default path of the callbacks on the aggregator's server: `<path><id>`. */
const CALLBACK_PATH = '/.resourcesync-callback/';

/** Starts the embedded hub of the aggregate published at `baseUrl`, its state in `<out>/hub/`. */
export function startAggregateHub(options: {
  baseUrl: string;
  origin: string;
  out: string;
  allowCallback: readonly string[];
  onEvent: (e: PushEvent) => void;
  /** The hub's store when not `<out>/hub/hub.sqlite` (PostgreSQL). */
  hubStore?: HubStore;
}): Push {
  return startPush({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    origin: options.origin,
    hubDir: join(options.out, 'hub'),
    ...(options.hubStore === undefined ? {} : { hubStore: options.hubStore }),
    allowCallback: options.allowCallback,
    onEvent: options.onEvent,
  });
}

/** The callback endpoint of every Source followed by push: one per aggregator, a path per Source. */
export class CallbackRouter {
  readonly #handlers = new Map<string, FetchHandler>();
  readonly #listener: (req: IncomingMessage, res: ServerResponse) => void;
  readonly #origin: string;
  readonly #base: string | undefined;
  readonly #paths: string[];

  /**
   * @param origin the listening server's origin (`http://host:port`)
   * @param base where hubs reach the callbacks (`<base><id>`), ending in `/`; default `<origin>/.resourcesync-callback/`
   */
  constructor(origin: string, base: string | undefined, onError: (e: unknown) => void) {
    this.#origin = origin;
    this.#base = base;
    this.#paths = [CALLBACK_PATH, ...(base === undefined ? [] : [new URL(base).pathname])];
    this.#listener = nodeListener(
      (r) => {
        const id = this.#idOf(new URL(r.url).pathname);
        const handler = id === undefined ? undefined : this.#handlers.get(id);
        return handler === undefined ? Promise.resolve(new Response(null, { status: 404 })) : handler(r);
      },
      origin,
      onError,
    );
  }

  /** The callback of Source `id`. */
  mount(id: string): CallbackMount {
    const url = `${this.#base ?? `${this.#origin}${CALLBACK_PATH}`}${encodeURIComponent(id)}`;
    const port = Number(new URL(this.#origin).port);
    return {
      url,
      attach: (handler) => {
        this.#handlers.set(id, handler);
        return {
          port,
          close: () => {
            if (this.#handlers.get(id) === handler) this.#handlers.delete(id);
            return Promise.resolve();
          },
        };
      },
    };
  }

  /** Takes the requests to a callback; false for all others. */
  intercept(req: IncomingMessage, res: ServerResponse): boolean {
    const path = (req.url ?? '/').split('?')[0]!;
    if (this.#idOf(path) === undefined) return false;
    this.#listener(req, res);
    return true;
  }

  #idOf(path: string): string | undefined {
    for (const p of this.#paths) {
      if (!path.startsWith(p)) continue;
      const rest = path.slice(p.length);
      if (rest !== '' && !rest.includes('/')) return decodeURIComponent(rest);
    }
    return undefined;
  }
}
