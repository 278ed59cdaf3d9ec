/**
 * Rows of a PostgreSQL query read a page at a time through a server-side cursor, in a REPEATABLE READ, READ ONLY
 * transaction of a connection of its own: the rows are those of the database as it was when the cursor opened
 * (writes committed meanwhile do not show in it), and a listing of millions of rows is never held whole.
 */
import type pg from 'pg';

/** Rows fetched at once. */
const PAGE = 1000;

let cursors = 0;

/** An open cursor: pages in order, an empty page at the end. */
export class PostgresCursor<Row extends pg.QueryResultRow> {
  readonly #client: pg.PoolClient;
  readonly #name: string;
  readonly #onClose: (cursor: PostgresCursor<Row>) => void;
  #done = false;

  private constructor(client: pg.PoolClient, name: string, onClose: (cursor: PostgresCursor<Row>) => void) {
    this.#client = client;
    this.#name = name;
    this.#onClose = onClose;
  }

  /**
   * Opens a cursor over `sql` (whose parameters are `params`) on a connection taken from `pool`; the database's
   * snapshot is taken now. `onClose` hears when it is closed (to forget it).
   */
  static async open<Row extends pg.QueryResultRow>(
    pool: pg.Pool,
    sql: string,
    params: unknown[],
    onClose: (cursor: PostgresCursor<Row>) => void = () => undefined,
  ): Promise<PostgresCursor<Row>> {
    const client = await pool.connect();
    const name = `rs_cursor_${++cursors}`;
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      await client.query(`DECLARE ${name} NO SCROLL CURSOR FOR ${sql}`, params);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      client.release();
      throw err;
    }
    return new PostgresCursor<Row>(client, name, onClose);
  }

  /** The next page of rows; empty once every row was read (the cursor is then closed). */
  async fetch(): Promise<Row[]> {
    if (this.#done) return [];
    try {
      const rows = (await this.#client.query<Row>(`FETCH ${PAGE} FROM ${this.#name}`)).rows;
      if (rows.length === 0) await this.close();
      return rows;
    } catch (err) {
      await this.close(true);
      throw err;
    }
  }

  /** Ends the transaction and gives the connection back (once); `broken` drops the connection instead. */
  async close(broken = false): Promise<void> {
    if (this.#done) return;
    this.#done = true;
    this.#onClose(this);
    if (broken) {
      this.#client.release(true);
      return;
    }
    try {
      await this.#client.query('COMMIT');
      this.#client.release();
    } catch {
      this.#client.release(true);
    }
  }
}

/**
 * The rows of `sql` as an `AsyncIterable`, each record made by `toRecord`: the cursor opens at the first `next()`
 * and closes at the end, on `return()` (a `break`) or on an error. `track` hears each cursor opened and closed.
 */
export function cursorRows<Row extends pg.QueryResultRow, T>(
  pool: pg.Pool,
  sql: string,
  params: unknown[],
  toRecord: (row: Row) => T,
  track: Set<PostgresCursor<pg.QueryResultRow>> = new Set(),
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]: (): AsyncIterator<T> => {
      let cursor: PostgresCursor<Row> | undefined;
      let page: Row[] = [];
      let at = 0;
      let finished = false;
      const end = async (): Promise<IteratorResult<T>> => {
        finished = true;
        await cursor?.close();
        return { done: true, value: undefined };
      };
      return {
        next: async (): Promise<IteratorResult<T>> => {
          if (finished) return { done: true, value: undefined };
          if (at >= page.length) {
            if (cursor === undefined) {
              cursor = await PostgresCursor.open<Row>(pool, sql, params, (c) => track.delete(c as never));
              track.add(cursor as never);
            }
            try {
              page = await cursor.fetch();
            } catch (err) {
              finished = true;
              throw err;
            }
            at = 0;
            if (page.length === 0) return end();
          }
          return { done: false, value: toRecord(page[at++]!) };
        },
        return: end,
      };
    },
  };
}
