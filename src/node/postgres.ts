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

/** An RS_IO error naming what failed. */
export function postgresError(what: string, err: unknown): ResourceSyncError {
  if (err instanceof ResourceSyncError) return err;
  return new ResourceSyncError('RS_IO', `${what}: ${messageOf(err)}.`, { cause: err });
}

/** Opens a pool of at most `max` connections to `url`; an idle connection dropped is replaced, the next query reports. */
async function openPool(url: string, max: number): Promise<pg.Pool> {
  const { default: postgres } = await import('pg');
  const pool = new postgres.Pool({ connectionString: url, max });
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
