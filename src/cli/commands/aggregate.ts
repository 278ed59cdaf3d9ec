/**
 * `resourcesync aggregate <config> [--port N] [--host H] [--verbose]`: keeps every Source of a configuration in
 * step and serves them as one Source with provenance (Z39.99 §14.8); prints `listening on <url>` once it listens.
 * SIGHUP, or a change of the file, reloads the configuration; SIGINT/SIGTERM stop it cleanly (exit 0).
 * `resourcesync aggregate status <config> [--json]`: the status of each Source, read while the aggregator runs.
 * @see docs/aggregate.md
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import { loadAggregateConfig, type AggregateConfig } from '../../aggregate/config.js';
import { startAggregator, type AggregateEvent, type Aggregator } from '../../aggregate/aggregator.js';
import { metricsResponse, METRICS_PATH } from '../../aggregate/metrics.js';
import { isFailing, readAggregateStatus, sortStatus, type SourceStatus } from '../../aggregate/status.js';
import { readPostgresStatus } from '../../aggregate/postgres-status.js';
import { aggregateKey } from '../../aggregate/engines.js';
import { aggregateStatusView } from '../../aggregate/status-view.js';
import { mountExplorer, type ExplorerMount } from '../../live/explorer-mount.js';
import { serve, type RunningServer } from '../../server/node-adapter.js';
import type { ResponderHandler } from '../../server/request-response.js';
import { parseCommandArgs, usageError } from '../command-args.js';
import { redactedUrl } from '../../node/postgres.js';
import { quietSdk } from '../s3-dest.js';

const HELP = `Usage: resourcesync aggregate <config> [options]
       resourcesync aggregate status <config> [--json]

Keeps every Source named in <config> (YAML or JSON) in step, each in its own mirror under
<out>/sources/<id>/, and serves them as one Source at base-url: a Capability List per Source,
whose Resource and Change Lists carry rs:ln rel="via" to each original (Z39.99 §14.8).
Prints 'listening on <url>' once listening. SIGHUP or a change of <config> reloads it: added
Sources start, removed ones stop (their mirror is kept), changed ones restart. Prometheus metrics
of every Source are at /metrics; the explorer page, with an Aggregate tab (the status of every
Source, failing ones first), at /.resourcesync/ui/ under base-url. See docs/aggregate.md.

Options:
  --port N      TCP port (default: the port of base-url, else 8080; 0 picks a free one)
  --host H      interface to listen on (default 127.0.0.1)
  --verbose     log every sync and publication on stderr (failures and reloads are always logged)
  --state URL   keep every Source's Destination state and the aggregate's snapshots in the
                PostgreSQL database URL (postgres://USER@HOST:PORT/DB; the password in the
                URL or in PGPASSWORD), as the configuration's 'state' field does (this wins)
  --json        (status) the status as one JSON object
                (status, with --state or the configuration's state: read from PostgreSQL)
  -h, --help    show this help

Exit codes:
  0  stopped cleanly; (status) every Source is in step or waiting
  1  cannot listen; (status) some Source is failing
  2  usage error, or the configuration is not valid
`;

const ARGS = {
  port: { type: 'string' },
  host: { type: 'string' },
  verbose: { type: 'boolean' },
  json: { type: 'boolean' },
  state: { type: 'string' },
} as const;

/** Runs `resourcesync aggregate`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('aggregate', args, ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  const state = values.state;
  if (state !== undefined && (!/^postgres(ql)?:\/\//i.test(state) || !URL.canParse(state) || new URL(state).hostname === '')) {
    return usageError('aggregate', `--state '${redactedUrl(state)}' is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)`);
  }
  if (positionals[0] === 'status' && positionals.length === 2) return status(positionals[1]!, values.json === true, state);
  if (positionals.length !== 1) return usageError('aggregate', 'expected <config>, or status <config>');
  if (values.json === true) return usageError('aggregate', '--json goes with status');
  const config = load(positionals[0]!, state);
  if (typeof config === 'number') return config;
  const port = values.port === undefined ? defaultPort(config) : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return usageError('aggregate', `--port '${values.port}' is not a port number`);
  return aggregate(positionals[0]!, config, port, values.host ?? '127.0.0.1', values.verbose === true, state);
}

/** The configuration in `file`, with `state` (from `--state`) in place of its own. */
function load(file: string, state?: string): AggregateConfig | number {
  try {
    const loaded = loadAggregateConfig(file);
    const config = state === undefined ? loaded : { ...loaded, state };
    if (config.s3 !== undefined && config.state === undefined) {
      process.stderr.write(`resourcesync aggregate: out: ${config.s3.location} keeps the states elsewhere: give state: postgres://… in the configuration, or --state\n`);
      return 2;
    }
    if (config.s3 !== undefined) quietSdk();
    return config;
  } catch (error) {
    if (isResourceSyncError(error, 'RS_INVALID_ARGUMENT') || isResourceSyncError(error, 'RS_IO') || isResourceSyncError(error, 'RS_LIMIT_BYTES')) {
      process.stderr.write(`resourcesync aggregate: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
}

function defaultPort(config: AggregateConfig): number {
  if (config.baseUrl === undefined) return 8080;
  const u = new URL(config.baseUrl);
  return u.port === '' ? (u.protocol === 'https:' ? 443 : 80) : Number(u.port);
}

async function aggregate(file: string, config: AggregateConfig, port: number, host: string, verbose: boolean, state: string | undefined): Promise<number> {
  const log = (line: string): void => void process.stderr.write(`${line}\n`);
  const started: { aggregator?: Aggregator; explorer?: ExplorerMount } = {};
  const handler: ResponderHandler = (req) => {
    const a = started.aggregator;
    if (a === undefined) return { status: 503, headers: { 'retry-after': '1', 'content-length': '0' } };
    if ((req.method === 'GET' || req.method === 'HEAD') && req.target.split('?')[0] === METRICS_PATH) return metricsResponse(a.status(), req.method);
    return a.handler(req);
  };
  let server: RunningServer;
  const ui = new AbortController();
  try {
    server = await serve(handler, {
      port,
      host,
      onError: (e) => log(`resourcesync aggregate: ${messageOf(e)}`),
      // the explorer page, then the embedded hub and the callbacks of the Sources followed by push
      intercept: (req: IncomingMessage, res: ServerResponse) => (started.explorer?.intercept(req, res) ?? false) || (started.aggregator?.intercept(req, res) ?? false),
    });
  } catch (error) {
    log(`resourcesync aggregate: cannot listen on ${host}:${port}: ${messageOf(error)}`);
    return 1;
  }
  const running = startAggregator(config, {
    defaultBaseUrl: `${server.url}/`,
    origin: server.url,
    env: process.env,
    onEvent: (e) => {
      const line = eventLine(e, verbose);
      if (line !== undefined) log(line);
    },
  });
  started.aggregator = running;
  const explorer = mountExplorer({
    baseUrl: (config.baseUrl ?? `${server.url}/`).replace(/\/$/, ''),
    origin: server.url,
    host,
    aggregate: () => Promise.resolve(aggregateStatusView(running.status(), running.config.sources, Date.now())),
    signal: ui.signal,
    onError: (e) => log(`resourcesync aggregate: explorer page: ${messageOf(e)}`),
  });
  started.explorer = explorer;
  const reload = (): void => {
    const next = load(file, state);
    if (typeof next === 'number') return; // the message is out; the configuration in force stays
    try {
      running.reload(next);
    } catch (error) {
      log(`resourcesync aggregate: reload refused: ${messageOf(error)}`);
    }
  };
  let lastChange = 0;
  watchFile(file, { interval: 500, persistent: false }, (now) => {
    if (now.mtimeMs !== lastChange && now.mtimeMs !== 0) {
      lastChange = now.mtimeMs;
      reload();
    }
  });
  const stop = (): void => void server.close();
  process.on('SIGHUP', reload);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stdout.write(`listening on ${server.url}\n`);
  await server.closed;
  unwatchFile(file);
  process.off('SIGHUP', reload);
  process.off('SIGINT', stop);
  process.off('SIGTERM', stop);
  ui.abort();
  await explorer.close();
  await running.close();
  return 0;
}

function eventLine(e: AggregateEvent, verbose: boolean): string | undefined {
  switch (e.type) {
    case 'synced': {
      const r = e.result;
      const changed = r.created + r.updated + r.deleted > 0 || r.failed > 0;
      if (!verbose && !changed) return undefined;
      return `aggregate: ${e.id}: ${r.mode}: ${r.created} created, ${r.updated} updated, ${r.deleted} deleted, ${r.failed} failed, ${r.resources} held (${r.durationMs} ms)`;
    }
    case 'sync-failed':
      return `aggregate: ${e.id}: failed (${e.failures} in a row): ${messageOf(e.error)}; next attempt ${new Date(e.nextAttempt).toISOString()}`;
    case 'published':
      return verbose ? `aggregate: published ${e.sources} Sources (${e.ms} ms)` : undefined;
    case 'publish-failed':
      return `aggregate: publishing failed: ${messageOf(e.error)}`;
    case 'reloaded':
      return `aggregate: reloaded: ${e.added.length} added, ${e.removed.length} removed, ${e.changed.length} changed`;
    case 'mode':
      return `aggregate: ${e.id}: followed by ${e.mode}${e.mode === 'poll' ? ' (its change channel cannot be reached: the Change List is polled until it answers)' : ''}`;
    case 'follow-problem':
      return `aggregate: ${e.id}: ${messageOf(e.error)}`;
    case 'hub-error':
      return `aggregate: hub: ${messageOf(e.error)}`;
    case 'status-not-copied':
      return `aggregate: ${messageOf(e.error)}`;
    case 'notification-failed':
      return `aggregate: notification on ${e.topic} not published: ${messageOf(e.error)}`;
    case 'hub':
      return verbose ? `aggregate: hub: ${e.event.type} ${e.event.topic}` : undefined;
  }
}

/** The status of every Source: from PostgreSQL with a `state` (any machine reaching it), else from `<out>/aggregate.sqlite`. */
async function status(file: string, json: boolean, state: string | undefined): Promise<number> {
  const config = load(file, state);
  if (typeof config === 'number') return config;
  let list: SourceStatus[];
  try {
    list = config.state === undefined ? readAggregateStatus(config.out) : sortStatus(await readPostgresStatus(config.state, aggregateKey(config)));
  } catch (error) {
    if (!isResourceSyncError(error)) throw error;
    process.stderr.write(`resourcesync aggregate: ${error.message}\n`);
    return 2;
  }
  const now = Date.now();
  const rows = list.map((s) => ({ ...s, ...(s.lastSync === undefined ? {} : { lagMs: now - s.lastSync }) }));
  if (json) process.stdout.write(`${JSON.stringify({ out: config.out, sources: rows }, null, 2)}\n`);
  else process.stdout.write(table(rows, now));
  return list.some(isFailing) ? 1 : 0;
}

function ago(ms: number | undefined, now: number): string {
  if (ms === undefined) return '-';
  const s = Math.round((now - ms) / 1000);
  return s >= 0 ? `${s}s ago` : `in ${-s}s`;
}

function table(rows: (SourceStatus & { lagMs?: number })[], now: number): string {
  const head = ['SOURCE', 'STATE', 'MODE', 'LAST SYNC', 'RESOURCES', 'NEXT', 'LAST ERROR'];
  const body = rows.map((s) => [
    s.id,
    s.failures > 0 ? `${s.state} (${s.failures})` : s.state,
    s.mode,
    ago(s.lastSync, now),
    s.resources === undefined ? '-' : String(s.resources),
    s.state === 'stopped' ? '-' : ago(s.nextAttempt, now),
    s.lastError === undefined ? '' : `${s.lastError.code}: ${s.lastError.message}`.slice(0, 100),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ').trimEnd();
  return `${[head, ...body].map(line).join('\n')}\n`;
}
