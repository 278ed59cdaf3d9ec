/** When requests may go: the pace and `Retry-After` pause of one origin, and waits the client can end at once. */

/** An abortable wait that adds no listener to `signal` (the client keeps one listener per signal). */
export interface Waits {
  sleep(ms: number): Promise<void>;
  abortAll(reason: Error): void;
}

/** Waits for the client's timers, all rejected together by {@link Waits.abortAll}. */
export function waits(): Waits {
  const pending = new Set<{ timer: NodeJS.Timeout; reject: (e: Error) => void }>();
  return {
    sleep: (ms) =>
      new Promise<void>((resolve, reject) => {
        const w = {
          timer: setTimeout(() => {
            pending.delete(w);
            resolve();
          }, ms),
          reject,
        };
        pending.add(w);
      }),
    abortAll: (reason) => {
      for (const w of pending) {
        clearTimeout(w.timer);
        w.reject(reason);
      }
      pending.clear();
    },
  };
}

/** When the next request to an origin may start; {@link OriginPace} is one, and may be shared by several clients. */
export interface Pace {
  /** Milliseconds to wait before this request may go (and reserves its place in the pace). */
  delay(now: number): number;
  /** No request to the origin goes before `until` (a `Retry-After`). */
  block(until: number): void;
}

/**
 * One pace per origin, shared by every client given it (`HttpClientOptions.originPace`): every Source of an
 * aggregate on one origin draws its requests from the same pace, so that together they keep to `rate`.
 * @example const paces = new SharedPaces(2); createHttpClient({ authority, originPace: (o) => paces.for(o) });
 */
export class SharedPaces {
  readonly rate: number;
  readonly #paces = new Map<string, OriginPace>();

  constructor(rate: number) {
    this.rate = rate;
  }

  /** The pace of `origin`, made at its first use. */
  for(origin: string): OriginPace {
    let pace = this.#paces.get(origin);
    if (pace === undefined) {
      pace = new OriginPace(this.rate);
      this.#paces.set(origin, pace);
    }
    return pace;
  }
}

/**
 * When the next request to one origin may start: a pace of `rate` requests per second (none when undefined) and a
 * pause that a `Retry-After` on a 429 or 503 imposes on every request to the origin, not just the one answered.
 */
export class OriginPace implements Pace {
  #next = 0;
  #blockedUntil = 0;
  readonly #interval: number;

  constructor(rate: number | undefined) {
    this.#interval = rate !== undefined && rate > 0 ? 1000 / rate : 0;
  }

  /** Milliseconds to wait before this request may go (and reserves its place in the pace). */
  delay(now: number): number {
    const start = Math.max(now, this.#blockedUntil, this.#next);
    if (this.#interval > 0) this.#next = start + this.#interval;
    return start - now;
  }

  /** No request to the origin goes before `until` (a `Retry-After`); a later pause wins over an earlier one. */
  block(until: number): void {
    if (until > this.#blockedUntil) this.#blockedUntil = until;
  }
}
