/**
 * The aggregate's status as the explorer's Aggregate view shows it (`api/aggregate`): every Source with its mode,
 * last sync, lag, counts, last error and next attempt, failing Sources first. Nothing secret: a Source URL loses
 * its user information, and credentials appear as the name of their environment variable only.
 * @see Z39.99 §14.8; docs/aggregate.md
 */
import type { AggregateSourceRow, AggregateStatusView } from '../web/status-views.js';
import type { AggregateSource } from './config.js';
import { isFailing, type SourceStatus } from './status.js';

/** A URL without its user information (a Source URL should hold none; if it does, it is not shown). */
function withoutUserInfo(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//');
  }
}

/** Failing Sources first (most failures first), stopped ones last, by id within each. */
function rank(s: AggregateSourceRow): number {
  return s.failing ? 0 : s.state === 'stopped' ? 2 : 1;
}

/**
 * The Aggregate view of `statuses`, at `now`; `sources` (the configuration in force) adds the name of each Source's
 * credentials variable.
 * @example const view = aggregateStatusView(aggregator.status(), aggregator.config.sources, Date.now());
 */
export function aggregateStatusView(statuses: readonly SourceStatus[], sources: readonly AggregateSource[], now: number): AggregateStatusView {
  const credentials = new Map(sources.map((s) => [s.id, s.credentials?.env]));
  const rows = statuses.map((s): AggregateSourceRow => {
    const env = credentials.get(s.id);
    return {
      id: s.id,
      url: withoutUserInfo(s.url),
      mode: s.mode,
      state: s.state,
      failing: isFailing(s),
      failures: s.failures,
      totals: s.totals,
      ...(s.lastSync === undefined ? {} : { lastSync: s.lastSync, lagMs: Math.max(0, now - s.lastSync) }),
      ...(s.resources === undefined ? {} : { resources: s.resources }),
      ...(s.lastError === undefined ? {} : { lastError: s.lastError }),
      ...(s.nextAttempt === undefined || s.state === 'stopped' ? {} : { nextAttempt: s.nextAttempt }),
      ...(env === undefined ? {} : { credentialsEnv: env }),
    };
  });
  rows.sort((a, b) => rank(a) - rank(b) || (rank(a) === 0 ? b.failures - a.failures : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return { at: now, sources: rows };
}
