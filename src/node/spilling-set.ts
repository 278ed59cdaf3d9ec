import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { FingerprintSet, fingerprintOf, type SeenSet } from '../core/fingerprint-set.js';

/** Strings a {@link SpillingSet} keeps in memory by default before it spills (a table of 4 MB). */
const DEFAULT_IN_MEMORY = 1 << 18;

/** Options of {@link SpillingSet}. */
export interface SpillingSetOptions {
  /** Strings kept in memory before they are moved to the temporary file; default {@link DEFAULT_IN_MEMORY}. */
  inMemory?: number;
  /** The folder where the temporary folder (`resourcesync-seen-*`) is made; default the OS temporary folder. */
  dir?: string;
  /** SQLite's page cache of the temporary file, in KiB; default 8,192 (8 MiB). */
  cacheKiB?: number;
}

/**
 * A {@link SeenSet} whose memory is bounded: strings are kept as 64-bit fingerprints (see {@link FingerprintSet}) in
 * memory up to `inMemory` of them, then the fingerprints held are moved in one transaction, in key order, to a temporary SQLite
 * file (an integer primary key: about 9–10 bytes a string on disk) and memory starts again. A run of fewer than
 * `inMemory` strings never touches the disk. `has` stays synchronous (better-sqlite3). The temporary folder is
 * made at the first spill, with nobody but the owner allowed in, and removed by {@link close} (a caller closes the
 * set in a `finally`, so after an error too).
 * @example
 * const seen = new SpillingSet({ inMemory: 100_000 });
 * try { for (const u of urls) seen.add(u); console.log(seen.has(urls[0]), seen.size); } finally { seen.close(); }
 */
export class SpillingSet implements SeenSet {
  readonly #memory = new FingerprintSet();
  readonly #inMemory: number;
  readonly #options: SpillingSetOptions;
  /** Strings in the temporary file. */
  #onDisk = 0;
  #folder: string | undefined;
  #db: Database.Database | undefined;
  #lookup: Database.Statement<[bigint]> | undefined;
  #closed = false;

  /** @throws ResourceSyncError RS_INVALID_ARGUMENT when `inMemory` is not a positive integer */
  constructor(options: SpillingSetOptions = {}) {
    const inMemory = options.inMemory ?? DEFAULT_IN_MEMORY;
    if (!Number.isInteger(inMemory) || inMemory < 1) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `The in-memory bound ${inMemory} is not a positive integer.`, { data: { inMemory } });
    }
    this.#inMemory = inMemory;
    this.#options = options;
  }

  /**
   * Strings added, each counted once (up to fingerprint collisions). Once the set has spilled, each string in
   * memory is looked up in the file: a bounded cost, for a figure that is asked for rarely.
   */
  get size(): number {
    const lookup = this.#lookup;
    if (lookup === undefined) return this.#memory.size;
    let n = this.#onDisk;
    this.#memory.forEachFingerprint((hi, lo) => {
      if (lookup.get(key(hi, lo)) === undefined) n++;
    });
    return n;
  }

  /** The temporary folder once the set has spilled, until it is closed; undefined before and after. */
  get spillFolder(): string | undefined {
    return this.#folder;
  }

  /** True when `s` was added before. */
  has(s: string): boolean {
    if (this.#memory.has(s)) return true;
    if (this.#lookup === undefined) return false;
    const [hi, lo] = fingerprintOf(s);
    return this.#lookup.get(key(hi, lo)) !== undefined;
  }

  /**
   * Adds `s`; past the in-memory bound, the fingerprints in memory go to the temporary file. Cheap: the file is
   * not read here (a string already there is noticed when it is moved, or when {@link size} is asked).
   * @throws ResourceSyncError RS_IO when the temporary file cannot be made or written; RS_INVALID_ARGUMENT once closed
   */
  add(s: string): void {
    if (this.#closed) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'The set is closed.', { data: {} });
    if (this.#memory.has(s)) return;
    if (this.#memory.size >= this.#inMemory) this.#spill();
    this.#memory.add(s);
  }

  /** Moves the fingerprints held in memory to the temporary file (made at the first spill), in key order. */
  #spill(): void {
    const db = this.#db ?? this.#open();
    const keys = new BigInt64Array(this.#memory.size);
    let n = 0;
    this.#memory.forEachFingerprint((hi, lo) => (keys[n++] = key(hi, lo)));
    keys.sort(); // neighbouring keys share B-tree pages: each page is written once a spill
    const insert = db.prepare<[bigint]>('INSERT OR IGNORE INTO seen (fp) VALUES (?)');
    try {
      db.transaction(() => {
        for (const k of keys) this.#onDisk += insert.run(k).changes;
      })();
    } catch (err) {
      throw new ResourceSyncError('RS_IO', `Cannot write the set of resources seen to '${this.#folder}': ${(err as Error).message}`, { cause: err, data: { path: this.#folder } });
    }
    this.#memory.clear();
  }

  /** Makes the temporary folder and its SQLite file: no journal, no sync (it is thrown away, never recovered). */
  #open(): Database.Database {
    try {
      this.#folder = mkdtempSync(join(this.#options.dir ?? tmpdir(), 'resourcesync-seen-'));
      const db = new Database(join(this.#folder, 'seen.sqlite'));
      db.pragma('journal_mode = OFF');
      db.pragma('synchronous = OFF');
      db.pragma('locking_mode = EXCLUSIVE');
      db.pragma(`cache_size = -${this.#options.cacheKiB ?? 8192}`);
      db.exec('CREATE TABLE seen (fp INTEGER PRIMARY KEY)');
      this.#db = db;
      this.#lookup = db.prepare<[bigint]>('SELECT 1 FROM seen WHERE fp = ?').pluck();
      return db;
    } catch (err) {
      this.close();
      throw new ResourceSyncError('RS_IO', `Cannot make a temporary file for the resources seen in '${this.#options.dir ?? tmpdir()}': ${(err as Error).message}`, {
        cause: err,
        data: { path: this.#options.dir ?? tmpdir() },
      });
    }
  }

  /** Removes the temporary folder (when the set spilled) and forgets every string; safe to call twice. */
  close(): void {
    this.#closed = true;
    this.#lookup = undefined;
    try {
      this.#db?.close();
    } finally {
      this.#db = undefined;
      if (this.#folder !== undefined) rmSync(this.#folder, { recursive: true, force: true });
      this.#folder = undefined;
      this.#memory.clear();
    }
  }
}

/** A fingerprint as SQLite's 64-bit integer key. */
function key(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo >>> 0);
}
