/**
 * The tables of the PostgreSQL {@link DestinationState}, created and migrated by the package: the row of
 * `resourcesync_schema_version` says which of {@link MIGRATIONS} were applied. Every table is keyed by the
 * destination, so several destinations share one database. URLs are compared in the `"C"` collation (byte order,
 * which for UTF-8 is code-point order).
 */
import type pg from 'pg';
import { checkSchemaVersion, migrateSchema, schemaVersionOf, type PostgresSchema } from '../node/postgres-migrations.js';

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
  // the type the Source listed for each resource (rs:md type): an aggregate gives it as the original's in `via`
  `ALTER TABLE resourcesync_resources ADD COLUMN IF NOT EXISTS type TEXT;`,
];

/** The destination state's schema: its migrations, version row and advisory lock. */
const SCHEMA: PostgresSchema = {
  what: 'the destination state',
  versionTable: 'resourcesync_schema_version',
  lock: 0x7253_5359, // 'rSSY'
  migrations: MIGRATIONS,
};

/** The schema version of the database, 0 when the package never created its tables there. */
export async function schemaVersion(client: pg.ClientBase): Promise<number> {
  return schemaVersionOf(client, SCHEMA);
}

/** Refuses a database whose schema a newer package wrote. */
export function checkVersion(version: number): void {
  checkSchemaVersion(SCHEMA, version);
}

/** Creates the tables or brings them to the last version, in one transaction, one migrating process at a time. */
export async function migrate(client: pg.ClientBase): Promise<void> {
  await migrateSchema(client, SCHEMA);
}
