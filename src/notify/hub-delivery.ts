/**
 * The hub's delivery worker: sends the head of each subscription's queue to its callback, retries
 * failures with jittered exponential backoff, and gives a callback up after a bounded number of
 * failures over a bounded time. A message's bytes are read from the store once and shared by every
 * delivery of it in flight (streamed from the same buffer, never copied per delivery).
 * @see WebSub §7 (Content Distribution), §7.1 (signature), §5.2 (a hub that cancels a subscription tells
 * the subscriber with hub.mode=denied)
 */
import { discardBody } from './body.js';
import type { HubStore, PendingDelivery, Subscription } from './hub-store.js';
import { signBody, type SignatureMethod } from './signature.js';

/** Timers the hub uses; tests may pass their own. */
export interface HubTimers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** When the hub gives a failing callback up: after `attempts` failed deliveries in a row spanning `afterMs`. */
export interface GiveUp {
  attempts: number;
  afterMs: number;
}

/** What the worker reports (a part of the hub's events). */
export type DeliveryEvent =
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
  | { type: 'expired'; topic: string; callback: string }
  | { type: 'given-up'; topic: string; callback: string; failures: number; reason: string };

/** Appends `params` to `url`, keeping its own query string. @see WebSub §5.3 */
export function withQuery(url: string, params: Record<string, string>): string {
  const u = new URL(url);
  for (const [k, v] of Object.entries(params)) u.searchParams.append(k, v);
  return u.href;
}

/** A one-line reason for a failure (for events and logs, never for a response body). */
export function reasonOf(e: unknown): string {
  return e instanceof Error ? (e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message) : String(e);
}

/** A stream over `bytes` in views of it: what `fetch` sends without copying the buffer. */
function bodyStream(bytes: Uint8Array): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.byteLength) return controller.close();
      const end = Math.min(at + 65_536, bytes.byteLength);
      controller.enqueue(bytes.subarray(at, end));
      at = end;
    },
  });
}

/** What the {@link DeliveryWorker} needs from the hub. */
export interface DeliveryOptions {
  store: HubStore;
  hubUrl: string;
  method: SignatureMethod;
  request(url: string, init: RequestInit): Promise<Response>;
  now(): number;
  random(): number;
  timers: HubTimers;
  emit(e: DeliveryEvent): void;
  track(p: Promise<void>): void;
  retry: { baseMs: number; maxMs: number };
  concurrency: number;
  /** How long a claimed delivery is held before another worker may take it (longer than an attempt lasts). */
  holdMs: number;
  giveUp: GiveUp;
  /** True once the hub stops starting work. */
  stopping(): boolean;
  /** True once the hub closed (results are no longer recorded). */
  closed(): boolean;
}

/**
 * The delivery worker: `schedule()` after anything that may make a delivery due. A run expires ended
 * leases, claims the due heads of the queues from the store (as many as `concurrency` leaves room for) and
 * sends each; runs never overlap (a schedule during a run makes one more run after it).
 */
export class DeliveryWorker {
  private readonly options: DeliveryOptions;
  private readonly store: HubStore;
  /** Subscription id → its delivery attempt in flight. */
  private readonly inFlight = new Map<number, Promise<void>>();
  /** Message id → its bytes, shared by the deliveries of it in flight. */
  private readonly bodies = new Map<number, { bytes: Uint8Array; users: number }>();
  private timer: unknown;
  private timerAt = Infinity;
  private queued = false;
  private running = false;
  private runAgain = false;

  constructor(options: DeliveryOptions) {
    this.options = options;
    this.store = options.store;
  }

  /** Runs the worker soon (in a microtask). */
  schedule(): void {
    if (this.options.stopping() || this.queued) return;
    this.queued = true;
    queueMicrotask(() => this.options.track(this.run()));
  }

  /** True while a run is queued or running. */
  scheduled(): boolean {
    return this.queued || this.running;
  }

  /** Records that a subscription was given up: the event and a best-effort hub.mode=denied to its callback. */
  gaveUp(s: Subscription, reason: string): void {
    this.options.emit({ type: 'given-up', topic: s.topic, callback: s.callback, failures: s.failures, reason });
    if (this.options.stopping()) return;
    const params = { 'hub.mode': 'denied', 'hub.topic': s.topic, 'hub.reason': `the hub gave up: ${reason}` };
    this.options.track(
      this.options
        .request(withQuery(s.callback, params), { method: 'GET' })
        .then(discardBody)
        .catch(() => undefined),
    );
  }

  stop(): void {
    if (this.timer !== undefined) this.options.timers.clearTimeout(this.timer);
  }

  private backoff(attempts: number): number {
    const { retry } = this.options;
    const exp = Math.min(retry.maxMs, retry.baseMs * 2 ** Math.min(attempts - 1, 30));
    return Math.round(exp / 2 + (this.options.random() * exp) / 2);
  }

  private async take(messageId: number): Promise<Uint8Array | undefined> {
    const held = this.bodies.get(messageId);
    if (held !== undefined) {
      held.users++;
      return held.bytes;
    }
    const bytes = await this.store.messageBody(messageId);
    const raced = this.bodies.get(messageId); // another delivery read it meanwhile
    if (raced !== undefined) {
      raced.users++;
      return raced.bytes;
    }
    if (bytes !== undefined) this.bodies.set(messageId, { bytes, users: 1 });
    return bytes;
  }

  private release(messageId: number): void {
    const held = this.bodies.get(messageId);
    if (held !== undefined && --held.users === 0) this.bodies.delete(messageId);
  }

  private async failed(d: PendingDelivery, reason: string): Promise<void> {
    const retryInMs = this.backoff(d.attempts + 1);
    const t = this.options.now();
    const s = await this.store.failed(d.id, t + retryInMs, reason, t);
    const { topic, callback } = d.subscription;
    const attempts = d.attempts + 1;
    this.options.emit({ type: 'delivery-failed', topic, callback, messageId: d.messageId, attempts, retryInMs, reason });
    const giveUp = this.options.giveUp;
    if (s === undefined || s.failures < giveUp.attempts || t - (s.failingSince ?? t) < giveUp.afterMs) return;
    const why = `${s.failures} deliveries failed since ${new Date(s.failingSince ?? t).toISOString()} (${reason})`;
    const g = await this.store.giveUp(s.id, why);
    if (g !== undefined) this.gaveUp(g, why);
  }

  /** Sends one delivery: the status of the answer (0 when there was none) and a reason. @see WebSub §7.1 (signature) */
  private async send(d: PendingDelivery, bytes: Uint8Array): Promise<{ status: number; reason: string }> {
    const s = d.subscription;
    let status = 0;
    try {
      const headers: Record<string, string> = {
        'content-type': d.contentType,
        'content-length': String(bytes.byteLength),
        link: `<${d.topic}>; rel="self", <${this.options.hubUrl}>; rel="hub"`,
      };
      if (s.secret !== undefined) headers['x-hub-signature'] = signBody(this.options.method, s.secret, bytes);
      const init = { method: 'POST', headers, body: bodyStream(bytes), duplex: 'half' } as RequestInit;
      const res = await this.options.request(s.callback, init);
      status = res.status;
      await discardBody(res);
      return { status, reason: `status ${status}` };
    } catch (e) {
      return { status, reason: reasonOf(e) };
    }
  }

  /** @see WebSub §7 (Content Distribution) */
  private async deliver(d: PendingDelivery): Promise<void> {
    const s: Subscription = d.subscription;
    const bytes = await this.take(d.messageId);
    if (bytes === undefined) return; // dropped meanwhile
    let answer: { status: number; reason: string };
    try {
      answer = await this.send(d, bytes);
    } finally {
      this.release(d.messageId);
    }
    if (this.options.closed()) return;
    const { status } = answer;
    if (status >= 200 && status <= 299) {
      await this.store.delivered(d.id, this.options.now());
      const attempts = d.attempts + 1;
      this.options.emit({ type: 'delivered', topic: d.topic, callback: s.callback, messageId: d.messageId, attempts });
    } else if (status === 410) {
      await this.store.removeSubscriptionById(s.id);
      this.options.emit({ type: 'gone', topic: s.topic, callback: s.callback });
    } else await this.failed(d, answer.reason);
  }

  private async wake(t: number): Promise<void> {
    const next = await this.store.nextWake();
    if (next === undefined || next <= t || next >= this.timerAt) return;
    if (this.timer !== undefined) this.options.timers.clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = this.options.timers.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Infinity;
        this.schedule();
      },
      Math.min(next - t, 2 ** 31 - 1),
    );
  }

  private async run(): Promise<void> {
    this.queued = false;
    if (this.running) {
      this.runAgain = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.runAgain = false;
        if (this.options.stopping()) return;
        await this.runOnce();
      } while (this.runAgain);
    } finally {
      this.running = false;
    }
  }

  private async runOnce(): Promise<void> {
    const t = this.options.now();
    for (const s of await this.store.expire(t)) this.options.emit({ type: 'expired', topic: s.topic, callback: s.callback });
    const room = this.options.concurrency - this.inFlight.size;
    const due = await this.store.claim(t, { limit: room, holdMs: this.options.holdMs });
    for (const d of due) {
      if (this.inFlight.has(d.subscription.id)) continue;
      const p = this.deliver(d).finally(() => {
        this.inFlight.delete(d.subscription.id);
        this.schedule();
      });
      this.inFlight.set(d.subscription.id, p);
      this.options.track(p);
    }
    await this.wake(t);
  }
}
