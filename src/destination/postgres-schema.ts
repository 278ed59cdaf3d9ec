/**
 * The tables of the PostgreSQL {@link DestinationState}, created and migrated by the package: the row of
 * `resourcesync_schema_version` says which of {@link MIGRATIONS} were applied. Every table is keyed by the
 * destination, so several destinations share one database. URLs are compared in the `"C"` collation (byte order,
 * which for UTF-8 is code-point order).
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';

/** The migrations in order; the schema version is how many of them were applied. Append, never edit. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE resourcesync_resources (
     destination TEXT NOT NULL, url TEXT COLLATE "C" NOT NULL, path TEXT NOT NULL, length BIGINT NOT NULL,
     hashes TEXT NOT NULL, lastmod TEXT, etag TEXT, links TEXT, PRIMARY KEY (destination, url));
   CREATE TABLE resourcesync_cursors (
     destination TEXT NOT NULL, key TEXT NOT NULL, datetime TEXT NOT NULL, change_list TEXT, position INTEGER,
     PRIMARY KEY (destination, key));
   CREATE TABLE resourcesync_meta (destination TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (destination, key));
   CREATE TABLE resourcesync_pending (
     destination TEXT NOT NULL, url TEXT COLLATE "C" NOT NULL, set_key TEXT NOT NULL, entry TEXT NOT NULL, code TEXT,
     PRIMARY KEY (destination, url));
   CREATE TABLE resourcesync_skipped_deletions (
     destination TEXT NOT NULL, url TEXT COLLATE "C" NOT NULL, set_key TEXT NOT NULL, PRIMARY KEY (destination, url));
   CREATE TABLE resourcesync_leases (
     destination TEXT PRIMARY KEY, holder TEXT NOT NULL, token TEXT NOT NULL, expires_at BIGINT NOT NULL);`,
  // the host and process of a lease's holder: on the same host, a holder whose process is gone lets it go at once
  `ALTER TABLE resourcesync_leases ADD COLUMN IF NOT EXISTS host TEXT, ADD COLUMN IF NOT EXISTS pid INTEGER;`,
];

/** The schema version this package writes. */
const SCHEMA_VERSION = MIGRATIONS.length;

/** Serializes concurrent migrations of one database (any number; it only has to be the same everywhere). */
const MIGRATION_LOCK = 0x7253_5359; // 'rSSY'

/** The schema version of the database, 0 when the package never created its tables there. */
export async function schemaVersion(client: pg.ClientBase): Promise<number> {
  const table = await client.query<{ exists: boolean }>("SELECT to_regclass('resourcesync_schema_version') IS NOT NULL AS exists");
  if (!table.rows[0]!.exists) return 0;
  const row = await client.query<{ version: number }>('SELECT version FROM resourcesync_schema_version');
  return row.rows[0]?.version ?? 0;
}

function tooNew(version: number): ResourceSyncError {
  return new ResourceSyncError('RS_IO', `The database holds the destination state's schema version ${version}; this package knows up to ${SCHEMA_VERSION}.`, {
    data: { version, known: SCHEMA_VERSION },
  });
}

/** Refuses a database whose schema a newer package wrote. */
export function checkVersion(version: number): void {
  if (version > SCHEMA_VERSION) throw tooNew(version);
}

/** Creates the tables or brings them to {@link SCHEMA_VERSION}, in one transaction, one migrating process at a time. */
export async function migrate(client: pg.ClientBase): Promise<void> {
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await client.query('CREATE TABLE IF NOT EXISTS resourcesync_schema_version (one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one), version INTEGER NOT NULL)');
    const version = await schemaVersion(client);
    checkVersion(version);
    for (let v = version; v < SCHEMA_VERSION; v++) await client.query(MIGRATIONS[v]!);
    if (version < SCHEMA_VERSION) {
      await client.query(
        'INSERT INTO resourcesync_schema_version (one, version) VALUES (TRUE, $1) ON CONFLICT (one) DO UPDATE SET version = excluded.version',
        [SCHEMA_VERSION],
      );
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
