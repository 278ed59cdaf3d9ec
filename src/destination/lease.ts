/**
 * A lease held for the time of a run: taken from the {@link DestinationState} and renewed by a timer (unref'd: it
 * keeps no process alive) a third of its TTL apart, so that it expires only when its holder stops (a crash, a lost
 * machine). Another run, here or on another machine, takes it over once it has expired.
 */
import { RenewedLease, type HeldLease } from '../node/renewed-lease.js';
import type { DestinationState, LeaseOptions } from './state.js';

export type { HeldLease } from '../node/renewed-lease.js';

/** How long a destination's lease lasts without renewal, ms, unless the caller says otherwise. */
export const DEFAULT_LEASE_TTL_MS = 60_000;

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
