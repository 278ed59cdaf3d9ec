/**
 * The tables of the PostgreSQL Source snapshots (`openPostgresSnapshots`, postgres-snapshots.ts), created and
 * migrated by the package (`openMigrated`, src/node/postgres.ts; the row of `resourcesync_snapshot_schema_version`
 * says how many of the migrations were applied). Several Sources, and the sets of each, share one database: a set
 * is a row of `resourcesync_snapshot_sets` (`source`, `set_name`) and every other table is keyed by its `set_id`.
 * Paths are compared in the `"C"` collation: byte order, which for UTF-8 is the order of the inventory.
 * @see Z39.99 §12.1 (Change List periods)
 */
import type { PostgresSchema } from '../node/postgres-migrations.js';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE resourcesync_snapshot_sets (
     id SERIAL PRIMARY KEY, source TEXT NOT NULL, set_name TEXT NOT NULL, UNIQUE (source, set_name));
   CREATE TABLE resourcesync_snapshot_meta (
     set_id INTEGER NOT NULL REFERENCES resourcesync_snapshot_sets (id), key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (set_id, key));
   CREATE TABLE resourcesync_snapshot_resources (
     set_id INTEGER NOT NULL, path TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL,
     mtime DOUBLE PRECISION NOT NULL, type TEXT NOT NULL, hashes TEXT NOT NULL, PRIMARY KEY (set_id, path));
   CREATE TABLE resourcesync_snapshot_periods (
     id BIGSERIAL PRIMARY KEY, set_id INTEGER NOT NULL REFERENCES resourcesync_snapshot_sets (id), from_ms BIGINT NOT NULL,
     until_ms BIGINT, count INTEGER NOT NULL DEFAULT 0);
   CREATE INDEX resourcesync_snapshot_periods_set ON resourcesync_snapshot_periods (set_id, id);
   CREATE TABLE resourcesync_snapshot_changes (
     seq BIGSERIAL PRIMARY KEY, set_id INTEGER NOT NULL, period BIGINT NOT NULL,
     path TEXT COLLATE "C" NOT NULL, change TEXT NOT NULL CHECK (change IN ('created', 'updated', 'deleted')), datetime BIGINT NOT NULL,
     size BIGINT, mtime DOUBLE PRECISION, type TEXT, hashes TEXT);
   CREATE INDEX resourcesync_snapshot_changes_period ON resourcesync_snapshot_changes (period, seq);
   CREATE INDEX resourcesync_snapshot_changes_set ON resourcesync_snapshot_changes (set_id, seq);
   CREATE TABLE resourcesync_snapshot_dumps (
     id BIGSERIAL PRIMARY KEY, set_id INTEGER NOT NULL REFERENCES resourcesync_snapshot_sets (id), kind TEXT NOT NULL,
     at_ms BIGINT, completed_ms BIGINT, from_ms BIGINT, until_ms BIGINT, period BIGINT, data TEXT NOT NULL);
   CREATE INDEX resourcesync_snapshot_dumps_set ON resourcesync_snapshot_dumps (set_id, kind, id);
   CREATE TABLE resourcesync_snapshot_leases (
     set_id INTEGER NOT NULL REFERENCES resourcesync_snapshot_sets (id), name TEXT NOT NULL, holder TEXT NOT NULL,
     expires_ms BIGINT NOT NULL, PRIMARY KEY (set_id, name));`,
];

/** The Source snapshots' tables. */
export const SNAPSHOTS_SCHEMA: PostgresSchema = {
  versionTable: 'resourcesync_snapshot_schema_version',
  migrations: MIGRATIONS,
  what: 'the source snapshots',
  lock: 0x7253_534e, // 'rSSN'
};
