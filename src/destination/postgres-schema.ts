/**
 * The tables of the PostgreSQL {@link DestinationState}, created and migrated by the package: the row of
 * `resourcesync_schema_version` says which of the migrations were applied (src/node/postgres.ts runs them). Every table is keyed by the
 * destination, so several destinations share one database. URLs are compared in the `"C"` collation (byte order,
 * which for UTF-8 is code-point order).
 */
import type { PostgresSchema } from '../node/postgres.js';

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
];

/** The destination state's tables, created and migrated by `openMigrated` (src/node/postgres.ts). */
export const DESTINATION_SCHEMA: PostgresSchema = { versionTable: 'resourcesync_schema_version', migrations: MIGRATIONS, what: 'destination state' };
