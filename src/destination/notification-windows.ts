/**
 * Gap and order detection over the `from`/`until` windows of successive Change Notifications: a Source
 * publishes contiguous, non-overlapping windows, so a notification whose `from` is later than the
 * previous `until` means notifications were missed (fill the gap from the Change List), and one that
 * ends no later than the previous `until` is a duplicate or arrived out of order.
 * @see Change Notification §3 (from, until)
 */
import { parseW3CDatetime } from '../core/w3c-datetime.js';

/** How a notification's window relates to the ones seen before. */
export type WindowOrder = 'first' | 'next' | 'gap' | 'stale' | 'overlap' | 'invalid';

/** Tracks the end of the last window seen. */
export class WindowTracker {
  private untilMs: number | undefined;

  /** @param until the `until` of the last window already applied, e.g. from saved state */
  constructor(until?: number) {
    this.untilMs = until;
  }

  /** The end of the last window accepted (ms), if any. */
  get until(): number | undefined {
    return this.untilMs;
  }

  /**
   * Classifies a window and, unless it is stale or invalid, moves the end forward.
   * @example new WindowTracker(Date.parse('2013-01-03T00:10:00Z')).accept('2013-01-03T00:20:00Z', '2013-01-03T00:30:00Z') === 'gap'
   */
  accept(from: string | undefined, until: string | undefined): WindowOrder {
    const f = from === undefined ? undefined : parseW3CDatetime(from, true);
    const u = until === undefined ? undefined : parseW3CDatetime(until, true);
    if (f === undefined || u === undefined || u.ms < f.ms) return 'invalid';
    const last = this.untilMs;
    if (last !== undefined && u.ms <= last && !(f.ms === last && u.ms === last)) return 'stale';
    this.untilMs = Math.max(u.ms, last ?? u.ms);
    if (last === undefined) return 'first';
    if (f.ms === last) return 'next';
    return f.ms > last ? 'gap' : 'overlap';
  }
}
