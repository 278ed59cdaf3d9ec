/**
 * A lease held for the time of a run: taken from the {@link DestinationState} and renewed by a timer (unref'd: it
 * keeps no process alive) a third of its TTL apart, so that it expires only when its holder stops (a crash, a lost
 * machine). Another run, here or on another machine, takes it over once it has expired.
 */
import { messageOf } from '../core/errors.js';
import type { DestinationState, Lease, LeaseOptions } from './state.js';

/** How long a destination's lease lasts without renewal, ms, unless the caller says otherwise. */
export const DEFAULT_LEASE_TTL_MS = 60_000;

/** A lease renewed while held; `lost` says why renewal stopped, when it did. */
export interface HeldLease extends Lease {
  /** Set when a renewal failed (the lease expired and another holder took it, or the state failed). */
  readonly lost: string | undefined;
}

class RenewedLease implements HeldLease {
  readonly #lease: Lease;
  readonly #timer: NodeJS.Timeout;
  #lost: string | undefined;
  #renewing = false;

  constructor(lease: Lease, ttlMs: number) {
    this.#lease = lease;
    this.#timer = setInterval(() => void this.#renewNow(), Math.max(1, Math.floor(ttlMs / 3)));
    this.#timer.unref();
  }

  get holder(): string {
    return this.#lease.holder;
  }

  get expiresAt(): number {
    return this.#lease.expiresAt;
  }

  get lost(): string | undefined {
    return this.#lost;
  }

  async #renewNow(): Promise<void> {
    if (this.#renewing) return;
    this.#renewing = true;
    try {
      await this.#lease.renew();
    } catch (err) {
      this.#lost = messageOf(err);
      clearInterval(this.#timer);
    } finally {
      this.#renewing = false;
    }
  }

  renew(): Promise<void> {
    return this.#lease.renew();
  }

  async release(): Promise<void> {
    clearInterval(this.#timer);
    await this.#lease.release();
  }
}

/**
 * Takes the lease of `state` and keeps it renewed until it is released.
 * @throws ResourceSyncError `RS_LOCKED` when another holder has the lease
 * @example
 * const lease = await holdLease(state);
 * try { … } finally { await lease.release(); }
 */
export async function holdLease(state: DestinationState, options: Partial<LeaseOptions> = {}): Promise<HeldLease> {
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  const lease = await state.acquireLease({ ...options, ttlMs });
  return new RenewedLease(lease, ttlMs);
}
