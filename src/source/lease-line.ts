/**
 * What the leases of every `SourceSnapshots` implementation share in one process: the holders' names
 * (`<host>:<pid>:<token>:<counter>`, so that a holder of this host whose process is gone is recognised), and the
 * line of waiters of one lease. Inside one process no one polls: the waiters stand in line (first come, first
 * served), only the first of them looks at the lease; it sleeps until a holder of this process releases it or
 * until it expires. A holder in another process is looked at again after a short backoff ({@link foreignPause}).
 */
import { hostname } from 'node:os';
import { processAlive } from '../node/process-alive.js';

/** The holders of this process: `<host>:<pid>:<token>:`, then a counter. */
const HOST = hostname();
const PROCESS_HOLDER = `${HOST}:${process.pid}:${Math.random().toString(36).slice(2, 10)}:`;
let acquisitions = 0;

/** Longest pause before looking again at a lease held by another process (ms). */
const MAX_FOREIGN_PAUSE_MS = 1000;

/** A new holder name, unique to one acquisition. */
export function newHolder(): string {
  return `${PROCESS_HOLDER}${++acquisitions}`;
}

/** True when `holder` is of this process. */
export function isLocalHolder(holder: string): boolean {
  return holder.startsWith(PROCESS_HOLDER);
}

/** The pause before the `attempt`-th look at a lease held elsewhere: 10 ms doubling up to 1 s, never past its expiry. */
export function foreignPause(attempt: number, untilExpiryMs: number): number {
  return Math.min(untilExpiryMs, MAX_FOREIGN_PAUSE_MS, 10 * 2 ** Math.min(attempt, 7));
}

/**
 * True when `holder` is a process of this host that is gone: its lease binds no more (a holder killed while
 * publishing frees its set at once for the next run on the same host, not only once its lease expires).
 */
export function holderGone(holder: string): boolean {
  const parts = holder.split(':');
  if (parts.length < 4 || isLocalHolder(holder)) return false;
  const pid = Number(parts[parts.length - 3]);
  if (parts.slice(0, -3).join(':') !== HOST || !Number.isSafeInteger(pid) || pid <= 0) return false;
  return !processAlive(pid);
}

/** The waiters of one lease of one store in this process, first come first served. */
export class LeaseLine {
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

/** The lines of this process, by store and lease name. */
const lines = new Map<string, LeaseLine>();

/** The line of the lease `key` (a store and a lease name), made when nobody stands in it. */
export function leaseLine(key: string): LeaseLine {
  let line = lines.get(key);
  if (line === undefined) {
    line = new LeaseLine(key);
    lines.set(key, line);
  }
  return line;
}

/** A holder of this process released the lease `key`: its first waiter, if any, looks again at once. */
export function leaseReleased(key: string): void {
  lines.get(key)?.released();
}
