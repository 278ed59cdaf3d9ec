/**
 * A WebSub hub for ResourceSync notifications, as a web-standard `(Request) => Promise<Response>`
 * handler plus a delivery worker ({@link createDeliveryWorker}) over the embedded {@link HubStore}.
 *
 * - Publish: the ResourceSync "fat ping" (a POST whose body is the notification, with
 *   `Link: <topic>; rel="self", <hub>; rel="hub"`) is stored once and answered 200; the WebSub form
 *   (`hub.mode=publish`, `hub.url` or `hub.topic`) makes the hub fetch the topic. Who may publish
 *   over HTTP, and for which topics, is the operator's choice ({@link HubOptions.openPublish},
 *   {@link HubOptions.publishSecret}, {@link HubOptions.topics}); {@link Hub.handleLocal} publishes
 *   from inside the process.
 * - Subscribe / unsubscribe: answered 202, then the intent is verified with `hub.challenge` on the
 *   callback (its own query string kept); only a 2xx whose body is the challenge counts, and until
 *   then nothing changes. The secret of a subscription is never changed by a re-subscription (409).
 *   Leases default to 10 days and are clamped to 300 s … 31 days.
 * - Delivery: see ./hub-delivery.ts. What is queued is bounded ({@link HubLimits}).
 *
 * Every effect is injected (fetch, clock, timers, randomness) so that tests drive leases and retries.
 * @see Change Notification §4 (publish, subscribe, deliver), WebSub §5–8
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { parseLinkHeader } from '../core/link-header.js';
import { readBody, discardBody } from './body.js';
import { createUrlPolicy, type UrlPolicy } from './callback-policy.js';
import { createDeliveryWorker, reasonOf, withQuery } from './hub-delivery.js';
import {
  HUB_DEFAULT_GIVE_UP,
  HUB_DEFAULT_LIMITS,
  HUB_LIMITS,
  LEASE,
  type Hub,
  type HubEvent,
  type HubLimits,
  type HubOptions,
  type PendingVerification,
} from './hub-options.js';
import type { Subscription } from './hub-store.js';
import { MAX_SECRET_BYTES, SIGNATURE_METHODS, type SignatureMethod } from './signature.js';

export { withQuery, type HubTimers, type GiveUp } from './hub-delivery.js';

export {
  LEASE,
  HUB_LIMITS,
  HUB_DEFAULT_LIMITS,
  HUB_DEFAULT_GIVE_UP,
  type HubLimits,
  type HubOptions,
  type HubEvent,
  type PendingVerification,
  type Hub,
} from './hub-options.js';

/** Topics one form publish may name (each is fetched in turn). */
const MAX_FORM_TOPICS = 16;

function text(status: number, body: string, headers: Record<string, string> = {}): Response {
  return new Response(body === '' ? null : `${body}\n`, {
    status,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...headers },
  });
}

function sameSecret(given: string, expected: string): boolean {
  const h = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(h(given), h(expected));
}

function httpUrl(s: string): boolean {
  return URL.canParse(s) && /^https?:$/.test(new URL(s).protocol);
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
  const callbacks: UrlPolicy = createUrlPolicy(options.allowCallback);
  const topicPolicy: UrlPolicy = createUrlPolicy(options.allowTopic ?? options.allowCallback);
  const method: SignatureMethod = options.signature ?? 'sha256';
  if (!(SIGNATURE_METHODS as readonly string[]).includes(method))
    throw new TypeError(`unknown signature method '${String(method)}'`);
  const lease = { ...LEASE, ...options.lease };
  const limits: HubLimits = { ...HUB_DEFAULT_LIMITS, ...options.limits };
  const timeoutMs = options.requestTimeoutMs ?? 10_000;
  const readTimeoutMs = options.readTimeoutMs ?? 30_000;
  const emit = (e: HubEvent): void => {
    try {
      options.onEvent?.(e);
    } catch {
      // an observer never breaks the hub
    }
  };

  const tasks = new Set<Promise<void>>(); // verifications and delivery attempts
  const verifying = new Set<PendingVerification & { secret: string | undefined }>();
  let publishing = 0; // bodies being read
  let stopping = false; // no new work is started
  let closed = false;

  function track(p: Promise<void>): void {
    tasks.add(p);
    void p.finally(() => tasks.delete(p));
  }

  function request(url: string, init: RequestInit): Promise<Response> {
    return fetchFn(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  }

  const worker = createDeliveryWorker({
    store,
    hubUrl: options.hubUrl,
    method,
    request,
    now,
    random: options.random ?? Math.random,
    timers: options.timers ?? {
      setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
      clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
    emit,
    track,
    retry: { baseMs: options.retry?.baseMs ?? 1000, maxMs: options.retry?.maxMs ?? 900_000 },
    concurrency: options.concurrency ?? 16,
    giveUp: { ...HUB_DEFAULT_GIVE_UP, ...options.giveUp },
    stopping: () => stopping,
    closed: () => closed,
  });

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
      reason = reasonOf(e);
    }
    if (closed) return;
    if (reason === undefined && mode === 'subscribe') {
      const s = store.upsertSubscription({ topic, callback, secret, leaseSeconds, now: now() });
      if (s === 'conflict') reason = 'a subscription with another secret holds this callback';
    }
    if (reason !== undefined) {
      emit({ type: 'verification-failed', mode, topic, callback, reason });
      return;
    }
    if (mode === 'subscribe') emit({ type: 'verified', mode, topic, callback, leaseSeconds });
    else {
      store.removeSubscription(topic, callback);
      emit({ type: 'verified', mode, topic, callback });
    }
    worker.schedule();
  }

  /** Whether a subscribe would change the secret of the subscription (or the one being verified) of its callback. */
  function changesSecret(topic: string, callback: string, secret: string | undefined): boolean {
    const had: Subscription | undefined = store.getSubscription(topic, callback);
    if (had !== undefined) return had.secret !== secret;
    for (const v of verifying)
      if (v.mode === 'subscribe' && v.topic === topic && v.callback === callback && v.secret !== secret) return true;
    return false;
  }

  /** @see WebSub §5.1, §5.1.2 */
  function subscription(form: URLSearchParams): Response {
    const mode = form.get('hub.mode') as 'subscribe' | 'unsubscribe';
    const callback = form.get('hub.callback');
    const topic = form.get('hub.topic');
    if (callback === null || callback === '') return text(400, 'hub.callback is missing');
    if (topic === null || topic === '') return text(400, 'hub.topic is missing');
    if (!httpUrl(callback)) return text(400, 'hub.callback is not an absolute http(s) URL');
    if (!httpUrl(topic)) return text(400, 'hub.topic is not an absolute http(s) URL');
    if (options.topics !== undefined && !options.topics(topic))
      return text(403, 'hub.topic is not a topic of this hub');
    if (!callbacks.allowed(callback))
      return text(403, 'hub.callback is not on a host this hub may contact (loopback or --allow-callback)');
    const given = form.get('hub.secret') ?? undefined;
    if (given !== undefined && Buffer.byteLength(given) > MAX_SECRET_BYTES)
      return text(400, 'hub.secret must be less than 200 bytes');
    const secret = given === '' ? undefined : given;
    let leaseSeconds = lease.default;
    const asked = form.get('hub.lease_seconds');
    if (mode === 'subscribe' && asked !== null && asked !== '') {
      if (!/^\d{1,12}$/.test(asked)) return text(400, 'hub.lease_seconds is not a number of seconds');
      leaseSeconds = Math.min(lease.max, Math.max(lease.min, Number(asked)));
    }
    if (stopping) return text(503, 'the hub is shutting down', { 'retry-after': '1' });
    // @see WebSub §8 (security): the secret is what authenticates deliveries; a request cannot swap it
    if (mode === 'subscribe' && changesSecret(topic, callback, secret))
      return text(409, 'this callback is subscribed with another secret: unsubscribe it first');
    if (verifying.size >= limits.verifications)
      return text(503, 'too many verifications in progress', { 'retry-after': '5' });
    if (mode === 'subscribe' && store.getSubscription(topic, callback) === undefined) {
      if (store.counts().subscriptions >= limits.subscriptions)
        return text(503, 'this hub holds as many subscriptions as it may', { 'retry-after': '60' });
    }
    const entry = { mode, topic, callback, since: now(), secret };
    verifying.add(entry);
    track(verify(mode, topic, callback, secret, leaseSeconds).finally(() => verifying.delete(entry)));
    return text(202, 'Accepted: the hub will verify the intent of the subscriber');
  }

  // ---- publishing -------------------------------------------------------------------------------

  function refuse(topic: string, status: number, reason: string, body: string, retryAfter?: string): Response {
    emit({ type: 'publish-refused', topic, status, reason });
    return text(status, body, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
  }

  function accept(topic: string, contentType: string, body: Uint8Array): Response {
    const outcome = store.publish(topic, contentType, body, now(), limits);
    for (const s of outcome.givenUp) worker.gaveUp(s, s.lastError ?? 'its queue is full');
    if (!outcome.queued) {
      return outcome.limit === 'topicBytes'
        ? refuse(topic, 429, 'topic queue full', `the queue of topic '${topic}' is full`, '60')
        : refuse(topic, 503, 'queue full', 'the queue of this hub is full', '60');
    }
    emit({ type: 'published', topic, deliveries: outcome.deliveries });
    if (outcome.deliveries > 0) worker.schedule();
    return text(200, 'OK');
  }

  /** Whether this request may publish at all: undefined when it may, else the refusal. @see WebSub §6 */
  function mayPublish(req: Request, local: boolean): Response | undefined {
    if (local) return undefined;
    if (options.publishSecret !== undefined) {
      const m = /^Bearer +(\S+)\s*$/i.exec(req.headers.get('authorization') ?? '');
      if (m !== null && sameSecret(m[1]!, options.publishSecret)) return undefined;
      return text(403, 'publishing to this hub needs its publish secret (Authorization: Bearer)');
    }
    if (options.openPublish === false) return text(403, 'this hub relays only what its own Source publishes');
    return undefined;
  }

  function topicAllowed(topic: string): boolean {
    return options.topics !== undefined ? options.topics(topic) : topicPolicy.allowed(topic);
  }

  /** The WebSub form: the hub fetches each topic named (no redirects followed). @see WebSub §6 */
  async function publishForm(form: URLSearchParams): Promise<Response> {
    if (options.fetchTopics === false) return text(403, 'this hub does not fetch topics: publish the notification');
    const topics = [...form.getAll('hub.url'), ...form.getAll('hub.topic')];
    if (topics.length === 0) return text(400, 'hub.url (or hub.topic) is missing');
    if (topics.length > MAX_FORM_TOPICS) return text(400, `at most ${MAX_FORM_TOPICS} topics per publish`);
    for (const topic of topics) {
      if (!httpUrl(topic) || !topicAllowed(topic)) return text(403, `topic '${topic}' is not a topic of this hub`);
    }
    if (publishing >= limits.publishes) return text(503, 'too many publishes in progress', { 'retry-after': '1' });
    publishing++;
    try {
      return await fetchTopics(topics);
    } finally {
      publishing--;
    }
  }

  async function fetchTopics(topics: readonly string[]): Promise<Response> {
    for (const topic of topics) {
      // one answer whatever the topic's host did: the hub is no port scanner
      const failed = (reason: string): Response => refuse(topic, 502, reason, `topic '${topic}' could not be fetched`);
      let res: Response;
      try {
        res = await request(topic, { method: 'GET' });
      } catch (e) {
        return failed(reasonOf(e));
      }
      if (res.status !== 200) {
        await discardBody(res);
        return failed(`status ${res.status}`);
      }
      const body = await readBody(res.body, limits.bodyBytes).catch((e: unknown) => reasonOf(e));
      if (typeof body === 'string') return failed(body);
      if (!body.ok) return failed(`larger than ${limits.bodyBytes} bytes`);
      const answer = accept(topic, res.headers.get('content-type') ?? 'application/octet-stream', body.bytes);
      if (answer.status !== 200) return answer;
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
    if (!topicAllowed(topic)) return text(403, `topic '${topic}' is not a topic of this hub`);
    const length = Number(req.headers.get('content-length') ?? '0');
    if (length > limits.bodyBytes) return text(413, `the body is larger than ${limits.bodyBytes} bytes`);
    if (publishing >= limits.publishes) return text(503, 'too many publishes in progress', { 'retry-after': '1' });
    publishing++;
    try {
      const body = await readBody(req.body, limits.bodyBytes, readTimeoutMs);
      if (!body.ok && !body.tooLarge) return text(408, 'the body did not arrive in time');
      if (!body.ok) return text(413, `the body is larger than ${limits.bodyBytes} bytes`);
      if (body.bytes.byteLength === 0) return text(400, 'the published notification is empty');
      return accept(topic, req.headers.get('content-type') ?? 'application/xml', body.bytes);
    } finally {
      publishing--;
    }
  }

  // ---- handler ----------------------------------------------------------------------------------

  async function handle(req: Request, local: boolean): Promise<Response> {
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
      const body = await readBody(req.body, HUB_LIMITS.formBytes, readTimeoutMs);
      if (!body.ok && !body.tooLarge) return text(408, 'the form did not arrive in time');
      if (!body.ok) return text(413, `the form is larger than ${HUB_LIMITS.formBytes} bytes`);
      const form = new URLSearchParams(Buffer.from(body.bytes).toString('utf8'));
      const mode = form.get('hub.mode');
      if (mode === 'subscribe' || mode === 'unsubscribe') return subscription(form);
      if (mode === 'publish') return mayPublish(req, local) ?? publishForm(form);
      return text(400, mode === null ? 'hub.mode is missing' : `hub.mode '${mode}' is not supported`);
    }
    return mayPublish(req, local) ?? publishBody(req);
  }

  worker.schedule();
  return {
    handle: (r) => handle(r, false),
    handleLocal: (r) => handle(r, true),
    pending: () => [...verifying].map(({ mode, topic, callback, since }) => ({ mode, topic, callback, since })),
    kick: () => worker.schedule(),
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
          if (!worker.scheduled() && !store.heads().some((d) => d.nextAt <= t)) return;
          worker.schedule();
        }
        if (Date.now() > deadline) throw new Error(`hub not idle after ${limitMs} ms`);
      }
    },
    async close(): Promise<void> {
      stopping = true;
      worker.stop();
      while (tasks.size > 0) await Promise.allSettled([...tasks]);
      closed = true;
    },
  };
}
