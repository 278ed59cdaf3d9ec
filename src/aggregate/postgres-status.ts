/**
 * The status of every Source of an aggregate whose state is in PostgreSQL, copied there (table
 * `resourcesync_aggregate_status`, keyed by the aggregate's key and the Source id) as the aggregator writes it to
 * its local `aggregate.sqlite`: so that `aggregate status` reads it from any machine that reaches the database. The
 * writes go in the background, in order, the latest status of a Source replacing one not yet written; a database
 * that does not answer is reported and tried again at the next change.
 * @see docs/aggregate.md ("In PostgreSQL and S3")
 */
import type pg from 'pg';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { checkSchemaVersion, migrateSchema, schemaVersionOf, type PostgresSchema } from '../node/postgres-migrations.js';
import type { SourceStatus } from './status.js';

const SCHEMA: PostgresSchema = {
  what: 'the aggregate status',
  versionTable: 'resourcesync_aggregate_status_version',
  lock: 0x7253_4147, // 'rSAG'
  migrations: [
    `CREATE TABLE resourcesync_aggregate_status (
       aggregate TEXT NOT NULL, id TEXT NOT NULL, status TEXT NOT NULL, PRIMARY KEY (aggregate, id));`,
  ],
};

/** The copy of the status in PostgreSQL, written in the background. */
export interface PostgresStatusCopy {
  /** Queues the status of a Source (a later one of the same Source replaces it while not written). */
  put(status: SourceStatus): void;
  /** Writes what is queued, then lets the database go. */
  close(): Promise<void>;
}

/** Opens a pool on `url` (the `pg` module loaded here, not with the package). */
async function pool(url: string): Promise<pg.Pool> {
  const { default: postgres } = await import('pg');
  const p = new postgres.Pool({ connectionString: url, max: 1 });
  p.on('error', () => undefined); // an idle connection dropped: the next query reports
  return p;
}

/**
 * Starts copying the status of the aggregate `key` into the database at `url`; `onError` hears of a write that
 * failed (the status stays in the local file; the next change tries again).
 */
export function copyStatusToPostgres(url: string, key: string, onError: (error: unknown) => void): PostgresStatusCopy {
  const queued = new Map<string, SourceStatus>();
  let opened: Promise<pg.Pool> | undefined;
  let running: Promise<void> | undefined;
  const open = (): Promise<pg.Pool> => {
    opened ??= pool(url).then(async (p) => {
      const client = await p.connect();
      try {
        await migrateSchema(client, SCHEMA);
      } finally {
        client.release();
      }
      return p;
    });
    return opened;
  };
  const drain = async (): Promise<void> => {
    while (queued.size > 0) {
      const batch = [...queued.values()];
      queued.clear();
      try {
        const p = await open();
        await p.query(
          `INSERT INTO resourcesync_aggregate_status (aggregate, id, status) SELECT $1, * FROM unnest($2::text[], $3::text[])
           ON CONFLICT (aggregate, id) DO UPDATE SET status = excluded.status`,
          [key, batch.map((s) => s.id), batch.map((s) => JSON.stringify(s))],
        );
      } catch (error) {
        opened = undefined; // opened again at the next change, which writes these too
        for (const s of batch) if (!queued.has(s.id)) queued.set(s.id, s);
        onError(new ResourceSyncError('RS_IO', `The aggregate status could not be written to PostgreSQL: ${messageOf(error)}.`, { cause: error }));
        return;
      }
    }
  };
  const kick = (): void => {
    running ??= drain().finally(() => {
      running = undefined;
      if (queued.size > 0 && opened !== undefined) kick();
    });
  };
  return {
    put: (status) => {
      queued.set(status.id, status);
      kick();
    },
    close: async () => {
      while (running !== undefined) await running;
      if (queued.size > 0) await drain();
      const p = await opened?.catch(() => undefined);
      await p?.end().catch(() => undefined);
    },
  };
}

/**
 * The status of every Source of the aggregate `key` in the database at `url`, unsorted.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` when the database holds none for it, `RS_IO` when it cannot be read
 */
export async function readPostgresStatus(url: string, key: string): Promise<SourceStatus[]> {
  const p = await pool(url);
  try {
    let rows: { status: string }[];
    try {
      const client = await p.connect();
      try {
        const version = await schemaVersionOf(client, SCHEMA);
        checkSchemaVersion(SCHEMA, version);
        rows = version === 0 ? [] : (await client.query<{ status: string }>('SELECT status FROM resourcesync_aggregate_status WHERE aggregate = $1', [key])).rows;
      } finally {
        client.release();
      }
    } catch (error) {
      if (error instanceof ResourceSyncError) throw error;
      throw new ResourceSyncError('RS_IO', `The aggregate status cannot be read from PostgreSQL: ${messageOf(error)}.`, { cause: error });
    }
    if (rows.length === 0) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The database holds no status of the aggregate '${key}': has the aggregator run with this state?`, { data: { key } });
    }
    return rows.map((r) => JSON.parse(r.status) as SourceStatus);
  } finally {
    await p.end().catch(() => undefined);
  }
}
