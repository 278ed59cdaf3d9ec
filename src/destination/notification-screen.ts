/**
 * What a follower accepts from a delivered Change Notification. A notification arrives through a hub, not from the
 * Source itself, so it is held to what the Source can have said: a window that ends later than the notification was
 * received is not believed (the Change List is read instead), and an entry whose resource is outside the Source's
 * authority or would be written outside the mirror is ignored. Each refusal is a coded note; none becomes a failure
 * kept in the state.
 * @see Change Notification §3 (from/until); Z39.99 §5.2 (the Destination's authority)
 */
import type { Entry } from '../core/model/types.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import type { Authority } from '../client/authority.js';
import type { Mapper } from './mapper.js';
import { note, type DestinationNote } from './notes.js';

/** How far a window's `until` may run past the time the notification was received (clocks differ), ms. */
const WINDOW_SKEW_MS = 5 * 60_000;

/**
 * True when a window ends later than `receivedAt` (plus {@link WINDOW_SKEW_MS}): the Source cannot have said it.
 * @example windowFromFuture('9999-12-31T00:00:00Z', Date.now()) // true
 */
export function windowFromFuture(until: string | undefined, receivedAt: number): boolean {
  const u = until === undefined ? undefined : parseW3CDatetime(until, true)?.ms;
  return u !== undefined && u > receivedAt + WINDOW_SKEW_MS;
}

/**
 * The entries a follower may apply: each on the authority and mapped to a safe path under the mirror; the others
 * are reported through `warn` (`notification-entry-ignored`) and dropped.
 * @example const ok = screenEntries(entries, connection, (n) => warnings.push(n));
 */
export function screenEntries(
  entries: readonly Entry[],
  rules: { authority: Authority; mapper: Mapper },
  warn: (n: DestinationNote) => void,
): Entry[] {
  const out: Entry[] = [];
  for (const e of entries) {
    if (!rules.authority.allows(e.loc)) warn(note('notification-entry-ignored', { loc: e.loc, reason: 'authority' }));
    else if (rules.mapper.tryPath(e.loc) === undefined)
      warn(note('notification-entry-ignored', { loc: e.loc, reason: 'path' }));
    else out.push(e);
  }
  return out;
}
