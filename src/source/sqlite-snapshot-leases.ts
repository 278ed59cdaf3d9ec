/**
 * The leases of the SQLite snapshots (`SourceSnapshots.acquireLease`): one row per lease name in the table
 * `leases` (holder, expiry), so that processes sharing one database see who holds a set and when a dead
 * holder's lease lapses. Inside one process no one polls: the waiters of a lease stand in line (first come,
 * first served), and only the first of them looks at the row; it sleeps until a holder of this process releases
 * the lease or until the lease expires. A holder in another process is looked at again after a short backoff.
 */
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { DEFAULT_LEASE_MS, leaseAborted, type LeaseOptions, type SnapshotLease, type SnapshotLeaseName } from './source-snapshots.js';
import { foreignPause, holderGone, isLocalHolder, leaseLine, leaseReleased, newHolder } from './lease-line.js';

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function lineKey(file: string, name: string): string {
  return `sqlite:${resolve(file)}\u0000${name}`;
}

interface LeaseRow {
  holder: string;
  expires_ms: number;
}

/** The lease table of one SQLite database (the schema is in snapshot-rows.ts). */
export class SqliteLeases {
  private readonly file: string;
  private readonly db: Database.Database;

  constructor(file: string, db: Database.Database) {
    this.file = file;
    this.db = db;
  }

  /** See `SourceSnapshots.acquireLease`. */
  async acquire(name: SnapshotLeaseName, options: LeaseOptions = {}): Promise<SnapshotLease> {
    const ttlMs = Math.max(1, options.ttlMs ?? DEFAULT_LEASE_MS);
    const signal = options.signal;
    const holder = newHolder();
    if (signal?.aborted === true) throw leaseAborted(this.file, name, signal);
    const line = leaseLine(lineKey(this.file, name));
    await line.enter(signal, () => leaseAborted(this.file, name, signal!));
    try {
      for (let attempt = 0; ; attempt++) {
        if (isAborted(signal)) throw leaseAborted(this.file, name, signal!);
        const now = Date.now();
        const held = this.tryTake(name, holder, now + ttlMs, now);
        if (held === undefined) return new SqliteLease(this.db, this.file, name, holder, now + ttlMs, ttlMs);
        const untilExpiry = held.expires_ms - Date.now() + 1;
        await line.pause(isLocalHolder(held.holder) ? untilExpiry : foreignPause(attempt, untilExpiry), signal);
      }
    } finally {
      line.leave();
    }
  }

  /** Takes the lease when free or expired; otherwise returns who holds it (unknown while the database is busy). */
  private tryTake(name: string, holder: string, expiresMs: number, now: number): LeaseRow | undefined {
    const select = this.db.prepare('SELECT holder, expires_ms FROM leases WHERE name = ?');
    // a read first: no write lock is asked for while the lease is held (a holder may be in a long transaction)
    const seen = select.get(name) as LeaseRow | undefined;
    if (seen !== undefined && !lapsed(seen, now)) return seen;
    try {
      return this.db
        .transaction((): LeaseRow | undefined => {
          const row = select.get(name) as LeaseRow | undefined;
          if (row !== undefined && !lapsed(row, now)) return row;
          this.db
            .prepare('INSERT INTO leases(name, holder, expires_ms) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms')
            .run(name, holder, expiresMs);
          return undefined;
        })
        .immediate();
    } catch (err) {
      if ((err as { code?: string }).code?.startsWith('SQLITE_BUSY') !== true) throw err;
      return { holder: '', expires_ms: now + 1000 };
    }
  }
}

/** A lease of the SQLite snapshots, renewed and released through the row that holds it. */
class SqliteLease implements SnapshotLease {
  private released = false;

  constructor(
    private readonly db: Database.Database,
    private readonly file: string,
    readonly name: SnapshotLeaseName,
    readonly holder: string,
    public expiresAt: number,
    private readonly ttlMs: number,
  ) {}

  renew(): Promise<void> {
    const until = Date.now() + this.ttlMs;
    const changed = this.db.prepare('UPDATE leases SET expires_ms = ? WHERE name = ? AND holder = ?').run(until, this.name, this.holder).changes;
    if (changed === 0) {
      return Promise.reject(new ResourceSyncError('RS_LOCKED', `The ${this.name} lease of '${this.file}' lapsed and another holder took it.`, { data: { path: this.file } }));
    }
    this.expiresAt = until;
    return Promise.resolve();
  }

  release(): Promise<void> {
    if (this.released) return Promise.resolve();
    this.released = true;
    if (this.db.open) this.db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(this.name, this.holder);
    // the waiters of this process, if any, look again at once
    leaseReleased(lineKey(this.file, this.name));
    return Promise.resolve();
  }
}

/** True when `row` no longer binds: expired, or held by a process of this host that is gone. */
function lapsed(row: LeaseRow, now: number): boolean {
  return row.expires_ms <= now || holderGone(row.holder);
}
