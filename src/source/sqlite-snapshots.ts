/**
 * The embedded implementation of the Source's snapshots (`SourceSnapshots`, src/source/source-snapshots.ts): an
 * SQLite database (better-sqlite3, WAL), by default `<dir>/.resourcesync/source.sqlite`. It answers
 * synchronously underneath.
 *
 * A rebuild compares a new inventory with the stored snapshot (two sorted streams, `compareSorted`) and records
 * `created` / `updated` / `deleted` with the time of the change in one transaction. Every stream (the stored
 * snapshot a rebuild compares with, `lookup`, `listing`, `resources`, `changes`) is read through a read-only
 * connection of its own, so the writes of a running transaction never show up in it and the main connection is
 * never busy with a half-read stream (a lease is renewed meanwhile). Leases: sqlite-snapshot-leases.ts.
 * @see Z39.99 §5.1, §12.1 (Change List: from/until, open and closed), §12.2 (Change List Index)
 */
import Database from 'better-sqlite3';
import { ResourceSyncError, toError } from '../core/errors.js';
import { compareUtf8 } from '../core/utf8-order.js';
import type { InventoryEntry } from '../node/inventory.js';
import { abortError } from '../node/inventory.js';
import { openStore } from '../node/sqlite.js';
import { compareSorted } from './compare.js';
import {
  SCHEMA,
  rowToChange,
  rowToDump,
  rowToPeriod,
  rowToResource,
  toHashes,
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
import type { LeaseOptions, SnapshotCursor, SnapshotLease, SnapshotLeaseName, SourceSnapshots } from './source-snapshots.js';
import { SqliteLeases } from './sqlite-snapshot-leases.js';
import { SqliteRecording } from './sqlite-recording.js';

const RESOURCES_IN_ORDER = 'SELECT path, size, mtime, type, hashes FROM resources ORDER BY path';
const CHANGE_COLUMNS = 'SELECT seq, period, path, change, datetime, size, mtime, type, hashes FROM changes';

/**
 * Opens (creating if needed) the SQLite snapshots at `file`.
 * @throws ResourceSyncError RS_LOCKED when another process holds the database past the busy timeout, RS_IO otherwise
 * @example
 * const snapshots = openSqliteSnapshots('/srv/data/.resourcesync/source.sqlite');
 * const cursor = await snapshots.lookup();
 * const r = await snapshots.rebuild(inventory('/srv/data', { previous: cursor.get }), { maxEntries: 1000 });
 * await cursor.close();
 * await snapshots.close();
 */
export function openSqliteSnapshots(file: string): SourceSnapshots {
  return new SqliteSnapshots(file, openStore(file, { schema: SCHEMA, synchronous: 'NORMAL' }));
}

class SqliteSnapshots implements SourceSnapshots {
  readonly location: string;
  private readonly db: Database.Database;
  private readonly leases: SqliteLeases;
  /** Read-only connections of the streams being read, closed with the store. */
  private readonly readers = new Set<Database.Database>();
  private closed = false;

  constructor(file: string, db: Database.Database) {
    this.location = file;
    this.db = db;
    this.leases = new SqliteLeases(file, db);
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      for (const reader of this.readers) reader.close();
      this.readers.clear();
      this.db.close();
    }
    return Promise.resolve();
  }

  snapshotAt(): Promise<number | undefined> {
    return Promise.resolve(this.snapshotTime());
  }

  changedAt(): Promise<number | undefined> {
    return Promise.resolve(this.changeTime());
  }

  clock(now: () => number = Date.now): Promise<number> {
    return Promise.resolve(this.clockNow(now));
  }

  getMeta(key: string): Promise<string | undefined> {
    return Promise.resolve(this.meta(key));
  }

  setMeta(key: string, value: string): Promise<void> {
    this.writeMeta(key, value);
    return Promise.resolve();
  }

  count(): Promise<number> {
    return Promise.resolve((this.db.prepare('SELECT count(*) AS n FROM resources').get() as { n: number }).n);
  }

  resources(): AsyncIterable<StoredResource> {
    return this.stream((reader) => reader.prepare(RESOURCES_IN_ORDER).iterate() as IterableIterator<ResourceRow>, rowToResource);
  }

  listing(): AsyncIterable<ListedResource> {
    return this.stream(
      (reader) => reader.prepare(RESOURCES_IN_ORDER).raw(true).iterate() as IterableIterator<[string, number, number, string, string]>,
      (row) => ({ path: row[0], size: row[1], mtimeMs: row[2], type: row[3], hashText: row[4] }),
    );
  }

  holdsUnder(path: string): Promise<boolean> {
    // every path under `path/` sorts between `path/` and `path0` ('0' follows '/')
    return Promise.resolve(this.db.prepare('SELECT 1 FROM resources WHERE path > ? AND path < ? LIMIT 1').get(`${path}/`, `${path}0`) !== undefined);
  }

  resource(path: string): Promise<StoredResource | undefined> {
    return Promise.resolve(this.storedResource(path));
  }

  lookup(): Promise<SnapshotCursor> {
    const reader = this.openReader();
    const rows = reader.prepare(RESOURCES_IN_ORDER).iterate() as IterableIterator<ResourceRow>;
    let current = rows.next();
    let done = false;
    const close = (): Promise<void> => {
      if (!done) {
        done = true;
        rows.return?.();
        this.closeReader(reader);
      }
      return Promise.resolve();
    };
    const get = (path: string): StoredResource | undefined => {
      while (!current.done && compareUtf8(current.value.path, path) < 0) current = rows.next();
      if (current.done || current.value.path !== path) return undefined;
      const row = current.value;
      return { path: row.path, size: row.size, mtimeMs: row.mtime, type: row.type, hashes: toHashes(row.hashes) };
    };
    return Promise.resolve({ get, close });
  }

  periods(): Promise<ChangePeriod[]> {
    return Promise.resolve(this.allPeriods());
  }

  openPeriod(): Promise<ChangePeriod | undefined> {
    const row = this.db.prepare('SELECT id, from_ms, until_ms, count FROM periods WHERE until_ms IS NULL ORDER BY id DESC LIMIT 1').get() as PeriodRow | undefined;
    return Promise.resolve(row === undefined ? undefined : rowToPeriod(row));
  }

  changes(period: number): AsyncIterable<ChangeRecord> {
    return this.stream((reader) => reader.prepare(`${CHANGE_COLUMNS} WHERE period = ? ORDER BY seq`).iterate(period) as IterableIterator<ChangeRow>, rowToChange);
  }

  allChanges(): AsyncIterable<ChangeRecord> {
    return this.stream((reader) => reader.prepare(`${CHANGE_COLUMNS} ORDER BY seq`).iterate() as IterableIterator<ChangeRow>, rowToChange);
  }

  prunePeriods(keep: number, keepAfter = Infinity): Promise<ChangePeriod[]> {
    const closed = this.allPeriods().filter((p) => p.until !== undefined);
    const drop = closed.slice(0, Math.max(0, closed.length - keep)).filter((p) => p.until! <= keepAfter);
    this.db.transaction(() => {
      for (const p of drop) {
        this.db.prepare('DELETE FROM changes WHERE period = ?').run(p.id);
        this.db.prepare('DELETE FROM periods WHERE id = ?').run(p.id);
      }
    })();
    return Promise.resolve(drop);
  }

  addDump(dump: Omit<DumpRecord, 'id'>): Promise<DumpRecord> {
    const info = this.db
      .prepare('INSERT INTO dumps(kind, at_ms, completed_ms, from_ms, until_ms, period, data) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(dump.kind, dump.at ?? null, dump.completed ?? null, dump.from ?? null, dump.until ?? null, dump.period ?? null, dump.data);
    return Promise.resolve({ ...dump, id: Number(info.lastInsertRowid) });
  }

  dumps(kind: DumpRecord['kind']): Promise<DumpRecord[]> {
    return Promise.resolve((this.db.prepare('SELECT * FROM dumps WHERE kind = ? ORDER BY id').all(kind) as DumpRow[]).map(rowToDump));
  }

  removeDump(id: number): Promise<void> {
    this.db.prepare('DELETE FROM dumps WHERE id = ?').run(id);
    return Promise.resolve();
  }

  async rebuild(entries: AsyncIterable<InventoryEntry> | Iterable<InventoryEntry>, options: RebuildOptions = {}): Promise<RebuildResult> {
    const baseline = this.snapshotTime() === undefined;
    const signal = options.signal;
    let reader: Database.Database | undefined;
    try {
      return await this.recording(options, baseline, async (recording) => {
        let n = 0;
        if (baseline) {
          for await (const entry of entries) {
            recording.insert(entry);
            if ((++n & 1023) === 0 && signal?.aborted) throw abortError(signal);
          }
          return;
        }
        reader = this.openReader();
        const stored = mapRows(reader.prepare(RESOURCES_IN_ORDER).iterate() as IterableIterator<ResourceRow>, rowToResource);
        for await (const c of compareSorted(entries, stored, sameContent)) {
          recording.apply(c.kind === 'deleted' ? { path: c.path, before: c.before } : { path: c.path, now: c.now, ...(c.kind === 'created' ? {} : { before: c.before }) });
          if ((++n & 1023) === 0 && signal?.aborted) throw abortError(signal);
        }
        this.writeMeta('snapshot_at', String(recording.result.at));
      });
    } finally {
      if (reader !== undefined) this.closeReader(reader);
    }
  }

  update(states: Iterable<{ path: string; entry: InventoryEntry | undefined }>, options: RebuildOptions = {}): Promise<RebuildResult> {
    if (this.snapshotTime() === undefined) {
      return Promise.reject(new ResourceSyncError('RS_INVALID_ARGUMENT', 'The snapshot store has no baseline yet: rebuild it first.', { data: { file: this.location } }));
    }
    return this.recording(options, false, (recording) => {
      for (const { path, entry } of states) {
        const before = this.storedResource(path);
        if (entry === undefined && before === undefined) continue;
        recording.apply({ path, ...(entry ? { now: entry } : {}), ...(before ? { before } : {}) });
      }
      return Promise.resolve();
    });
  }

  acquireLease(name: SnapshotLeaseName, options?: LeaseOptions): Promise<SnapshotLease> {
    return this.leases.acquire(name, options);
  }

  /** One recording transaction (BEGIN IMMEDIATE … COMMIT, ROLLBACK on a throw); `body` applies the states. */
  private async recording(options: RebuildOptions, baseline: boolean, body: (recording: SqliteRecording) => Promise<void>): Promise<RebuildResult> {
    const at = this.clockNow(options.now ?? Date.now);
    const db = this.db;
    db.exec('BEGIN IMMEDIATE');
    try {
      const recording = new SqliteRecording(db, options, { at, baseline, open: this.currentPeriodRow() });
      await body(recording);
      recording.finish();
      if (baseline) this.writeMeta('snapshot_at', String(at));
      if (recording.changed()) this.writeMeta('changed_at', String(at));
      db.exec('COMMIT');
      return recording.result;
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
  }

  private currentPeriodRow(): ChangePeriod | undefined {
    const row = this.db.prepare('SELECT id, from_ms, until_ms, count FROM periods WHERE until_ms IS NULL ORDER BY id DESC LIMIT 1').get() as PeriodRow | undefined;
    return row === undefined ? undefined : rowToPeriod(row);
  }

  private allPeriods(): ChangePeriod[] {
    return (this.db.prepare('SELECT id, from_ms, until_ms, count FROM periods ORDER BY id').all() as PeriodRow[]).map(rowToPeriod);
  }

  private storedResource(path: string): StoredResource | undefined {
    const row = this.db.prepare('SELECT path, size, mtime, type, hashes FROM resources WHERE path = ?').get(path) as ResourceRow | undefined;
    return row === undefined ? undefined : rowToResource(row);
  }

  private meta(key: string): string | undefined {
    const row = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  private writeMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  private snapshotTime(): number | undefined {
    const value = this.meta('snapshot_at');
    return value === undefined ? undefined : Number(value);
  }

  private changeTime(): number | undefined {
    const value = this.meta('changed_at');
    return value === undefined ? undefined : Number(value);
  }

  private clockNow(now: () => number): number {
    const changed = this.changeTime();
    return Math.max(now(), changed === undefined ? -Infinity : changed + 1, this.snapshotTime() ?? -Infinity);
  }

  private openReader(): Database.Database {
    const reader = new Database(this.location, { readonly: true, fileMustExist: true });
    this.readers.add(reader);
    return reader;
  }

  private closeReader(reader: Database.Database): void {
    if (this.readers.delete(reader)) reader.close();
  }

  /**
   * The rows `query` reads through a read-only connection opened at the first `next()` and closed at the end,
   * on `return()` (a `break`) or on an error; each `next()` answers at once (no generator in between).
   */
  private stream<Row, T>(query: (reader: Database.Database) => IterableIterator<Row>, toRecord: (row: Row) => T): AsyncIterable<T> {
    return {
      [Symbol.asyncIterator]: (): AsyncIterator<T> => {
        let reader: Database.Database | undefined;
        let rows: IterableIterator<Row> | undefined;
        let finished = false;
        const end = (): void => {
          if (finished) return;
          finished = true;
          rows?.return?.();
          if (reader !== undefined) this.closeReader(reader);
        };
        return {
          next: (): Promise<IteratorResult<T>> => {
            if (finished) return Promise.resolve({ done: true, value: undefined });
            try {
              if (rows === undefined) {
                reader = this.openReader();
                rows = query(reader);
              }
              const r = rows.next();
              if (r.done === true) {
                end();
                return Promise.resolve({ done: true, value: undefined });
              }
              return Promise.resolve({ done: false, value: toRecord(r.value) });
            } catch (err) {
              end();
              return Promise.reject(toError(err));
            }
          },
          return: (): Promise<IteratorResult<T>> => {
            end();
            return Promise.resolve({ done: true, value: undefined });
          },
        };
      },
    };
  }
}

function* mapRows<Row, T>(rows: IterableIterator<Row>, toRecord: (row: Row) => T): Generator<T> {
  for (const row of rows) yield toRecord(row);
}
