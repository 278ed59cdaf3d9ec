import { closeSync, existsSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import type { Entry, Ln } from '../core/model/types.js';
import { makePrivateFolder, preparePrivateStore } from '../node/sqlite.js';

/** What the Destination knows about one resource it holds. */
export interface ResourceRecord {
  /** The resource's URI (`<loc>`). */
  url: string;
  /** Path relative to the destination directory, `/`-separated. */
  path: string;
  length: number;
  /** Digests of the local copy by algorithm token (`md5`, `sha-1`, `sha-256`). */
  hashes: Record<string, string>;
  /** The `lastmod` the Source gave, as written. */
  lastmod?: string;
  /** The ETag of the response that produced the local copy, for conditional GETs. */
  etag?: string;
  /** `rs:ln` links the Source gave for the resource (§14: alternate, canonical, memento, describedby, collection, via…). */
  links?: Ln[];
}

/**
 * Where incremental synchronization stands for one Capability List (or whatever key the caller uses).
 * @see Z39.99 §12.1 ("determine the first unprocessed change")
 */
export interface SyncCursor {
  /** Datetime (W3C, as written) of the last change processed; changes at or before it are done. */
  datetime: string;
  /** The Change List being processed, and how many of its entries were processed. */
  changeList?: string;
  position?: number;
}

/** Name of the state folder inside a destination. */
export const STATE_DIR = '.resourcesync';

interface Row {
  url: string;
  path: string;
  length: number;
  hashes: string;
  lastmod: string | null;
  etag: string | null;
  links: string | null;
}

function fromRow(r: Row): ResourceRecord {
  const rec: ResourceRecord = { url: r.url, path: r.path, length: r.length, hashes: JSON.parse(r.hashes) as Record<string, string> };
  if (r.lastmod !== null) rec.lastmod = r.lastmod;
  if (r.etag !== null) rec.etag = r.etag;
  if (r.links !== null) rec.links = JSON.parse(r.links) as Ln[];
  return rec;
}

/**
 * The Destination's state: an SQLite database (WAL) at `<dest>/.resourcesync/state.sqlite` with a record per
 * resource, sync cursors and small metadata. Writes are transactional; `putMany` batches them.
 * Open it read-only (`readonly: true`) for a dry run or an audit: nothing is created, and a missing database
 * reads as empty.
 * @example
 * const store = StateStore.open('/mirror');
 * store.putMany([{ url, path: 'a.txt', length: 3, hashes: { md5 } }]);
 * store.close();
 */
export class StateStore {
  readonly #db: Database.Database;
  readonly #get: Database.Statement<[string], Row>;
  readonly #put: Database.Statement<unknown[]>;
  readonly #del: Database.Statement<[string]>;
  readonly #putMany: (records: readonly ResourceRecord[]) => void;
  readonly readonly: boolean;
  readonly #skippedTable: boolean;

  private constructor(db: Database.Database, readonly: boolean) {
    this.#db = db;
    this.readonly = readonly;
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.exec(`
      CREATE TABLE IF NOT EXISTS resources (
        url TEXT PRIMARY KEY, path TEXT NOT NULL, length INTEGER NOT NULL, hashes TEXT NOT NULL,
        lastmod TEXT, etag TEXT, links TEXT);
      CREATE TABLE IF NOT EXISTS cursors (key TEXT PRIMARY KEY, datetime TEXT NOT NULL, change_list TEXT, position INTEGER);
      CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE IF NOT EXISTS pending (url TEXT PRIMARY KEY, set_key TEXT NOT NULL, entry TEXT NOT NULL, code TEXT);`);
    // states written before 0.1 had an index on `path` that no query uses; it cost a B-tree insert per resource
    if (!readonly) db.exec('DROP INDEX IF EXISTS resources_path');
    // deletions announced by the Source but not applied (no `delete`): a later run with `delete` applies them
    if (!readonly) db.exec('CREATE TABLE IF NOT EXISTS skipped_deletions (url TEXT PRIMARY KEY, set_key TEXT NOT NULL)');
    this.#skippedTable = !readonly || db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'skipped_deletions'").get() !== undefined;
    this.#get = db.prepare<[string], Row>('SELECT url, path, length, hashes, lastmod, etag, links FROM resources WHERE url = ?');
    this.#put = db.prepare(
      'INSERT OR REPLACE INTO resources (url, path, length, hashes, lastmod, etag, links) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    this.#del = db.prepare<[string]>('DELETE FROM resources WHERE url = ?');
    const put = this.#put;
    this.#putMany = db.transaction((records: readonly ResourceRecord[]) => {
      for (const r of records) {
        put.run(r.url, r.path, r.length, JSON.stringify(r.hashes), r.lastmod ?? null, r.etag ?? null, r.links && r.links.length > 0 ? JSON.stringify(r.links) : null);
      }
    });
  }

  /** Opens (creating unless `readonly`) the state of the destination directory `dest`. */
  static open(dest: string, options: { readonly?: boolean } = {}): StateStore {
    const dir = join(dest, STATE_DIR);
    const file = join(dir, 'state.sqlite');
    const ro = options.readonly ?? false;
    try {
      if (ro) {
        if (!existsSync(file)) return new StateStore(new Database(':memory:'), true);
        return new StateStore(new Database(file, { readonly: true, fileMustExist: true }), true);
      }
      // the state holds a follower's subscription secret: readable by the owner only
      preparePrivateStore(file);
      return new StateStore(new Database(file), false);
    } catch (err) {
      throw new ResourceSyncError('RS_IO', `State '${file}' cannot be opened: ${messageOf(err)}.`, { data: { path: file }, cause: err });
    }
  }

  /** The record of `url`, if any. */
  get(url: string): ResourceRecord | undefined {
    const r = this.#get.get(url);
    return r === undefined ? undefined : fromRow(r);
  }

  /** Inserts or replaces one record. */
  put(record: ResourceRecord): void {
    this.#putMany([record]);
  }

  /** Inserts or replaces records in one transaction. */
  putMany(records: readonly ResourceRecord[]): void {
    if (records.length > 0) this.#putMany(records);
  }

  /** Removes the record of `url`. */
  delete(url: string): void {
    this.#del.run(url);
  }

  /** Removes records in one transaction. */
  deleteMany(urls: readonly string[]): void {
    if (urls.length === 0) return;
    const del = this.#del;
    this.#db.transaction(() => {
      for (const u of urls) del.run(u);
    })();
  }

  /** Every record, ordered by URL (streams from the database). */
  *records(): IterableIterator<ResourceRecord> {
    for (const r of this.#db.prepare<[], Row>('SELECT url, path, length, hashes, lastmod, etag, links FROM resources ORDER BY url').iterate()) {
      yield fromRow(r);
    }
  }

  /** Every URL held, unordered (streams from the database). */
  *urls(): IterableIterator<string> {
    for (const r of this.#db.prepare<[], { url: string }>('SELECT url FROM resources').iterate()) yield r.url;
  }

  /** Loads every record into a map by URL (for plans; about 200 bytes per resource). */
  snapshot(): Map<string, ResourceRecord> {
    const m = new Map<string, ResourceRecord>();
    for (const r of this.#db.prepare<[], Row>('SELECT url, path, length, hashes, lastmod, etag, links FROM resources').all()) m.set(r.url, fromRow(r));
    return m;
  }

  /** Number of records. */
  count(): number {
    return (this.#db.prepare('SELECT COUNT(*) AS n FROM resources').get() as { n: number }).n;
  }

  /** The cursor stored under `key`. */
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

  /** Stores the cursor under `key`. */
  setCursor(key: string, cursor: SyncCursor): void {
    this.#db
      .prepare('INSERT OR REPLACE INTO cursors (key, datetime, change_list, position) VALUES (?, ?, ?, ?)')
      .run(key, cursor.datetime, cursor.changeList ?? null, cursor.position ?? null);
  }

  /** Removes the cursor under `key`. */
  deleteCursor(key: string): void {
    this.#db.prepare('DELETE FROM cursors WHERE key = ?').run(key);
  }

  /** A metadata value. */
  getMeta(key: string): string | undefined {
    return (this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  /** Sets (or, with undefined, removes) a metadata value. */
  setMeta(key: string, value: string | undefined): void {
    if (value === undefined) this.#db.prepare('DELETE FROM meta WHERE key = ?').run(key);
    else this.#db.prepare('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)').run(key, value);
  }

  /**
   * Remembers an entry whose resource could not be brought in line (a failed fetch or verification), so that
   * the next run tries it again even when no later change mentions it.
   */
  addPending(setKey: string, entry: Entry, code: string): void {
    this.#db.prepare('INSERT OR REPLACE INTO pending (url, set_key, entry, code) VALUES (?, ?, ?, ?)').run(entry.loc, setKey, JSON.stringify(entry), code);
  }

  /** Forgets pending entries (after success, or a deletion). */
  removePending(urls: readonly string[]): void {
    if (urls.length === 0) return;
    const del = this.#db.prepare<[string]>('DELETE FROM pending WHERE url = ?');
    this.#db.transaction(() => {
      for (const u of urls) del.run(u);
    })();
  }

  /** Forgets every pending entry of a capability set (a baseline tries everything on offer anyway). */
  clearPending(setKey: string): void {
    this.#db.prepare('DELETE FROM pending WHERE set_key = ?').run(setKey);
  }

  /** The pending entries of a capability set. */
  pending(setKey: string): Entry[] {
    return (this.#db.prepare('SELECT entry FROM pending WHERE set_key = ? ORDER BY url').all(setKey) as { entry: string }[]).map((r) => JSON.parse(r.entry) as Entry);
  }

  /** Remembers deletions the Source announced that were not applied (no `delete`), under a capability set. */
  skipDeletions(setKey: string, urls: readonly string[]): void {
    if (urls.length === 0) return;
    const put = this.#db.prepare<[string, string]>('INSERT OR REPLACE INTO skipped_deletions (url, set_key) VALUES (?, ?)');
    this.#db.transaction(() => {
      for (const u of urls) put.run(u, setKey);
    })();
  }

  /** Forgets skipped deletions (the resource was deleted, or is on offer again). */
  forgetSkipped(urls: readonly string[]): void {
    if (urls.length === 0 || !this.#skippedTable) return;
    const del = this.#db.prepare<[string]>('DELETE FROM skipped_deletions WHERE url = ?');
    this.#db.transaction(() => {
      for (const u of urls) del.run(u);
    })();
  }

  /** True when some skipped deletion is remembered. */
  hasSkippedDeletions(): boolean {
    return this.#skippedTable && this.#db.prepare('SELECT 1 FROM skipped_deletions LIMIT 1').get() !== undefined;
  }

  /** The deletions skipped so far in a capability set (all sets without `setKey`), ordered by URL. */
  skippedDeletions(setKey?: string): string[] {
    if (!this.#skippedTable) return [];
    const rows =
      setKey === undefined
        ? this.#db.prepare('SELECT url FROM skipped_deletions ORDER BY url').all()
        : this.#db.prepare('SELECT url FROM skipped_deletions WHERE set_key = ? ORDER BY url').all(setKey);
    return (rows as { url: string }[]).map((r) => r.url);
  }

  /** Runs `fn` in one transaction. */
  transaction<T>(fn: () => T): T {
    return this.#db.transaction(fn)();
  }

  close(): void {
    this.#db.close();
  }
}

/** A held lock; `release()` removes it. */
export interface SyncLock {
  readonly path: string;
  release(): void;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === 'EPERM';
  }
}

/**
 * Takes the lock `<dest>/.resourcesync/lock` (created with O_EXCL, holding the pid) so that two syncs cannot
 * run on one destination at once. A lock left by a process that is no longer alive is stale and taken over.
 * Throws `RS_LOCKED` when another live process holds it.
 */
export function acquireLock(dest: string): SyncLock {
  const dir = join(dest, STATE_DIR);
  makePrivateFolder(dir);
  const path = join(dir, 'lock');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      let released = false;
      return {
        path,
        release(): void {
          if (released) return;
          released = true;
          try {
            unlinkSync(path);
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as { code?: string }).code !== 'EEXIST') {
        throw new ResourceSyncError('RS_IO', `Lock '${path}' cannot be created: ${messageOf(err)}.`, { data: { path }, cause: err });
      }
    }
    let pid: number;
    try {
      pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    } catch {
      continue; // removed meanwhile: try again
    }
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && pidAlive(pid)) {
      throw new ResourceSyncError('RS_LOCKED', `Destination '${dest}' is locked by process ${pid}.`, { data: { dest, pid, path } });
    }
    if (Number.isInteger(pid) && pid === process.pid) {
      throw new ResourceSyncError('RS_LOCKED', `Destination '${dest}' is already locked by this process.`, { data: { dest, pid, path } });
    }
    try {
      unlinkSync(path); // stale: its process is gone (or the file is garbage)
    } catch {
      /* someone else removed it */
    }
  }
  throw new ResourceSyncError('RS_LOCKED', `Destination '${dest}' lock '${path}' could not be taken.`, { data: { dest, path } });
}
