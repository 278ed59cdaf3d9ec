import { mkdirSync } from 'node:fs';
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
}

/**
 * Opens (creating it and its folder if needed) an SQLite store in WAL mode, waiting up to 5 s for another
 * connection's lock. `:memory:` gives a throw-away one.
 * @throws ResourceSyncError `RS_LOCKED` when another process holds the database, `RS_IO` otherwise
 */
export function openStore(file: string, options: StoreOptions): Database.Database {
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
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
