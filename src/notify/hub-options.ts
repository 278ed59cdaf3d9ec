/**
 * The hub's options, limits and defaults, its events and its interface (the hub itself is ./hub.ts).
 * @see WebSub §5–8
 */
import type { DeliveryEvent, GiveUp, HubTimers } from './hub-delivery.js';
import type { HubStore } from './hub-store.js';
import type { SignatureMethod } from './signature.js';

/** Lease bounds in seconds. @see WebSub §5.1, §8.2 ("10 days is a good default") */
export const LEASE = { min: 300, max: 2_678_400, default: 864_000 } as const;

/** Fixed size limits of the hub. */
export const HUB_LIMITS = {
  /** A subscription or publish form. */
  formBytes: 64 * 1024,
  /** A published body (fat ping) or a fetched topic, by default ({@link HubLimits.bodyBytes}). */
  bodyBytes: 16 * 1024 * 1024,
  /** The response body of a verification of intent. */
  challengeResponseBytes: 4096,
} as const;

/** What the hub holds at most; each has a default in {@link HUB_DEFAULT_LIMITS}. */
export interface HubLimits {
  /** One published body (413 above it). */
  bodyBytes: number;
  /** Bytes of messages queued for one topic (429 when a publish would pass it). */
  topicBytes: number;
  /** Bytes of messages queued in all (503). */
  totalBytes: number;
  /** Bytes of messages queued for one subscription (the subscription is given up when a publish would pass it). */
  subscriberBytes: number;
  /** Deliveries queued for one subscription (likewise). */
  subscriberDeliveries: number;
  /** Verifications of intent in flight (503 above it). */
  verifications: number;
  /** Published bodies being read at once (503 above it). */
  publishes: number;
  /** Subscriptions recorded (503 to a new one above it). */
  subscriptions: number;
}

/** Defaults that fit a small machine: at most a few hundred MiB on disk, a few tens in memory. */
export const HUB_DEFAULT_LIMITS: Readonly<HubLimits> = {
  bodyBytes: HUB_LIMITS.bodyBytes,
  topicBytes: 64 * 1024 * 1024,
  totalBytes: 256 * 1024 * 1024,
  subscriberBytes: 32 * 1024 * 1024,
  subscriberDeliveries: 1000,
  verifications: 32,
  publishes: 4,
  subscriptions: 10_000,
};

/** A callback is given up after 10 failed deliveries in a row spanning at least 4 hours. */
export const HUB_DEFAULT_GIVE_UP: Readonly<GiveUp> = { attempts: 10, afterMs: 4 * 3600 * 1000 };

/** Options of {@link createHub}. */
export interface HubOptions {
  store: HubStore;
  /** The hub URL advertised in `Link: <…>; rel="hub"` of deliveries. */
  hubUrl: string;
  /** Non-loopback callback URLs the hub may contact: patterns, see ./callback-policy.ts. */
  allowCallback?: readonly string[];
  /** Non-loopback topic URLs the hub accepts publishes for (and fetches); default `allowCallback`. */
  allowTopic?: readonly string[];
  /**
   * The only topics this hub takes subscriptions and publishes for (an embedded hub: its Source's own);
   * others are refused (403). Default: topics allowed by `allowTopic` for publishes, any for subscriptions.
   */
  topics?: (topic: string) => boolean;
  /** Whether anyone may publish over HTTP (WebSub's open publish). Default true. */
  openPublish?: boolean;
  /** When set, a publish over HTTP must carry `Authorization: Bearer <publishSecret>` (403 otherwise). */
  publishSecret?: string;
  /** Whether `hub.mode=publish` makes the hub fetch the topic. Default true; false answers 403. */
  fetchTopics?: boolean;
  /** Signature method for subscriptions with a secret. Default sha256. */
  signature?: SignatureMethod;
  /** Lease bounds (seconds); default {@link LEASE}. */
  lease?: { min?: number; max?: number; default?: number };
  /** Backoff of failed deliveries: first delay and cap (ms). Default 1,000 and 900,000. */
  retry?: { baseMs?: number; maxMs?: number };
  /** When a failing callback is given up; default {@link HUB_DEFAULT_GIVE_UP}. */
  giveUp?: Partial<GiveUp>;
  /** Bounds on what the hub holds; default {@link HUB_DEFAULT_LIMITS}. */
  limits?: Partial<HubLimits>;
  /** Deliveries in flight at once (one per subscription at most). Default 16. */
  concurrency?: number;
  /** Timeout of each outgoing request, its body included (ms). Default 10,000. */
  requestTimeoutMs?: number;
  /** Deadline for the whole body of an incoming publish or form (ms); 408 when it passes. Default 30,000. */
  readTimeoutMs?: number;
  fetch?: typeof globalThis.fetch;
  now?: () => number;
  random?: () => number;
  timers?: HubTimers;
  /** Observes what the hub does (for logs and tests); never throws into the hub. */
  onEvent?: (event: HubEvent) => void;
}

/** What the hub reports through `onEvent`. The reasons name what a foreign host answered: for the operator only. */
export type HubEvent =
  | { type: 'published'; topic: string; deliveries: number }
  | { type: 'publish-refused'; topic: string; status: number; reason: string }
  | { type: 'verified'; mode: 'subscribe' | 'unsubscribe'; topic: string; callback: string; leaseSeconds?: number }
  | { type: 'verification-failed'; mode: 'subscribe' | 'unsubscribe'; topic: string; callback: string; reason: string }
  | DeliveryEvent;

/** A verification of intent in flight. */
export interface PendingVerification {
  mode: 'subscribe' | 'unsubscribe';
  topic: string;
  callback: string;
  /** Epoch ms. */
  since: number;
}

/** A running hub. */
export interface Hub {
  /** Answers a request to the hub URL (from the network). */
  handle(request: Request): Promise<Response>;
  /** Answers a request from inside the process (the Source's own publisher): publishing needs no secret. */
  handleLocal(request: Request): Promise<Response>;
  /** The verifications of intent in flight. */
  pending(): PendingVerification[];
  /** Looks for due deliveries and expired leases now (after the clock moved, for tests). */
  kick(): void;
  /** Resolves once no verification or delivery is in flight and no delivery is due. Bounded by `timeoutMs`. */
  idle(timeoutMs?: number): Promise<void>;
  /** Stops the worker and waits for requests in flight; the store stays open (the caller owns it). */
  close(): Promise<void>;
}
