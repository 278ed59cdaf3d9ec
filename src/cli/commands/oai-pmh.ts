/**
 * `resourcesync oai-pmh <base-url> --out DIR --base-url URL` (once, like `build`) and
 * `resourcesync oai-pmh <base-url> --port N [--interval S]` (a service, like `serve`): publishes an OAI-PMH 2.0
 * repository as a ResourceSync Source, each record in each chosen metadata format a resource served by the bridge
 * (see ../../oai/bridge.ts).
 * @see Z39.99 §10, §12; OAI-PMH 2.0 §4
 */
import { resolve } from 'node:path';
import { parseCommandArgs, usageError, type ParsedCommandArgs } from '../command-args.js';
import { isResourceSyncError, messageOf } from '../../core/errors.js';
import { normalizeBaseUrl } from '../../source/url-path.js';
import { requireFolderOrNothing } from '../../node/folder.js';
import { PUBLISH_ARGS, PUBLISH_HELP, PublishArgsError, publishArgs, type PublishArgsResult } from '../publish-options.js';
import { HUB_LIMIT_ARGS, hubLimitHelp } from '../hub-limit-options.js';
import { PUBLISH_SECRET_ENV } from '../serve-push.js';
import { readPush } from './serve.js';
import { isMetadataPrefix } from '../../oai/record-folder.js';
import { publishOaiRepository, startOaiSource, type OaiSource, type OaiSourceEvent } from '../../oai/oai-source.js';
import type { OaiBridgeOptions } from '../../oai/bridge.js';
import type { LivePushOptions } from '../../live/live-source.js';

const HELP = `Usage: resourcesync oai-pmh <oai-base-url> --out DIR --base-url URL [options]   (once)
       resourcesync oai-pmh <oai-base-url> --port N [--interval S] [options]      (a service)

Publishes an OAI-PMH 2.0 repository as a ResourceSync Source. Each record in each metadata format is a
resource: its metadata as a standalone XML document, at <url>oai/<prefix>/<identifier>.xml (with --sets,
<url><set>/oai/<prefix>/<identifier>.xml), the identifier percent-encoded. A full harvest gives the Resource
List; later runs harvest from the previous run's start and record what changed in the Change List,
deleted records (and, in a full harvest, records no longer listed) as deletions.

Once (with --out): harvests into DIR and writes the documents there, for a web server that serves DIR at
<url>. Each run records the changes since the previous one.
As a service (with --port): serves the records and documents with discovery (and push, through an embedded
WebSub hub), prints "listening on <url>", and harvests at once and every S seconds; while the repository
cannot be reached it keeps serving what it published and tries again later (backing off up to an hour).

Options:
  --metadata-prefix P     a metadata format to publish (repeatable; default oai_dc)
  --sets                  one set of resources (Capability List) per OAI set; records in no set are
                          then not published
  --list-identifiers      harvest with ListIdentifiers and GetRecord per record (for repositories whose
                          ListRecords fails); a record gone between the two is a deletion
  --out DIR               the record files and their state in DIR/.oai-pmh (once: the documents too;
                          required). Service default: ./oai-pmh-<host>
  --base-url URL          where the Source is served (once: required; service: default the listening URL)
  --full                  once: harvest in full (default: in full on the first run and once --full-every
                          has passed, else incrementally)
  --full-every S          seconds between full harvests (default 86400): how a deletion shows in a
                          repository whose deletedRecord is "no"
  --overlap S             an incremental harvest starts S seconds before the previous one started
                          (default 60; at day granularity the whole day is harvested again)
  --max-record-bytes N    longest record's metadata (default 16777216)
  --port N                service: TCP port (0 picks a free one)
  --host H                service: interface to listen on (default 127.0.0.1)
  --interval S            service: seconds between harvests (default 300)
  --hub URL               service: publish notifications to this WebSub hub (default: an embedded hub at
                          <base-url>/hub)
  --no-hub                service: no notification channels
  --allow-callback PATTERN  service: the embedded hub may also contact these callbacks (as for serve;
                          publishers elsewhere need the secret in ${PUBLISH_SECRET_ENV})
  The embedded hub's limits, as for resourcesync hub:
${hubLimitHelp(26)}${PUBLISH_HELP}  --json                  once: print a JSON summary on stdout
  --verbose               log harvests and publications on stderr
  -h, --help              this help

Exit status: 0 done (or the service stopped by SIGINT/SIGTERM), 1 failure, 2 usage error.
`;

const ARGS = {
  'metadata-prefix': { type: 'string', multiple: true },
  sets: { type: 'boolean' },
  'list-identifiers': { type: 'boolean' },
  out: { type: 'string' },
  'base-url': { type: 'string' },
  full: { type: 'boolean' },
  'full-every': { type: 'string' },
  overlap: { type: 'string' },
  'max-record-bytes': { type: 'string' },
  port: { type: 'string' },
  host: { type: 'string' },
  interval: { type: 'string' },
  hub: { type: 'string' },
  'no-hub': { type: 'boolean' },
  'allow-callback': { type: 'string', multiple: true },
  ...HUB_LIMIT_ARGS,
  ...PUBLISH_ARGS,
  json: { type: 'boolean' },
  verbose: { type: 'boolean' },
} as const;

type Values = ParsedCommandArgs<typeof ARGS>['values'];

class UsageError extends Error {}

/** A whole number of seconds (or bytes) at least `min`, or undefined when not given. */
function count(values: Values, name: 'full-every' | 'overlap' | 'max-record-bytes' | 'interval' | 'port', min: number): number | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v) || Number(v) < min || !Number.isSafeInteger(Number(v))) throw new UsageError(`--${name} '${v}' is not a whole number of at least ${min}`);
  return Number(v);
}

/** The bridge options the command line asks for. */
function bridgeOptions(values: Values, repository: string, folder: string, verbose: boolean): OaiBridgeOptions {
  const prefixes = values['metadata-prefix'] ?? ['oai_dc'];
  for (const p of prefixes) if (!isMetadataPrefix(p)) throw new UsageError(`--metadata-prefix '${p}' is not a metadataPrefix`);
  const fullEvery = count(values, 'full-every', 1);
  const overlap = count(values, 'overlap', 0);
  const maxRecordBytes = count(values, 'max-record-bytes', 1);
  return {
    repository,
    folder,
    metadataPrefixes: [...new Set(prefixes)],
    ...(values.sets === true ? { bySets: true } : {}),
    ...(values['list-identifiers'] === true ? { listIdentifiers: true } : {}),
    ...(fullEvery === undefined ? {} : { fullEveryMs: fullEvery * 1000 }),
    ...(overlap === undefined ? {} : { overlapMs: overlap * 1000 }),
    ...(maxRecordBytes === undefined ? {} : { client: { maxRecordBytes } }),
    onEvent: (e) => {
      if (e.type === 'skipped') log(`resourcesync oai-pmh: record '${e.identifier}' left out: ${e.reason}`);
      else if (e.type === 'restart') log(`resourcesync oai-pmh: ${e.verb} restarted after badResumptionToken (${e.restarts})`);
      else if (verbose) log(`harvested ${e.counts.records} records so far`);
    },
  };
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);

function repositoryUrl(value: string | undefined): string {
  if (value === undefined) throw new UsageError("the repository's OAI-PMH base URL is needed");
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new UsageError(`'${value}' is not a URL`);
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.search !== '' || u.hash !== '') throw new UsageError(`'${value}' is not an OAI-PMH base URL (http or https, no query)`);
  return value;
}

/** Runs `resourcesync oai-pmh`. */
export async function run(args: string[]): Promise<number> {
  const parsed = parseCommandArgs('oai-pmh', args, ARGS, HELP);
  if (typeof parsed === 'number') return parsed;
  const { values, positionals } = parsed;
  let repository: string;
  let shared: PublishArgsResult;
  try {
    if (positionals.length > 1) throw new UsageError('give one repository base URL');
    repository = repositoryUrl(positionals[0]);
    shared = publishArgs(values);
    if (values.port === undefined) {
      for (const name of ['interval', 'host', 'hub', 'no-hub', 'allow-callback'] as const) if (values[name] !== undefined) throw new UsageError(`--${name} applies to the service (with --port)`);
      if (values.out === undefined) throw new UsageError('--out is required (or --port, for the service)');
      if (values['base-url'] === undefined || normalizeBaseUrl(values['base-url']) === undefined) throw new UsageError('--base-url is required: an http(s) URL without query');
      return await once(values, repository, shared);
    }
    if (values.full === true || values.json === true) throw new UsageError(`--${values.full === true ? 'full' : 'json'} applies to a single run (without --port)`);
    if (values['base-url'] !== undefined && normalizeBaseUrl(values['base-url']) === undefined) throw new UsageError(`--base-url '${values['base-url']}' is not an http(s) URL`);
    const push = readPush(values, 'oai-pmh');
    if (typeof push === 'number') return push;
    return await service(values, repository, shared, push);
  } catch (error) {
    if (error instanceof UsageError || error instanceof PublishArgsError) return usageError('oai-pmh', `${error.message}.`);
    // a --out that is not a folder, a metadata format the repository does not offer
    if (isResourceSyncError(error, 'RS_INVALID_ARGUMENT')) return usageError('oai-pmh', error);
    if (!isResourceSyncError(error)) throw error;
    if (values.json === true) process.stdout.write(`${JSON.stringify({ ok: false, error: { code: error.code, message: error.message } })}\n`);
    process.stderr.write(`resourcesync oai-pmh: ${error.message}\n`);
    return 1;
  }
}

async function once(values: Values, repository: string, shared: PublishArgsResult): Promise<number> {
  const outDir = resolve(values.out!);
  requireFolderOrNothing(outDir, '--out');
  const verbose = values.verbose === true;
  const ac = new AbortController();
  const stop = (): void => ac.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let result: Awaited<ReturnType<typeof publishOaiRepository>>;
  try {
    result = await publishOaiRepository({
      ...bridgeOptions(values, repository, outDir, verbose),
      outDir,
      baseUrl: values['base-url']!,
      publish: shared,
      ...(values.full === true ? { full: true } : {}),
      signal: ac.signal,
    });
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
  const { published } = result;
  const { changedFiles: _files, ...harvest } = result.harvest;
  const c = harvest.counts;
  if (values.json === true) {
    process.stdout.write(`${JSON.stringify({ ok: true, harvest, resources: published.resources, changes: published.changes, sourceDescription: published.sourceDescription })}\n`);
  } else {
    const { created, updated, deleted } = published.changes;
    process.stdout.write(
      `${harvest.full ? 'full' : `incremental (from ${harvest.from})`} harvest: ${c.records} records, ${c.written} written, ${c.unchanged} unchanged, ${c.deleted} removed, ${c.skipped} left out\n` +
        `published ${published.resources} resources: ${created} created, ${updated} updated, ${deleted} deleted\n` +
        `Source Description: ${published.sourceDescription}\n`,
    );
  }
  return 0;
}

function eventLine(e: OaiSourceEvent, verbose: boolean): string | undefined {
  switch (e.type) {
    case 'harvest': {
      const c = e.report.counts;
      return verbose ? `${e.report.full ? 'full' : `incremental (from ${e.report.from})`} harvest: ${c.records} records, ${c.written} written, ${c.deleted} removed` : undefined;
    }
    case 'harvest-failed':
      return `resourcesync oai-pmh: harvest failed: ${messageOf(e.error)}; serving what was published, next attempt in ${Math.round(e.retryInMs / 1000)} s`;
    case 'error':
    case 'publish-failed':
    case 'hub-error':
    case 'notification-failed':
      return `resourcesync oai-pmh: ${e.type}: ${messageOf(e.error)}`;
    case 'hub':
      return verbose ? `hub: ${e.event.type}${'mode' in e.event ? ` ${e.event.mode}` : ''} ${'callback' in e.event ? e.event.callback : ''} ${e.event.topic}` : undefined;
    case 'run':
      return verbose ? `published: ${e.changes.created} created, ${e.changes.updated} updated, ${e.changes.deleted} deleted` : undefined;
    default:
      return undefined;
  }
}

async function service(values: Values, repository: string, shared: PublishArgsResult, push: LivePushOptions | undefined): Promise<number> {
  const port = count(values, 'port', 0)!;
  if (port > 65535) throw new UsageError(`--port '${port}' is not a port number`);
  const interval = count(values, 'interval', 1) ?? 300;
  const verbose = values.verbose === true;
  const folder = resolve(values.out ?? `oai-pmh-${new URL(repository).host.replace(/[^A-Za-z0-9.-]+/g, '-')}`);
  requireFolderOrNothing(folder, '--out');
  const ac = new AbortController();
  const stop = (): void => ac.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let oai: OaiSource | undefined;
  try {
    oai = await startOaiSource({
      ...bridgeOptions(values, repository, folder, verbose),
      port,
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(values['base-url'] === undefined ? {} : { baseUrl: values['base-url'] }),
      intervalMs: interval * 1000,
      publish: shared,
      ...(push === undefined ? {} : { push }),
      signal: ac.signal,
      onEvent: (e) => {
        const line = eventLine(e, verbose);
        if (line !== undefined) log(line);
      },
    });
    if (verbose) log(`records in ${folder}`);
    if (!ac.signal.aborted) process.stdout.write(`listening on ${oai.url}\n`);
    await oai.source.closed;
    await oai.close();
    return 0;
  } catch (error) {
    await oai?.close();
    if (ac.signal.aborted) return 0;
    throw error;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}
