/**
 * The Source's snapshots (`SourceSnapshots`, src/source/source-snapshots.ts) in PostgreSQL, so that several build
 * runs, processes or machines share one Source's history: several Sources and their sets in one database, each
 * set a row of `resourcesync_snapshot_sets` keyed by (`source`, `set`); the tables are created and migrated by
 * the package (postgres-snapshot-schema.ts).
 *
 * Every stream (`resources`, `listing`, `changes`, `allChanges`, a `lookup`, the stored snapshot a rebuild
 * compares with) is a server-side cursor in a REPEATABLE READ transaction of its own connection, read a page at a
 * time: it sees the snapshot as it was when it opened and is never held whole. A recording (`rebuild`, `update`)
 * is one transaction that first locks its set's row, so recordings of one set never overlap, whichever machine
 * runs them; its rows are written as multi-row statements (postgres-recording.ts). Leases:
 * postgres-snapshot-leases.ts.
 * @see Z39.99 §5.1, §12.1 (Change List: from/until, open and closed), §12.2 (Change List Index)
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import { compareUtf8 } from '../core/utf8-order.js';
import type { InventoryEntry } from '../node/inventory.js';
import { abortError } from '../node/inventory.js';
import { openMigrated, postgresError, redactedUrl } from '../node/postgres.js';
import { PostgresSetRows } from './postgres-set-rows.js';
import { compareSorted } from './compare.js';
import { PostgresLeases } from './postgres-snapshot-leases.js';
import { PostgresRecording } from './postgres-recording.js';
import { SNAPSHOTS_SCHEMA } from './postgres-snapshot-schema.js';
import {
  rowToChange,
  rowToDump,
  rowToPeriod,
  rowToResource,
  sameContent,
  type ChangePeriod,
  type ChangeRecord,
  type ChangeRow,
  type DumpRecord,
  type DumpRow,
  type ListedResource,
  type PeriodRow,
  type RebuildOptions,
  type RebuildResult,
  type ResourceRow,
  type StoredResource,
} from './snapshot-rows.js';
import type {
  LeaseOptions,
  SnapshotCursor,
  SnapshotLease,
  SnapshotLeaseName,
  SourceSnapshots,
} from './source-snapshots.js';

/** How {@link openPostgresSnapshots} opens a set's snapshots. */
export interface PostgresSnapshotsOptions {
  /** The Source's key in the database (its base URL, say). Default `default`. */
  source?: string;
  /** The set's name (the capability set); required. */
  set: string;
  /** Most connections the pool opens (each stream being read holds one). Default 8. */
  maxConnections?: number;
}

const RESOURCE_COLUMNS = 'path, size::float8 AS size, mtime, type, hashes';
const CHANGE_COLUMNS =
  'seq::float8 AS seq, period::float8 AS period, path, change, datetime::float8 AS datetime, size::float8 AS size, mtime, type, hashes';
const PERIOD_COLUMNS = 'id::float8 AS id, from_ms::float8 AS from_ms, until_ms::float8 AS until_ms, count';
const DUMP_COLUMNS =
  'id::float8 AS id, kind, at_ms::float8 AS at_ms, completed_ms::float8 AS completed_ms, from_ms::float8 AS from_ms, until_ms::float8 AS until_ms, period::float8 AS period, data';
const RESOURCES_IN_ORDER = `SELECT ${RESOURCE_COLUMNS} FROM resourcesync_snapshot_resources WHERE set_id = $1 ORDER BY path`;
/** Stored paths looked up at once by an `update`. */
const LOOKUP_BATCH = 1000;

class PostgresSnapshots implements SourceSnapshots {
  readonly location: string;
  readonly #pool: pg.Pool;
  readonly #setId: number;
  readonly #leases: PostgresLeases;
  readonly #db: PostgresSetRows;
  #closed = false;

  constructor(pool: pg.Pool, setId: number, location: string, lineKey: string) {
    this.#pool = pool;
    this.#setId = setId;
    this.location = location;
    this.#leases = new PostgresLeases(pool, setId, lineKey, location);
    this.#db = new PostgresSetRows(pool, setId);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#db.closeCursors();
    await this.#pool.end();
  }

  snapshotAt(): Promise<number | undefined> {
    return this.#db.time('snapshot_at');
  }

  changedAt(): Promise<number | undefined> {
    return this.#db.time('changed_at');
  }

  async #clockNow(now: () => number, client?: pg.ClientBase): Promise<number> {
    const changed = await this.#db.time('changed_at', client);
    return Math.max(
      now(),
      changed === undefined ? -Infinity : changed + 1,
      (await this.#db.time('snapshot_at', client)) ?? -Infinity,
    );
  }

  clock(now: () => number = Date.now): Promise<number> {
    return this.#clockNow(now);
  }

  getMeta(key: string): Promise<string | undefined> {
    return this.#db.meta(key);
  }

  setMeta(key: string, value: string): Promise<void> {
    return this.#db.writeMeta(key, value);
  }

  async count(): Promise<number> {
    return (
      await this.#db.rows<{ n: number }>(
        'SELECT count(*)::float8 AS n FROM resourcesync_snapshot_resources WHERE set_id = $1',
      )
    )[0]!.n;
  }

  resources(): AsyncIterable<StoredResource> {
    return this.#db.stream<ResourceRow, StoredResource>(RESOURCES_IN_ORDER, [], rowToResource);
  }

  listing(): AsyncIterable<ListedResource> {
    return this.#db.stream<ResourceRow, ListedResource>(RESOURCES_IN_ORDER, [], (r) => ({
      path: r.path,
      size: r.size,
      mtimeMs: r.mtime,
      type: r.type,
      hashText: r.hashes,
    }));
  }

  async holdsUnder(path: string): Promise<boolean> {
    // every path under `path/` sorts between `path/` and `path0` ('0' follows '/')
    return (
      (
        await this.#db.rows(
          'SELECT 1 FROM resourcesync_snapshot_resources WHERE set_id = $1 AND path > $2 AND path < $3 LIMIT 1',
          [`${path}/`, `${path}0`],
        )
      ).length > 0
    );
  }

  async resource(path: string): Promise<StoredResource | undefined> {
    const row = (
      await this.#db.rows<ResourceRow>(
        `SELECT ${RESOURCE_COLUMNS} FROM resourcesync_snapshot_resources WHERE set_id = $1 AND path = $2`,
        [path],
      )
    )[0];
    return row === undefined ? undefined : rowToResource(row);
  }

  async lookup(): Promise<SnapshotCursor> {
    const rows = (await this.#db.openCursor<ResourceRow>(RESOURCES_IN_ORDER))[Symbol.asyncIterator]();
    let current = await rows.next();
    const get = async (path: string): Promise<StoredResource | undefined> => {
      while (current.done !== true && compareUtf8(current.value.path, path) < 0) current = await rows.next();
      return current.done !== true && current.value.path === path ? current.value : undefined;
    };
    return { get, close: async () => void (await rows.return?.(undefined)) };
  }

  async periods(client?: pg.ClientBase): Promise<ChangePeriod[]> {
    return (
      await this.#db.rows<PeriodRow>(
        `SELECT ${PERIOD_COLUMNS} FROM resourcesync_snapshot_periods WHERE set_id = $1 ORDER BY id`,
        [],
        client,
      )
    ).map(rowToPeriod);
  }

  async openPeriod(client?: pg.ClientBase): Promise<ChangePeriod | undefined> {
    const row = (
      await this.#db.rows<PeriodRow>(
        `SELECT ${PERIOD_COLUMNS} FROM resourcesync_snapshot_periods WHERE set_id = $1 AND until_ms IS NULL ORDER BY id DESC LIMIT 1`,
        [],
        client,
      )
    )[0];
    return row === undefined ? undefined : rowToPeriod(row);
  }

  changes(period: number): AsyncIterable<ChangeRecord> {
    return this.#db.stream<ChangeRow, ChangeRecord>(
      `SELECT ${CHANGE_COLUMNS} FROM resourcesync_snapshot_changes WHERE set_id = $1 AND period = $2 ORDER BY seq`,
      [period],
      rowToChange,
    );
  }

  allChanges(): AsyncIterable<ChangeRecord> {
    return this.#db.stream<ChangeRow, ChangeRecord>(
      `SELECT ${CHANGE_COLUMNS} FROM resourcesync_snapshot_changes WHERE set_id = $1 ORDER BY seq`,
      [],
      rowToChange,
    );
  }

  prunePeriods(keep: number, keepAfter = Infinity): Promise<ChangePeriod[]> {
    return this.#db.transaction(async (client) => {
      const closed = (await this.periods(client)).filter((p) => p.until !== undefined);
      const drop = closed.slice(0, Math.max(0, closed.length - keep)).filter((p) => p.until! <= keepAfter);
      const ids = drop.map((p) => p.id);
      if (ids.length > 0) {
        await this.#db.rows(
          'DELETE FROM resourcesync_snapshot_changes WHERE set_id = $1 AND period = ANY($2::bigint[])',
          [ids],
          client,
        );
        await this.#db.rows(
          'DELETE FROM resourcesync_snapshot_periods WHERE set_id = $1 AND id = ANY($2::bigint[])',
          [ids],
          client,
        );
      }
      return drop;
    });
  }

  async addDump(dump: Omit<DumpRecord, 'id'>): Promise<DumpRecord> {
    const [row] = await this.#db.rows<{ id: number }>(
      'INSERT INTO resourcesync_snapshot_dumps (set_id, kind, at_ms, completed_ms, from_ms, until_ms, period, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id::float8 AS id',
      [
        dump.kind,
        dump.at ?? null,
        dump.completed ?? null,
        dump.from ?? null,
        dump.until ?? null,
        dump.period ?? null,
        dump.data,
      ],
    );
    return { ...dump, id: row!.id };
  }

  async dumps(kind: DumpRecord['kind']): Promise<DumpRecord[]> {
    return (
      await this.#db.rows<DumpRow>(
        `SELECT ${DUMP_COLUMNS} FROM resourcesync_snapshot_dumps WHERE set_id = $1 AND kind = $2 ORDER BY id`,
        [kind],
      )
    ).map(rowToDump);
  }

  async removeDump(id: number): Promise<void> {
    await this.#db.rows('DELETE FROM resourcesync_snapshot_dumps WHERE set_id = $1 AND id = $2', [id]);
  }

  rebuild(
    entries: AsyncIterable<InventoryEntry> | Iterable<InventoryEntry>,
    options: RebuildOptions = {},
  ): Promise<RebuildResult> {
    const signal = options.signal;
    return this.#recording(options, undefined, async (recording) => {
      let n = 0;
      const check = (): void => {
        if ((++n & 1023) === 0 && signal?.aborted === true) throw abortError(signal);
      };
      if (recording.result.baseline) {
        for await (const entry of entries) {
          await recording.insert(entry);
          check();
        }
        return;
      }
      // the stored snapshot through a cursor opened after this transaction locked the set: the latest recording's
      const stored = await this.#db.openCursor<ResourceRow>(RESOURCES_IN_ORDER);
      try {
        for await (const c of compareSorted(entries, stored, sameContent)) {
          await recording.apply(
            c.kind === 'deleted'
              ? { path: c.path, before: c.before }
              : { path: c.path, now: c.now, ...(c.kind === 'created' ? {} : { before: c.before }) },
          );
          check();
        }
      } finally {
        await stored.return(undefined);
      }
    });
  }

  update(
    states: Iterable<{ path: string; entry: InventoryEntry | undefined }>,
    options: RebuildOptions = {},
  ): Promise<RebuildResult> {
    return this.#recording(options, false, async (recording, client) => {
      // what this update already wrote, for a path it names twice
      const written = new Map<string, StoredResource | undefined>();
      const batch: Array<{ path: string; entry: InventoryEntry | undefined }> = [];
      const flush = async (): Promise<void> => {
        const rows = await this.#db.rows<ResourceRow>(
          `SELECT ${RESOURCE_COLUMNS} FROM resourcesync_snapshot_resources WHERE set_id = $1 AND path = ANY($2::text[])`,
          [batch.map((s) => s.path)],
          client,
        );
        const stored = new Map(rows.map((row) => [row.path, rowToResource(row)]));
        for (const { path, entry } of batch.splice(0)) {
          const before = written.has(path) ? written.get(path) : stored.get(path);
          written.set(path, entry);
          if (entry === undefined && before === undefined) continue;
          await recording.apply({ path, ...(entry ? { now: entry } : {}), ...(before ? { before } : {}) });
        }
      };
      for (const state of states) {
        batch.push(state);
        if (batch.length >= LOOKUP_BATCH) await flush();
      }
      if (batch.length > 0) await flush();
    });
  }

  acquireLease(name: SnapshotLeaseName, options?: LeaseOptions): Promise<SnapshotLease> {
    return this.#leases.acquire(name, options);
  }

  /**
   * One recording transaction: locks the set's row (recordings of one set, from any machine, one after the other),
   * takes the time, applies `body`, commits; rolls back on a throw. `baseline` false refuses a set without one.
   */
  async #recording(
    options: RebuildOptions,
    baseline: false | undefined,
    body: (recording: PostgresRecording, client: pg.ClientBase) => Promise<void>,
  ): Promise<RebuildResult> {
    return this.#db.transaction(async (client) => {
      await this.#db.rows('SELECT id FROM resourcesync_snapshot_sets WHERE id = $1 FOR UPDATE', [], client);
      const first = (await this.#db.time('snapshot_at', client)) === undefined;
      if (first && baseline === false) {
        throw new ResourceSyncError(
          'RS_INVALID_ARGUMENT',
          'The snapshot store has no baseline yet: rebuild it first.',
          { data: { path: this.location } },
        );
      }
      const at = await this.#clockNow(options.now ?? Date.now, client);
      const recording = await PostgresRecording.start(client, this.#setId, options, {
        at,
        baseline: first,
        open: await this.openPeriod(client),
      });
      try {
        await body(recording, client);
        await recording.finish();
      } catch (err) {
        await recording.abort();
        throw err;
      }
      if (first || baseline === undefined) await this.#db.writeMeta('snapshot_at', String(at), client);
      if (recording.changed()) await this.#db.writeMeta('changed_at', String(at), client);
      return recording.result;
    });
  }

}

/**
 * Opens the snapshots of one set of one Source in the PostgreSQL database at `url` (a `postgres://` connection
 * string), creating or migrating the package's tables and the set's row when needed.
 * @throws ResourceSyncError RS_IO when the database cannot be reached or holds a newer schema, RS_INVALID_ARGUMENT
 *   without a set name
 * @example
 * const snapshots = await openPostgresSnapshots('postgres://rs@db/rs', { source: 'https://example.org/', set: 'data' });
 * const r = await snapshots.rebuild(inventory('/srv/data'));
 * await snapshots.close();
 * // or for every set of a publication:
 * await publish({ ...options, snapshots: ({ name }) => openPostgresSnapshots(url, { source: 'https://example.org/', set: name }) });
 */
export async function openPostgresSnapshots(url: string, options: PostgresSnapshotsOptions): Promise<SourceSnapshots> {
  if (typeof options.set !== 'string' || options.set === '')
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'PostgreSQL snapshots need a set name.');
  const source = options.source ?? 'default';
  const { pool } = await openMigrated(url, SNAPSHOTS_SCHEMA, { max: options.maxConnections ?? 8 });
  const location = `${redactedUrl(url)} (source '${source}', set '${options.set}')`;
  try {
    await pool.query(
      'INSERT INTO resourcesync_snapshot_sets (source, set_name) VALUES ($1, $2) ON CONFLICT (source, set_name) DO NOTHING',
      [source, options.set],
    );
    const row = await pool.query<{ id: number }>(
      'SELECT id FROM resourcesync_snapshot_sets WHERE source = $1 AND set_name = $2',
      [source, options.set],
    );
    const setId = row.rows[0]!.id;
    return new PostgresSnapshots(pool, setId, location, `postgres:${url}\u0000${setId}`);
  } catch (err) {
    await pool.end().catch(() => undefined);
    throw postgresError(`The PostgreSQL source snapshots at ${location} cannot be opened`, err);
  }
}
