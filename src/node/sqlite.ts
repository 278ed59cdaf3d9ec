import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';

/** How {@link openStore} sets up a database. */
export interface StoreOptions {
  /** The schema, run on every open (`CREATE … IF NOT EXISTS`). */
  schema: string;
  /** `FULL` makes each commit durable (an outbox); `NORMAL` in WAL mode may lose the last commits on a power cut. */
  synchronous: 'FULL' | 'NORMAL';
  foreignKeys?: boolean;
  /** The database holds secrets: see {@link preparePrivateStore}. */
  private?: boolean;
}

/** Creates the folder `dir` readable by the owner only (0700), its missing parents as usual; one that exists is left as it is. */
function makePrivateFolder(dir: string): void {
  mkdirSync(dirname(dir), { recursive: true });
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (err) {
    if ((err as { code?: string }).code !== 'EEXIST') throw err;
  }
}

/**
 * Prepares the SQLite database `file` to hold secrets: its folder as {@link makePrivateFolder}, the file created
 * readable by the owner only (0600) before SQLite opens it, so that SQLite gives its `-wal` and `-shm` companions
 * the same mode. An existing file or companion open to group or others is narrowed to 0600 where the owner may.
 */
export function preparePrivateStore(file: string): void {
  makePrivateFolder(dirname(file));
  closeSync(openSync(file, 'a', 0o600));
  for (const f of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      if ((statSync(f).mode & 0o077) !== 0) chmodSync(f, 0o600);
    } catch {
      // a companion that does not exist yet, or a file another user owns: nothing to narrow
    }
  }
}

/**
 * Opens (creating it and its folder if needed; `private` ones readable by the owner only) an SQLite store in WAL mode, waiting up to 5 s for another
 * connection's lock. `:memory:` gives a throw-away one.
 * @throws ResourceSyncError `RS_LOCKED` when another process holds the database, `RS_IO` otherwise
 */
export function openStore(file: string, options: StoreOptions): Database.Database {
  if (file !== ':memory:') {
    if (options.private === true) preparePrivateStore(file);
    else mkdirSync(dirname(file), { recursive: true });
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { timeout: 5000 });
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous}`);
    if (options.foreignKeys === true) db.pragma('foreign_keys = ON');
    db.exec(options.schema);
    return db;
  } catch (cause) {
    // a connection that opened but could not be set up (disk full, read-only) is closed, not leaked
    try {
      db?.close();
    } catch {
      // closing what failed to open: nothing more to do
    }
    const busy = (cause as { code?: string }).code?.startsWith('SQLITE_BUSY') === true;
    throw new ResourceSyncError(busy ? 'RS_LOCKED' : 'RS_IO', `Store '${file}' cannot be opened.`, { data: { path: file }, cause });
  }
}
