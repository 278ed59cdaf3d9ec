/**
 * A WebSub hub for ResourceSync notifications, as a web-standard `(Request) => Promise<Response>`
 * handler plus a delivery worker over the embedded {@link HubStore}.
 *
 * - Publish: the ResourceSync "fat ping" (a POST whose body is the notification, with
 *   `Link: <topic>; rel="self", <hub>; rel="hub"`) is stored byte for byte and answered 200; the
 *   WebSub form (`hub.mode=publish`, `hub.url` or `hub.topic`) makes the hub fetch the topic.
 * - Subscribe / unsubscribe: answered 202, then the intent is verified with `hub.challenge` on the
 *   callback (its own query string kept); only a 2xx whose body is the challenge counts, and until
 *   then nothing changes. Leases default to 10 days and are clamped to 300 s … 31 days.
 * - Delivery: to every verified subscription, in publish order per subscription, with `Link`
 *   rel=self/hub and `X-Hub-Signature` when the subscription has a secret; failures are retried with
 *   jittered exponential backoff until the lease ends; 410 Gone ends the subscription.
 *
 * Every effect is injected (fetch, clock, timers, randomness) so that tests drive leases and retries.
 * @see Change Notification §4 (publish, subscribe, deliver), WebSub §5–7
 */
import { randomBytes } from 'node:crypto';
import { parseLinkHeader } from '../core/link-header.js';
import { readBody, discardBody } from './body.js';
import { createUrlPolicy, type UrlPolicy } from './callback-policy.js';
import type { HubStore, PendingDelivery, Subscription } from './hub-store.js';
import { MAX_SECRET_BYTES, signBody, SIGNATURE_METHODS, type SignatureMethod } from './signature.js';

/** Lease bounds in seconds. @see WebSub §5.1, §8.2 ("10 days is a good default") */
export const LEASE = { min: 300, max: 2_678_400, default: 864_000 } as const;

/** Size limits of the hub. */
export const HUB_LIMITS = {
  /** A subscription or publish form. */
  formBytes: 64 * 1024,
  /** A published body (fat ping) or a fetched topic. */
  bodyBytes: 16 * 1024 * 1024,
  /** The response body of a verification of intent. */
  challengeResponseBytes: 4096,
} as const;

/** Timers the hub uses; tests may pass their own. */
export interface HubTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Options of {@link createHub}. */
export interface HubOptions {
  store: HubStore;
  /** The hub URL advertised in `Link: <…>; rel="hub"` of deliveries. */
  hubUrl: string;
  /** Non-loopback callback (and topic) URLs the hub may contact: patterns, see ./callback-policy.ts. */
  allowCallback?: readonly string[];
  /** Signature method for subscriptions with a secret. Default sha256. */
  signature?: SignatureMethod;
  /** Lease bounds (seconds); default {@link LEASE}. */
  lease?: { min?: number; max?: number; default?: number };
  /** Backoff of failed deliveries: first delay and cap (ms). Default 1,000 and 900,000. */
  retry?: { baseMs?: number; maxMs?: number };
  /** Deliveries in flight at once (one per subscription at most). Default 16. */
  concurrency?: number;
  /** Timeout of each outgoing request (ms). Default 10,000. */
  requestTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  random?: () => number;
  timers?: HubTimers;
  /** Observes what the hub does (for logs and tests); never throws into the hub. */
  onEvent?: (event: HubEvent) => void;
}

/** What the hub reports through `onEvent`. */
export type HubEvent =
  | { type: 'published'; topic: string; deliveries: number }
  | { type: 'verified'; mode: 'subscribe' | 'unsubscribe'; topic: string; callback: string; leaseSeconds?: number }
  | { type: 'verification-failed'; mode: 'subscribe' | 'unsubscribe'; topic: string; callback: string; reason: string }
  | { type: 'delivered'; topic: string; callback: string; messageId: number; attempts: number }
  | {
      type: 'delivery-failed';
      topic: string;
      callback: string;
      messageId: number;
      attempts: number;
      retryInMs: number;
      reason: string;
    }
  | { type: 'gone'; topic: string; callback: string }
  | { type: 'expired'; topic: string; callback: string };

/** A running hub. */
export interface Hub {
  /** Answers a request to the hub URL. */
  handle(request: Request): Promise<Response>;
  /** Looks for due deliveries and expired leases now (after the clock moved, for tests). */
  kick(): void;
  /** Resolves once no verification or delivery is in flight and no delivery is due. Bounded by `timeoutMs`. */
  idle(timeoutMs?: number): Promise<void>;
  /** Stops the worker and waits for requests in flight; the store stays open (the caller owns it). */
  close(): Promise<void>;
}

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body === '' ? null : `${body}\n`, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
  });
}

function message(e: unknown): string {
  return e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
}

/** Appends `params` to `url`, keeping its own query string. @see WebSub §5.3 */
export function withQuery(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.append(k, v);
  return u.href;
}

/**
 * Creates a hub over `store`. The caller serves `hub.handle` at `hubUrl` (see ./node-listener.ts)
 * and closes the store after `hub.close()`.
 * @example
 * const store = HubStore.open('hub.sqlite');
 * const hub = createHub({ store, hubUrl: 'http://127.0.0.1:8090/' });
 * const server = await listen(hub.handle, { port: 8090 });
 */
export function createHub(options: HubOptions): Hub {
  const store = options.store;
  const fetchFn = options.fetch ?? globalThis.fetch;
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const timers: HubTimers = options.timers ?? {
    setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
    clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
  };
  const policy: UrlPolicy = createUrlPolicy(options.allowCallback);
  const method: SignatureMethod = options.signature ?? 'sha256';
  if (!(SIGNATURE_METHODS as readonly string[]).includes(method))
    throw new TypeError(`unknown signature method '${String(method)}'`);
  const lease = { ...LEASE, ...options.lease };
  const baseMs = options.retry?.baseMs ?? 1000;
  const maxMs = options.retry?.maxMs ?? 900_000;
  const concurrency = options.concurrency ?? 16;
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const emit = (e: HubEvent): void => {
    try {
      options.onEvent?.(e);
    } catch {
      // an observer never breaks the hub
    }
  };

  const inFlight = new Map<number, Promise<void>>(); // subscription id → delivery attempt
  const tasks = new Set<Promise<void>>(); // verifications and delivery attempts
  let timer: unknown;
  let timerAt = Infinity;
  let scheduled = false;
  let stopping = false; // no new work is started
  let closed = false;

  function track(p: Promise<void>): void {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  }

  function request(url: string, init: RequestInit): Promise<Response> {
    return fetchFn(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  }

  // ---- subscriptions ----------------------------------------------------------------------------

  /** @see WebSub §5.3 (Hub Verifies Intent of the Subscriber) */
  async function verify(
    mode: 'subscribe' | 'unsubscribe',
    topic: string,
    callback: string,
    secret: string | undefined,
    leaseSeconds: number,
  ): Promise<void> {
    const challenge = randomBytes(24).toString('base64url');
    const params: Record<string, string> = { 'hub.mode': mode, 'hub.topic': topic, 'hub.challenge': challenge };
    if (mode === 'subscribe') params['hub.lease_seconds'] = String(leaseSeconds);
    let reason: string | undefined;
    try {
      const res = await request(withQuery(callback, params), { method: 'GET' });
      if (res.status < 200 || res.status > 299) {
        reason = `status ${res.status}`;
        await discardBody(res);
      } else {
        const body = await readBody(res.body, HUB_LIMITS.challengeResponseBytes);
        if (!body.ok || Buffer.from(body.bytes).toString('utf8') !== challenge)
          reason = 'the response body is not the challenge';
      }
    } catch (e) {
      reason = message(e);
    }
    if (closed) return;
    if (reason !== undefined) {
      emit({ type: 'verification-failed', mode, topic, callback, reason });
      return;
    }
    if (mode === 'subscribe') {
      store.upsertSubscription({ topic, callback, secret, leaseSeconds, now: now() });
      emit({ type: 'verified', mode, topic, callback, leaseSeconds });
    } else {
      store.removeSubscription(topic, callback);
      emit({ type: 'verified', mode, topic, callback });
    }
    schedule();
  }

  /** @see WebSub §5.1, §5.1.2 */
  function subscription(form: URLSearchParams): Response {
    const mode = form.get('hub.mode') as 'subscribe' | 'unsubscribe';
    const callback = form.get('hub.callback');
    const topic = form.get('hub.topic');
    if (callback === null || callback === '') return text(400, 'hub.callback is missing');
    if (topic === null || topic === '') return text(400, 'hub.topic is missing');
    if (!URL.canParse(callback) || !/^https?:$/.test(new URL(callback).protocol))
      return text(400, 'hub.callback is not an absolute http(s) URL');
    if (!URL.canParse(topic) || !/^https?:$/.test(new URL(topic).protocol))
      return text(400, 'hub.topic is not an absolute http(s) URL');
    if (!policy.allowed(callback))
      return text(403, 'hub.callback is not on a host this hub may contact (loopback or --allow-callback)');
    const secret = form.get('hub.secret') ?? undefined;
    if (secret !== undefined && Buffer.byteLength(secret) > MAX_SECRET_BYTES)
      return text(400, 'hub.secret must be less than 200 bytes');
    let leaseSeconds = lease.default;
    const asked = form.get('hub.lease_seconds');
    if (mode === 'subscribe' && asked !== null && asked !== '') {
      if (!/^\d{1,12}$/.test(asked)) return text(400, 'hub.lease_seconds is not a number of seconds');
      leaseSeconds = Math.min(lease.max, Math.max(lease.min, Number(asked)));
    }
    if (stopping) return text(503, 'the hub is shutting down', { 'retry-after': '1' });
    track(verify(mode, topic, callback, secret === '' ? undefined : secret, leaseSeconds));
    return text(202, 'Accepted: the hub will verify the intent of the subscriber');
  }

  // ---- publishing -------------------------------------------------------------------------------

  function accept(topic: string, contentType: string, body: Uint8Array): void {
    const { deliveries } = store.publish(topic, contentType, body, now());
    emit({ type: 'published', topic, deliveries });
    if (deliveries > 0) schedule();
  }

  /** The WebSub form: the hub fetches each topic named. @see WebSub §6 */
  async function publishForm(form: URLSearchParams): Promise<Response> {
    const topics = [...form.getAll('hub.url'), ...form.getAll('hub.topic')];
    if (topics.length === 0) return text(400, 'hub.url (or hub.topic) is missing');
    for (const topic of topics) {
      if (!policy.allowed(topic)) return text(403, `topic '${topic}' is not on a host this hub may contact`);
    }
    for (const topic of topics) {
      let res: Response;
      try {
        res = await request(topic, { method: 'GET' });
      } catch (e) {
        return text(502, `topic '${topic}' could not be fetched: ${message(e)}`);
      }
      if (res.status !== 200) {
        await discardBody(res);
        return text(502, `topic '${topic}' answered ${res.status}`);
      }
      const body = await readBody(res.body, HUB_LIMITS.bodyBytes);
      if (!body.ok) return text(502, `topic '${topic}' is larger than ${HUB_LIMITS.bodyBytes} bytes`);
      accept(topic, res.headers.get('content-type') ?? 'application/octet-stream', body.bytes);
    }
    return text(200, 'OK');
  }

  /** The ResourceSync fat ping. @see Change Notification §4.1, Framework Notification §4.1 */
  async function publishBody(req: Request): Promise<Response> {
    const links = parseLinkHeader(req.headers.get('link') ?? '');
    const topic = links.find((l) => l.rel.includes('self'))?.target;
    if (topic === undefined || !URL.canParse(topic))
      return text(400, 'a published notification needs Link: <topic>; rel="self"');
    if (!links.some((l) => l.rel.includes('hub')))
      return text(400, 'a published notification needs Link: <hub>; rel="hub"');
    const body = await readBody(req.body, HUB_LIMITS.bodyBytes);
    if (!body.ok) return text(413, `the body is larger than ${HUB_LIMITS.bodyBytes} bytes`);
    if (body.bytes.byteLength === 0) return text(400, 'the published notification is empty');
    accept(topic, req.headers.get('content-type') ?? 'application/xml', body.bytes);
    return text(200, 'OK');
  }

  // ---- delivery ---------------------------------------------------------------------------------

  function backoff(attempts: number): number {
    const exp = Math.min(maxMs, baseMs * 2 ** Math.min(attempts - 1, 30));
    return Math.round(exp / 2 + (random() * exp) / 2);
  }

  /** @see WebSub §7 (Content Distribution), §7.1 (signature) */
  async function deliver(d: PendingDelivery): Promise<void> {
    const s: Subscription = d.subscription;
    const headers: Record<string, string> = {
      'content-type': d.contentType,
      link: `<${d.topic}>; rel="self", <${options.hubUrl}>; rel="hub"`,
    };
    if (s.secret !== undefined) headers['x-hub-signature'] = signBody(method, s.secret, d.body);
    let status = 0;
    let reason: string;
    try {
      const res = await request(s.callback, { method: 'POST', headers, body: d.body });
      status = res.status;
      reason = `status ${status}`;
      await discardBody(res);
    } catch (e) {
      reason = message(e);
    }
    if (closed) return;
    if (status >= 200 && status <= 299) {
      store.delivered(d.id);
      emit({
        type: 'delivered',
        topic: d.topic,
        callback: s.callback,
        messageId: d.messageId,
        attempts: d.attempts + 1,
      });
    } else if (status === 410) {
      store.removeSubscriptionById(s.id);
      emit({ type: 'gone', topic: s.topic, callback: s.callback });
    } else {
      const retryInMs = backoff(d.attempts + 1);
      store.failed(d.id, now() + retryInMs, reason);
      emit({
        type: 'delivery-failed',
        topic: d.topic,
        callback: s.callback,
        messageId: d.messageId,
        attempts: d.attempts + 1,
        retryInMs,
        reason,
      });
    }
  }

  function run(): void {
    scheduled = false;
    if (stopping) return;
    const t = now();
    for (const s of store.expire(t)) emit({ type: 'expired', topic: s.topic, callback: s.callback });
    for (const d of store.heads()) {
      if (inFlight.size >= concurrency) break;
      if (inFlight.has(d.subscription.id) || d.nextAt > t) continue;
      const p = deliver(d).finally(() => {
        inFlight.delete(d.subscription.id);
        schedule();
      });
      inFlight.set(d.subscription.id, p);
      track(p);
    }
    const next = store.nextWake();
    if (next !== undefined && next > t && next < timerAt) {
      if (timer !== undefined) timers.clearTimeout(timer);
      timerAt = next;
      timer = timers.setTimeout(
        () => {
          timer = undefined;
          timerAt = Infinity;
          schedule();
        },
        Math.min(next - t, 2 ** 31 - 1),
      );
    }
  }

  /** Runs the worker soon (in a microtask). */
  function schedule(): void {
    if (stopping || scheduled) return;
    scheduled = true;
    queueMicrotask(run);
  }

  // ---- handler ----------------------------------------------------------------------------------

  async function handle(req: Request): Promise<Response> {
    if (req.method === 'GET' || req.method === 'HEAD') {
      return text(
        200,
        req.method === 'HEAD'
          ? ''
          : 'ResourceSync WebSub hub: POST hub.mode=subscribe|unsubscribe|publish, or a notification with Link rel="self" and rel="hub"',
      );
    }
    if (req.method !== 'POST') return text(405, 'Method Not Allowed', { allow: 'GET, HEAD, POST' });
    const type = (req.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
    if (type === 'application/x-www-form-urlencoded') {
      const body = await readBody(req.body, HUB_LIMITS.formBytes);
      if (!body.ok) return text(413, `the form is larger than ${HUB_LIMITS.formBytes} bytes`);
      const form = new URLSearchParams(Buffer.from(body.bytes).toString('utf8'));
      const mode = form.get('hub.mode');
      if (mode === 'subscribe' || mode === 'unsubscribe') return subscription(form);
      if (mode === 'publish') return publishForm(form);
      return text(400, mode === null ? 'hub.mode is missing' : `hub.mode '${mode}' is not supported`);
    }
    return publishBody(req);
  }

  schedule();
  return {
    handle,
    kick: () => schedule(),
    async idle(limitMs = 30_000): Promise<void> {
      const deadline = Date.now() + limitMs;
      for (;;) {
        await new Promise<void>((r) => setImmediate(r));
        if (tasks.size > 0) {
          await Promise.race([
            Promise.allSettled([...tasks]),
            new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref()),
          ]);
        } else {
          const t = now();
          if (!scheduled && !store.heads().some((d) => d.nextAt <= t)) return;
          schedule();
        }
        if (Date.now() > deadline) throw new Error(`hub not idle after ${limitMs} ms`);
      }
    },
    async close(): Promise<void> {
      stopping = true;
      if (timer !== undefined) timers.clearTimeout(timer);
      while (tasks.size > 0) await Promise.allSettled([...tasks]);
      closed = true;
    },
  };
}
