/**
 * The leases of the SQLite snapshots (`SourceSnapshots.acquireLease`): one row per lease name in the table
 * `leases` (holder, expiry), so that processes sharing one database see who holds a set and when a dead
 * holder's lease lapses. Inside one process no one polls: the waiters of a lease stand in line (first come,
 * first served), and only the first of them looks at the row; it sleeps until a holder of this process releases
 * the lease or until the lease expires. A holder in another process is looked at again after a short backoff.
 */
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { DEFAULT_LEASE_MS, leaseAborted, type LeaseOptions, type SnapshotLease, type SnapshotLeaseName } from './source-snapshots.js';
import { processAlive } from '../node/process-alive.js';

/** The holders of this process: `<host>:<pid>:<token>:`, then a counter. */
const HOST = hostname();
const PROCESS_HOLDER = `${HOST}:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`;
let acquisitions = 0;

/** Longest pause before looking again at a lease held by another process (ms). */
const MAX_FOREIGN_PAUSE_MS = 1000;

/** The waiters of one lease of one database in this process, first come first served. */
class LeaseLine {
  private readonly key: string;
  private readonly waiting: Array<() => void> = [];
  private occupied = false;
  private wake: (() => void) | undefined;

  constructor(key: string) {
    this.key = key;
  }

  /** Resolves when this caller is first in line; rejects (leaving the line) when `signal` aborts before. */
  async enter(signal: AbortSignal | undefined, aborted: () => Error): Promise<void> {
    if (!this.occupied) {
      this.occupied = true;
      return;
    }
    await new Promise<void>((resolveTurn, rejectTurn) => {
      const turn = (): void => {
        signal?.removeEventListener('abort', leave);
        resolveTurn();
      };
      const leave = (): void => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        rejectTurn(aborted());
      };
      this.waiting.push(turn);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  /** The first in line is done waiting: the next one's turn. */
  leave(): void {
    const next = this.waiting.shift();
    if (next !== undefined) {
      next();
      return;
    }
    this.occupied = false;
    if (lines.get(this.key) === this) lines.delete(this.key);
  }

  /** A holder of this process released the lease: the first in line looks again at once. */
  released(): void {
    this.wake?.();
  }

  /** Sleeps up to `ms`, less when the lease is released in this process or `signal` aborts. */
  async pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    await new Promise<void>((resolvePause) => {
      const finish = (): void => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', finish);
        this.wake = undefined;
        resolvePause();
      };
      const timer = setTimeout(finish, Math.max(1, ms));
      signal?.addEventListener('abort', finish);
      this.wake = finish;
    });
  }
}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** The lines of this process, by database file and lease name. */
const lines = new Map<string, LeaseLine>();

function lineKey(file: string, name: string): string {
  return `${resolve(file)}\u0000${name}`;
}

function lineOf(file: string, name: string): LeaseLine {
  const key = lineKey(file, name);
  let line = lines.get(key);
  if (line === undefined) {
    line = new LeaseLine(key);
    lines.set(key, line);
  }
  return line;
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
    const holder = `${PROCESS_HOLDER}${++acquisitions}`;
    if (signal?.aborted === true) throw leaseAborted(this.file, name, signal);
    const line = lineOf(this.file, name);
    await line.enter(signal, () => leaseAborted(this.file, name, signal!));
    try {
      for (let attempt = 0; ; attempt++) {
        if (isAborted(signal)) throw leaseAborted(this.file, name, signal!);
        const now = Date.now();
        const held = this.tryTake(name, holder, now + ttlMs, now);
        if (held === undefined) return new SqliteLease(this.db, this.file, name, holder, now + ttlMs, ttlMs);
        const untilExpiry = held.expires_ms - Date.now() + 1;
        const local = held.holder.startsWith(PROCESS_HOLDER);
        await line.pause(local ? untilExpiry : Math.min(untilExpiry, Math.min(MAX_FOREIGN_PAUSE_MS, 10 * 2 ** Math.min(attempt, 7))), signal);
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
      return { holder: '', expires_ms: now + MAX_FOREIGN_PAUSE_MS };
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
    lines.get(lineKey(this.file, this.name))?.released();
    return Promise.resolve();
  }
}

/**
 * True when `row` no longer binds: expired, or held by a process of this host that is gone (a holder killed
 * while publishing frees its set at once for the next run on the same host, not only once its lease expires).
 */
function lapsed(row: LeaseRow, now: number): boolean {
  if (row.expires_ms <= now) return true;
  const parts = row.holder.split(':');
  if (parts.length < 4 || row.holder.startsWith(PROCESS_HOLDER)) return false;
  const pid = Number(parts[parts.length - 3]);
  if (parts.slice(0, -3).join(':') !== HOST || !Number.isSafeInteger(pid) || pid <= 0) return false;
  return !processAlive(pid);
}
