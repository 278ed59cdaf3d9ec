/**
 * The hub's store ({@link HubStore}) in PostgreSQL: subscriptions, published messages and the outbox of
 * deliveries, for hubs that run in several processes or on several machines over one database. Several hubs share a
 * database, each under its key (the `hub` column). A publish is one transaction (the message stored once, one
 * delivery per live subscription, quotas checked under a per-hub advisory lock so that two publishes cannot both
 * pass one limit); a claim is a row lock taken with `FOR UPDATE SKIP LOCKED` and recorded in the delivery
 * (`claimed_until`), so two hub processes never hold the same delivery and a process that dies lets its claims go
 * when they end. Removing deliveries locks their messages first, so the last delivery of a message always takes the
 * message with it, whichever process removes it. The `pg` module is loaded on the first open, not with the package.
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */
import type pg from 'pg';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { checkSchemaVersion, migrateSchema, schemaVersionOf } from '../node/postgres-migrations.js';
import { inTransaction, pgConnection, postgresMessage } from '../node/postgres.js';
import { HUB_SCHEMA } from './postgres-hub-schema.js';
import type { ClaimOptions, HubStore, HubStoreCounts, PendingDelivery, PublishOutcome, QueueLimits, Subscription, VerifiedSubscription } from './hub-store.js';

/** How {@link openPostgresHubStore} opens the store. */
export interface PostgresHubStoreOptions {
  /** The hub's key in the database; several hubs share one database, each under its own. Default `default`. */
  hub?: string;
  /** Most connections the pool opens. Default 4. */
  maxConnections?: number;
}

const SUBSCRIPTIONS = 'resourcesync_hub_subscriptions';
const MESSAGES = 'resourcesync_hub_messages';
const DELIVERIES = 'resourcesync_hub_deliveries';

/** A subscription row as `pg` reads it (BIGINT columns as strings). */
interface SubscriptionRow {
  id: string;
  topic: string;
  callback: string;
  secret: string | null;
  lease_seconds: number;
  expires_at: string;
  verified_at: string;
  state: string;
  failures: number;
  failing_since: string | null;
  last_delivery_at: string | null;
  last_error: string | null;
}

type HeadRow = SubscriptionRow & {
  delivery_id: string;
  message_id: string;
  attempts: number;
  next_at: string;
  message_topic: string;
  content_type: string;
  size: number;
};

const optionalNumber = (v: string | null): number | undefined => (v === null ? undefined : Number(v));

function subscription(row: SubscriptionRow): Subscription {
  return {
    id: Number(row.id),
    topic: row.topic,
    callback: row.callback,
    secret: row.secret ?? undefined,
    leaseSeconds: row.lease_seconds,
    expiresAt: Number(row.expires_at),
    verifiedAt: Number(row.verified_at),
    state: row.state === 'given-up' ? 'given-up' : 'verified',
    failures: row.failures,
    failingSince: optionalNumber(row.failing_since),
    lastDeliveryAt: optionalNumber(row.last_delivery_at),
    lastError: row.last_error ?? undefined,
  };
}

function pendingDelivery(row: HeadRow): PendingDelivery {
  return {
    id: Number(row.delivery_id),
    subscription: subscription(row),
    messageId: Number(row.message_id),
    topic: row.message_topic,
    contentType: row.content_type,
    size: row.size,
    attempts: row.attempts,
    nextAt: Number(row.next_at),
  };
}

/** The first delivery of each subscription's queue, of hub `$1`. */
const HEAD_IDS = `SELECT DISTINCT ON (subscription_id) id FROM ${DELIVERIES} WHERE hub = $1 ORDER BY subscription_id, id`;

/** A head delivery's columns with its subscription's and its message's (`d`, `s`, `m`). */
const HEAD_COLUMNS = `s.*, d.id AS delivery_id, d.message_id, d.attempts, d.next_at, m.topic AS message_topic, m.content_type, m.size`;
const HEAD_JOINS = `JOIN ${SUBSCRIPTIONS} s ON s.id = d.subscription_id JOIN ${MESSAGES} m ON m.id = d.message_id`;

/**
 * The claim in one statement: the due, unclaimed heads, locked (skipping those another claimer holds), in
 * subscription order up to the limit, marked claimed until `$2 + $4`. The conditions on the delivery row are
 * checked again once it is locked, so a delivery another claimer just took is passed over.
 */
const CLAIM = `WITH heads AS (${HEAD_IDS}),
  due AS (SELECT d.id FROM ${DELIVERIES} d JOIN heads h ON h.id = d.id
          WHERE d.next_at <= $2 AND d.claimed_until <= $2 ORDER BY d.subscription_id LIMIT $3 FOR UPDATE OF d SKIP LOCKED),
  claimed AS (UPDATE ${DELIVERIES} SET claimed_until = $2 + $4 WHERE id IN (SELECT id FROM due) RETURNING id)
  SELECT ${HEAD_COLUMNS} FROM claimed c JOIN ${DELIVERIES} d ON d.id = c.id ${HEAD_JOINS} ORDER BY s.id`;

/** A transaction's client: every statement of one method goes through it. */
type Tx = pg.PoolClient;

class PostgresHubStore implements HubStore {
  readonly #pool: pg.Pool;
  readonly #hub: string;
  #closed = false;

  constructor(pool: pg.Pool, hub: string) {
    this.#pool = pool;
    this.#hub = hub;
  }

  async #query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
    return (await this.#pool.query<T>(sql, [this.#hub, ...params])).rows;
  }

  /** Runs `work` in one transaction; its statements pass `$1` = the hub themselves. */
  async #tx<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await inTransaction(this.#pool, work);
    } catch (err) {
      throw err instanceof ResourceSyncError ? err : new ResourceSyncError('RS_IO', `The hub store '${this.#hub}' could not be written: ${messageOf(err)}.`, { cause: err });
    }
  }

  async addSubscription(s: VerifiedSubscription): Promise<Subscription | 'conflict'> {
    // a renewal keeps the secret: the update happens only when the one asked for is the one recorded
    const rows = await this.#query<SubscriptionRow>(
      `INSERT INTO ${SUBSCRIPTIONS} AS t (hub, topic, callback, secret, lease_seconds, expires_at, verified_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (hub, topic, callback) DO UPDATE SET lease_seconds = excluded.lease_seconds, expires_at = excluded.expires_at,
         verified_at = excluded.verified_at, state = 'verified',
         failures = CASE WHEN t.state = 'given-up' THEN 0 ELSE t.failures END,
         failing_since = CASE WHEN t.state = 'given-up' THEN NULL ELSE t.failing_since END
       WHERE t.secret IS NOT DISTINCT FROM excluded.secret
       RETURNING *`,
      [s.topic, s.callback, s.secret ?? null, s.leaseSeconds, s.now + s.leaseSeconds * 1000, s.now],
    );
    return rows[0] === undefined ? 'conflict' : subscription(rows[0]);
  }

  async getSubscription(topic: string, callback: string): Promise<Subscription | undefined> {
    const [row] = await this.#query<SubscriptionRow>(`SELECT * FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND topic = $2 AND callback = $3`, [topic, callback]);
    return row === undefined ? undefined : subscription(row);
  }

  async subscriptions(topic?: string): Promise<Subscription[]> {
    const rows =
      topic === undefined
        ? await this.#query<SubscriptionRow>(`SELECT * FROM ${SUBSCRIPTIONS} WHERE hub = $1 ORDER BY id`)
        : await this.#query<SubscriptionRow>(`SELECT * FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND topic = $2 ORDER BY id`, [topic]);
    return rows.map(subscription);
  }

  async removeSubscription(topic: string, callback: string): Promise<boolean> {
    return this.#tx(async (tx) => {
      const found = await tx.query<{ id: string }>(`SELECT id FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND topic = $2 AND callback = $3`, [this.#hub, topic, callback]);
      if (found.rows[0] === undefined) return false;
      return (await this.#remove(tx, [Number(found.rows[0].id)])).length > 0;
    });
  }

  async removeSubscriptionById(id: number): Promise<void> {
    await this.#tx((tx) => this.#remove(tx, [id]));
  }

  async expire(now: number): Promise<Subscription[]> {
    return this.#tx(async (tx) => {
      const ended = await tx.query<{ id: string }>(`SELECT id FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND expires_at <= $2`, [this.#hub, now]);
      const removed = await this.#remove(tx, ended.rows.map((r) => Number(r.id)), now);
      return removed.map(subscription).sort((x, y) => x.id - y.id);
    });
  }

  async giveUp(id: number, reason: string): Promise<Subscription | undefined> {
    return this.#tx((tx) => this.#giveUp(tx, id, reason));
  }

  async publish(topic: string, contentType: string, body: Uint8Array, now: number, limits: QueueLimits): Promise<PublishOutcome> {
    return this.#tx(async (tx) => {
      // one publish of this hub at a time: the quotas below are checked against what is committed
      await tx.query("SELECT pg_advisory_xact_lock(hashtextextended('resourcesync-hub:' || $1, 0))", [this.#hub]);
      const size = body.byteLength;
      const subs = await tx.query<{ id: string; n: string; bytes: string }>(
        `SELECT s.id, COUNT(d.id) AS n, COALESCE(SUM(m.size), 0) AS bytes FROM ${SUBSCRIPTIONS} s
         LEFT JOIN ${DELIVERIES} d ON d.subscription_id = s.id LEFT JOIN ${MESSAGES} m ON m.id = d.message_id
         WHERE s.hub = $1 AND s.topic = $2 AND s.expires_at > $3 AND s.state = 'verified' GROUP BY s.id ORDER BY s.id`,
        [this.#hub, topic, now],
      );
      const givenUp: Subscription[] = [];
      const live: number[] = [];
      for (const s of subs.rows) {
        if (Number(s.n) + 1 > limits.subscriberDeliveries || Number(s.bytes) + size > limits.subscriberBytes) {
          const g = await this.#giveUp(tx, Number(s.id), 'its queue is full');
          if (g !== undefined) givenUp.push(g);
        } else live.push(Number(s.id));
      }
      if (live.length === 0) return { queued: true, messageId: 0, deliveries: 0, givenUp };
      const sums = await tx.query<{ topic_bytes: string; total_bytes: string }>(
        `SELECT COALESCE(SUM(size) FILTER (WHERE topic = $2), 0) AS topic_bytes, COALESCE(SUM(size), 0) AS total_bytes FROM ${MESSAGES} WHERE hub = $1`,
        [this.#hub, topic],
      );
      const queued = sums.rows[0]!;
      if (Number(queued.topic_bytes) + size > limits.topicBytes) return { queued: false, limit: 'topicBytes', givenUp };
      if (Number(queued.total_bytes) + size > limits.totalBytes) return { queued: false, limit: 'totalBytes', givenUp };
      const message = await tx.query<{ id: string }>(
        `INSERT INTO ${MESSAGES} (hub, topic, content_type, body, received_at, size) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`,
        [this.#hub, topic, contentType, Buffer.from(body.buffer, body.byteOffset, body.byteLength), now, size],
      );
      const messageId = Number(message.rows[0]!.id);
      await tx.query(`INSERT INTO ${DELIVERIES} (hub, subscription_id, message_id, next_at) SELECT $1, unnest($2::bigint[]), $3, $4`, [
        this.#hub,
        live,
        messageId,
        now,
      ]);
      return { queued: true, messageId, deliveries: live.length, givenUp };
    });
  }

  async messageBody(messageId: number): Promise<Uint8Array | undefined> {
    const [row] = await this.#query<{ body: Buffer }>(`SELECT body FROM ${MESSAGES} WHERE hub = $1 AND id = $2`, [messageId]);
    return row === undefined ? undefined : new Uint8Array(row.body.buffer, row.body.byteOffset, row.body.byteLength);
  }

  async heads(): Promise<PendingDelivery[]> {
    const rows = await this.#query<HeadRow>(`SELECT ${HEAD_COLUMNS} FROM ${DELIVERIES} d ${HEAD_JOINS} WHERE d.id IN (${HEAD_IDS}) ORDER BY s.id`);
    return rows.map(pendingDelivery);
  }

  async claim(now: number, options: ClaimOptions): Promise<PendingDelivery[]> {
    if (options.limit <= 0) return [];
    return (await this.#query<HeadRow>(CLAIM, [now, options.limit, options.holdMs])).map(pendingDelivery);
  }

  async delivered(deliveryId: number, now: number): Promise<void> {
    await this.#tx(async (tx) => {
      const removed = await this.#removeDeliveries(tx, 'id = $2', [deliveryId]);
      const subscriptionId = removed[0]?.subscription_id;
      if (subscriptionId === undefined) return;
      await tx.query(`UPDATE ${SUBSCRIPTIONS} SET failures = 0, failing_since = NULL, last_delivery_at = $2 WHERE id = $3 AND hub = $1`, [this.#hub, now, subscriptionId]);
    });
  }

  async failed(deliveryId: number, nextAt: number, error: string, now: number): Promise<Subscription | undefined> {
    return this.#tx(async (tx) => {
      const e = error.slice(0, 500);
      const delivery = await tx.query<{ subscription_id: string }>(
        `UPDATE ${DELIVERIES} SET attempts = attempts + 1, next_at = $3, last_error = $4, claimed_until = 0 WHERE hub = $1 AND id = $2 RETURNING subscription_id`,
        [this.#hub, deliveryId, nextAt, e],
      );
      const subscriptionId = delivery.rows[0]?.subscription_id;
      if (subscriptionId === undefined) return undefined;
      const s = await tx.query<SubscriptionRow>(
        `UPDATE ${SUBSCRIPTIONS} SET failures = failures + 1, failing_since = COALESCE(failing_since, $3), last_error = $4 WHERE hub = $1 AND id = $2 RETURNING *`,
        [this.#hub, subscriptionId, now, e],
      );
      return s.rows[0] === undefined ? undefined : subscription(s.rows[0]);
    });
  }

  async nextWake(): Promise<number | undefined> {
    const [row] = await this.#query<{ t: string | null }>(
      `SELECT MIN(t) AS t FROM (SELECT MIN(next_at) AS t FROM ${DELIVERIES} WHERE id IN (${HEAD_IDS})
       UNION ALL SELECT MIN(expires_at) FROM ${SUBSCRIPTIONS} WHERE hub = $1) AS due`,
    );
    return optionalNumber(row?.t ?? null);
  }

  async counts(): Promise<HubStoreCounts> {
    const [row] = await this.#query<{ subscriptions: string; messages: string; deliveries: string }>(
      `SELECT (SELECT COUNT(*) FROM ${SUBSCRIPTIONS} WHERE hub = $1) AS subscriptions, (SELECT COUNT(*) FROM ${MESSAGES} WHERE hub = $1) AS messages,
         (SELECT COUNT(*) FROM ${DELIVERIES} WHERE hub = $1) AS deliveries`,
    );
    return { subscriptions: Number(row!.subscriptions), messages: Number(row!.messages), deliveries: Number(row!.deliveries) };
  }

  async queuedBytes(): Promise<number> {
    const [row] = await this.#query<{ n: string }>(`SELECT COALESCE(SUM(size), 0) AS n FROM ${MESSAGES} WHERE hub = $1`);
    return Number(row!.n);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  async #giveUp(tx: Tx, id: number, reason: string): Promise<Subscription | undefined> {
    await this.#removeDeliveries(tx, 'subscription_id = $2', [id]);
    const row = await tx.query<SubscriptionRow>(`UPDATE ${SUBSCRIPTIONS} SET state = 'given-up', last_error = $3 WHERE hub = $1 AND id = $2 RETURNING *`, [
      this.#hub,
      id,
      reason.slice(0, 500),
    ]);
    return row.rows[0] === undefined ? undefined : subscription(row.rows[0]);
  }

  /**
   * Removes subscriptions with their queues (with `endedBy`, only those whose lease still ended by then: one renewed
   * meanwhile stays); returns the rows removed. The messages are locked before the subscriptions, in the order every
   * method takes them, so that two processes never wait on each other.
   */
  async #remove(tx: Tx, ids: number[], endedBy?: number): Promise<SubscriptionRow[]> {
    if (ids.length === 0) return [];
    const ended = endedBy === undefined ? '' : ' AND expires_at <= $3';
    const args = endedBy === undefined ? [ids] : [ids, endedBy];
    await this.#removeDeliveries(tx, `subscription_id IN (SELECT id FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND id = ANY($2::bigint[])${ended})`, args);
    return (await tx.query<SubscriptionRow>(`DELETE FROM ${SUBSCRIPTIONS} WHERE hub = $1 AND id = ANY($2::bigint[])${ended} RETURNING *`, [this.#hub, ...args])).rows;
  }

  /**
   * Removes the deliveries `where` selects (`$1` is the hub) and the messages no delivery needs any more. Their
   * messages are locked first, in id order: a process removing another delivery of one of them waits, then sees this
   * removal, so the last delivery of a message always takes the message with it.
   */
  async #removeDeliveries(tx: Tx, where: string, params: unknown[]): Promise<{ subscription_id: string; message_id: string }[]> {
    const args = [this.#hub, ...params];
    await tx.query(`SELECT id FROM ${MESSAGES} WHERE id IN (SELECT message_id FROM ${DELIVERIES} WHERE hub = $1 AND ${where}) ORDER BY id FOR UPDATE`, args);
    const removed = await tx.query<{ subscription_id: string; message_id: string }>(
      `DELETE FROM ${DELIVERIES} WHERE hub = $1 AND ${where} RETURNING subscription_id, message_id`,
      args,
    );
    const messages = [...new Set(removed.rows.map((r) => r.message_id))];
    if (messages.length > 0) {
      await tx.query(
        `DELETE FROM ${MESSAGES} m WHERE m.id = ANY($1::bigint[]) AND NOT EXISTS (SELECT 1 FROM ${DELIVERIES} d WHERE d.message_id = m.id)`,
        [messages],
      );
    }
    return removed.rows;
  }
}

/**
 * Opens the hub's store in the PostgreSQL database at `url` (a `postgres://` connection string), under the key
 * `options.hub`, creating or migrating the package's tables. Several hub processes may open the same key: they
 * share its subscriptions and outbox, and never hand out one delivery twice at once.
 * @throws ResourceSyncError `RS_IO` when the database cannot be reached or holds a newer schema
 * @example
 * const store = await openPostgresHubStore('postgres://rs@db/hubs', { hub: 'source-a' });
 * const hub = createHub({ store, hubUrl: 'http://127.0.0.1:8090/' });
 */
export async function openPostgresHubStore(url: string, options: PostgresHubStoreOptions = {}): Promise<HubStore> {
  const hub = options.hub ?? 'default';
  if (typeof hub !== 'string' || hub === '') throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'A PostgreSQL hub store needs a non-empty hub key.');
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ ...pgConnection(url), max: options.maxConnections ?? 4 });
  pool.on('error', () => undefined); // an idle connection dropped: the pool replaces it, the next query reports
  try {
    const client = await pool.connect();
    try {
      await migrateSchema(client, HUB_SCHEMA);
      checkSchemaVersion(HUB_SCHEMA, await schemaVersionOf(client, HUB_SCHEMA));
    } finally {
      client.release();
    }
    return new PostgresHubStore(pool, hub);
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (err instanceof ResourceSyncError) throw err;
    throw new ResourceSyncError('RS_IO', `The PostgreSQL hub store cannot be opened: ${postgresMessage(err)}.`, { cause: err });
  }
}
