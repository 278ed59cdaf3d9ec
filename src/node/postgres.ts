/**
 * Opening a PostgreSQL store of the package (the Source's snapshots): a connection pool (the `pg` module is loaded
 * on the first open, not with the package) on a schema brought to its last version (postgres-migrations.ts), the
 * database's clock as SQL, and the connection string as messages may show it.
 */
import type pg from 'pg';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { checkSchemaVersion, migrateSchema, schemaVersionOf, type PostgresSchema } from './postgres-migrations.js';

/** The database's clock in ms since the epoch, as SQL: leases expire on it, so machines whose clocks differ agree. */
export const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/**
 * A connection URL without its password (nor its query, which may hold one), for messages and reports.
 * @example redactedUrl('postgres://rs:secret@db/mirrors') // 'postgres://rs@db/mirrors'
 */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    u.search = '';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//…@');
  }
}

/** Seconds a connection to PostgreSQL may take when neither the URL nor `PGCONNECT_TIMEOUT` says. */
export const DEFAULT_CONNECT_TIMEOUT_S = 10;

/**
 * How long a connection to the PostgreSQL at `url` may take to be ready, in ms (0: no limit), read as libpq reads
 * it: the URL's `connect_timeout` (seconds; zero or negative waits forever, 1 is taken as 2), else the environment's
 * `PGCONNECT_TIMEOUT`, else {@link DEFAULT_CONNECT_TIMEOUT_S}. An unreachable host (packets dropped) or a server that
 * accepts and never answers then fails within that time instead of hanging.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a `connect_timeout` that is not an integer
 * @example connectTimeoutMs('postgres://rs@db/rs?connect_timeout=2') // 2000
 */
export function connectTimeoutMs(url: string, env: NodeJS.ProcessEnv = process.env): number {
  let given: string | null | undefined;
  try {
    given = new URL(url).searchParams.get('connect_timeout');
  } catch {
    given = null; // not a URL (a key=value string): pg reads it; the environment or the default applies
  }
  const raw = (given ?? env.PGCONNECT_TIMEOUT ?? '').trim();
  if (raw === '') return DEFAULT_CONNECT_TIMEOUT_S * 1000;
  if (!/^[+-]?\d{1,9}$/.test(raw)) {
    const where = given !== null && given !== undefined ? `connect_timeout in ${redactedUrl(url)}` : 'PGCONNECT_TIMEOUT';
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The ${where} is '${raw}', not a whole number of seconds.`, { data: { url: redactedUrl(url) } });
  }
  const seconds = Number(raw);
  return seconds <= 0 ? 0 : Math.max(2, seconds) * 1000;
}

/**
 * What the `pg` module (a `Pool`, a `Client`, pg-boss) is given to connect to `url`: the connection string and the
 * connect timeout of {@link connectTimeoutMs}.
 * @example new pg.Pool({ ...pgConnection(url), max: 4 })
 */
export function pgConnection(url: string, env: NodeJS.ProcessEnv = process.env): { connectionString: string; connectionTimeoutMillis: number } {
  return { connectionString: url, connectionTimeoutMillis: connectTimeoutMs(url, env) };
}

/** The message of a failed PostgreSQL call; a connection that timed out says so, and how to give it longer. */
export function postgresMessage(err: unknown): string {
  const message = messageOf(err);
  const cause = (err as { cause?: unknown } | undefined)?.cause;
  if (!/timeout|timed out/i.test(`${message} ${cause === undefined ? '' : messageOf(cause)}`)) return message;
  return `${message.replace(/\.$/, '')} (the server did not answer within the connect timeout: connect_timeout=SECONDS in the URL, ${DEFAULT_CONNECT_TIMEOUT_S} s by default)`;
}

/** An RS_IO error naming what failed. */
export function postgresError(what: string, err: unknown): ResourceSyncError {
  if (err instanceof ResourceSyncError) return err;
  return new ResourceSyncError('RS_IO', `${what}: ${postgresMessage(err)}.`, { cause: err });
}

/** Opens a pool of at most `max` connections to `url`; an idle connection dropped is replaced, the next query reports. */
async function openPool(url: string, max: number): Promise<pg.Pool> {
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ ...pgConnection(url), max });
  pool.on('error', () => undefined);
  return pool;
}

/**
 * Opens a pool on `url` and, unless `readonly`, creates or migrates the store's tables; answers the pool and the
 * schema version found (0: the package never wrote there).
 * @throws ResourceSyncError RS_IO when the database cannot be reached or holds a newer schema
 */
export async function openMigrated(
  url: string,
  schema: PostgresSchema,
  options: { max: number; readonly?: boolean },
): Promise<{ pool: pg.Pool; version: number }> {
  const pool = await openPool(url, options.max);
  try {
    const client = await pool.connect();
    try {
      let version = await schemaVersionOf(client, schema);
      if (options.readonly !== true && version < schema.migrations.length) {
        await migrateSchema(client, schema);
        version = await schemaVersionOf(client, schema);
      }
      checkSchemaVersion(schema, version);
      return { pool, version };
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw postgresError(`Cannot open ${schema.what} in PostgreSQL at ${redactedUrl(url)}`, err);
  }
}

/**
 * Runs `body` in one transaction on a client of `pool`: committed when it resolves; rolled back (a failing
 * ROLLBACK ignored) and its error rethrown when it throws; the client released either way.
 */
export async function inTransaction<T>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await body(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}
