/**
 * The lease of the SQLite Destination state: one row of the table `lease` in the state database, taken in a write
 * transaction. On the same host a holder whose process is gone (`kill -9`) has let it go at once; on another host
 * the lease expires after its TTL. A pid file `lock` beside the database (the lock older versions take) held by a
 * live process also keeps the lease from being taken; a stale one is removed.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { hostname } from 'node:os';
import type Database from 'better-sqlite3';
import { ResourceSyncError, toError } from '../core/errors.js';
import type { Lease, LeaseOptions } from './state.js';
import { processAlive } from '../node/process-alive.js';

/** The lease table (created by a writable open). */
export const LEASE_SCHEMA = 'CREATE TABLE IF NOT EXISTS lease (name TEXT PRIMARY KEY, holder TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL, expires_at INTEGER NOT NULL)';

/** The one lease of a destination. */
const NAME = 'destination';

interface LeaseRow {
  holder: string;
  host: string;
  pid: number;
  expires_at: number;
}

/** The default holder name: this host, this process and a random part (two leases of one process differ). */
function defaultHolder(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** Refuses the lease while a live process other than this one holds the pid file `lockFile`; removes a stale one. */
function checkLegacyLock(label: string, lockFile: string): void {
  let pid: number;
  try {
    pid = Number.parseInt(readFileSync(lockFile, 'utf8').trim(), 10);
  } catch {
    return; // none
  }
  if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid)) {
    throw new ResourceSyncError('RS_LOCKED', `Destination '${label}' is locked by process ${pid}.`, { data: { dest: label, pid, path: lockFile } });
  }
  try {
    unlinkSync(lockFile); // stale: its process is gone (or the file is garbage)
  } catch {
    /* someone else removed it */
  }
}

function lockedError(label: string, row: LeaseRow, host: string): ResourceSyncError {
  const data = { dest: label, pid: row.pid, holder: row.holder, host: row.host, expiresAt: row.expires_at };
  if (row.host !== host) {
    return new ResourceSyncError('RS_LOCKED', `Destination '${label}' is locked by process ${row.pid} on '${row.host}' until ${new Date(row.expires_at).toISOString()}.`, { data });
  }
  if (row.pid === process.pid) return new ResourceSyncError('RS_LOCKED', `Destination '${label}' is already locked by this process.`, { data });
  return new ResourceSyncError('RS_LOCKED', `Destination '${label}' is locked by process ${row.pid}.`, { data });
}

/** The leases of one SQLite state connection. */
export class SqliteLeases {
  readonly #db: Database.Database;
  /** The destination (or database) named in messages. */
  readonly #label: string;
  readonly #lockFile: string | undefined;
  readonly #held = new Set<string>();

  constructor(db: Database.Database, label: string, lockFile: string | undefined) {
    this.#db = db;
    this.#label = label;
    this.#lockFile = lockFile;
  }

  acquire(options: LeaseOptions): Lease {
    if (this.#lockFile !== undefined) checkLegacyLock(this.#label, this.#lockFile);
    const holder = options.holder ?? defaultHolder();
    const host = hostname();
    const take = this.#db.transaction((): number => {
      const row = this.#db.prepare('SELECT holder, host, pid, expires_at FROM lease WHERE name = ?').get(NAME) as LeaseRow | undefined;
      const now = Date.now();
      const gone = row !== undefined && row.host === host && !processAlive(row.pid);
      if (row !== undefined && row.expires_at > now && !gone) throw lockedError(this.#label, row, host);
      const expiresAt = now + options.ttlMs;
      this.#db.prepare('INSERT OR REPLACE INTO lease (name, holder, host, pid, expires_at) VALUES (?, ?, ?, ?, ?)').run(NAME, holder, host, process.pid, expiresAt);
      return expiresAt;
    });
    const expiresAt = take.immediate();
    this.#held.add(holder);
    return new SqliteLease(this, holder, options.ttlMs, expiresAt);
  }

  /** Extends `holder`'s lease to `expiresAt`; false when it is not held by `holder` any more. */
  extend(holder: string, expiresAt: number): boolean {
    if (!this.#held.has(holder)) return false;
    return this.#db.prepare('UPDATE lease SET expires_at = ? WHERE name = ? AND holder = ?').run(expiresAt, NAME, holder).changes > 0;
  }

  /** Removes `holder`'s lease, if it still holds it. */
  drop(holder: string): void {
    if (!this.#held.delete(holder)) return;
    this.#db.prepare('DELETE FROM lease WHERE name = ? AND holder = ?').run(NAME, holder);
  }

  /** Removes every lease taken through this connection (before it closes). */
  dropAll(): void {
    for (const holder of [...this.#held]) {
      try {
        this.drop(holder);
      } catch {
        // a database that cannot be written any more: the lease expires (or its dead process frees it)
      }
    }
  }

  lostError(holder: string): ResourceSyncError {
    return new ResourceSyncError('RS_LOCKED', `Destination '${this.#label}' lease of '${holder}' was lost.`, { data: { dest: this.#label, holder } });
  }
}

class SqliteLease implements Lease {
  readonly holder: string;
  #expiresAt: number;
  readonly #leases: SqliteLeases;
  readonly #ttlMs: number;

  constructor(leases: SqliteLeases, holder: string, ttlMs: number, expiresAt: number) {
    this.#leases = leases;
    this.holder = holder;
    this.#ttlMs = ttlMs;
    this.#expiresAt = expiresAt;
  }

  get expiresAt(): number {
    return this.#expiresAt;
  }

  renew(): Promise<void> {
    const expiresAt = Date.now() + this.#ttlMs;
    try {
      if (!this.#leases.extend(this.holder, expiresAt)) return Promise.reject(this.#leases.lostError(this.holder));
    } catch (err) {
      return Promise.reject(toError(err));
    }
    this.#expiresAt = expiresAt;
    return Promise.resolve();
  }

  release(): Promise<void> {
    try {
      this.#leases.drop(this.holder);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(toError(err));
    }
  }
}
