/**
 * A lease kept while its holder lives: renewed by a timer a third of its TTL apart (unref'd: it keeps no process
 * alive), so that it expires only when the holder stops (a crash, a lost machine) and another holder, here or on
 * another machine, can take it over. Serves any store's lease: the Destination's state and the Source's snapshots.
 */
import { messageOf } from '../core/errors.js';

/** What a store's lease offers: who holds it, until when, and renewal and release by that holder. */
export interface RenewableLease {
  readonly holder: string;
  /** When it expires unless renewed (ms since the epoch). */
  readonly expiresAt: number;
  renew(): Promise<void>;
  release(): Promise<void>;
}

/** A lease renewed while held; `lost` says why renewal stopped, when it did. */
export interface HeldLease extends RenewableLease {
  /** Set when a renewal failed (the lease expired and another holder took it, or the store failed). */
  readonly lost: string | undefined;
}

/** Keeps `lease` (whose time to live is `ttlMs`) renewed until it is released. */
export class RenewedLease implements HeldLease {
  readonly #lease: RenewableLease;
  readonly #timer: NodeJS.Timeout;
  #lost: string | undefined;
  #renewing = false;

  constructor(lease: RenewableLease, ttlMs: number) {
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
