/**
 * The Source's persistent state: a snapshot of the inventory of one set of resources, the changes
 * recorded between snapshots, the Change List periods (open and closed) and the published dumps, in an
 * embedded SQLite database (better-sqlite3, WAL) — by default `<dir>/.resourcesync/source.sqlite`.
 *
 * A rebuild compares a new inventory with the stored snapshot (two sorted streams, `compareSorted`) and
 * records `created` / `updated` / `deleted` with the time of the change in one transaction. The stored
 * snapshot is read through a second connection, so the writes of the running transaction never show up
 * in the streams being compared.
 * @see Z39.99 §5.1, §12.1 (Change List: from/until, open and closed), §12.2 (Change List Index)
 */
import Database from 'better-sqlite3';
import type { ChangeType } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';
import { openStore } from '../node/sqlite.js';
import { formatHashes } from '../core/hash.js';
import { compareUtf8 } from '../core/utf8-order.js';
import type { Hashes, InventoryEntry, PreviousState } from '../node/inventory.js';
import { abortError } from '../node/inventory.js';
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
  type RebuildResult,
  type ResourceRow,
  type StoredResource,
  type RebuildOptions,
} from './snapshot-rows.js';

export { sameContent, type ChangePeriod, type ChangeRecord, type ChangeListBoundary, type DumpRecord, type ListedResource, type RebuildOptions, type RebuildResult, type StoredResource } from './snapshot-rows.js';

/** A recording transaction as `rebuild` and `update` drive it. */
interface Recording {
  result: RebuildResult;
  /** A resource of the baseline (no change recorded). */
  insert(e: InventoryEntry): void;
  /** One path's state now (undefined: not published) against the stored one (undefined: not listed). */
  apply(s: { path: string; now?: InventoryEntry; before?: { size: number; mtimeMs: number; hashes: Hashes } }): void;
}

/**
 * The snapshot store of one set of resources.
 * @example
 * const store = SnapshotStore.open('/srv/data/.resourcesync/source.sqlite');
 * const r = await store.rebuild(inventory('/srv/data', { previous: store.lookup().get }), { maxEntries: 1000 });
 * store.close();
 */
export class SnapshotStore {
  readonly file: string;
  private readonly db: Database.Database;
  private closed = false;

  private constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
  }

  /** Opens (creating if needed) the store at `file`. Throws `RS_LOCKED` when another process holds it. */
  static open(file: string): SnapshotStore {
    const db = openStore(file, { schema: SCHEMA, synchronous: 'NORMAL' });
    return new SnapshotStore(file, db);
  }

  /** Closes the database. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }

  /** Time of the latest rebuild, or undefined before the first. */
  snapshotAt(): number | undefined {
    const v = this.getMeta('snapshot_at');
    return v === undefined ? undefined : Number(v);
  }

  /** Time at which the latest rebuild recording changes (or the baseline) happened. */
  changedAt(): number | undefined {
    const v = this.getMeta('changed_at');
    return v === undefined ? undefined : Number(v);
  }

  /**
   * The store's clock: `now()`, but later than the latest recorded change and not earlier than the snapshot,
   * so that each recording has a time of its own and times go forward even if the system clock steps back
   * (changes, Change Lists and notification windows in forward order; a document that holds the changes up to
   * a time holds every change of that time).
   * @see Z39.99 §12.1 (forward chronological order)
   */
  clock(now: () => number = Date.now): number {
    const changed = this.changedAt();
    return Math.max(now(), changed === undefined ? -Infinity : changed + 1, this.snapshotAt() ?? -Infinity);
  }

  /** A value of the `meta` table (for the caller's own bookkeeping). */
  getMeta(key: string): string | undefined {
    const row = this.db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined;
    return row?.value;
  }

  /** Sets a value of the `meta` table. */
  setMeta(key: string, value: string): void {
    this.db.prepare('INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  /** Number of resources in the snapshot. */
  count(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM resources').get() as { n: number }).n;
  }

  /** The stored snapshot in path order (UTF-8 byte order), streamed. */
  *resources(): Generator<StoredResource> {
    for (const r of this.db.prepare('SELECT path, size, mtime, type, hashes FROM resources ORDER BY path').iterate() as IterableIterator<ResourceRow>) {
      yield rowToResource(r);
    }
  }

  /**
   * The stored snapshot in path order with the fixity kept as the attribute text (`md5:… sha-256:…`):
   * the fast path for writing a Resource List.
   */
  *listing(): Generator<ListedResource> {
    const stmt = this.db.prepare('SELECT path, size, mtime, type, hashes FROM resources ORDER BY path').raw(true);
    for (const row of stmt.iterate() as IterableIterator<[string, number, number, string, string]>) {
      yield { path: row[0], size: row[1], mtimeMs: row[2], type: row[3], hashText: row[4] };
    }
  }

  /** True when the snapshot holds a resource under the folder `path` (relative, no trailing `/`). */
  holdsUnder(path: string): boolean {
    // every path under `path/` sorts between `path/` and `path0` ('0' follows '/')
    return this.db.prepare('SELECT 1 FROM resources WHERE path > ? AND path < ? LIMIT 1').get(`${path}/`, `${path}0`) !== undefined;
  }

  /** One stored resource. */
  resource(path: string): StoredResource | undefined {
    const r = this.db.prepare('SELECT path, size, mtime, type, hashes FROM resources WHERE path = ?').get(path) as ResourceRow | undefined;
    return r === undefined ? undefined : rowToResource(r);
  }

  /**
   * A forward cursor over the snapshot for `inventory`'s `previous` option: `get(path)` must be called with
   * non-decreasing paths. Call `close()` when done.
   */
  lookup(): { get: (path: string) => PreviousState | undefined; close: () => void } {
    const reader = new Database(this.file, { readonly: true, fileMustExist: true });
    const it = reader.prepare('SELECT path, size, mtime, type, hashes FROM resources ORDER BY path').iterate() as IterableIterator<ResourceRow>;
    let cur = it.next();
    let done = false;
    const close = (): void => {
      if (done) return;
      done = true;
      it.return?.();
      reader.close();
    };
    const get = (path: string): PreviousState | undefined => {
      while (!cur.done && compareUtf8(cur.value.path, path) < 0) cur = it.next();
      if (cur.done) return undefined;
      if (cur.value.path !== path) return undefined;
      const r = cur.value;
      return { size: r.size, mtimeMs: r.mtime, hashes: toHashes(r.hashes) };
    };
    return { get, close };
  }

  /** Every Change List period, oldest first. */
  periods(): ChangePeriod[] {
    return (this.db.prepare('SELECT id, from_ms, until_ms, count FROM periods ORDER BY id').all() as PeriodRow[]).map(rowToPeriod);
  }

  /** The open period (undefined before the first rebuild). */
  openPeriod(): ChangePeriod | undefined {
    const r = this.db.prepare('SELECT id, from_ms, until_ms, count FROM periods WHERE until_ms IS NULL ORDER BY id DESC LIMIT 1').get() as PeriodRow | undefined;
    return r === undefined ? undefined : rowToPeriod(r);
  }

  /** The changes of one period in forward chronological order, streamed. */
  *changes(period: number): Generator<ChangeRecord> {
    const stmt = this.db.prepare('SELECT seq, period, path, change, datetime, size, mtime, type, hashes FROM changes WHERE period = ? ORDER BY seq');
    for (const r of stmt.iterate(period) as IterableIterator<ChangeRow>) yield rowToChange(r);
  }

  /** Every recorded change in forward chronological order. */
  *allChanges(): Generator<ChangeRecord> {
    const stmt = this.db.prepare('SELECT seq, period, path, change, datetime, size, mtime, type, hashes FROM changes ORDER BY seq');
    for (const r of stmt.iterate() as IterableIterator<ChangeRow>) yield rowToChange(r);
  }

  /**
   * Drops the oldest closed periods (and their changes) so that at most `keep` closed periods remain, but
   * none that ends after `keepAfter` (ms). Returns the dropped periods.
   */
  prunePeriods(keep: number, keepAfter = Infinity): ChangePeriod[] {
    const closed = this.periods().filter((p) => p.until !== undefined);
    const drop = closed.slice(0, Math.max(0, closed.length - keep)).filter((p) => p.until! <= keepAfter);
    const tx = this.db.transaction(() => {
      for (const p of drop) {
        this.db.prepare('DELETE FROM changes WHERE period = ?').run(p.id);
        this.db.prepare('DELETE FROM periods WHERE id = ?').run(p.id);
      }
    });
    tx();
    return drop;
  }

  /** Records a published dump. */
  addDump(d: Omit<DumpRecord, 'id'>): DumpRecord {
    const info = this.db
      .prepare('INSERT INTO dumps(kind, at_ms, completed_ms, from_ms, until_ms, period, data) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(d.kind, d.at ?? null, d.completed ?? null, d.from ?? null, d.until ?? null, d.period ?? null, d.data);
    return { ...d, id: Number(info.lastInsertRowid) };
  }

  /** Published dumps of a kind, oldest first. */
  dumps(kind: DumpRecord['kind']): DumpRecord[] {
    return (this.db.prepare('SELECT * FROM dumps WHERE kind = ? ORDER BY id').all(kind) as DumpRow[]).map(rowToDump);
  }

  /** Forgets a published dump (its files are the caller's). */
  removeDump(id: number): void {
    this.db.prepare('DELETE FROM dumps WHERE id = ?').run(id);
  }

  /**
   * Compares `entries` (a new inventory in path order) with the stored snapshot and records the
   * differences as changes at time `now()`, in one transaction; the first rebuild records the baseline
   * snapshot and opens the first Change List period. Applies the Change List boundary: a period that
   * reached `periodMs` is closed before recording, one that reached `maxEntries` as soon as it is full.
   */
  async rebuild(entries: AsyncIterable<InventoryEntry> | Iterable<InventoryEntry>, options: RebuildOptions = {}): Promise<RebuildResult> {
    const baseline = this.snapshotAt() === undefined;
    let reader: Database.Database | undefined;
    try {
      return await this.#recording(options, baseline, async (r) => {
        const signal = options.signal;
        let n = 0;
        if (baseline) {
          for await (const e of entries) {
            r.insert(e);
            r.result.resources++;
            if ((++n & 1023) === 0 && signal?.aborted) throw abortError(signal);
          }
          return;
        }
        reader = new Database(this.file, { readonly: true, fileMustExist: true });
        const stored = (function* (db: Database.Database): Generator<StoredResource> {
          for (const row of db.prepare('SELECT path, size, mtime, type, hashes FROM resources ORDER BY path').iterate() as IterableIterator<ResourceRow>) {
            yield rowToResource(row);
          }
        })(reader);
        for await (const c of compareSorted(entries, stored, sameContent)) {
          r.apply(c.kind === 'deleted' ? { path: c.path, before: c.before } : { path: c.path, now: c.now, ...(c.kind === 'created' ? {} : { before: c.before }) });
          if ((++n & 1023) === 0 && signal?.aborted) throw abortError(signal);
        }
        this.setMeta('snapshot_at', String(r.result.at));
      });
    } finally {
      reader?.close();
    }
  }

  /**
   * Records the changes of some resources only (for a watcher that knows which files changed): each path
   * with its new entry, or undefined when it is no longer published. A path whose stored state equals the
   * entry records nothing. Same transaction, clock and Change List boundary as {@link rebuild}, which stays
   * the reconciliation of the whole snapshot. Only after a baseline.
   * @throws ResourceSyncError RS_INVALID_ARGUMENT before the first rebuild
   */
  async update(states: Iterable<{ path: string; entry: InventoryEntry | undefined }>, options: RebuildOptions = {}): Promise<RebuildResult> {
    if (this.snapshotAt() === undefined) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'The snapshot store has no baseline yet: rebuild it first.', { data: { file: this.file } });
    }
    return this.#recording(options, false, (r) => {
      for (const { path, entry } of states) {
        const before = this.resource(path);
        if (entry === undefined && before === undefined) continue;
        r.apply({ path, ...(entry ? { now: entry } : {}), ...(before ? { before } : {}) });
      }
      return Promise.resolve();
    });
  }

  /** One recording transaction: the open period, the clock, the change rows; `body` applies the states. */
  async #recording(options: RebuildOptions, baseline: boolean, body: (r: Recording) => Promise<void>): Promise<RebuildResult> {
    const now = options.now ?? Date.now;
    const maxEntries = Math.max(1, options.maxEntries ?? 50_000);
    const periodMs = options.periodMs;
    const at = this.clock(now);
    const result: RebuildResult = { at, baseline, created: 0, updated: 0, deleted: 0, unchanged: 0, resources: 0, closed: [] };
    const db = this.db;
    const insertRes = db.prepare('INSERT INTO resources(path, size, mtime, type, hashes) VALUES (?, ?, ?, ?, ?)');
    const updateRes = db.prepare('UPDATE resources SET size = ?, mtime = ?, type = ?, hashes = ? WHERE path = ?');
    const touchRes = db.prepare('UPDATE resources SET mtime = ?, hashes = ? WHERE path = ?');
    const deleteRes = db.prepare('DELETE FROM resources WHERE path = ?');
    const insertChange = db.prepare(
      'INSERT INTO changes(period, path, change, datetime, size, mtime, type, hashes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    );
    const openNew = db.prepare('INSERT INTO periods(from_ms, count) VALUES (?, 0)');
    const closeStmt = db.prepare('UPDATE periods SET until_ms = ?, count = ? WHERE id = ?');
    const countStmt = db.prepare('UPDATE periods SET count = ? WHERE id = ?');

    db.exec('BEGIN IMMEDIATE');
    try {
      let open = this.openPeriod();
      const close = (p: ChangePeriod, until: number): ChangePeriod => {
        closeStmt.run(until, p.count, p.id);
        result.closed.push({ ...p, until });
        const id = Number(openNew.run(until).lastInsertRowid);
        return { id, from: until, count: 0 };
      };
      if (open === undefined) {
        open = { id: Number(openNew.run(at).lastInsertRowid), from: at, count: 0 };
      } else if (periodMs !== undefined && at - open.from >= periodMs) {
        open = close(open, at);
      }
      const record = (path: string, change: ChangeType, e: InventoryEntry | undefined): void => {
        const hashes = e === undefined ? null : formatHashes(e.hashes);
        const info = insertChange.run(open!.id, path, change, at, e?.size ?? null, e?.mtimeMs ?? null, e?.type ?? null, hashes);
        open!.count++;
        result[change]++;
        if (options.onChange) {
          const c: ChangeRecord = { seq: Number(info.lastInsertRowid), period: open!.id, path, change, datetime: at };
          if (e) Object.assign(c, { size: e.size, mtimeMs: e.mtimeMs, type: e.type, hashes: e.hashes });
          options.onChange(c);
        }
        if (open!.count >= maxEntries) open = close(open!, at);
      };
      await body({
        result,
        insert: (e) => insertRes.run(e.path, e.size, e.mtimeMs, e.type, formatHashes(e.hashes)),
        apply: ({ path, now: e, before }) => {
          if (e === undefined) {
            deleteRes.run(path);
            record(path, 'deleted', undefined);
            return;
          }
          result.resources++;
          if (before === undefined) {
            insertRes.run(path, e.size, e.mtimeMs, e.type, formatHashes(e.hashes));
            record(path, 'created', e);
          } else if (!sameContent(e, before)) {
            updateRes.run(e.size, e.mtimeMs, e.type, formatHashes(e.hashes), path);
            record(path, 'updated', e);
          } else {
            result.unchanged++;
            const h = formatHashes(e.hashes);
            if (e.mtimeMs !== before.mtimeMs || h !== formatHashes(before.hashes)) touchRes.run(e.mtimeMs, h, path);
          }
        },
      });
      countStmt.run(open.count, open.id);
      if (baseline) this.setMeta('snapshot_at', String(at));
      if (baseline || result.created + result.updated + result.deleted > 0) this.setMeta('changed_at', String(at));
      db.exec('COMMIT');
    } catch (err) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw err;
    }
    return result;
  }
}
