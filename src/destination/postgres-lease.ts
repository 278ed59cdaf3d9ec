/**
 * The lease of the PostgreSQL Destination state: one row of `resourcesync_leases` per destination, taken by a single
 * `INSERT ... ON CONFLICT DO UPDATE ... WHERE expires_at <= now` (atomic under the row lock), renewed and released
 * only through the random token of the lease that took it. Expiry is measured on the database's clock, so machines
 * whose clocks differ agree on it. The row also names the holder's host and process: on the same host, a lease whose
 * process is gone (`kill -9`, a crash) is taken over at once, as with the SQLite state; from another host it is taken
 * over once it has expired.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type pg from 'pg';
import { ResourceSyncError } from '../core/errors.js';
import type { Lease, LeaseOptions } from './state.js';
import { processAlive } from '../node/process-alive.js';

/** The database's clock in ms since the epoch, as SQL. */
const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

function lockedError(destination: string, holder?: string, expiresAt?: number): ResourceSyncError {
  if (holder === undefined) return new ResourceSyncError('RS_LOCKED', `The lease of destination '${destination}' was lost.`, { data: { dest: destination } });
  const until = expiresAt === undefined ? '' : ` until ${new Date(expiresAt).toISOString()}`;
  return new ResourceSyncError('RS_LOCKED', `Destination '${destination}' is locked by '${holder}'${until}.`, { data: { dest: destination, holder, expiresAt } });
}

/** One lease taken; forgets itself from its owner's set once released. */
class PostgresLease implements Lease {
  readonly holder: string;
  #expiresAt: number;
  readonly #token: string;
  readonly #leases: PostgresLeases;
  #released = false;

  constructor(leases: PostgresLeases, holder: string, token: string, expiresAt: number, readonly ttlMs: number) {
    this.#leases = leases;
    this.holder = holder;
    this.#token = token;
    this.#expiresAt = expiresAt;
  }

  get expiresAt(): number {
    return this.#expiresAt;
  }

  async renew(): Promise<void> {
    if (this.#released) throw lockedError(this.#leases.destination);
    const result = await this.#leases.pool.query<{ expires_at: string }>(
      `UPDATE resourcesync_leases SET expires_at = ${NOW_MS} + $3 WHERE destination = $1 AND token = $2 RETURNING expires_at`,
      [this.#leases.destination, this.#token, this.ttlMs],
    );
    if (result.rows.length === 0) {
      this.#released = true;
      this.#leases.forget(this);
      throw lockedError(this.#leases.destination);
    }
    this.#expiresAt = Number(result.rows[0]!.expires_at);
  }

  async release(): Promise<void> {
    if (this.#released) return;
    this.#released = true;
    this.#leases.forget(this);
    await this.#leases.pool.query('DELETE FROM resourcesync_leases WHERE destination = $1 AND token = $2', [this.#leases.destination, this.#token]);
  }
}

/** The leases of one destination taken through one state instance. */
export class PostgresLeases {
  readonly #held = new Set<PostgresLease>();

  constructor(readonly pool: pg.Pool, readonly destination: string) {}

  /** Takes the lease, or throws `RS_LOCKED` while an unexpired one is held (by anyone, this holder included). */
  async acquire(options: LeaseOptions): Promise<Lease> {
    const holder = options.holder ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const token = randomUUID();
    const params = [this.destination, holder, token, options.ttlMs, hostname(), process.pid];
    const taken = await this.pool.query<{ expires_at: string }>(
      `INSERT INTO resourcesync_leases (destination, holder, token, expires_at, host, pid) VALUES ($1, $2, $3, ${NOW_MS} + $4, $5, $6)
       ON CONFLICT (destination) DO UPDATE SET holder = excluded.holder, token = excluded.token, expires_at = excluded.expires_at,
         host = excluded.host, pid = excluded.pid
       WHERE resourcesync_leases.expires_at <= ${NOW_MS}
       RETURNING expires_at`,
      params,
    );
    const expiresAt = taken.rows[0]?.expires_at ?? (await this.#takeFromTheDead(params));
    const lease = new PostgresLease(this, holder, token, Number(expiresAt), options.ttlMs);
    this.#held.add(lease);
    return lease;
  }

  /**
   * Takes over a lease held by a process of this host that is gone, only if the row is still the one read (its token
   * unchanged: two takers cannot both win); otherwise throws `RS_LOCKED` naming the holder.
   * @returns the new expiry
   */
  async #takeFromTheDead(params: unknown[]): Promise<string> {
    const current = await this.pool.query<{ holder: string; token: string; expires_at: string; host: string | null; pid: number | null }>(
      'SELECT holder, token, expires_at, host, pid FROM resourcesync_leases WHERE destination = $1',
      [this.destination],
    );
    const row = current.rows[0];
    const gone = row !== undefined && row.host === hostname() && row.pid !== null && row.pid !== process.pid && !processAlive(row.pid);
    if (gone) {
      const taken = await this.pool.query<{ expires_at: string }>(
        `UPDATE resourcesync_leases SET holder = $2, token = $3, expires_at = ${NOW_MS} + $4, host = $5, pid = $6
         WHERE destination = $1 AND token = $7 RETURNING expires_at`,
        [...params, row.token],
      );
      if (taken.rows[0] !== undefined) return taken.rows[0].expires_at;
    }
    throw lockedError(this.destination, row?.holder ?? 'another holder', row === undefined ? undefined : Number(row.expires_at));
  }

  forget(lease: PostgresLease): void {
    this.#held.delete(lease);
  }

  /** Releases every lease still held through this instance. */
  async releaseAll(): Promise<void> {
    for (const lease of [...this.#held]) await lease.release();
  }
}
