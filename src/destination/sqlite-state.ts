/**
 * The embedded {@link DestinationState}: an SQLite database (WAL) at `<dest>/.resourcesync/state.sqlite` with a
 * record per resource, sync cursors, small metadata, the failures to retry, the deletions not applied and the lease.
 * It answers synchronously underneath. Opened read-only (a dry run, an audit) nothing is created, and a missing
 * database reads as empty.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError, messageOf, toError } from '../core/errors.js';
import type { Entry, Ln } from '../core/model/types.js';
import { preparePrivateStore } from '../node/sqlite.js';
import { LEASE_SCHEMA, SqliteLeases } from './sqlite-lease.js';
import type { DestinationState, Lease, LeaseOptions, ResourceRecord, StateBatch, SyncCursor } from './state.js';
import { RESOURCESYNC_DIR } from '../core/constants.js';

/** Name of the state folder inside a destination. */
export const STATE_DIR = RESOURCESYNC_DIR;

/** Records read from the database at once while iterating (no statement stays open across an `await`). */
const PAGE = 1000;

/** How {@link openSqliteDestinationState} opens the state. */
export interface SqliteDestinationStateOptions {
  /** Open for reading only: nothing is created, writes and leases are refused. Default false. */
  readonly?: boolean;
  /** The database file. Default `<dest>/.resourcesync/state.sqlite`. */
  file?: string;
}

interface Row {
  url: string;
  path: string;
  length: number;
  hashes: string;
  lastmod: string | null;
  etag: string | null;
  links: string | null;
  type: string | null;
}

const COLUMNS = 'url, path, length, hashes, lastmod, etag, links, type';
/** The columns read from a state written before the type was kept. */
const COLUMNS_WITHOUT_TYPE = 'url, path, length, hashes, lastmod, etag, links, NULL AS type';

function fromRow(r: Row): ResourceRecord {
  const rec: ResourceRecord = { url: r.url, path: r.path, length: r.length, hashes: JSON.parse(r.hashes) as Record<string, string> };
  if (r.lastmod !== null) rec.lastmod = r.lastmod;
  if (r.etag !== null) rec.etag = r.etag;
  if (r.type !== null) rec.type = r.type;
  if (r.links !== null) rec.links = JSON.parse(r.links) as Ln[];
  return rec;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS resources (
    url TEXT PRIMARY KEY, path TEXT NOT NULL, length INTEGER NOT NULL, hashes TEXT NOT NULL,
    lastmod TEXT, etag TEXT, links TEXT, type TEXT);
  CREATE TABLE IF NOT EXISTS cursors (key TEXT PRIMARY KEY, datetime TEXT NOT NULL, change_list TEXT, position INTEGER);
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS pending (url TEXT PRIMARY KEY, set_key TEXT NOT NULL, entry TEXT NOT NULL, code TEXT);`;

/** Prepared statements of the batch writes. */
interface Writes {
  put: Database.Statement<unknown[]>;
  del: Database.Statement<[string]>;
  forgetSkipped: Database.Statement<[string]>;
  skip: Database.Statement<[string, string]>;
  addPending: Database.Statement<[string, string, string, string]>;
  removePending: Database.Statement<[string]>;
}

class SqliteDestinationState implements DestinationState {
  readonly readonly: boolean;
  readonly #db: Database.Database;
  readonly #get: Database.Statement<[string], Row>;
  readonly #writes: Writes | undefined;
  readonly #apply: (batch: StateBatch) => void;
  /** False for a read-only state written before skipped deletions were kept. */
  readonly #skippedTable: boolean;
  readonly #leases: SqliteLeases | undefined;
  /** The columns of a record: a read-only state written before the type was kept reads without one. */
  readonly #columns: string;

  constructor(db: Database.Database, readonly: boolean, label: string, lockFile: string | undefined) {
    this.#db = db;
    this.readonly = readonly;
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.exec(SCHEMA);
    if (!readonly) {
      // states written before 0.1 had an index on `path` that no query uses; it cost a B-tree insert per resource
      db.exec('DROP INDEX IF EXISTS resources_path');
      // deletions announced by the Source but not applied (no `delete`): a later run with `delete` applies them
      db.exec('CREATE TABLE IF NOT EXISTS skipped_deletions (url TEXT PRIMARY KEY, set_key TEXT NOT NULL)');
      db.exec(LEASE_SCHEMA);
      // the type the Source listed (rs:md type), kept since 0.2: a state written before gains the column
      if (!hasColumn(db, 'resources', 'type')) db.exec('ALTER TABLE resources ADD COLUMN type TEXT');
      this.#leases = new SqliteLeases(db, label, lockFile);
    }
    this.#skippedTable = !readonly || db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'skipped_deletions'").get() !== undefined;
    this.#columns = hasColumn(db, 'resources', 'type') ? COLUMNS : COLUMNS_WITHOUT_TYPE;
    this.#get = db.prepare<[string], Row>(`SELECT ${this.#columns} FROM resources WHERE url = ?`);
    this.#writes = readonly ? undefined : prepareWrites(db);
    this.#apply = db.transaction((batch: StateBatch) => applyBatch(this.#writes!, batch));
  }

  get(url: string): ResourceRecord | undefined {
    const r = this.#get.get(url);
    return r === undefined ? undefined : fromRow(r);
  }

  count(): number {
    return (this.#db.prepare('SELECT COUNT(*) AS n FROM resources').get() as { n: number }).n;
  }

  records(): AsyncIterable<ResourceRecord> {
    return asAsync(this.#records());
  }

  urls(): AsyncIterable<string> {
    return asAsync(this.#urls());
  }

  *#records(): Generator<ResourceRecord> {
    const first = this.#db.prepare<[number], Row>(`SELECT ${this.#columns} FROM resources ORDER BY url LIMIT ?`);
    const next = this.#db.prepare<[string, number], Row>(`SELECT ${this.#columns} FROM resources WHERE url > ? ORDER BY url LIMIT ?`);
    let page = first.all(PAGE);
    while (page.length > 0) {
      for (const r of page) yield fromRow(r);
      if (page.length < PAGE) return;
      page = next.all(page[page.length - 1]!.url, PAGE);
    }
  }

  *#urls(): Generator<string> {
    const first = this.#db.prepare<[number], { url: string }>('SELECT url FROM resources ORDER BY url LIMIT ?');
    const next = this.#db.prepare<[string, number], { url: string }>('SELECT url FROM resources WHERE url > ? ORDER BY url LIMIT ?');
    let page = first.all(PAGE);
    while (page.length > 0) {
      for (const r of page) yield r.url;
      if (page.length < PAGE) return;
      page = next.all(page[page.length - 1]!.url, PAGE);
    }
  }

  apply(batch: StateBatch): void {
    this.#writable();
    this.#apply(batch);
  }

  getCursor(key: string): SyncCursor | undefined {
    const r = this.#db.prepare('SELECT datetime, change_list, position FROM cursors WHERE key = ?').get(key) as
      | { datetime: string; change_list: string | null; position: number | null }
      | undefined;
    if (r === undefined) return undefined;
    const c: SyncCursor = { datetime: r.datetime };
    if (r.change_list !== null) c.changeList = r.change_list;
    if (r.position !== null) c.position = r.position;
    return c;
  }

  setCursor(key: string, cursor: SyncCursor): void {
    this.#writable();
    this.#db
      .prepare('INSERT OR REPLACE INTO cursors (key, datetime, change_list, position) VALUES (?, ?, ?, ?)')
      .run(key, cursor.datetime, cursor.changeList ?? null, cursor.position ?? null);
  }

  getMeta(key: string): string | undefined {
    return (this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  setMeta(key: string, value: string | undefined): void {
    this.#writable();
    if (value === undefined) this.#db.prepare('DELETE FROM meta WHERE key = ?').run(key);
    else this.#db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(key, value);
  }

  pending(setKey: string): Entry[] {
    return (this.#db.prepare('SELECT entry FROM pending WHERE set_key = ? ORDER BY url').all(setKey) as { entry: string }[]).map((r) => JSON.parse(r.entry) as Entry);
  }

  clearPending(setKey: string): void {
    this.#writable();
    this.#db.prepare('DELETE FROM pending WHERE set_key = ?').run(setKey);
  }

  hasSkippedDeletions(): boolean {
    return this.#skippedTable && this.#db.prepare('SELECT 1 FROM skipped_deletions LIMIT 1').get() !== undefined;
  }

  skippedDeletions(setKey?: string): string[] {
    if (!this.#skippedTable) return [];
    const rows =
      setKey === undefined
        ? this.#db.prepare('SELECT url FROM skipped_deletions ORDER BY url').all()
        : this.#db.prepare('SELECT url FROM skipped_deletions WHERE set_key = ? ORDER BY url').all(setKey);
    return (rows as { url: string }[]).map((r) => r.url);
  }

  acquireLease(options: LeaseOptions): Promise<Lease> {
    try {
      this.#writable();
      return Promise.resolve(this.#leases!.acquire(options));
    } catch (err) {
      return Promise.reject(toError(err));
    }
  }

  close(): void {
    if (!this.#db.open) return;
    this.#leases?.dropAll();
    this.#db.close();
  }

  #writable(): void {
    if (this.readonly) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'The destination state is open for reading only.');
  }
}

/** True when `table` has the column `name`. */
function hasColumn(db: Database.Database, table: string, name: string): boolean {
  return (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).some((c) => c.name === name);
}

/** A sync iterable as an async one: the pages are read synchronously underneath, one at a time. */
function asAsync<T>(items: Iterator<T>): AsyncIterable<T> {
  const iterator: AsyncIterator<T> = {
    next: () => Promise.resolve(items.next()),
    return: (value?: unknown) => Promise.resolve(items.return?.(value) ?? { done: true as const, value: value as T }),
  };
  return { [Symbol.asyncIterator]: () => iterator };
}

function prepareWrites(db: Database.Database): Writes {
  return {
    put: db.prepare(`INSERT OR REPLACE INTO resources (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`),
    del: db.prepare<[string]>('DELETE FROM resources WHERE url = ?'),
    forgetSkipped: db.prepare<[string]>('DELETE FROM skipped_deletions WHERE url = ?'),
    skip: db.prepare<[string, string]>('INSERT OR REPLACE INTO skipped_deletions (url, set_key) VALUES (?, ?)'),
    addPending: db.prepare<[string, string, string, string]>('INSERT OR REPLACE INTO pending (url, set_key, entry, code) VALUES (?, ?, ?, ?)'),
    removePending: db.prepare<[string]>('DELETE FROM pending WHERE url = ?'),
  };
}

/** Runs inside the batch's transaction, in the order {@link StateBatch} documents. */
function applyBatch(writes: Writes, batch: StateBatch): void {
  for (const r of batch.put ?? []) {
    writes.put.run(r.url, r.path, r.length, JSON.stringify(r.hashes), r.lastmod ?? null, r.etag ?? null, r.links && r.links.length > 0 ? JSON.stringify(r.links) : null, r.type ?? null);
  }
  for (const u of batch.delete ?? []) writes.del.run(u);
  for (const u of batch.forgetSkipped ?? []) writes.forgetSkipped.run(u);
  if (batch.skipDeletions !== undefined) for (const u of batch.skipDeletions.urls) writes.skip.run(u, batch.skipDeletions.setKey);
  if (batch.addPending !== undefined) {
    const { setKey, entries } = batch.addPending;
    for (const p of entries) writes.addPending.run(p.entry.loc, setKey, JSON.stringify(p.entry), p.code);
  }
  for (const u of batch.removePending ?? []) writes.removePending.run(u);
}

/**
 * Opens (creating unless `readonly`) the SQLite state of the destination directory `dest`: by default
 * `<dest>/.resourcesync/state.sqlite`, readable by the owner only (it holds a follower's subscription secret).
 * @throws ResourceSyncError `RS_IO` when the database cannot be opened
 * @example
 * const state = await openSqliteDestinationState('/mirror');
 * await state.apply({ put: [{ url, path: 'a.txt', length: 3, hashes: { md5 } }] });
 * await state.close();
 */
export function openSqliteDestinationState(dest: string, options: SqliteDestinationStateOptions = {}): Promise<DestinationState> {
  try {
    return Promise.resolve(openSqliteDestinationStateSync(dest, options));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}

/**
 * {@link openSqliteDestinationState} at once, for a caller that cannot wait (a state opened on demand inside a
 * synchronous callback, e.g. the aggregate's `via` links of one set at a time while a publication runs).
 * @throws ResourceSyncError RS_IO when the state cannot be opened
 */
export function openSqliteDestinationStateSync(dest: string, options: SqliteDestinationStateOptions = {}): DestinationState {
  const file = options.file ?? join(dest, STATE_DIR, 'state.sqlite');
  const readonly = options.readonly ?? false;
  // the pid file older versions lock the destination with: honoured while its process lives
  const lockFile = options.file === undefined ? join(dest, STATE_DIR, 'lock') : undefined;
  try {
    if (readonly) {
      if (!existsSync(file)) return new SqliteDestinationState(new Database(':memory:'), true, dest, undefined);
      return new SqliteDestinationState(new Database(file, { readonly: true, fileMustExist: true }), true, dest, undefined);
    }
    preparePrivateStore(file);
    return new SqliteDestinationState(new Database(file), false, dest, lockFile);
  } catch (err) {
    throw new ResourceSyncError('RS_IO', `State '${file}' cannot be opened: ${messageOf(err)}.`, { data: { path: file }, cause: err });
  }
}
