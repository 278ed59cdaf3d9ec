/** Options of {@link CreatePace}. */
export interface CreatePaceOptions {
  /** A synchronous create slower than this (milliseconds) counts as a stall. Default 1. */
  stallMs?: number;
  /** How long creates stay on the thread pool after a stall (milliseconds). Default 500. */
  holdMs?: number;
  /** Clock in milliseconds (injected in tests). Default `performance.now`. */
  now?: () => number;
}

/**
 * Chooses how small temporary files are created: with a synchronous call, the cheapest while the file system
 * answers at once, or on the thread pool while creates stall (a journal commit or a `syncfs` on a busy disk
 * can hold a create for milliseconds, and a synchronous one would hold every download with it). A synchronous
 * create slower than `stallMs` sends creates to the thread pool for `holdMs`; after that a synchronous create
 * is tried again. On this project's test machine creates swing from about 15 µs to over 400 µs within minutes.
 */
export class CreatePace {
  readonly #stallMs: number;
  readonly #holdMs: number;
  readonly #now: () => number;
  #threadPoolUntil = -Infinity;
  /** Stalls seen so far. */
  stalls = 0;

  constructor(options: CreatePaceOptions = {}) {
    this.#stallMs = options.stallMs ?? 1;
    this.#holdMs = options.holdMs ?? 500;
    this.#now = options.now ?? (() => performance.now());
  }

  /** True when the next create should run on the thread pool. */
  get threadPool(): boolean {
    return this.#now() < this.#threadPoolUntil;
  }

  /** Runs a synchronous create and notes whether it stalled. */
  timed<T>(create: () => T): T {
    const t0 = this.#now();
    try {
      return create();
    } finally {
      const t1 = this.#now();
      if (t1 - t0 > this.#stallMs) {
        this.stalls++;
        this.#threadPoolUntil = t1 + this.#holdMs;
      }
    }
  }
}
