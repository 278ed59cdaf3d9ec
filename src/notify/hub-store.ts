/**
 * The hub's store: its verified subscriptions and the outbox of notifications to deliver, as the hub
 * ({@link createHub}) and its delivery worker use them. The embedded implementation is SQLite
 * (./sqlite-hub-store.ts, {@link openSqliteHubStore}); another database plugs in by implementing this
 * interface and passing the contract suite `test/contracts/hub-store.ts`.
 *
 * Every method may answer synchronously or with a promise; the hub always awaits. Each method is atomic:
 * what it changes is changed whole or not at all, and what it reads is one consistent view.
 *
 * What the hub guarantees its subscribers rests on three properties of the store:
 * - a publish is answered only after the message and one delivery per subscription are durable, and a
 *   delivery is removed only once the subscriber acknowledged it: at least once, across restarts;
 * - only the head of a subscription's queue is ever handed out ({@link HubStore.claim}), so deliveries
 *   reach a subscriber in publish order;
 * - each message is stored once, whatever the number of its deliveries, and what is queued is bounded per
 *   subscription, per topic and in total ({@link QueueLimits}).
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */

/** Bounds on what the hub queues, in bytes of stored messages (each counted once) and deliveries. */
export interface QueueLimits {
  /** Messages queued for one topic. */
  topicBytes: number;
  /** Messages queued in all. */
  totalBytes: number;
  /** Messages queued for one subscription. */
  subscriberBytes: number;
  /** Deliveries queued for one subscription. */
  subscriberDeliveries: number;
}

/** What {@link HubStore.publish} did: queued the message, or refused it because a limit would be passed. */
export type PublishOutcome =
  | { queued: true; messageId: number; deliveries: number; givenUp: Subscription[] }
  | { queued: false; limit: 'topicBytes' | 'totalBytes'; givenUp: Subscription[] };

/**
 * A verified subscription: `verified` gets deliveries; `given-up` (its callback failed for too long, or
 * its queue was full) gets none and is kept, for the record and its secret, until its lease ends or it
 * is renewed.
 */
export interface Subscription {
  id: number;
  topic: string;
  callback: string;
  secret: string | undefined;
  leaseSeconds: number;
  /** Epoch ms. */
  expiresAt: number;
  verifiedAt: number;
  state: 'verified' | 'given-up';
  /** Failed deliveries since the last success. */
  failures: number;
  /** Epoch ms of the first of those failures. */
  failingSince: number | undefined;
  lastDeliveryAt: number | undefined;
  lastError: string | undefined;
}

/** A subscription whose intent was verified, as {@link HubStore.addSubscription} records it. */
export interface VerifiedSubscription {
  topic: string;
  callback: string;
  secret: string | undefined;
  leaseSeconds: number;
  /** Epoch ms of the verification: the lease runs from it. */
  now: number;
}

/** The delivery at the head of one subscription's queue, with what it carries. */
export interface PendingDelivery {
  id: number;
  subscription: Subscription;
  messageId: number;
  topic: string;
  contentType: string;
  /** Bytes of the message (read it with {@link HubStore.messageBody}). */
  size: number;
  attempts: number;
  nextAt: number;
}

/** How many due deliveries {@link HubStore.claim} hands out, and for how long they are held. */
export interface ClaimOptions {
  /** At most this many deliveries (one per subscription). */
  limit: number;
  /** The claim holds until `now + holdMs`; after that another claimer may take the delivery again. */
  holdMs: number;
}

/** Counts for diagnostics and tests. */
export interface HubStoreCounts {
  subscriptions: number;
  messages: number;
  deliveries: number;
}

/**
 * Subscriptions and the outbox of one hub.
 * @example
 * const store = openSqliteHubStore('/var/lib/resourcesync/hub.sqlite');
 * const hub = createHub({ store, hubUrl: 'http://127.0.0.1:8090/' });
 */
export interface HubStore {
  // ---- subscriptions ----------------------------------------------------------------------------

  /**
   * Records a verified subscription, or renews the one of the same topic and callback in place (its lease
   * restarts at `now`, its queued deliveries stay queued, a given-up one is verified again with its failures
   * cleared). The secret of a subscription never changes here: when the one recorded has another secret (or
   * none, or one where none is asked), nothing changes and the answer is `conflict`.
   * @see WebSub §5.1 (re-subscription), §8 (security)
   */
  addSubscription(subscription: VerifiedSubscription): Subscription | 'conflict' | Promise<Subscription | 'conflict'>;

  /** The subscription of `callback` to `topic`, given up or not, or undefined. */
  getSubscription(topic: string, callback: string): Subscription | undefined | Promise<Subscription | undefined>;

  /** The subscriptions of `topic` (of every topic when omitted), in the order they were first recorded. */
  subscriptions(topic?: string): Subscription[] | Promise<Subscription[]>;

  /** Removes a subscription and its queued deliveries (an unsubscribe); true when there was one. */
  removeSubscription(topic: string, callback: string): boolean | Promise<boolean>;

  /** Removes a subscription by id with its queued deliveries (410 Gone); nothing when there is none. */
  removeSubscriptionById(id: number): void | Promise<void>;

  /** Removes the subscriptions whose lease ended at or before `now`, with their queues; returns them. @see WebSub §5.1 */
  expire(now: number): Subscription[] | Promise<Subscription[]>;

  /**
   * Gives a subscription up: no more deliveries, its queue dropped; it stays recorded (given up) until its
   * lease ends or it is renewed. Returns it, or undefined when there is none.
   */
  giveUp(id: number, reason: string): Subscription | undefined | Promise<Subscription | undefined>;

  // ---- outbox -----------------------------------------------------------------------------------

  /**
   * Stores a published message once and queues one delivery of it, due at `now`, to every verified
   * subscription of its topic whose lease has not ended, all or nothing. A subscription whose queue would
   * pass `limits.subscriberDeliveries` or `limits.subscriberBytes` is given up first (its queue dropped; it
   * is in `givenUp`); then the message is refused, with nothing queued, when the topic's queued bytes would
   * pass `limits.topicBytes` or the whole queue's `limits.totalBytes`. With no subscription to deliver to,
   * nothing is stored (`messageId` 0, `deliveries` 0).
   */
  publish(
    topic: string,
    contentType: string,
    body: Uint8Array,
    now: number,
    limits: QueueLimits,
  ): PublishOutcome | Promise<PublishOutcome>;

  /** The bytes of a stored message (read once, shared by the caller among its deliveries), or undefined once it is gone. */
  messageBody(messageId: number): Uint8Array | undefined | Promise<Uint8Array | undefined>;

  /** The first queued delivery of every subscription that has one (claimed or not), in subscription order. */
  heads(): PendingDelivery[] | Promise<PendingDelivery[]>;

  /**
   * Hands out up to `limit` deliveries that are at the head of their subscription's queue, due (`nextAt <=
   * now`) and not claimed (or whose claim ended), in subscription order, and claims them until `now + holdMs`.
   * Two claimers, in one process or on two machines, never hold the same delivery at once; a delivery behind
   * the head of its queue is never handed out, which keeps deliveries in publish order per subscription.
   */
  claim(now: number, options: ClaimOptions): PendingDelivery[] | Promise<PendingDelivery[]>;

  /**
   * The subscriber acknowledged a delivery: removes it (and its message once no delivery needs it) and clears
   * its subscription's failures. Nothing when the delivery is gone.
   */
  delivered(deliveryId: number, now: number): void | Promise<void>;

  /**
   * A delivery failed: counts the attempt on the delivery and on its subscription (whose `failingSince` is
   * set at the first failure in a row), releases the claim and makes the delivery due again at `nextAt`.
   * Returns the subscription, or undefined when the delivery is gone.
   */
  failed(
    deliveryId: number,
    nextAt: number,
    error: string,
    now: number,
  ): Subscription | undefined | Promise<Subscription | undefined>;

  /** The earliest time something becomes due: the next attempt of a queue's head, or the end of a lease. */
  nextWake(): number | undefined | Promise<number | undefined>;

  /** How many subscriptions, stored messages and queued deliveries the store holds. */
  counts(): HubStoreCounts | Promise<HubStoreCounts>;

  /** Bytes of the messages queued, each counted once however many deliveries it has. */
  queuedBytes(): number | Promise<number>;

  /** Releases what the store holds open; calling it again does nothing. */
  close(): void | Promise<void>;
}
