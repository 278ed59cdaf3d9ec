/**
 * What the bridge remembers between harvests, in SQLite beside the Source's state: bookkeeping values (the start
 * of the last harvest, of the last full one, the generation of the last full one) and the record files each full
 * harvest saw, so that a record missing from a full harvest is found without holding the list in memory.
 */
import type Database from 'better-sqlite3';
import { openStore } from '../node/sqlite.js';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS seen (path TEXT PRIMARY KEY, generation INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Rows written per transaction. */
const BATCH = 1000;

/** The bridge's harvest state. */
export class HarvestState {
  readonly #db: Database.Database;
  readonly #pending: Array<[string, number | undefined]> = [];

  /** Opens (creating it) the state at `file`. */
  constructor(file: string) {
    this.#db = openStore(file, { schema: SCHEMA, synchronous: 'NORMAL' });
  }

  /** A bookkeeping value, undefined when never set. */
  get(key: string): string | undefined {
    return (this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  /** Sets a bookkeeping value. */
  set(key: string, value: string): void {
    this.#db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value').run(key, value);
  }

  /** Notes that `path` was seen in `generation` (or, with undefined, that it is gone). */
  see(path: string, generation: number | undefined): void {
    this.#pending.push([path, generation]);
    if (this.#pending.length >= BATCH) this.flush();
  }

  /** Writes what `see` noted. */
  flush(): void {
    if (this.#pending.length === 0) return;
    const upsert = this.#db.prepare('INSERT INTO seen (path, generation) VALUES (?, ?) ON CONFLICT(path) DO UPDATE SET generation = excluded.generation');
    const remove = this.#db.prepare('DELETE FROM seen WHERE path = ?');
    const rows = this.#pending.splice(0);
    this.#db.transaction(() => {
      for (const [path, generation] of rows) {
        if (generation === undefined) remove.run(path);
        else upsert.run(path, generation);
      }
    })();
  }

  /** The paths last seen before `generation`, a page at a time (they are removed as they are handed out). */
  *unseen(generation: number): Generator<string> {
    const page = this.#db.prepare('SELECT path FROM seen WHERE generation < ? ORDER BY path LIMIT 500');
    const remove = this.#db.prepare('DELETE FROM seen WHERE path = ?');
    for (;;) {
      const rows = page.all(generation) as Array<{ path: string }>;
      if (rows.length === 0) return;
      for (const { path } of rows) {
        yield path;
        remove.run(path);
      }
    }
  }

  /** Writes what is pending and closes the database. */
  close(): void {
    this.flush();
    this.#db.close();
  }
}
