/**
 * The aggregator's metrics in the Prometheus text exposition format (version 0.0.4), from the status of its
 * Sources: what operators of such a service watch (last sync, failures, counts, next attempt).
 * @see https://prometheus.io/docs/instrumenting/exposition_formats/
 */
import type { ResponderResponse } from '../server/request-response.js';
import { isFailing, type SourceStatus } from './status.js';

/** The path the metrics are served at. */
export const METRICS_PATH = '/metrics';

const PREFIX = 'resourcesync_aggregate';

/** A label value escaped as the format asks (backslash, double quote, newline). */
function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

interface Family {
  name: string;
  type: 'gauge' | 'counter';
  help: string;
  /** The value for a Source, or undefined for none; or several values by an extra label. */
  value: (s: SourceStatus) => number | undefined | Record<string, number>;
  /** The extra label's name, for values by label. */
  by?: string;
}

const seconds = (ms: number | undefined): number | undefined => (ms === undefined ? undefined : ms / 1000);

const FAMILIES: Family[] = [
  { name: 'source_up', type: 'gauge', help: '1 when the last attempt at the Source succeeded, 0 when it failed.', value: (s) => (s.state === 'stopped' ? undefined : isFailing(s) ? 0 : 1) },
  { name: 'source_last_sync_timestamp_seconds', type: 'gauge', help: 'When the last successful sync of the Source started.', value: (s) => seconds(s.lastSync) },
  { name: 'source_last_attempt_timestamp_seconds', type: 'gauge', help: 'When the last attempt at the Source started.', value: (s) => seconds(s.lastAttempt) },
  { name: 'source_next_attempt_timestamp_seconds', type: 'gauge', help: 'When the next attempt at the Source is due.', value: (s) => (s.state === 'stopped' ? undefined : seconds(s.nextAttempt)) },
  { name: 'source_resources', type: 'gauge', help: 'Resources the mirror of the Source holds.', value: (s) => s.resources },
  { name: 'source_consecutive_failures', type: 'gauge', help: 'Failed attempts at the Source in a row.', value: (s) => s.failures },
  { name: 'source_last_sync_duration_seconds', type: 'gauge', help: 'How long the last successful sync of the Source took.', value: (s) => seconds(s.lastRun?.durationMs) },
  { name: 'source_syncs_total', type: 'counter', help: 'Successful syncs of the Source.', value: (s) => s.totals.syncs },
  { name: 'source_errors_total', type: 'counter', help: 'Failed attempts at the Source.', value: (s) => s.totals.errors },
  {
    name: 'source_changes_total',
    type: 'counter',
    help: 'Changes applied to the mirror of the Source, by kind.',
    by: 'change',
    value: (s) => ({ created: s.totals.created, updated: s.totals.updated, deleted: s.totals.deleted }),
  },
];

/**
 * The metrics text of an aggregate's Sources (every Source but the stopped ones).
 * @example metricsText(aggregator.status()) // '# HELP resourcesync_aggregate_source_up …'
 */
function metricsText(statuses: readonly SourceStatus[]): string {
  const live = statuses.filter((s) => s.state !== 'stopped');
  const lines: string[] = [];
  lines.push(`# HELP ${PREFIX}_sources Sources of the aggregate, by state.`, `# TYPE ${PREFIX}_sources gauge`);
  for (const state of ['waiting', 'syncing', 'failing', 'stopped'] as const) {
    lines.push(`${PREFIX}_sources{state="${state}"} ${statuses.filter((s) => s.state === state).length}`);
  }
  for (const f of FAMILIES) {
    lines.push(`# HELP ${PREFIX}_${f.name} ${f.help}`, `# TYPE ${PREFIX}_${f.name} ${f.type}`);
    for (const s of live) {
      const v = f.value(s);
      if (v === undefined) continue;
      const id = `source="${label(s.id)}"`;
      if (typeof v === 'number') lines.push(`${PREFIX}_${f.name}{${id}} ${v}`);
      else for (const [k, n] of Object.entries(v)) lines.push(`${PREFIX}_${f.name}{${id},${f.by!}="${k}"} ${n}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The response to `GET /metrics`. */
export function metricsResponse(statuses: readonly SourceStatus[], method: string): ResponderResponse {
  const bytes = Buffer.from(metricsText(statuses));
  return {
    status: 200,
    headers: { 'content-type': 'text/plain; version=0.0.4; charset=utf-8', 'content-length': String(bytes.length), 'cache-control': 'no-store' },
    ...(method === 'HEAD' ? {} : { body: { type: 'bytes' as const, bytes } }),
  };
}
