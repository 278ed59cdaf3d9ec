/**
 * A {@link DestinationState} in PostgreSQL: several destinations share one database, each under its own key (the
 * `destination` column of every table). The package creates and migrates the tables itself (`postgres-schema.ts`).
 * A batch is one transaction of multi-row statements (`unnest` of arrays, one statement per kind of change);
 * records and URLs are read in pages of 1,000 by key, so no listing is held whole. Connections come from a
 * `pg.Pool` that {@link DestinationState.close} ends. The `pg` module is loaded on the first open, not with the package.
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import type { Entry, Ln } from '../core/model/types.js';
import { pgConnection, postgresMessage } from '../node/postgres.js';
import { PostgresLeases } from './postgres-lease.js';
import { checkVersion, migrate, schemaVersion } from './postgres-schema.js';
import type { DestinationState, Lease, LeaseOptions, ResourceRecord, StateBatch, SyncCursor } from './state.js';

/** Rows read at once while iterating. */
const PAGE = 1000;

/** How {@link openPostgresDestinationState} opens the state. */
export interface PostgresDestinationStateOptions {
  /** The destination's key in the database (e.g. the destination's URL or name); required. */
  destination: string;
  /** Open for reading only: nothing is created, writes and leases are refused. Default false. */
  readonly?: boolean;
  /** Most connections the pool opens. Default 4. */
  maxConnections?: number;
}

interface Row {
  url: string;
  path: string;
  length: string;
  hashes: string;
  lastmod: string | null;
  etag: string | null;
  links: string | null;
  type: string | null;
}

const COLUMNS = 'url, path, length, hashes, lastmod, etag, links, type';
/** The columns read (read-only) from a database whose schema predates the type. */
const COLUMNS_WITHOUT_TYPE = 'url, path, length, hashes, lastmod, etag, links, NULL AS type';
/** The schema version that added the `type` column. */
const TYPE_VERSION = 3;

function fromRow(row: Row): ResourceRecord {
  const record: ResourceRecord = { url: row.url, path: row.path, length: Number(row.length), hashes: JSON.parse(row.hashes) as Record<string, string> };
  if (row.lastmod !== null) record.lastmod = row.lastmod;
  if (row.etag !== null) record.etag = row.etag;
  if (row.type !== null) record.type = row.type;
  if (row.links !== null) record.links = JSON.parse(row.links) as Ln[];
  return record;
}

/** The last of each key wins, as successive single-row upserts would have it (one upsert may not touch a row twice). */
function lastByKey<T>(items: readonly T[], key: (item: T) => string): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()];
}

function ioError(what: string, err: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_IO', `${what}: ${postgresMessage(err)}.`, { cause: err });
}

/** The statements of one batch, in the order {@link StateBatch} documents; steps with nothing to do are left out. */
function batchStatements(destination: string, batch: StateBatch): [string, unknown[]][] {
  const statements: [string, unknown[]][] = [];
  const put = lastByKey(batch.put ?? [], (record) => record.url);
  if (put.length > 0) {
    statements.push([
      `INSERT INTO resourcesync_resources (destination, ${COLUMNS})
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[])
       ON CONFLICT (destination, url) DO UPDATE SET path = excluded.path, length = excluded.length, hashes = excluded.hashes,
         lastmod = excluded.lastmod, etag = excluded.etag, links = excluded.links, type = excluded.type`,
      [
        destination,
        put.map((r) => r.url),
        put.map((r) => r.path),
        put.map((r) => r.length),
        put.map((r) => JSON.stringify(r.hashes)),
        put.map((r) => r.lastmod ?? null),
        put.map((r) => r.etag ?? null),
        put.map((r) => (r.links && r.links.length > 0 ? JSON.stringify(r.links) : null)),
        put.map((r) => r.type ?? null),
      ],
    ]);
  }
  const remove = (table: string, urls: readonly string[] | undefined): void => {
    if (urls !== undefined && urls.length > 0) statements.push([`DELETE FROM ${table} WHERE destination = $1 AND url = ANY($2::text[])`, [destination, urls]]);
  };
  remove('resourcesync_resources', batch.delete);
  remove('resourcesync_skipped_deletions', batch.forgetSkipped);
  if (batch.skipDeletions !== undefined && batch.skipDeletions.urls.length > 0) {
    statements.push([
      `INSERT INTO resourcesync_skipped_deletions (destination, url, set_key) SELECT $1, url, $2 FROM unnest($3::text[]) AS url
       ON CONFLICT (destination, url) DO UPDATE SET set_key = excluded.set_key`,
      [destination, batch.skipDeletions.setKey, [...new Set(batch.skipDeletions.urls)]],
    ]);
  }
  if (batch.addPending !== undefined && batch.addPending.entries.length > 0) {
    const entries = lastByKey(batch.addPending.entries, (pending) => pending.entry.loc);
    statements.push([
      `INSERT INTO resourcesync_pending (destination, url, set_key, entry, code) SELECT $1, p.url, $2, p.entry, p.code
       FROM unnest($3::text[], $4::text[], $5::text[]) AS p (url, entry, code)
       ON CONFLICT (destination, url) DO UPDATE SET set_key = excluded.set_key, entry = excluded.entry, code = excluded.code`,
      [destination, batch.addPending.setKey, entries.map((p) => p.entry.loc), entries.map((p) => JSON.stringify(p.entry)), entries.map((p) => p.code)],
    ]);
  }
  remove('resourcesync_pending', batch.removePending);
  return statements;
}

class PostgresDestinationState implements DestinationState {
  readonly readonly: boolean;
  readonly #pool: pg.Pool;
  readonly #destination: string;
  /** False when opened read-only on a database the package never wrote to: everything reads as empty. */
  readonly #schema: boolean;
  readonly #leases: PostgresLeases;
  /** The columns of a record (without the type on a database read-only whose schema predates it). */
  readonly #columns: string;
  #closed = false;

  constructor(pool: pg.Pool, destination: string, readonly: boolean, version: number) {
    const schema = version > 0;
    this.#columns = version >= TYPE_VERSION ? COLUMNS : COLUMNS_WITHOUT_TYPE;
    this.#pool = pool;
    this.#destination = destination;
    this.readonly = readonly;
    this.#schema = schema;
    this.#leases = new PostgresLeases(pool, destination);
  }

  /** The rows of a read of this destination's data (`$1` is the destination). */
  async #rows<T extends pg.QueryResultRow>(sql: string, params: unknown[] = []): Promise<T[]> {
    if (!this.#schema) return [];
    return this.#query<T>(sql, [this.#destination, ...params], 'read');
  }

  /** A connection of the pool; one that cannot be had (the server gone, say) is an `RS_IO` error of the state's. */
  async #connect(doing: 'read' | 'written'): Promise<pg.PoolClient> {
    try {
      return await this.#pool.connect();
    } catch (err) {
      throw ioError(`The state of destination '${this.#destination}' could not be ${doing}`, err);
    }
  }

  /** One statement; a failure (the server gone, say) is an `RS_IO` error that says it was the state's. */
  async #query<T extends pg.QueryResultRow>(sql: string, params: unknown[], doing: 'read' | 'written'): Promise<T[]> {
    try {
      return (await this.#pool.query<T>(sql, params)).rows;
    } catch (err) {
      throw ioError(`The state of destination '${this.#destination}' could not be ${doing}`, err);
    }
  }

  async get(url: string): Promise<ResourceRecord | undefined> {
    const [row] = await this.#rows<Row>(`SELECT ${this.#columns} FROM resourcesync_resources WHERE destination = $1 AND url = $2`, [url]);
    return row === undefined ? undefined : fromRow(row);
  }

  async count(): Promise<number> {
    const [row] = await this.#rows<{ count: string }>('SELECT COUNT(*) AS count FROM resourcesync_resources WHERE destination = $1');
    return Number(row?.count ?? 0);
  }

  async *records(): AsyncIterable<ResourceRecord> {
    for await (const row of this.#pages<Row>(this.#columns)) yield fromRow(row);
  }

  async *urls(): AsyncIterable<string> {
    for await (const row of this.#pages<{ url: string }>('url')) yield row.url;
  }

  /** The destination's resources ordered by URL, a page at a time, each page after the last URL of the one before. */
  async *#pages<T extends { url: string }>(columns: string): AsyncGenerator<T> {
    if (!this.#schema) return;
    const from = `SELECT ${columns} FROM resourcesync_resources WHERE destination = $1`;
    let page = await this.#page<T>(`${from} ORDER BY url LIMIT $2`, [this.#destination, PAGE]);
    while (page.length > 0) {
      yield* page;
      if (page.length < PAGE) return;
      page = await this.#page<T>(`${from} AND url > $2 ORDER BY url LIMIT $3`, [this.#destination, page[page.length - 1]!.url, PAGE]);
    }
  }

  /**
   * One page, read along the primary key. Without statistics (a table filled moments ago, before autovacuum analyzed
   * it) the planner takes a bitmap scan and sorts every row after the key on each page, which makes a listing
   * quadratic; bitmap scans are turned off for this read only.
   */
  async #page<T extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<T[]> {
    const client = await this.#connect('read');
    try {
      await client.query('BEGIN READ ONLY; SET LOCAL enable_bitmapscan = off');
      const rows = (await client.query<T>(sql, params)).rows;
      await client.query('COMMIT');
      return rows;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw ioError(`The state of destination '${this.#destination}' could not be read`, err);
    } finally {
      client.release();
    }
  }

  async apply(batch: StateBatch): Promise<void> {
    this.#writable();
    const statements = batchStatements(this.#destination, batch);
    if (statements.length === 0) return;
    const client = await this.#connect('written');
    try {
      await client.query('BEGIN');
      for (const [sql, params] of statements) await client.query(sql, params);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw ioError(`The state of destination '${this.#destination}' could not be written`, err);
    } finally {
      client.release();
    }
  }

  async getCursor(key: string): Promise<SyncCursor | undefined> {
    const [row] = await this.#rows<{ datetime: string; change_list: string | null; position: number | null }>(
      'SELECT datetime, change_list, position FROM resourcesync_cursors WHERE destination = $1 AND key = $2',
      [key],
    );
    if (row === undefined) return undefined;
    const cursor: SyncCursor = { datetime: row.datetime };
    if (row.change_list !== null) cursor.changeList = row.change_list;
    if (row.position !== null) cursor.position = row.position;
    return cursor;
  }

  async setCursor(key: string, cursor: SyncCursor): Promise<void> {
    this.#writable();
    await this.#query(
      `INSERT INTO resourcesync_cursors (destination, key, datetime, change_list, position) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (destination, key) DO UPDATE SET datetime = excluded.datetime, change_list = excluded.change_list, position = excluded.position`,
      [this.#destination, key, cursor.datetime, cursor.changeList ?? null, cursor.position ?? null],
      'written',
    );
  }

  async getMeta(key: string): Promise<string | undefined> {
    const [row] = await this.#rows<{ value: string }>('SELECT value FROM resourcesync_meta WHERE destination = $1 AND key = $2', [key]);
    return row?.value;
  }

  async setMeta(key: string, value: string | undefined): Promise<void> {
    this.#writable();
    if (value === undefined) await this.#query('DELETE FROM resourcesync_meta WHERE destination = $1 AND key = $2', [this.#destination, key], 'written');
    else {
      await this.#query(
        'INSERT INTO resourcesync_meta (destination, key, value) VALUES ($1, $2, $3) ON CONFLICT (destination, key) DO UPDATE SET value = excluded.value',
        [this.#destination, key, value],
        'written',
      );
    }
  }

  async pending(setKey: string): Promise<Entry[]> {
    const rows = await this.#rows<{ entry: string }>('SELECT entry FROM resourcesync_pending WHERE destination = $1 AND set_key = $2 ORDER BY url', [setKey]);
    return rows.map((row) => JSON.parse(row.entry) as Entry);
  }

  async clearPending(setKey: string): Promise<void> {
    this.#writable();
    await this.#query('DELETE FROM resourcesync_pending WHERE destination = $1 AND set_key = $2', [this.#destination, setKey], 'written');
  }

  async hasSkippedDeletions(): Promise<boolean> {
    return (await this.#rows('SELECT 1 FROM resourcesync_skipped_deletions WHERE destination = $1 LIMIT 1')).length > 0;
  }

  async skippedDeletions(setKey?: string): Promise<string[]> {
    const rows =
      setKey === undefined
        ? await this.#rows<{ url: string }>('SELECT url FROM resourcesync_skipped_deletions WHERE destination = $1 ORDER BY url')
        : await this.#rows<{ url: string }>('SELECT url FROM resourcesync_skipped_deletions WHERE destination = $1 AND set_key = $2 ORDER BY url', [setKey]);
    return rows.map((row) => row.url);
  }

  async acquireLease(options: LeaseOptions): Promise<Lease> {
    this.#writable();
    try {
      return await this.#leases.acquire(options);
    } catch (err) {
      if (err instanceof ResourceSyncError) throw err;
      throw ioError(`The lease of destination '${this.#destination}' could not be taken`, err);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#leases.releaseAll();
    } finally {
      await this.#pool.end();
    }
  }

  #writable(): void {
    if (this.readonly) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'The destination state is open for reading only.');
  }
}

/**
 * Opens the state of one destination in the PostgreSQL database at `url` (a `postgres://` connection string),
 * creating or migrating the package's tables unless `readonly`. Read-only on a database without them, everything
 * reads as empty.
 * @throws ResourceSyncError `RS_IO` when the database cannot be reached or holds a newer schema,
 *   `RS_INVALID_ARGUMENT` without a destination key
 * @example
 * const state = await openPostgresDestinationState('postgres://rs@db/rs', { destination: 'mirror-1' });
 * await state.apply({ put: [{ url, path: 'a.txt', length: 3, hashes: { md5 } }] });
 * await state.close();
 */
export async function openPostgresDestinationState(url: string, options: PostgresDestinationStateOptions): Promise<DestinationState> {
  if (typeof options.destination !== 'string' || options.destination === '') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'A PostgreSQL destination state needs a destination key.');
  }
  const readonly = options.readonly ?? false;
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ ...pgConnection(url), max: options.maxConnections ?? 4 });
  pool.on('error', () => undefined); // an idle connection dropped: the pool replaces it, the next query reports
  try {
    const client = await pool.connect();
    try {
      if (!readonly) await migrate(client);
      const version = await schemaVersion(client);
      checkVersion(version);
      return new PostgresDestinationState(pool, options.destination, readonly, version);
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (err instanceof ResourceSyncError) throw err;
    throw ioError(`The PostgreSQL destination state cannot be opened`, err);
  }
}
