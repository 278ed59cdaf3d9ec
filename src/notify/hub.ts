/**
 * A WebSub hub for ResourceSync notifications, as a web-standard `(Request) => Promise<Response>`
 * handler plus a delivery worker ({@link DeliveryWorker}) over a {@link HubStore} (SQLite by default).
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
import { DeliveryWorker, reasonOf, withQuery } from './hub-delivery.js';
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
import type { HubStore, Subscription } from './hub-store.js';
import { MAX_SECRET_BYTES, SIGNATURE_METHODS, type SignatureMethod } from './signature.js';

export { type HubTimers, type GiveUp } from './hub-delivery.js';

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

/** A verification of intent in flight, with the secret it would record. */
type Verification = PendingVerification & { secret: string | undefined };

/** A subscribe or unsubscribe request that passed the checks, waiting for its verification of intent. */
interface SubscriptionRequest {
  mode: 'subscribe' | 'unsubscribe';
  topic: string;
  callback: string;
  secret: string | undefined;
  leaseSeconds: number;
}

/**
 * Creates a hub over `options.store`. The caller serves `hub.handle` at `hubUrl` (see ./node-listener.ts)
 * and closes the store after `hub.close()`.
 * @example
 * const store = openSqliteHubStore('hub.sqlite');
 * const hub = createHub({ store, hubUrl: 'http://127.0.0.1:8090/' });
 * const server = await listen(hub.handle, { port: 8090 });
 */
export function createHub(options: HubOptions): Hub {
  return new WebSubHub(options);
}

/** The hub: its handler, its verifications of intent and its delivery worker. */
class WebSubHub implements Hub {
  private readonly options: HubOptions;
  private readonly store: HubStore;
  private readonly fetchFn: typeof globalThis.fetch;
  private readonly now: () => number;
  private readonly callbacks: UrlPolicy;
  private readonly topicPolicy: UrlPolicy;
  private readonly lease: { min: number; max: number; default: number };
  private readonly limits: HubLimits;
  private readonly timeoutMs: number;
  private readonly readTimeoutMs: number;
  private readonly worker: DeliveryWorker;
  /** Verifications and delivery attempts in flight. */
  private readonly tasks = new Set<Promise<void>>();
  private readonly verifying = new Set<Verification>();
  /** Bodies being read. */
  private publishing = 0;
  /** No new work is started. */
  private stopping = false;
  private closed = false;

  /** Answers a request to the hub URL (from the network). */
  readonly handle = (req: Request): Promise<Response> => this.answer(req, false);
  /** Answers a request from inside the process: publishing needs no secret. */
  readonly handleLocal = (req: Request): Promise<Response> => this.answer(req, true);

  constructor(options: HubOptions) {
    this.options = options;
    this.store = options.store;
    this.fetchFn = options.fetch ?? globalThis.fetch;
    this.now = options.now ?? Date.now;
    this.callbacks = createUrlPolicy(options.allowCallback);
    this.topicPolicy = createUrlPolicy(options.allowTopic ?? options.allowCallback);
    const method: SignatureMethod = options.signature ?? 'sha256';
    if (!(SIGNATURE_METHODS as readonly string[]).includes(method))
      throw new TypeError(`unknown signature method '${String(method)}'`);
    this.lease = { ...LEASE, ...options.lease };
    this.limits = { ...HUB_DEFAULT_LIMITS, ...options.limits };
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.readTimeoutMs = options.readTimeoutMs ?? 30_000;
    this.worker = new DeliveryWorker({
      store: this.store,
      hubUrl: options.hubUrl,
      method,
      request: (url, init) => this.request(url, init),
      now: this.now,
      random: options.random ?? Math.random,
      timers: options.timers ?? {
        setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
        clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
      },
      emit: (e) => this.emit(e),
      track: (p) => this.track(p),
      retry: { baseMs: options.retry?.baseMs ?? 1000, maxMs: options.retry?.maxMs ?? 900_000 },
      concurrency: options.concurrency ?? 16,
      holdMs: 2 * this.timeoutMs + 60_000,
      giveUp: { ...HUB_DEFAULT_GIVE_UP, ...options.giveUp },
      stopping: () => this.stopping,
      closed: () => this.closed,
    });
    this.worker.schedule();
  }

  pending(): PendingVerification[] {
    return [...this.verifying].map(({ mode, topic, callback, since }) => ({ mode, topic, callback, since }));
  }

  kick(): void {
    this.worker.schedule();
  }

  async idle(limitMs = 30_000): Promise<void> {
    const deadline = Date.now() + limitMs;
    for (;;) {
      await new Promise<void>((r) => setImmediate(r));
      if (this.tasks.size > 0) {
        await Promise.race([
          Promise.allSettled([...this.tasks]),
          new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())).unref()),
        ]);
      } else {
        const t = this.now();
        if (!this.worker.scheduled() && !(await this.store.heads()).some((d) => d.nextAt <= t)) return;
        this.worker.schedule();
      }
      if (Date.now() > deadline) throw new Error(`hub not idle after ${limitMs} ms`);
    }
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.worker.stop();
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks]);
    this.closed = true;
  }

  private emit(e: HubEvent): void {
    try {
      this.options.onEvent?.(e);
    } catch {
      // an observer never breaks the hub
    }
  }

  private track(p: Promise<void>): void {
    this.tasks.add(p);
    void p.finally(() => this.tasks.delete(p));
  }

  private request(url: string, init: RequestInit): Promise<Response> {
    return this.fetchFn(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) });
  }

  // ---- subscriptions ----------------------------------------------------------------------------

  /** Asks the callback to echo a challenge; the reason it did not, or undefined. @see WebSub §5.3 */
  private async challenge(want: SubscriptionRequest): Promise<string | undefined> {
    const challenge = randomBytes(24).toString('base64url');
    const params: Record<string, string> = { 'hub.mode': want.mode, 'hub.topic': want.topic, 'hub.challenge': challenge };
    if (want.mode === 'subscribe') params['hub.lease_seconds'] = String(want.leaseSeconds);
    try {
      const res = await this.request(withQuery(want.callback, params), { method: 'GET' });
      if (res.status < 200 || res.status > 299) {
        await discardBody(res);
        return `status ${res.status}`;
      }
      const body = await readBody(res.body, HUB_LIMITS.challengeResponseBytes);
      if (!body.ok || Buffer.from(body.bytes).toString('utf8') !== challenge)
        return 'the response body is not the challenge';
      return undefined;
    } catch (e) {
      return reasonOf(e);
    }
  }

  /** @see WebSub §5.3 (Hub Verifies Intent of the Subscriber) */
  private async verify(want: SubscriptionRequest): Promise<void> {
    const { mode, topic, callback, secret, leaseSeconds } = want;
    let reason = await this.challenge(want);
    if (this.closed) return;
    if (reason === undefined && mode === 'subscribe') {
      const s = await this.store.addSubscription({ topic, callback, secret, leaseSeconds, now: this.now() });
      if (s === 'conflict') reason = 'a subscription with another secret holds this callback';
    }
    if (reason !== undefined) {
      this.emit({ type: 'verification-failed', mode, topic, callback, reason });
      return;
    }
    if (mode === 'subscribe') this.emit({ type: 'verified', mode, topic, callback, leaseSeconds });
    else {
      await this.store.removeSubscription(topic, callback);
      this.emit({ type: 'verified', mode, topic, callback });
    }
    this.worker.schedule();
  }

  /**
   * Whether a subscribe would change the secret of the subscription `had` (or of the one being verified) of its
   * callback.
   */
  private changesSecret(want: SubscriptionRequest, had: Subscription | undefined): boolean {
    const { topic, callback, secret } = want;
    if (had !== undefined) return had.secret !== secret;
    for (const v of this.verifying)
      if (v.mode === 'subscribe' && v.topic === topic && v.callback === callback && v.secret !== secret) return true;
    return false;
  }

  /** The request a subscription form makes, or the answer refusing it. @see WebSub §5.1 */
  private readSubscriptionForm(form: URLSearchParams): SubscriptionRequest | Response {
    const mode = form.get('hub.mode') as 'subscribe' | 'unsubscribe';
    const callback = form.get('hub.callback');
    const topic = form.get('hub.topic');
    if (callback === null || callback === '') return text(400, 'hub.callback is missing');
    if (topic === null || topic === '') return text(400, 'hub.topic is missing');
    if (!httpUrl(callback)) return text(400, 'hub.callback is not an absolute http(s) URL');
    if (!httpUrl(topic)) return text(400, 'hub.topic is not an absolute http(s) URL');
    if (this.options.topics !== undefined && !this.options.topics(topic))
      return text(403, 'hub.topic is not a topic of this hub');
    if (!this.callbacks.allowed(callback))
      return text(403, 'hub.callback is not on a host this hub may contact (loopback or --allow-callback)');
    const given = form.get('hub.secret') ?? undefined;
    if (given !== undefined && Buffer.byteLength(given) > MAX_SECRET_BYTES)
      return text(400, 'hub.secret must be less than 200 bytes');
    const secret = given === '' ? undefined : given;
    let leaseSeconds = this.lease.default;
    const asked = form.get('hub.lease_seconds');
    if (mode === 'subscribe' && asked !== null && asked !== '') {
      if (!/^\d{1,12}$/.test(asked)) return text(400, 'hub.lease_seconds is not a number of seconds');
      leaseSeconds = Math.min(this.lease.max, Math.max(this.lease.min, Number(asked)));
    }
    return { mode, topic, callback, secret, leaseSeconds };
  }

  /** @see WebSub §5.1, §5.1.2 */
  private async subscription(form: URLSearchParams): Promise<Response> {
    const want = this.readSubscriptionForm(form);
    if (want instanceof Response) return want;
    // what the store holds is read first; what follows runs without a pause, so that two requests for one
    // callback cannot both pass the checks against the verifications in flight
    const subscribing = want.mode === 'subscribe';
    const had = subscribing ? await this.store.getSubscription(want.topic, want.callback) : undefined;
    const held = subscribing && had === undefined ? (await this.store.counts()).subscriptions : 0;
    if (this.stopping) return text(503, 'the hub is shutting down', { 'retry-after': '1' });
    // @see WebSub §8 (security): the secret is what authenticates deliveries; a request cannot swap it
    if (subscribing && this.changesSecret(want, had))
      return text(409, 'this callback is subscribed with another secret: unsubscribe it first');
    if (this.verifying.size >= this.limits.verifications)
      return text(503, 'too many verifications in progress', { 'retry-after': '5' });
    if (subscribing && had === undefined && held >= this.limits.subscriptions)
      return text(503, 'this hub holds as many subscriptions as it may', { 'retry-after': '60' });
    const { mode, topic, callback, secret } = want;
    const entry: Verification = { mode, topic, callback, since: this.now(), secret };
    this.verifying.add(entry);
    this.track(this.verify(want).finally(() => this.verifying.delete(entry)));
    return text(202, 'Accepted: the hub will verify the intent of the subscriber');
  }

  // ---- publishing -------------------------------------------------------------------------------

  private refuse(topic: string, status: number, reason: string, body: string, retryAfter?: string): Response {
    this.emit({ type: 'publish-refused', topic, status, reason });
    return text(status, body, retryAfter === undefined ? {} : { 'retry-after': retryAfter });
  }

  private async accept(topic: string, contentType: string, body: Uint8Array): Promise<Response> {
    const outcome = await this.store.publish(topic, contentType, body, this.now(), this.limits);
    for (const s of outcome.givenUp) this.worker.gaveUp(s, s.lastError ?? 'its queue is full');
    if (!outcome.queued) {
      return outcome.limit === 'topicBytes'
        ? this.refuse(topic, 429, 'topic queue full', `the queue of topic '${topic}' is full`, '60')
        : this.refuse(topic, 503, 'queue full', 'the queue of this hub is full', '60');
    }
    this.emit({ type: 'published', topic, deliveries: outcome.deliveries });
    if (outcome.deliveries > 0) this.worker.schedule();
    return text(200, 'OK');
  }

  /** Whether this request may publish at all: undefined when it may, else the refusal. @see WebSub §6 */
  private mayPublish(req: Request, local: boolean): Response | undefined {
    if (local) return undefined;
    if (this.options.publishSecret !== undefined) {
      const m = /^Bearer +(\S+)\s*$/i.exec(req.headers.get('authorization') ?? '');
      if (m !== null && sameSecret(m[1]!, this.options.publishSecret)) return undefined;
      return text(403, 'publishing to this hub needs its publish secret (Authorization: Bearer)');
    }
    if (this.options.openPublish === false) return text(403, 'this hub relays only what its own Source publishes');
    return undefined;
  }

  private topicAllowed(topic: string): boolean {
    return this.options.topics !== undefined ? this.options.topics(topic) : this.topicPolicy.allowed(topic);
  }

  /** The WebSub form: the hub fetches each topic named (no redirects followed). @see WebSub §6 */
  private async publishForm(form: URLSearchParams): Promise<Response> {
    if (this.options.fetchTopics === false)
      return text(403, 'this hub does not fetch topics: publish the notification');
    const topics = [...form.getAll('hub.url'), ...form.getAll('hub.topic')];
    if (topics.length === 0) return text(400, 'hub.url (or hub.topic) is missing');
    if (topics.length > MAX_FORM_TOPICS) return text(400, `at most ${MAX_FORM_TOPICS} topics per publish`);
    for (const topic of topics) {
      if (!httpUrl(topic) || !this.topicAllowed(topic)) return text(403, `topic '${topic}' is not a topic of this hub`);
    }
    if (this.publishing >= this.limits.publishes)
      return text(503, 'too many publishes in progress', { 'retry-after': '1' });
    this.publishing++;
    try {
      return await this.fetchTopics(topics);
    } finally {
      this.publishing--;
    }
  }

  private async fetchTopics(topics: readonly string[]): Promise<Response> {
    const limit = this.limits.bodyBytes;
    for (const topic of topics) {
      // one answer whatever the topic's host did: the hub is no port scanner
      const failed = (reason: string): Response =>
        this.refuse(topic, 502, reason, `topic '${topic}' could not be fetched`);
      let res: Response;
      try {
        res = await this.request(topic, { method: 'GET' });
      } catch (e) {
        return failed(reasonOf(e));
      }
      if (res.status !== 200) {
        await discardBody(res);
        return failed(`status ${res.status}`);
      }
      const body = await readBody(res.body, limit).catch((e: unknown) => reasonOf(e));
      if (typeof body === 'string') return failed(body);
      if (!body.ok) return failed(`larger than ${limit} bytes`);
      const answer = await this.accept(topic, res.headers.get('content-type') ?? 'application/octet-stream', body.bytes);
      if (answer.status !== 200) return answer;
    }
    return text(200, 'OK');
  }

  /** The ResourceSync fat ping. @see Change Notification §4.1, Framework Notification §4.1 */
  private async publishBody(req: Request): Promise<Response> {
    const links = parseLinkHeader(req.headers.get('link') ?? '');
    const topic = links.find((l) => l.rel.includes('self'))?.target;
    if (topic === undefined || !URL.canParse(topic))
      return text(400, 'a published notification needs Link: <topic>; rel="self"');
    if (!links.some((l) => l.rel.includes('hub')))
      return text(400, 'a published notification needs Link: <hub>; rel="hub"');
    if (!this.topicAllowed(topic)) return text(403, `topic '${topic}' is not a topic of this hub`);
    const limit = this.limits.bodyBytes;
    const length = Number(req.headers.get('content-length') ?? '0');
    if (length > limit) return text(413, `the body is larger than ${limit} bytes`);
    if (this.publishing >= this.limits.publishes)
      return text(503, 'too many publishes in progress', { 'retry-after': '1' });
    this.publishing++;
    try {
      const body = await readBody(req.body, limit, this.readTimeoutMs);
      if (!body.ok && !body.tooLarge) return text(408, 'the body did not arrive in time');
      if (!body.ok) return text(413, `the body is larger than ${limit} bytes`);
      if (body.bytes.byteLength === 0) return text(400, 'the published notification is empty');
      return await this.accept(topic, req.headers.get('content-type') ?? 'application/xml', body.bytes);
    } finally {
      this.publishing--;
    }
  }

  // ---- handler ----------------------------------------------------------------------------------

  private async answer(req: Request, local: boolean): Promise<Response> {
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
    if (type !== 'application/x-www-form-urlencoded') return this.mayPublish(req, local) ?? this.publishBody(req);
    const body = await readBody(req.body, HUB_LIMITS.formBytes, this.readTimeoutMs);
    if (!body.ok && !body.tooLarge) return text(408, 'the form did not arrive in time');
    if (!body.ok) return text(413, `the form is larger than ${HUB_LIMITS.formBytes} bytes`);
    const form = new URLSearchParams(Buffer.from(body.bytes).toString('utf8'));
    const mode = form.get('hub.mode');
    if (mode === 'subscribe' || mode === 'unsubscribe') return this.subscription(form);
    if (mode === 'publish') return this.mayPublish(req, local) ?? this.publishForm(form);
    return text(400, mode === null ? 'hub.mode is missing' : `hub.mode '${mode}' is not supported`);
  }
}
