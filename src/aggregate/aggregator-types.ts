/**
 * The shapes of a running aggregator (see ./aggregator.ts): its options, what it reports and what it offers.
 * @see Z39.99 §14.8; docs/aggregate.md
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PublishResult } from '../source/publish.js';
import type { ResponderHandler } from '../server/request-response.js';
import type { PushEvent } from '../live/push.js';
import type { AggregateConfig } from './config.js';
import type { AggregatePublication } from './publication.js';
import type { SourceSyncResult } from './source-mirror.js';
import type { SourceStatus } from './status.js';

/** What the aggregator reports (it never prints). */
export type AggregateEvent =
  | { type: 'synced'; id: string; result: SourceSyncResult }
  | { type: 'sync-failed'; id: string; error: unknown; failures: number; nextAttempt: number }
  | { type: 'published'; sources: number; changes: PublishResult['changes'] | undefined; ms: number }
  | { type: 'publish-failed'; error: unknown }
  | { type: 'reloaded'; added: string[]; removed: string[]; changed: string[] }
  /** A Source followed by push: a problem (following goes on), or the mode in use changed. */
  | { type: 'follow-problem'; id: string; error: unknown }
  | { type: 'mode'; id: string; mode: 'push' | 'poll' }
  /** With `state`: the status could not be copied to PostgreSQL (it is in the local file; tried again at the next change). */
  | { type: 'status-not-copied'; error: unknown }
  | PushEvent;

/** Options of {@link startAggregator}. */
export interface AggregatorOptions {
  /** Where the aggregate is published when the configuration gives no `base-url` (the listening URL). */
  defaultBaseUrl: string;
  /** Environment the Sources' credentials are read from (the caller's `process.env`). */
  env: Record<string, string | undefined>;
  /** Resources fetched at once from one Source. Default 4. */
  resourceConcurrency?: number;
  /** HTTP timeout (connect, headers, body idle) per request to a Source, ms. Default 30,000. */
  timeoutMs?: number;
  onEvent?: (event: AggregateEvent) => void;
  /** Clock, ms since the epoch. Default `Date.now`. */
  now?: () => number;
  /**
   * The listening server's origin (`http://host:port`): with it the aggregate has an embedded hub (Change
   * Notifications of every publication) and follows Sources by push, their callbacks on this server (see
   * {@link Aggregator.intercept}). Without it, every Source is polled and nothing is pushed.
   */
  origin?: string;
  /** While pushed to, a followed Source's Change List is read every this many ms all the same. Default 300,000. */
  reconcileMs?: number;
}

/** A running aggregator. */
export interface Aggregator {
  /** The configuration in force. */
  readonly config: AggregateConfig;
  /** The published aggregate. */
  readonly publication: AggregatePublication;
  /** Serves the aggregate and its channels' topics (mount it on a server, with {@link Aggregator.intercept}). */
  readonly handler: ResponderHandler;
  /** Takes the requests to the embedded hub and to the callbacks of the Sources followed by push; false for others. */
  intercept(req: IncomingMessage, res: ServerResponse): boolean;
  /** Applies a new configuration: added Sources start, removed ones stop (their mirror kept), changed ones restart. */
  reload(config: AggregateConfig): void;
  /** Makes every Source due now. */
  syncAll(): void;
  /** The status of every Source. */
  status(): SourceStatus[];
  /** Stops every sync (each ends at its next step) and waits for them and the publication in flight. */
  close(): Promise<void>;
}
