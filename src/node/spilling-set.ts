import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { FingerprintSet, fingerprintOf, type SeenSet } from '../core/fingerprint-set.js';

/** Strings a {@link SpillingSet} keeps in memory by default before it spills (a table of 4 MB). */
const DEFAULT_IN_MEMORY = 1 << 18;

/** The start of the name of a set's temporary folder; the host and the process's id follow (see {@link spillPrefix}). */
const SPILL_PREFIX = 'resourcesync-seen-';
/** A temporary folder of a dead process younger than this is left alone (a minute). */
const STALE_AFTER_MS = 60_000;
/** Stale folders removed by one sweep at most: a sweep stays short whatever the temporary folder holds. */
const MAX_SWEPT = 100;

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
 * set in a `finally`, so after an error too). Its name carries the host and the process's id: a process killed
 * (`kill -9`) leaves it behind, and the first spill of a later set on the same host removes it
 * ({@link removeStaleSpillFolders}).
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
      const dir = this.#options.dir ?? tmpdir();
      removeStaleSpillFolders(dir);
      this.#folder = mkdtempSync(join(dir, spillPrefix()));
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

/** This process's prefix of a temporary folder: `resourcesync-seen-<host>-<pid>-` (the host's name made safe). */
function spillPrefix(): string {
  return `${SPILL_PREFIX}${safeHost()}-${process.pid}-`;
}

/** The host's name as it appears in a folder's name: letters, digits, dots and hyphens, at most 64. */
function safeHost(): string {
  return (hostname().replace(/[^A-Za-z0-9.-]/g, '_').slice(0, 64) || 'host').replace(/-/g, '_');
}

/** False when no process `pid` runs on this host (ESRCH); a process of another user (EPERM) is alive. */
function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes from `dir` the temporary folders of {@link SpillingSet}s that are proven dead: named for this host, by a
 * process that no longer runs here, and untouched for a minute (`staleAfterMs`). Folders of other hosts (a shared
 * temporary folder), of living processes, or in the older name without host and id are left alone; at most 100 are
 * removed a call, and a folder that cannot be read or removed is skipped. Returns the names removed.
 * @example removeStaleSpillFolders(os.tmpdir()) // after a `kill -9`: ['resourcesync-seen-vm-4242-a1B2c3']
 */
export function removeStaleSpillFolders(dir: string, options: { now?: number; staleAfterMs?: number } = {}): string[] {
  const mine = `${SPILL_PREFIX}${safeHost()}-`;
  const deadline = (options.now ?? Date.now()) - (options.staleAfterMs ?? STALE_AFTER_MS);
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    if (removed.length >= MAX_SWEPT) break;
    if (!name.startsWith(mine)) continue;
    const pid = /^(\d{1,10})-[^/]+$/.exec(name.slice(mine.length))?.[1];
    if (pid === undefined || Number(pid) === process.pid || isAlive(Number(pid))) continue;
    try {
      const path = join(dir, name);
      const st = statSync(path);
      if (!st.isDirectory() || st.mtimeMs > deadline) continue;
      rmSync(path, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // gone meanwhile, or not ours to remove: left alone
    }
  }
  return removed;
}
