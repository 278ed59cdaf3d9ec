/**
 * The subscriber side of a notification channel: the callback endpoint (a web-standard handler) that
 * confirms the verifications of intent it expects, checks `X-Hub-Signature` and hands each delivered
 * notification on; subscription, renewal before the lease ends, and unsubscription.
 * @see Change Notification §4.2–4.4, WebSub §5.1, §5.3, §7
 */
import { randomBytes } from 'node:crypto';
import { ResourceSyncError } from '../core/errors.js';
import { discardBody, readBody } from './body.js';
import { HUB_LIMITS } from './hub.js';
import { verifySignature } from './signature.js';

/** Options of {@link Subscriber}. */
export interface SubscriberOptions {
  hub: string;
  topic: string;
  /** The URL at which the hub reaches {@link Subscriber.handle}. */
  callbackUrl: string;
  /** `hub.secret`; default 32 random bytes (hex). */
  secret?: string;
  /** Lease asked for (s). Default: the hub's default. */
  leaseSeconds?: number;
  /** Called with each authentic delivery; the hub gets its 2xx at once, whatever this does. */
  onNotification: (body: Uint8Array, contentType: string) => void;
  /** Diagnostics: verifications, bad signatures, renewals. */
  onEvent?: (e: SubscriberEvent) => void;
  /** Verification must arrive within this many ms of the request. Default 10,000. */
  verifyTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

export type SubscriberEvent =
  | { type: 'verified'; mode: 'subscribe' | 'unsubscribe'; leaseSeconds?: number }
  | { type: 'denied'; reason: string }
  | { type: 'bad-signature' }
  | { type: 'renew-failed'; error: unknown };

/** The longest delay a Node timer holds (2^31 - 1 ms, about 24.8 days); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** The shortest delay between two renewals, whatever lease a hub grants. */
const MIN_RENEWAL_MS = 1000;

/**
 * When to renew a lease of `lease` seconds: once 80 % of it has passed, at least {@link MIN_RENEWAL_MS} and at most
 * what a timer holds (a hub that grants a year is asked again after about 24.8 days). Undefined for no lease or one
 * that is not a number. @see WebSub §5.3.1 (re-request before the lease ends)
 */
function renewalDelayMs(lease: number | undefined): number | undefined {
  if (lease === undefined || Number.isNaN(lease)) return undefined;
  return Math.min(MAX_TIMER_MS, Math.max(MIN_RENEWAL_MS, lease * 800));
}

interface Pending {
  mode: 'subscribe' | 'unsubscribe';
  resolve: (leaseSeconds: number | undefined) => void;
  reject: (e: Error) => void;
}

/**
 * One subscription to one topic.
 * @example
 * const s = new Subscriber({ hub, topic, callbackUrl: `${listener.url}/callback`, onNotification: (b) => apply(b) });
 * const server = await listen((r) => s.handle(r), { port: 0 });
 * await s.subscribe();
 */
export class Subscriber {
  readonly secret: string;
  private readonly o: SubscriberOptions;
  private readonly fetchFn: typeof globalThis.fetch;
  private pending: Pending | undefined;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  private active = false;

  constructor(options: SubscriberOptions) {
    this.o = options;
    this.secret = options.secret ?? randomBytes(32).toString('hex');
    this.fetchFn = options.fetch ?? globalThis.fetch;
  }

  /** Whether the hub verified the subscription and it has not been ended here. */
  get subscribed(): boolean {
    return this.active;
  }

  /** The callback endpoint. @see WebSub §5.3.1 (verification), §7 (delivery) */
  async handle(req: Request): Promise<Response> {
    if (req.method === 'GET') {
      const q = new URL(req.url).searchParams;
      const mode = q.get('hub.mode');
      const p = this.pending;
      if (mode === 'denied' && q.get('hub.topic') === this.o.topic) {
        p?.reject(
          new ResourceSyncError(
            'RS_HTTP_STATUS',
            `Hub '${this.o.hub}' denied the subscription: ${q.get('hub.reason') ?? 'no reason given'}.`,
          ),
        );
        this.o.onEvent?.({ type: 'denied', reason: q.get('hub.reason') ?? '' });
        return new Response(null, { status: 200 });
      }
      const challenge = q.get('hub.challenge');
      if (p === undefined || mode !== p.mode || q.get('hub.topic') !== this.o.topic || challenge === null)
        return new Response(null, { status: 404 });
      const lease = q.get('hub.lease_seconds');
      p.resolve(lease === null ? undefined : Number(lease));
      return new Response(challenge, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    }
    if (req.method !== 'POST') return new Response(null, { status: 405 });
    const body = await readBody(req.body, HUB_LIMITS.bodyBytes);
    if (!body.ok) return new Response(null, { status: 413 });
    if (!this.active) return new Response(null, { status: 410 });
    // @see WebSub §7.1.2: a body whose signature does not match is acknowledged and ignored
    if (!verifySignature(req.headers.get('x-hub-signature'), this.secret, body.bytes)) {
      this.o.onEvent?.({ type: 'bad-signature' });
      return new Response(null, { status: 202 });
    }
    this.o.onNotification(body.bytes, req.headers.get('content-type') ?? 'application/xml');
    return new Response(null, { status: 202 });
  }

  /** Subscribes (or renews) and resolves once the hub verified the intent; schedules the renewal. */
  async subscribe(): Promise<void> {
    const lease = await this.request('subscribe');
    this.active = true;
    this.o.onEvent?.({ type: 'verified', mode: 'subscribe', ...(lease !== undefined ? { leaseSeconds: lease } : {}) });
    if (this.renewTimer !== undefined) clearTimeout(this.renewTimer);
    const renewIn = renewalDelayMs(lease);
    if (renewIn !== undefined) {
      this.renewTimer = setTimeout(() => {
        this.subscribe().catch((error: unknown) => this.o.onEvent?.({ type: 'renew-failed', error }));
      }, renewIn);
      this.renewTimer.unref();
    }
  }

  /** Unsubscribes and resolves once the hub verified it (or rejects). Deliveries are refused (410) from now on. */
  async unsubscribe(): Promise<void> {
    this.active = false;
    if (this.renewTimer !== undefined) clearTimeout(this.renewTimer);
    await this.request('unsubscribe');
    this.o.onEvent?.({ type: 'verified', mode: 'unsubscribe' });
  }

  /** Stops renewing (without telling the hub). */
  close(): void {
    this.active = false;
    if (this.renewTimer !== undefined) clearTimeout(this.renewTimer);
  }

  private async request(mode: 'subscribe' | 'unsubscribe'): Promise<number | undefined> {
    const timeout = this.o.verifyTimeoutMs ?? 10_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const verified = new Promise<number | undefined>((resolve, reject) => {
      this.pending = { mode, resolve, reject };
      timer = setTimeout(
        () =>
          reject(
            new ResourceSyncError(
              'RS_HTTP_TIMEOUT',
              `Hub '${this.o.hub}' did not verify the ${mode} within ${timeout} ms.`,
            ),
          ),
        timeout,
      );
    });
    verified.catch(() => undefined);
    try {
      const form = new URLSearchParams({
        'hub.mode': mode,
        'hub.topic': this.o.topic,
        'hub.callback': this.o.callbackUrl,
      });
      if (mode === 'subscribe') {
        form.set('hub.secret', this.secret);
        if (this.o.leaseSeconds !== undefined) form.set('hub.lease_seconds', String(this.o.leaseSeconds));
      }
      let res: Response;
      try {
        res = await this.fetchFn(this.o.hub, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: form.toString(),
          redirect: 'manual',
          signal: AbortSignal.timeout(timeout),
        });
      } catch (cause) {
        throw new ResourceSyncError('RS_NETWORK', `Hub '${this.o.hub}' could not be reached.`, {
          data: { url: this.o.hub },
          cause,
          recoverable: true,
        });
      }
      await discardBody(res);
      if (res.status !== 202 && res.status !== 204 && res.status !== 200) {
        throw new ResourceSyncError(
          'RS_HTTP_STATUS',
          `Hub '${this.o.hub}' answered ${res.status} to the ${mode} request.`,
          { data: { url: this.o.hub, actual: res.status } },
        );
      }
      return await verified;
    } finally {
      clearTimeout(timer);
      this.pending = undefined;
    }
  }
}
