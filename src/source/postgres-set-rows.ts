/**
 * One set's rows in the PostgreSQL snapshot store: queries bound to the set's id, its meta values, cursors over
 * its rows (closed with it) and transactions; what ./postgres-snapshots.ts builds its `SourceSnapshots` on.
 * @see Z39.99 §10, §12 (the snapshots and changes that Resource Lists and Change Lists are written from)
 */
import type pg from 'pg';
import { inTransaction } from '../node/postgres.js';
import { PostgresCursor, cursorRows } from '../node/postgres-cursor.js';
import { rowToResource, type ResourceRow, type StoredResource } from './snapshot-rows.js';

/** The rows of one set (see the module's header). */
export class PostgresSetRows {
  readonly #pool: pg.Pool;
  readonly #setId: number;
  readonly #cursors = new Set<PostgresCursor<pg.QueryResultRow>>();

  constructor(pool: pg.Pool, setId: number) {
    this.#pool = pool;
    this.#setId = setId;
  }

  /** Closes the cursors still open (a stream or lookup not read to its end). */
  async closeCursors(): Promise<void> {
    for (const cursor of [...this.#cursors]) await cursor.close(true);
  }

  /** The rows of `sql`, whose `$1` is the set's id (`params` are `$2`…), through `client` or the pool. */
  async rows<T extends pg.QueryResultRow>(
    sql: string,
    params: unknown[] = [],
    client: pg.ClientBase | pg.Pool = this.#pool,
  ): Promise<T[]> {
    return (await client.query<T>(sql, [this.#setId, ...params])).rows;
  }

  /** A meta value of the set. */
  async meta(key: string, client?: pg.ClientBase): Promise<string | undefined> {
    return (
      await this.rows<{ value: string }>(
        'SELECT value FROM resourcesync_snapshot_meta WHERE set_id = $1 AND key = $2',
        [key],
        client,
      )
    )[0]?.value;
  }

  /** Sets a meta value of the set. */
  async writeMeta(key: string, value: string, client?: pg.ClientBase): Promise<void> {
    await this.rows(
      'INSERT INTO resourcesync_snapshot_meta (set_id, key, value) VALUES ($1, $2, $3) ON CONFLICT (set_id, key) DO UPDATE SET value = excluded.value',
      [key, value],
      client,
    );
  }

  /** A meta value of the set that is a time (ms since the epoch). */
  async time(key: string, client?: pg.ClientBase): Promise<number | undefined> {
    const value = await this.meta(key, client);
    return value === undefined ? undefined : Number(value);
  }

  /** The rows of `sql` (as `rows`) streamed through a cursor, each made a record by `toRecord`. */
  stream<Row extends pg.QueryResultRow, T>(
    sql: string,
    params: unknown[],
    toRecord: (row: Row) => T,
  ): AsyncIterable<T> {
    return cursorRows<Row, T>(this.#pool, sql, [this.#setId, ...params], toRecord, this.#cursors);
  }

  /** The rows of `sql` through a cursor opened now (its snapshot is the database as it is now). */
  async openCursor<Row extends ResourceRow>(sql: string): Promise<AsyncGenerator<StoredResource>> {
    const cursor = await PostgresCursor.open<Row>(this.#pool, sql, [this.#setId], (c) =>
      this.#cursors.delete(c as never),
    );
    this.#cursors.add(cursor as never);
    return (async function* () {
      try {
        for (let page = await cursor.fetch(); page.length > 0; page = await cursor.fetch())
          for (const row of page) yield rowToResource(row);
      } finally {
        await cursor.close();
      }
    })();
  }

  /** Runs `body` in one transaction on a client of the pool: committed, or rolled back on a throw. */
  transaction<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.#pool, body);
  }
}
