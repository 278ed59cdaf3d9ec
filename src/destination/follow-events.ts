/**
 * What {@link followSource} reports: each applied batch and why it ran, and what happened to its channel.
 * The library never prints; the CLI (`sync --follow`) turns these into its lines.
 */
import type { FollowBatch } from './follower.js';
import type { SyncReport } from './sync.js';

/**
 * Why a batch ran: the first sync (`start`), notifications (`push`), a poll while not pushed to (`poll`),
 * the changes between the first sync (or a loss) and the subscription (`catch-up`), the periodic or
 * after-renewal reading of the Change List while pushed to (`reconcile`), or a retry of failed resources.
 */
export type FollowVia = 'start' | 'push' | 'poll' | 'catch-up' | 'reconcile' | 'retry';

/** An event of {@link followSource}. */
export type FollowEvent =
  /** The first sync (baseline or catch-up) was applied. */
  | { type: 'started'; report: SyncReport }
  /** A batch was applied after the first sync (every batch, empty ones included). */
  | { type: 'batch'; via: FollowVia; batch: FollowBatch }
  /** A problem that does not stop following (a Change List catch-up that threw). */
  | { type: 'error'; error: unknown }
  /** The Capability List's change channel could not be read: polling. */
  | { type: 'channel-unreadable'; error: unknown }
  /** The channel's hub is on an origin this Destination may not contact: polling. */
  | { type: 'hub-refused'; hub: string }
  /** XMPP was asked for, but the Source advertises no XMPP node and none was given: polling. */
  | { type: 'no-xmpp-node' }
  /** The Source offers no change notification channel: polling. */
  | { type: 'no-channel' }
  /** Subscribed (again, after polling). */
  | { type: 'subscribed'; where: string }
  /** A subscription attempt failed: polling, and trying again. */
  | { type: 'subscribe-failed'; error: unknown }
  /** The WebSub lease could not be renewed: polling. */
  | { type: 'renew-failed' }
  /** A notification with a bad signature was ignored. */
  | { type: 'bad-signature' }
  /** The XMPP connection was lost: polling until it is back. */
  | { type: 'xmpp-lost'; error?: Error }
  /** An XMPP stanza was refused as too large: the Change List is read. */
  | { type: 'xmpp-oversized'; bytes: number }
  /** The WebSub subscription a previous run left (on another callback) was ended, or could not be. */
  | { type: 'previous-subscription'; callbackUrl: string; ended: boolean; reason?: string }
  /** The WebSub subscription could not be kept in the state for the next run. */
  | { type: 'subscription-not-kept'; error: unknown }
  /** Unsubscribing at the end failed. */
  | { type: 'unsubscribe-failed'; error: unknown };
