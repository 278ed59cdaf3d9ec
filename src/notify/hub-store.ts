/**
 * The hub's embedded store (SQLite, WAL, `synchronous = FULL`): verified subscriptions, published
 * messages and the outbox of deliveries. A publish is answered only after its message and one
 * delivery row per subscription are committed in one transaction, and a delivery row is removed only
 * after the subscriber acknowledged it, so a hub killed at any moment (kill -9 included) delivers
 * every accepted message at least once after it restarts, in publish order per subscription.
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */
import Database from 'better-sqlite3';
import { openStore } from '../node/sqlite.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS subscription (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  callback TEXT NOT NULL,
  secret TEXT,
  lease_seconds INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  verified_at INTEGER NOT NULL,
  UNIQUE (topic, callback)
);
CREATE TABLE IF NOT EXISTS message (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  content_type TEXT NOT NULL,
  body BLOB NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS delivery (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  subscription_id INTEGER NOT NULL REFERENCES subscription(id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES message(id),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER NOT NULL,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS delivery_by_subscription ON delivery (subscription_id, id);
`;

/** A verified subscription. */
export interface Subscription {
  id: number;
  topic: string;
  callback: string;
  secret: string | undefined;
  leaseSeconds: number;
  /** Epoch ms. */
  expiresAt: number;
  verifiedAt: number;
}

/** The delivery at the head of one subscription's queue, with what it carries. */
export interface PendingDelivery {
  id: number;
  subscription: Subscription;
  messageId: number;
  topic: string;
  contentType: string;
  body: Uint8Array;
  attempts: number;
  nextAt: number;
}

interface SubscriptionRow {
  id: number;
  topic: string;
  callback: string;
  secret: string | null;
  lease_seconds: number;
  expires_at: number;
  verified_at: number;
}

function subscription(row: SubscriptionRow): Subscription {
  return {
    id: row.id,
    topic: row.topic,
    callback: row.callback,
    secret: row.secret ?? undefined,
    leaseSeconds: row.lease_seconds,
    expiresAt: row.expires_at,
    verifiedAt: row.verified_at,
  };
}

/**
 * Subscriptions and the outbox of one hub. One process opens a store at a time.
 * @example
 * const store = HubStore.open('/var/lib/resourcesync/hub.sqlite');
 * store.publish('http://127.0.0.1:8080/set/change/', 'application/xml', bytes, Date.now());
 */
export class HubStore {
  readonly file: string;
  private readonly db: Database.Database;
  private closed = false;

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
  }

  /** Opens (creating if needed) the store at `file` (`:memory:` for a throw-away one). */
  static open(file: string): HubStore {
    const db = openStore(file, { schema: SCHEMA, synchronous: 'FULL', foreignKeys: true });
    return new HubStore(file, db);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  /**
   * Records a verified subscription, or renews the one of the same topic and callback in place (its
   * queued deliveries stay queued). @see WebSub §5.1 (re-subscription updates the existing one)
   */
  upsertSubscription(s: {
    topic: string;
    callback: string;
    secret: string | undefined;
    leaseSeconds: number;
    now: number;
  }): Subscription {
    const row = this.db
      .prepare<[string, string, string | null, number, number, number], SubscriptionRow>(
        `INSERT INTO subscription (topic, callback, secret, lease_seconds, expires_at, verified_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (topic, callback) DO UPDATE SET secret = excluded.secret, lease_seconds = excluded.lease_seconds,
           expires_at = excluded.expires_at, verified_at = excluded.verified_at
         RETURNING *`,
      )
      .get(s.topic, s.callback, s.secret ?? null, s.leaseSeconds, s.now + s.leaseSeconds * 1000, s.now);
    return subscription(row!);
  }

  /** Removes a subscription and its queued deliveries; true when there was one. */
  removeSubscription(topic: string, callback: string): boolean {
    return this.tx(() => {
      const row = this.db
        .prepare<[string, string], { id: number }>('SELECT id FROM subscription WHERE topic = ? AND callback = ?')
        .get(topic, callback);
      if (!row) return false;
      this.removeById(row.id);
      return true;
    });
  }

  /** Removes a subscription by id with its queued deliveries (410 Gone, lease expired). */
  removeSubscriptionById(id: number): void {
    this.tx(() => this.removeById(id));
  }

  getSubscription(topic: string, callback: string): Subscription | undefined {
    const row = this.db
      .prepare<[string, string], SubscriptionRow>('SELECT * FROM subscription WHERE topic = ? AND callback = ?')
      .get(topic, callback);
    return row ? subscription(row) : undefined;
  }

  subscriptions(topic?: string): Subscription[] {
    const rows =
      topic === undefined
        ? this.db.prepare<[], SubscriptionRow>('SELECT * FROM subscription ORDER BY id').all()
        : this.db
            .prepare<[string], SubscriptionRow>('SELECT * FROM subscription WHERE topic = ? ORDER BY id')
            .all(topic);
    return rows.map(subscription);
  }

  /**
   * Stores a published message and queues one delivery per subscription of its topic whose lease
   * has not ended, in one transaction. Returns the message id and the number of deliveries queued.
   */
  publish(
    topic: string,
    contentType: string,
    body: Uint8Array,
    now: number,
  ): { messageId: number; deliveries: number } {
    return this.tx(() => {
      const subs = this.db
        .prepare<[string, number], { id: number }>('SELECT id FROM subscription WHERE topic = ? AND expires_at > ?')
        .all(topic, now);
      if (subs.length === 0) return { messageId: 0, deliveries: 0 };
      const info = this.db
        .prepare('INSERT INTO message (topic, content_type, body, received_at) VALUES (?, ?, ?, ?)')
        .run(topic, contentType, Buffer.from(body.buffer, body.byteOffset, body.byteLength), now);
      const messageId = Number(info.lastInsertRowid);
      const queue = this.db.prepare('INSERT INTO delivery (subscription_id, message_id, next_at) VALUES (?, ?, ?)');
      for (const s of subs) queue.run(s.id, messageId, now);
      return { messageId, deliveries: subs.length };
    });
  }

  /**
   * The first queued delivery of every subscription that has one, in subscription order: only the
   * head of a queue may be attempted, which keeps deliveries in publish order per subscription.
   */
  heads(): PendingDelivery[] {
    const rows = this.db
      .prepare<
        [],
        SubscriptionRow & {
          delivery_id: number;
          message_id: number;
          attempts: number;
          next_at: number;
          message_topic: string;
          content_type: string;
          body: Buffer;
        }
      >(
        `SELECT s.*, d.id AS delivery_id, d.message_id, d.attempts, d.next_at, m.topic AS message_topic, m.content_type, m.body
         FROM delivery d JOIN subscription s ON s.id = d.subscription_id JOIN message m ON m.id = d.message_id
         WHERE d.id IN (SELECT MIN(id) FROM delivery GROUP BY subscription_id) ORDER BY s.id`,
      )
      .all();
    return rows.map((r) => ({
      id: r.delivery_id,
      subscription: subscription(r),
      messageId: r.message_id,
      topic: r.message_topic,
      contentType: r.content_type,
      body: new Uint8Array(r.body.buffer, r.body.byteOffset, r.body.byteLength),
      attempts: r.attempts,
      nextAt: r.next_at,
    }));
  }

  /** The subscriber acknowledged a delivery: remove it (and its message once no delivery needs it). */
  delivered(deliveryId: number): void {
    this.tx(() => {
      const row = this.db
        .prepare<[number], { message_id: number }>('SELECT message_id FROM delivery WHERE id = ?')
        .get(deliveryId);
      if (!row) return;
      this.db.prepare('DELETE FROM delivery WHERE id = ?').run(deliveryId);
      this.dropUnreferenced(row.message_id);
    });
  }

  /** A delivery failed: count the attempt and set the time of the next. */
  failed(deliveryId: number, nextAt: number, error: string): void {
    this.db
      .prepare('UPDATE delivery SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ?')
      .run(nextAt, error.slice(0, 500), deliveryId);
  }

  /** Removes subscriptions whose lease ended at or before `now`; returns them. @see WebSub §5.1 */
  expire(now: number): Subscription[] {
    return this.tx(() => {
      const rows = this.db
        .prepare<[number], SubscriptionRow>('SELECT * FROM subscription WHERE expires_at <= ?')
        .all(now);
      for (const r of rows) this.removeById(r.id);
      return rows.map(subscription);
    });
  }

  /** The earliest time something becomes due: a queued delivery's next attempt or a lease's end. */
  nextWake(): number | undefined {
    const row = this.db
      .prepare<[], { t: number | null }>(
        `SELECT MIN(t) AS t FROM (SELECT MIN(next_at) AS t FROM delivery WHERE id IN (SELECT MIN(id) FROM delivery GROUP BY subscription_id)
         UNION ALL SELECT MIN(expires_at) FROM subscription)`,
      )
      .get();
    return row?.t ?? undefined;
  }

  /** Counts for diagnostics and tests. */
  counts(): { subscriptions: number; messages: number; deliveries: number } {
    const one = (sql: string): number => this.db.prepare<[], { n: number }>(sql).get()!.n;
    return {
      subscriptions: one('SELECT COUNT(*) AS n FROM subscription'),
      messages: one('SELECT COUNT(*) AS n FROM message'),
      deliveries: one('SELECT COUNT(*) AS n FROM delivery'),
    };
  }

  private removeById(id: number): void {
    const messages = this.db
      .prepare<[number], { message_id: number }>('SELECT DISTINCT message_id FROM delivery WHERE subscription_id = ?')
      .all(id);
    this.db.prepare('DELETE FROM delivery WHERE subscription_id = ?').run(id);
    this.db.prepare('DELETE FROM subscription WHERE id = ?').run(id);
    for (const m of messages) this.dropUnreferenced(m.message_id);
  }

  private dropUnreferenced(messageId: number): void {
    this.db
      .prepare('DELETE FROM message WHERE id = ? AND NOT EXISTS (SELECT 1 FROM delivery WHERE message_id = ?)')
      .run(messageId, messageId);
  }

  private tx<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
