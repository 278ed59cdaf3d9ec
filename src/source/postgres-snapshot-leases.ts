/**
 * The leases of the PostgreSQL snapshots (`SourceSnapshots.acquireLease`): one row of
 * `resourcesync_snapshot_leases` per set and lease name (holder, expiry on the database's clock, so machines whose
 * clocks differ agree on it), taken by one `INSERT … ON CONFLICT DO UPDATE … WHERE` expired (atomic under the row
 * lock), renewed and released only by its holder. Waiters of one process stand in line without polling
 * (lease-line.ts); a holder elsewhere is looked at again after a short backoff.
 */
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import { NOW_MS } from '../node/postgres.js';
import { foreignPause, holderGone, isLocalHolder, leaseLine, leaseReleased, newHolder } from './lease-line.js';
import {
  DEFAULT_LEASE_MS,
  leaseAborted,
  type LeaseOptions,
  type SnapshotLease,
  type SnapshotLeaseName,
} from './source-snapshots.js';

const L = 'resourcesync_snapshot_leases';

function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

/** The leases of one set, through one pool. */
export class PostgresLeases {
  constructor(
    private readonly pool: pg.Pool,
    private readonly setId: number,
    /** The same for every instance of this process over the same set (the database and the set's id). */
    private readonly key: string,
    private readonly location: string,
  ) {}

  /** See `SourceSnapshots.acquireLease`. */
  async acquire(name: SnapshotLeaseName, options: LeaseOptions = {}): Promise<SnapshotLease> {
    const ttlMs = Math.max(1, Math.round(options.ttlMs ?? DEFAULT_LEASE_MS));
    const signal = options.signal;
    const holder = newHolder();
    if (signal?.aborted === true) throw leaseAborted(this.location, name, signal);
    const lineKey = `${this.key}\u0000${name}`;
    const line = leaseLine(lineKey);
    await line.enter(signal, () => leaseAborted(this.location, name, signal!));
    try {
      let gone = '';
      for (let attempt = 0; ; attempt++) {
        if (aborted(signal)) throw leaseAborted(this.location, name, signal!);
        const taken = await this.pool.query<{ expires_ms: number }>(
          `INSERT INTO ${L} (set_id, name, holder, expires_ms) VALUES ($1, $2, $3, ${NOW_MS} + $4)
           ON CONFLICT (set_id, name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms
           WHERE ${L}.expires_ms <= ${NOW_MS} OR ${L}.holder = $5
           RETURNING expires_ms::float8 AS expires_ms`,
          [this.setId, name, holder, ttlMs, gone],
        );
        if (taken.rows.length > 0)
          return new PostgresLease(this, lineKey, name, holder, taken.rows[0]!.expires_ms, ttlMs);
        const seen = await this.pool.query<{ holder: string; remaining: number }>(
          `SELECT holder, (expires_ms - ${NOW_MS})::float8 AS remaining FROM ${L} WHERE set_id = $1 AND name = $2`,
          [this.setId, name],
        );
        const row = seen.rows[0];
        if (row === undefined) continue; // released meanwhile
        if (holderGone(row.holder)) {
          gone = row.holder; // a process of this host that is gone: its lease binds no more
          continue;
        }
        const untilExpiry = Math.max(1, row.remaining + 1);
        await line.pause(isLocalHolder(row.holder) ? untilExpiry : foreignPause(attempt, untilExpiry), signal);
      }
    } finally {
      line.leave();
    }
  }

  /** Extends `holder`'s lease; the new expiry, or undefined when it no longer holds it. */
  async renew(name: SnapshotLeaseName, holder: string, ttlMs: number): Promise<number | undefined> {
    const row = await this.pool.query<{ expires_ms: number }>(
      `UPDATE ${L} SET expires_ms = ${NOW_MS} + $4 WHERE set_id = $1 AND name = $2 AND holder = $3 RETURNING expires_ms::float8 AS expires_ms`,
      [this.setId, name, holder, ttlMs],
    );
    return row.rows[0]?.expires_ms;
  }

  /** Gives `holder`'s lease up (nothing when another holder took it). */
  async release(name: SnapshotLeaseName, holder: string): Promise<void> {
    await this.pool.query(`DELETE FROM ${L} WHERE set_id = $1 AND name = $2 AND holder = $3`, [
      this.setId,
      name,
      holder,
    ]);
  }

  lockedError(name: string): ResourceSyncError {
    return new ResourceSyncError(
      'RS_LOCKED',
      `The ${name} lease of '${this.location}' lapsed and another holder took it.`,
      { data: { path: this.location } },
    );
  }
}

/** A lease of the PostgreSQL snapshots, renewed and released through the row that holds it. */
class PostgresLease implements SnapshotLease {
  private released = false;

  constructor(
    private readonly leases: PostgresLeases,
    private readonly lineKey: string,
    readonly name: SnapshotLeaseName,
    readonly holder: string,
    public expiresAt: number,
    private readonly ttlMs: number,
  ) {}

  async renew(): Promise<void> {
    const until = this.released ? undefined : await this.leases.renew(this.name, this.holder, this.ttlMs);
    if (until === undefined) throw this.leases.lockedError(this.name);
    this.expiresAt = until;
  }

  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    try {
      await this.leases.release(this.name, this.holder);
    } finally {
      // the waiters of this process, if any, look again at once
      leaseReleased(this.lineKey);
    }
  }
}
