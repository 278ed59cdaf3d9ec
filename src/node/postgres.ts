/**
 * What every PostgreSQL store of the package shares (the Destination's state, the Source's snapshots): opening a
 * connection pool (the `pg` module is loaded on the first open, not with the package) and a versioned schema that
 * the package creates and migrates itself, never by hand. Each store keeps its own list of migrations and its own
 * one-row version table, so that stores of different versions of the package may share one database.
 */
import type pg from 'pg';
import { ResourceSyncError, messageOf } from '../core/errors.js';

/** A store's tables: the migrations in order (append, never edit) and the table that says how many were applied. */
export interface PostgresSchema {
  /** The one-row table holding the schema version (how many of `migrations` were applied). */
  versionTable: string;
  migrations: readonly string[];
  /** What the tables hold, for messages ("destination state", "source snapshots"). */
  what: string;
}

/** Serializes concurrent migrations of one database (any number; it only has to be the same everywhere). */
const MIGRATION_LOCK = 0x7253_5359; // 'rSSY'

/** The database's clock in ms since the epoch, as SQL: leases expire on it, so machines whose clocks differ agree. */
export const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/** A connection string without its password, for messages and reports. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password !== '') u.password = '***';
    return u.href;
  } catch {
    return 'postgres://(unreadable URL)';
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

/** The schema version of the database, 0 when the package never created the store's tables there. */
async function schemaVersionOf(client: pg.ClientBase, schema: PostgresSchema): Promise<number> {
  const table = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [
    schema.versionTable,
  ]);
  if (!table.rows[0]!.exists) return 0;
  const row = await client.query<{ version: number }>(`SELECT version FROM ${schema.versionTable}`);
  return row.rows[0]?.version ?? 0;
}

/** Refuses a database whose schema a newer package wrote. */
function checkSchemaVersion(version: number, schema: PostgresSchema): void {
  const known = schema.migrations.length;
  if (version > known) {
    throw new ResourceSyncError(
      'RS_IO',
      `The database holds the ${schema.what}'s schema version ${version}; this package knows up to ${known}.`,
      {
        data: { version, known },
      },
    );
  }
}

/** Creates the tables or brings them to the newest version, in one transaction, one migrating process at a time. */
async function migrateSchema(client: pg.ClientBase, schema: PostgresSchema): Promise<void> {
  const target = schema.migrations.length;
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${schema.versionTable} (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)`,
    );
    const version = await schemaVersionOf(client, schema);
    checkSchemaVersion(version, schema);
    for (let v = version; v < target; v++) await client.query(schema.migrations[v]!);
    if (version < target) {
      await client.query(
        `INSERT INTO ${schema.versionTable} (one, version) VALUES (TRUE, $1) ON CONFLICT (one) DO UPDATE SET version = excluded.version`,
        [target],
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
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
      checkSchemaVersion(version, schema);
      return { pool, version };
    } finally {
      client.release();
    }
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw postgresError(`The PostgreSQL ${schema.what} at ${redactedUrl(url)} cannot be opened`, err);
  }
}
