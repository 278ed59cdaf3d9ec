/**
 * The hub's embedded store ({@link HubStore} in SQLite, WAL, `synchronous = FULL`): verified
 * subscriptions, published messages and the outbox of deliveries. A publish is committed with its
 * deliveries in one transaction and a delivery row is removed only after the subscriber acknowledged
 * it, so a hub killed at any moment (kill -9 included) delivers every accepted message at least once
 * after it restarts, in publish order per subscription. One process opens a store at a time, so claims
 * of deliveries are held in memory (no write, no fsync, per claim) and end with the process. Every
 * method answers synchronously.
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */
import Database from 'better-sqlite3';
import { openStore } from '../node/sqlite.js';
import type {
  ClaimOptions,
  HubStore,
  HubStoreCounts,
  PendingDelivery,
  PublishOutcome,
  QueueLimits,
  Subscription,
  VerifiedSubscription,
} from './hub-store.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS subscription (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  callback TEXT NOT NULL,
  secret TEXT,
  lease_seconds INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  verified_at INTEGER NOT NULL,
  state TEXT NOT NULL DEFAULT 'verified',
  failures INTEGER NOT NULL DEFAULT 0,
  failing_since INTEGER,
  last_delivery_at INTEGER,
  last_error TEXT,
  UNIQUE (topic, callback)
);
CREATE TABLE IF NOT EXISTS message (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  content_type TEXT NOT NULL,
  body BLOB NOT NULL,
  received_at INTEGER NOT NULL,
  size INTEGER NOT NULL DEFAULT 0
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
CREATE INDEX IF NOT EXISTS message_by_topic ON message (topic);
`;

/** Columns added since the first schema, added to a store created before them. */
const ADDED: Readonly<Record<string, readonly string[]>> = {
  subscription: [
    "state TEXT NOT NULL DEFAULT 'verified'",
    'failures INTEGER NOT NULL DEFAULT 0',
    'failing_since INTEGER',
    'last_delivery_at INTEGER',
    'last_error TEXT',
  ],
  message: ['size INTEGER NOT NULL DEFAULT 0'],
};

function migrate(db: Database.Database): void {
  for (const [table, columns] of Object.entries(ADDED)) {
    const info = db.pragma(`table_info(${table})`) as Array<{ name: string }>;
    const have = new Set(info.map((c) => c.name));
    for (const c of columns) if (!have.has(c.split(' ')[0]!)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${c}`);
  }
  db.exec('UPDATE message SET size = length(body) WHERE size = 0');
}

interface SubscriptionRow {
  id: number;
  topic: string;
  callback: string;
  secret: string | null;
  lease_seconds: number;
  expires_at: number;
  verified_at: number;
  state: string;
  failures: number;
  failing_since: number | null;
  last_delivery_at: number | null;
  last_error: string | null;
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
    state: row.state === 'given-up' ? 'given-up' : 'verified',
    failures: row.failures,
    failingSince: row.failing_since ?? undefined,
    lastDeliveryAt: row.last_delivery_at ?? undefined,
    lastError: row.last_error ?? undefined,
  };
}

/**
 * Opens (creating if needed) the hub's store in the SQLite file `file` (`:memory:` for a throw-away one),
 * readable by its owner only.
 * @example
 * const store = openSqliteHubStore('/var/lib/resourcesync/hub.sqlite');
 * const hub = createHub({ store, hubUrl: 'http://127.0.0.1:8090/' });
 * @throws ResourceSyncError `RS_LOCKED` when another process holds the database, `RS_IO` otherwise
 */
export function openSqliteHubStore(file: string): SqliteHubStore {
  const db = openStore(file, { schema: SCHEMA, synchronous: 'FULL', foreignKeys: true, private: true });
  migrate(db);
  return new SqliteHubStore(file, db);
}

type HeadRow = SubscriptionRow & {
  delivery_id: number;
  message_id: number;
  attempts: number;
  next_at: number;
  message_topic: string;
  content_type: string;
  size: number;
};

const HEADS = `SELECT s.*, d.id AS delivery_id, d.message_id, d.attempts, d.next_at, m.topic AS message_topic, m.content_type, m.size
  FROM delivery d JOIN subscription s ON s.id = d.subscription_id JOIN message m ON m.id = d.message_id
  WHERE d.id IN (SELECT MIN(id) FROM delivery GROUP BY subscription_id)`;

function pendingDelivery(row: HeadRow): PendingDelivery {
  return {
    id: row.delivery_id,
    subscription: subscription(row),
    messageId: row.message_id,
    topic: row.message_topic,
    contentType: row.content_type,
    size: row.size,
    attempts: row.attempts,
    nextAt: row.next_at,
  };
}

/** The {@link HubStore} in one SQLite file (see {@link openSqliteHubStore}); its methods answer synchronously. */
export class SqliteHubStore implements HubStore {
  readonly file: string;
  private readonly db: Database.Database;
  private closed = false;
  /** Delivery id → the end of its claim (epoch ms). */
  private readonly claims = new Map<number, number>();

  constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  /**
   * Records a verified subscription, or renews the one of the same topic and callback in place (its
   * queued deliveries stay queued; a given-up one is verified again). The secret of a subscription never
   * changes here: when the one recorded has another secret (or none, or one where none is asked),
   * nothing changes and the answer is `conflict`.
   * @see WebSub §5.1 (re-subscription), §8 (security)
   */
  addSubscription(s: VerifiedSubscription): Subscription | 'conflict' {
    return this.tx(() => {
      const had = this.getSubscription(s.topic, s.callback);
      if (had !== undefined && had.secret !== s.secret) return 'conflict';
      const row = this.db
        .prepare<[string, string, string | null, number, number, number], SubscriptionRow>(
          `INSERT INTO subscription (topic, callback, secret, lease_seconds, expires_at, verified_at) VALUES (?, ?, ?, ?, ?, ?)
           ON CONFLICT (topic, callback) DO UPDATE SET lease_seconds = excluded.lease_seconds,
             expires_at = excluded.expires_at, verified_at = excluded.verified_at, state = 'verified',
             failures = CASE WHEN state = 'given-up' THEN 0 ELSE failures END,
             failing_since = CASE WHEN state = 'given-up' THEN NULL ELSE failing_since END
           RETURNING *`,
        )
        .get(s.topic, s.callback, s.secret ?? null, s.leaseSeconds, s.now + s.leaseSeconds * 1000, s.now);
      return subscription(row!);
    });
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
   * Stores a published message once and queues one delivery per verified subscription of its topic whose
   * lease has not ended, in one transaction. A subscription whose queue would pass its limits is given
   * up first (its queue dropped); then the message is refused when the topic's or the whole queue would
   * pass its limit.
   */
  publish(topic: string, contentType: string, body: Uint8Array, now: number, limits: QueueLimits): PublishOutcome {
    return this.tx(() => {
      const size = body.byteLength;
      const subs = this.db
        .prepare<[string, number], { id: number; n: number; bytes: number }>(
          `SELECT s.id, COUNT(d.id) AS n, COALESCE(SUM(m.size), 0) AS bytes FROM subscription s
           LEFT JOIN delivery d ON d.subscription_id = s.id LEFT JOIN message m ON m.id = d.message_id
           WHERE s.topic = ? AND s.expires_at > ? AND s.state = 'verified' GROUP BY s.id ORDER BY s.id`,
        )
        .all(topic, now);
      const givenUp: Subscription[] = [];
      const live: number[] = [];
      for (const s of subs) {
        if (s.n + 1 > limits.subscriberDeliveries || s.bytes + size > limits.subscriberBytes) {
          const g = this.giveUpById(s.id, 'its queue is full');
          if (g !== undefined) givenUp.push(g);
        } else live.push(s.id);
      }
      if (live.length === 0) return { queued: true, messageId: 0, deliveries: 0, givenUp };
      const sum = (sql: string, ...args: string[]): number =>
        this.db.prepare<string[], { b: number | null }>(sql).get(...args)!.b ?? 0;
      if (sum('SELECT SUM(size) AS b FROM message WHERE topic = ?', topic) + size > limits.topicBytes)
        return { queued: false, limit: 'topicBytes', givenUp };
      if (sum('SELECT SUM(size) AS b FROM message') + size > limits.totalBytes)
        return { queued: false, limit: 'totalBytes', givenUp };
      const info = this.db
        .prepare('INSERT INTO message (topic, content_type, body, received_at, size) VALUES (?, ?, ?, ?, ?)')
        .run(topic, contentType, Buffer.from(body.buffer, body.byteOffset, body.byteLength), now, size);
      const messageId = Number(info.lastInsertRowid);
      const queue = this.db.prepare('INSERT INTO delivery (subscription_id, message_id, next_at) VALUES (?, ?, ?)');
      for (const id of live) queue.run(id, messageId, now);
      return { queued: true, messageId, deliveries: live.length, givenUp };
    });
  }

  /** The bytes of a stored message (one read, shared by the caller among its deliveries). */
  messageBody(messageId: number): Uint8Array | undefined {
    const row = this.db.prepare<[number], { body: Buffer }>('SELECT body FROM message WHERE id = ?').get(messageId);
    return row === undefined ? undefined : new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength);
  }

  /**
   * Gives a subscription up: no more deliveries, its queue dropped; it stays recorded (given up) until
   * its lease ends or it is renewed. Returns it, or undefined when there is none.
   */
  giveUp(id: number, reason: string): Subscription | undefined {
    return this.tx(() => this.giveUpById(id, reason));
  }

  heads(): PendingDelivery[] {
    return this.db.prepare<[], HeadRow>(`${HEADS} ORDER BY s.id`).all().map(pendingDelivery);
  }

  claim(now: number, options: ClaimOptions): PendingDelivery[] {
    if (options.limit <= 0) return [];
    for (const [id, until] of this.claims) if (until <= now) this.claims.delete(id);
    const rows = this.db.prepare<[number], HeadRow>(`${HEADS} AND d.next_at <= ? ORDER BY s.id`).all(now);
    const claimed: PendingDelivery[] = [];
    for (const row of rows) {
      if (claimed.length >= options.limit) break;
      if (this.claims.has(row.delivery_id)) continue;
      this.claims.set(row.delivery_id, now + options.holdMs);
      claimed.push(pendingDelivery(row));
    }
    return claimed;
  }

  /** The subscriber acknowledged a delivery: remove it (and its message once no delivery needs it). */
  delivered(deliveryId: number, now: number): void {
    this.claims.delete(deliveryId);
    this.tx(() => {
      const row = this.db
        .prepare<[number], { message_id: number; subscription_id: number }>(
          'SELECT message_id, subscription_id FROM delivery WHERE id = ?',
        )
        .get(deliveryId);
      if (!row) return;
      this.db.prepare('DELETE FROM delivery WHERE id = ?').run(deliveryId);
      this.db
        .prepare('UPDATE subscription SET failures = 0, failing_since = NULL, last_delivery_at = ? WHERE id = ?')
        .run(now, row.subscription_id);
      this.dropUnreferenced(row.message_id);
    });
  }

  /** A delivery failed: count the attempt (on the delivery and its subscription) and set the time of the next. */
  failed(deliveryId: number, nextAt: number, error: string, now: number): Subscription | undefined {
    this.claims.delete(deliveryId);
    return this.tx(() => {
      const e = error.slice(0, 500);
      const row = this.db
        .prepare<[number, string, number], { subscription_id: number }>(
          'UPDATE delivery SET attempts = attempts + 1, next_at = ?, last_error = ? WHERE id = ? RETURNING subscription_id',
        )
        .get(nextAt, e, deliveryId);
      if (!row) return undefined;
      const s = this.db
        .prepare<[number, string, number], SubscriptionRow>(
          `UPDATE subscription SET failures = failures + 1, failing_since = COALESCE(failing_since, ?), last_error = ?
           WHERE id = ? RETURNING *`,
        )
        .get(now, e, row.subscription_id);
      return s === undefined ? undefined : subscription(s);
    });
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

  counts(): HubStoreCounts {
    const one = (sql: string): number => this.db.prepare<[], { n: number }>(sql).get()!.n;
    return {
      subscriptions: one('SELECT COUNT(*) AS n FROM subscription'),
      messages: one('SELECT COUNT(*) AS n FROM message'),
      deliveries: one('SELECT COUNT(*) AS n FROM delivery'),
    };
  }

  queuedBytes(): number {
    return this.db.prepare<[], { n: number | null }>('SELECT SUM(size) AS n FROM message').get()!.n ?? 0;
  }

  private giveUpById(id: number, reason: string): Subscription | undefined {
    this.dropQueue(id);
    const row = this.db
      .prepare<[string, number], SubscriptionRow>(
        "UPDATE subscription SET state = 'given-up', last_error = ? WHERE id = ? RETURNING *",
      )
      .get(reason.slice(0, 500), id);
    return row === undefined ? undefined : subscription(row);
  }

  private dropQueue(id: number): void {
    const messages = this.db
      .prepare<[number], { message_id: number }>('SELECT DISTINCT message_id FROM delivery WHERE subscription_id = ?')
      .all(id);
    this.db.prepare('DELETE FROM delivery WHERE subscription_id = ?').run(id);
    for (const m of messages) this.dropUnreferenced(m.message_id);
  }

  private removeById(id: number): void {
    this.dropQueue(id);
    this.db.prepare('DELETE FROM subscription WHERE id = ?').run(id);
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
