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
  giveUp: GiveUp;
  /** True once the hub stops starting work. */
  stopping(): boolean;
  /** True once the hub closed (results are no longer recorded). */
  closed(): boolean;
}

/** The worker: `schedule()` after anything that may make a delivery due. */
export interface DeliveryWorker {
  schedule(): void;
  /** True while a run is queued. */
  scheduled(): boolean;
  /** Records that a subscription was given up: the event and a best-effort hub.mode=denied to its callback. */
  gaveUp(s: Subscription, reason: string): void;
  stop(): void;
}

export function createDeliveryWorker(o: DeliveryOptions): DeliveryWorker {
  const { store } = o;
  const inFlight = new Map<number, Promise<void>>(); // subscription id → delivery attempt
  const bodies = new Map<number, { bytes: Uint8Array; users: number }>(); // message id → shared bytes
  let timer: unknown;
  let timerAt = Infinity;
  let scheduled = false;

  function backoff(attempts: number): number {
    const exp = Math.min(o.retry.maxMs, o.retry.baseMs * 2 ** Math.min(attempts - 1, 30));
    return Math.round(exp / 2 + (o.random() * exp) / 2);
  }

  function take(messageId: number): Uint8Array | undefined {
    const held = bodies.get(messageId);
    if (held !== undefined) {
      held.users++;
      return held.bytes;
    }
    const bytes = store.messageBody(messageId);
    if (bytes !== undefined) bodies.set(messageId, { bytes, users: 1 });
    return bytes;
  }

  function release(messageId: number): void {
    const held = bodies.get(messageId);
    if (held !== undefined && --held.users === 0) bodies.delete(messageId);
  }

  function gaveUp(s: Subscription, reason: string): void {
    o.emit({ type: 'given-up', topic: s.topic, callback: s.callback, failures: s.failures, reason });
    if (o.stopping()) return;
    const params = { 'hub.mode': 'denied', 'hub.topic': s.topic, 'hub.reason': `the hub gave up: ${reason}` };
    o.track(
      o
        .request(withQuery(s.callback, params), { method: 'GET' })
        .then(discardBody)
        .catch(() => undefined),
    );
  }

  function failed(d: PendingDelivery, reason: string): void {
    const retryInMs = backoff(d.attempts + 1);
    const t = o.now();
    const s = store.failed(d.id, t + retryInMs, reason, t);
    const { topic, callback } = d.subscription;
    o.emit({
      type: 'delivery-failed',
      topic,
      callback,
      messageId: d.messageId,
      attempts: d.attempts + 1,
      retryInMs,
      reason,
    });
    if (s === undefined || s.failures < o.giveUp.attempts || t - (s.failingSince ?? t) < o.giveUp.afterMs) return;
    const why = `${s.failures} deliveries failed since ${new Date(s.failingSince ?? t).toISOString()} (${reason})`;
    const g = store.giveUp(s.id, why);
    if (g !== undefined) gaveUp(g, why);
  }

  /** @see WebSub §7 (Content Distribution), §7.1 (signature) */
  async function deliver(d: PendingDelivery): Promise<void> {
    const s: Subscription = d.subscription;
    const bytes = take(d.messageId);
    if (bytes === undefined) return; // dropped meanwhile
    let status = 0;
    let reason: string;
    try {
      const headers: Record<string, string> = {
        'content-type': d.contentType,
        'content-length': String(bytes.byteLength),
        link: `<${d.topic}>; rel="self", <${o.hubUrl}>; rel="hub"`,
      };
      if (s.secret !== undefined) headers['x-hub-signature'] = signBody(o.method, s.secret, bytes);
      const init = { method: 'POST', headers, body: bodyStream(bytes), duplex: 'half' } as RequestInit;
      const res = await o.request(s.callback, init);
      status = res.status;
      reason = `status ${status}`;
      await discardBody(res);
    } catch (e) {
      reason = reasonOf(e);
    } finally {
      release(d.messageId);
    }
    if (o.closed()) return;
    if (status >= 200 && status <= 299) {
      store.delivered(d.id, o.now());
      o.emit({
        type: 'delivered',
        topic: d.topic,
        callback: s.callback,
        messageId: d.messageId,
        attempts: d.attempts + 1,
      });
    } else if (status === 410) {
      store.removeSubscriptionById(s.id);
      o.emit({ type: 'gone', topic: s.topic, callback: s.callback });
    } else failed(d, reason);
  }

  function wake(t: number): void {
    const next = store.nextWake();
    if (next === undefined || next <= t || next >= timerAt) return;
    if (timer !== undefined) o.timers.clearTimeout(timer);
    timerAt = next;
    timer = o.timers.setTimeout(
      () => {
        timer = undefined;
        timerAt = Infinity;
        schedule();
      },
      Math.min(next - t, 2 ** 31 - 1),
    );
  }

  function run(): void {
    scheduled = false;
    if (o.stopping()) return;
    const t = o.now();
    for (const s of store.expire(t)) o.emit({ type: 'expired', topic: s.topic, callback: s.callback });
    for (const d of store.heads()) {
      if (inFlight.size >= o.concurrency) break;
      if (inFlight.has(d.subscription.id) || d.nextAt > t) continue;
      const p = deliver(d).finally(() => {
        inFlight.delete(d.subscription.id);
        schedule();
      });
      inFlight.set(d.subscription.id, p);
      o.track(p);
    }
    wake(t);
  }

  /** Runs the worker soon (in a microtask). */
  function schedule(): void {
    if (o.stopping() || scheduled) return;
    scheduled = true;
    queueMicrotask(run);
  }

  return {
    schedule,
    scheduled: () => scheduled,
    gaveUp,
    stop() {
      if (timer !== undefined) o.timers.clearTimeout(timer);
    },
  };
}
