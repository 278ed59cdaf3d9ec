/**
 * Versioned schemas in PostgreSQL, created and migrated by the package, never by hand: a schema is a list of
 * migrations (append, never edit) and a one-row table that says how many of them were applied. Migrations run in one
 * transaction under an advisory lock, so processes that open the same database at once migrate it once. A database
 * whose schema a newer package wrote is refused. Used by the Destination's state and the hub's store.
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';

/** One versioned schema. */
export interface PostgresSchema {
  /** What the schema holds, for messages ("the destination state"). */
  what: string;
  /** The one-row table of the version (`one BOOLEAN PRIMARY KEY`, `version INTEGER`). */
  versionTable: string;
  /** The advisory lock that serializes the migrations of this schema. */
  lock: number;
  /** The migrations in order; the version is how many were applied. */
  migrations: readonly string[];
}

/** The version of `schema` in the database: 0 when the package never created it there. */
export async function schemaVersionOf(client: pg.ClientBase, schema: Pick<PostgresSchema, 'versionTable'>): Promise<number> {
  const table = await client.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [schema.versionTable]);
  if (!table.rows[0]!.exists) return 0;
  const row = await client.query<{ version: number }>(`SELECT version FROM ${schema.versionTable}`);
  return row.rows[0]?.version ?? 0;
}

/** Refuses a database whose version of `schema` a newer package wrote. */
export function checkSchemaVersion(schema: PostgresSchema, version: number): void {
  const known = schema.migrations.length;
  if (version > known) {
    throw new ResourceSyncError('RS_IO', `The database holds ${schema.what}'s schema version ${version}; this package knows up to ${known}.`, {
      data: { version, known },
    });
  }
}

/** Creates the tables of `schema` or brings them to its last version, in one transaction, one migrating process at a time. */
export async function migrateSchema(client: pg.ClientBase, schema: PostgresSchema): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [schema.lock]);
    await client.query(`CREATE TABLE IF NOT EXISTS ${schema.versionTable} (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)`);
    const version = await schemaVersionOf(client, schema);
    checkSchemaVersion(schema, version);
    const target = schema.migrations.length;
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
