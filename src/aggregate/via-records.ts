/**
 * The records of a Source whose Destination state answers with promises (PostgreSQL), held for a publication's
 * `via` links, which are asked synchronously: in memory up to a bound, then in a temporary SQLite file (better-sqlite3,
 * synchronous), so that memory does not grow with the Source's size. The first record of a URL wins (the states
 * are read in set order).
 * @see Z39.99 §14.8
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import type { ResourceRecord } from '../destination/state.js';

/** Records kept in memory by default before they go to the temporary file. */
const DEFAULT_IN_MEMORY = 65_536;

/** Options of {@link ViaRecords}. */
export interface ViaRecordsOptions {
  /** Records kept in memory before they are moved to the temporary file; default 65,536. */
  inMemory?: number;
  /** Where the temporary folder (`resourcesync-via-*`) is made; default the OS temporary folder. */
  dir?: string;
}

/** Records by URL, bounded in memory (see the file's comment). Close it in a `finally`: that removes the file. */
export class ViaRecords {
  readonly #memory = new Map<string, ResourceRecord>();
  readonly #inMemory: number;
  readonly #dir: string;
  #folder: string | undefined;
  #db: Database.Database | undefined;
  #get: Database.Statement<[string], { r: string }> | undefined;

  constructor(options: ViaRecordsOptions = {}) {
    this.#inMemory = Math.max(1, options.inMemory ?? DEFAULT_IN_MEMORY);
    this.#dir = options.dir ?? tmpdir();
  }

  /** Keeps `r` unless a record of its URL is held already. @throws ResourceSyncError RS_IO when the file cannot be written */
  add(r: ResourceRecord): void {
    if (this.get(r.url) !== undefined) return;
    if (this.#memory.size >= this.#inMemory) this.#spill();
    this.#memory.set(r.url, r);
  }

  /** The record of `url`, if held. */
  get(url: string): ResourceRecord | undefined {
    const m = this.#memory.get(url);
    if (m !== undefined || this.#get === undefined) return m;
    const row = this.#get.get(url);
    return row === undefined ? undefined : (JSON.parse(row.r) as ResourceRecord);
  }

  /** Moves the records in memory to the file (made at the first spill), in one transaction. */
  #spill(): void {
    try {
      const db = this.#db ?? this.#open();
      const insert = db.prepare<[string, string]>('INSERT OR IGNORE INTO via (url, r) VALUES (?, ?)');
      db.transaction(() => {
        for (const [url, r] of this.#memory) insert.run(url, JSON.stringify(r));
      })();
    } catch (err) {
      throw new ResourceSyncError('RS_IO', `Cannot write the via records to '${this.#folder ?? this.#dir}': ${(err as Error).message}`, { cause: err, data: { path: this.#folder ?? this.#dir } });
    }
    this.#memory.clear();
  }

  /** The temporary folder (the owner's alone) and its SQLite file: no journal, no sync (thrown away, never recovered). */
  #open(): Database.Database {
    this.#folder = mkdtempSync(join(this.#dir, 'resourcesync-via-'));
    const db = new Database(join(this.#folder, 'via.sqlite'));
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('CREATE TABLE via (url TEXT PRIMARY KEY, r TEXT NOT NULL) WITHOUT ROWID');
    this.#get = db.prepare<[string], { r: string }>('SELECT r FROM via WHERE url = ?');
    this.#db = db;
    return db;
  }

  /** Forgets every record and removes the temporary file. */
  close(): void {
    this.#memory.clear();
    this.#get = undefined;
    this.#db?.close();
    this.#db = undefined;
    if (this.#folder !== undefined) rmSync(this.#folder, { recursive: true, force: true });
    this.#folder = undefined;
  }
}
