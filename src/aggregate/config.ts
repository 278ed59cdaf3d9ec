/**
 * The aggregator's configuration: a YAML file (JSON is YAML too) naming where the aggregate is published, where its
 * mirrors and state go, and the Sources it keeps in step. Checked field by field; every problem is reported with
 * the line and the field it concerns, unknown fields included, and all of them at once.
 * @see docs/aggregate.md (every field)
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Node, type Pair } from 'yaml';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { parseS3Url } from '../node/s3-url.js';
import { parseHttpUrl } from '../core/http-url.js';
import { urlPrefixProblem } from '../destination/url-filter.js';
import { checkCron } from './cron.js';
import type { AggregateConfig, AggregateSource, ConfigIssue, FollowMode, SourceCredentials, XmppCredentials } from './config-types.js';

export type { AggregateConfig, AggregateDumps, AggregateSource, ConfigIssue, FollowMode, SourceCredentials, XmppCredentials } from './config-types.js';

const isHttpUrl = (v: string): boolean => parseHttpUrl(v) !== undefined;

/** Default seconds between polls. */
const DEFAULT_INTERVAL = 300;
/** Default longest sync of one Source (s). */
const DEFAULT_TIMEOUT = 3600;
/** Default Sources synced at once. */
const DEFAULT_CONCURRENCY = 4;
/** Default longest wait (s) between attempts at a failing Source. */
const DEFAULT_MAX_BACKOFF = 3600;
/** Most Sources in one configuration, and the longest configuration file (bytes). */
const CONFIG_LIMITS = { sources: 100_000, bytes: 16 * 1024 * 1024 } as const;

const TOP_FIELDS = ['base-url', 'out', 'sources', 'concurrency', 'max-backoff', 'callback', 'allow-callback', 'origin-rate', 'dumps', 'dump-format', 'package-size', 'changelist-max', 'changelist-period', 'state', 'work', 'xmpp'] as const;
const SOURCE_FIELDS = ['url', 'id', 'interval', 'schedule', 'timeout', 'mode', 'credentials', 'rate', 'capability-sets', 'url-prefixes', 'xmpp'] as const;
const SCHEMES = ['bearer', 'basic', 'authorization'] as const;
const ID_RE = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$/;
const ENV_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A stable id for a Source from its URL, safe as a folder name and a URL segment: host, port and path, every other
 * character `-`, at most 64 characters (a longer one ends with a hash of the URL).
 * @example sourceIdFromUrl('https://repo.example.org/oai/.well-known/resourcesync') // 'repo.example.org-oai'
 */
export function sourceIdFromUrl(url: string): string {
  const u = new URL(url);
  const segments = u.pathname.split('/').filter((s) => s !== '' && s !== '.well-known' && s !== 'resourcesync');
  const raw = [u.hostname.replace(/^\[|\]$/g, ''), u.port, ...segments].filter((s) => s !== '').join('-');
  let id = raw.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/-{2,}/g, '-').replace(/^[.-]+|[.-]+$/g, '');
  if (id === '') id = 'source';
  if (id.length > 64) id = `${id.slice(0, 55).replace(/[.-]+$/, '')}-${createHash('sha256').update(url).digest('hex').slice(0, 8)}`;
  return id;
}

/**
 * Reads and checks a configuration file.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` listing every problem (`data.issues`: line, field, message), `RS_IO`
 * when the file cannot be read
 * @example const config = loadAggregateConfig('aggregate.yaml'); console.log(config.sources.map((s) => s.id));
 */
export function loadAggregateConfig(file: string): AggregateConfig {
  const path = resolve(file);
  let text: string;
  try {
    const bytes = readFileSync(path);
    if (bytes.length > CONFIG_LIMITS.bytes) {
      throw new ResourceSyncError('RS_LIMIT_BYTES', `Configuration '${file}' is larger than ${CONFIG_LIMITS.bytes} bytes.`, { data: { path } });
    }
    text = bytes.toString('utf8');
  } catch (cause) {
    if (cause instanceof ResourceSyncError) throw cause;
    throw new ResourceSyncError('RS_IO', `Configuration '${file}' cannot be read.`, { cause, data: { path } });
  }
  return parseAggregateConfig(text, path);
}

/**
 * Checks the text of a configuration; `file` names it in messages and anchors a relative `out`.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` with `data.issues`
 */
export function parseAggregateConfig(text: string, file: string): AggregateConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
  const issues: ConfigIssue[] = [];
  const lineOf = (node: Node | Pair | null | undefined): number => {
    const n = isPair(node) ? (node.key as Node | null) : node;
    return n?.range ? lines.linePos(n.range[0]).line : 1;
  };
  for (const e of doc.errors) issues.push({ line: lines.linePos(e.pos[0]).line, field: '', message: e.message.split('\n')[0]! });
  const ctx: Checker = { issues, lineOf };
  const config = issues.length === 0 ? checkTop(ctx, doc.contents, file) : undefined;
  if (issues.length > 0 || config === undefined) throw configError(file, issues);
  return config;
}

function configError(file: string, issues: ConfigIssue[]): ResourceSyncError {
  issues.sort((a, b) => a.line - b.line);
  const text = issues.map((i) => `${file}:${i.line}: ${i.field === '' ? '' : `${i.field}: `}${i.message}`).join('\n');
  return new ResourceSyncError('RS_INVALID_ARGUMENT', `Configuration '${file}' is not valid:\n${text}`, { data: { file, issues } });
}

interface Checker {
  issues: ConfigIssue[];
  lineOf: (node: Node | Pair | null | undefined) => number;
}

function fail(ctx: Checker, node: Node | Pair | null | undefined, field: string, message: string): undefined {
  ctx.issues.push({ line: ctx.lineOf(node), field, message });
  return undefined;
}

/** The pairs of a mapping by key, unknown keys reported. */
function fields(ctx: Checker, node: unknown, field: string, known: readonly string[]): Map<string, Pair<Node, Node>> | undefined {
  if (!isMap(node)) return fail(ctx, node as Node, field, 'expected a mapping of fields');
  const out = new Map<string, Pair<Node, Node>>();
  for (const pair of node.items as Pair<Node, Node>[]) {
    const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
    const at = field === '' ? String(key) : `${field}.${String(key)}`;
    if (key === undefined || !known.includes(key)) fail(ctx, pair.key, at, `unknown field (known: ${known.join(', ')})`);
    else out.set(key, pair);
  }
  return out;
}

function scalar(pair: Pair<Node, Node> | undefined): unknown {
  return pair !== undefined && isScalar(pair.value) ? pair.value.value : undefined;
}

function checkTop(ctx: Checker, root: unknown, file: string): AggregateConfig | undefined {
  if (root === null || root === undefined) return fail(ctx, undefined, '', 'the file is empty: expected out and sources (and base-url)');
  const top = fields(ctx, root, '', TOP_FIELDS);
  if (top === undefined) return undefined;
  const basePair = top.get('base-url');
  const baseUrl = basePair === undefined ? undefined : checkUrl(ctx, basePair, 'base-url', root as Node);
  const outPair = top.get('out');
  const outValue = scalar(outPair);
  if (typeof outValue !== 'string' || outValue === '') fail(ctx, outPair?.value ?? (root as Node), 'out', 'expected a folder (a non-empty string)');
  const concurrency = positiveInteger(ctx, top.get('concurrency'), 'concurrency', DEFAULT_CONCURRENCY, 1000);
  const maxBackoff = positiveNumber(ctx, top.get('max-backoff'), 'max-backoff', DEFAULT_MAX_BACKOFF);
  const callbackPair = top.get('callback');
  const callback = callbackPair === undefined ? undefined : checkUrl(ctx, callbackPair, 'callback', root as Node);
  const allowCallback = patternList(ctx, top.get('allow-callback'), 'allow-callback');
  const originRate = positiveNumber(ctx, top.get('origin-rate'), 'origin-rate', undefined);
  const state = checkState(ctx, top.get('state'));
  const s3 = typeof outValue === 'string' ? checkS3Out(ctx, outPair!, top, baseUrl) : undefined;
  const xmpp = checkXmpp(ctx, top.get('xmpp'), 'xmpp');
  const sources = checkSources(ctx, top.get('sources'), root as Node);
  const publishing = checkPublishing(ctx, top);
  if (ctx.issues.length > 0 || typeof outValue !== 'string' || sources === undefined) return undefined;
  if (xmpp !== undefined) for (const s of sources) s.xmpp ??= xmpp;
  const workValue = scalar(top.get('work'));
  return {
    file,
    baseUrl: baseUrl === undefined || baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`,
    out: resolve(dirname(file), s3 === undefined ? outValue : String(workValue)),
    ...(s3 === undefined ? {} : { s3 }),
    concurrency: concurrency!,
    maxBackoff: maxBackoff!,
    callback: callback === undefined || callback.endsWith('/') ? callback : `${callback}/`,
    allowCallback: allowCallback ?? [],
    ...(originRate === undefined ? {} : { originRate }),
    ...(state === undefined ? {} : { state }),
    ...(xmpp === undefined ? {} : { xmpp }),
    sources,
    ...publishing,
  };
}

/**
 * `out: s3://bucket/prefix` (then `base-url`, the bucket's public URL, and `work`, a local folder, are required;
 * `state` too, checked where the command line may give it); `work` goes only with it.
 */
function checkS3Out(ctx: Checker, outPair: Pair<Node, Node>, top: Map<string, Pair<Node, Node>>, baseUrl: string | undefined): AggregateConfig['s3'] {
  const out = String(scalar(outPair));
  const work = top.get('work');
  if (!/^s3:\/\//i.test(out)) {
    if (work !== undefined) fail(ctx, work.key, 'work', 'goes with out: s3://BUCKET/PREFIX (the local folder of the status, the hub and the working copy)');
    return undefined;
  }
  let target: { bucket: string; prefix: string } | undefined;
  try {
    target = parseS3Url(out);
  } catch (error) {
    return fail(ctx, outPair.value, 'out', messageOf(error));
  }
  if (target === undefined) return fail(ctx, outPair.value, 'out', `'${out}' is not an s3://BUCKET/PREFIX URL`);
  const dumps = top.get('dumps');
  if (dumps !== undefined && scalar(dumps) === true) fail(ctx, dumps.value, 'dumps', 'not offered yet with out: s3://… (the documents in the bucket are published from the states, without packages)');
  if (baseUrl === undefined) fail(ctx, outPair.value, 'base-url', 'required with out: s3://…: the URL the bucket is published at (a web server or CDN in front of it)');
  const workValue = scalar(work);
  if (typeof workValue !== 'string' || workValue === '') fail(ctx, work?.value ?? outPair.value, 'work', 'required with out: s3://…: a local folder for the status, the hub and the working copy of the documents');
  return { location: `s3://${target.bucket}${target.prefix === '' ? '' : `/${target.prefix}`}`, bucket: target.bucket, prefix: target.prefix };
}

/** `state`: a PostgreSQL URL (its password never repeated in a message). */
function checkState(ctx: Checker, pair: Pair<Node, Node> | undefined): string | undefined {
  if (pair === undefined) return undefined;
  const v = scalar(pair);
  if (typeof v !== 'string' || !/^postgres(ql)?:\/\//i.test(v) || !URL.canParse(v) || new URL(v).hostname === '') {
    return fail(ctx, pair.value, 'state', 'expected a PostgreSQL URL (postgres://USER@HOST:PORT/DB)');
  }
  return v;
}

function checkUrl(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string, parent: Node): string | undefined {
  const v = scalar(pair);
  if (pair === undefined) return fail(ctx, parent, field, 'missing: expected an http(s) URL');
  if (typeof v !== 'string' || !isHttpUrl(v) || v.includes('#')) return fail(ctx, pair.value, field, `'${String(v)}' is not an http(s) URL`);
  return v;
}

function positiveNumber(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string, def: number | undefined): number | undefined {
  if (pair === undefined) return def;
  const v = scalar(pair);
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return fail(ctx, pair.value, field, `'${String(v)}' is not a positive number`);
  return v;
}

function positiveInteger(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string, def: number, max: number): number | undefined {
  if (pair === undefined) return def;
  const v = scalar(pair);
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 1 || v > max) return fail(ctx, pair.value, field, `'${String(v)}' is not an integer from 1 to ${max}`);
  return v;
}

function checkSources(ctx: Checker, pair: Pair<Node, Node> | undefined, parent: Node): AggregateSource[] | undefined {
  if (pair === undefined) return fail(ctx, parent, 'sources', 'missing: expected a list of Sources (it may be empty: [])');
  if (!isSeq(pair.value)) return fail(ctx, pair.value, 'sources', 'expected a list of Sources');
  if (pair.value.items.length > CONFIG_LIMITS.sources) return fail(ctx, pair.value, 'sources', `more than ${CONFIG_LIMITS.sources} Sources`);
  const out: AggregateSource[] = [];
  const ids = new Map<string, number>();
  pair.value.items.forEach((item, i) => {
    const s = checkSource(ctx, item as Node, `sources[${i}]`);
    if (s === undefined) return;
    const before = ids.get(s.id);
    if (before !== undefined) fail(ctx, item as Node, `sources[${i}].id`, `id '${s.id}' is already the id of the Source at line ${before}: give one of them another id`);
    else ids.set(s.id, s.line);
    out.push(s);
  });
  return out;
}

function checkSource(ctx: Checker, node: Node, field: string): AggregateSource | undefined {
  const f = fields(ctx, node, field, SOURCE_FIELDS);
  if (f === undefined) return undefined;
  const before = ctx.issues.length;
  const url = checkUrl(ctx, f.get('url'), `${field}.url`, node);
  const idPair = f.get('id');
  const idValue = scalar(idPair);
  if (idPair !== undefined && (typeof idValue !== 'string' || !ID_RE.test(idValue))) {
    fail(ctx, idPair.value, `${field}.id`, `'${String(idValue)}' is not an id: 1 to 64 of A-Z a-z 0-9 . _ -, not starting with '.'`);
  }
  const interval = positiveNumber(ctx, f.get('interval'), `${field}.interval`, DEFAULT_INTERVAL);
  const schedule = checkSchedule(ctx, f.get('schedule'), f.get('interval'), `${field}.schedule`);
  const timeout = positiveNumber(ctx, f.get('timeout'), `${field}.timeout`, DEFAULT_TIMEOUT);
  const modePair = f.get('mode');
  const mode = scalar(modePair) ?? 'auto';
  if (mode !== 'push' && mode !== 'poll' && mode !== 'auto') fail(ctx, modePair?.value, `${field}.mode`, `${JSON.stringify(mode)} is not one of push, poll, auto`);
  const rate = positiveNumber(ctx, f.get('rate'), `${field}.rate`, undefined);
  const credentials = checkCredentials(ctx, f.get('credentials'), `${field}.credentials`);
  const capabilitySets = urlList(ctx, f.get('capability-sets'), `${field}.capability-sets`);
  const urlPrefixes = prefixList(ctx, f.get('url-prefixes'), `${field}.url-prefixes`);
  const xmpp = checkXmpp(ctx, f.get('xmpp'), `${field}.xmpp`);
  // with a problem in another field, the Source is still returned for the check of duplicate ids (the whole
  // configuration is refused anyway)
  if (url === undefined) return undefined;
  const validId = typeof idValue === 'string' && ID_RE.test(idValue);
  if (idPair !== undefined && !validId && ctx.issues.length > before) return undefined;
  return {
    id: validId ? idValue : sourceIdFromUrl(url),
    url,
    interval: interval!,
    ...(schedule === undefined ? {} : { schedule }),
    timeout: timeout!,
    mode: mode as FollowMode,
    ...(credentials === undefined ? {} : { credentials }),
    ...(rate === undefined ? {} : { rate }),
    ...(capabilitySets === undefined ? {} : { capabilitySets }),
    ...(urlPrefixes === undefined ? {} : { urlPrefixes }),
    ...(xmpp === undefined ? {} : { xmpp }),
    line: ctx.lineOf(node),
  };
}

function checkCredentials(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string): SourceCredentials | undefined {
  if (pair === undefined) return undefined;
  const f = fields(ctx, pair.value, field, SCHEMES);
  if (f === undefined) return undefined;
  if (f.size !== 1) return fail(ctx, pair.value, field, `expected exactly one of ${SCHEMES.join(', ')}, naming an environment variable`);
  const [scheme, p] = [...f.entries()][0]!;
  const env = scalar(p);
  if (typeof env !== 'string' || !ENV_RE.test(env)) return fail(ctx, p.value, `${field}.${scheme}`, `'${String(env)}' is not the name of an environment variable`);
  return { scheme: scheme as SourceCredentials['scheme'], env };
}

/** `xmpp: { jid: VAR, password: VAR }`: both names of environment variables. */
function checkXmpp(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string): XmppCredentials | undefined {
  if (pair === undefined) return undefined;
  const f = fields(ctx, pair.value, field, ['jid', 'password']);
  if (f === undefined) return undefined;
  const names: Partial<XmppCredentials> = {};
  for (const key of ['jid', 'password'] as const) {
    const p = f.get(key);
    const env = scalar(p);
    if (p === undefined) fail(ctx, pair.value, `${field}.${key}`, 'missing: expected the name of an environment variable');
    else if (typeof env !== 'string' || !ENV_RE.test(env)) fail(ctx, p.value, `${field}.${key}`, `'${String(env)}' is not the name of an environment variable`);
    else names[key] = env;
  }
  return names.jid === undefined || names.password === undefined ? undefined : { jid: names.jid, password: names.password };
}

function urlList(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string): string[] | undefined {
  if (pair === undefined) return undefined;
  if (!isSeq(pair.value) || pair.value.items.length === 0) return fail(ctx, pair.value, field, 'expected a non-empty list of URLs');
  const out: string[] = [];
  pair.value.items.forEach((item, i) => {
    const v = isScalar(item) ? item.value : undefined;
    if (typeof v !== 'string' || !isHttpUrl(v)) fail(ctx, item as Node, `${field}[${i}]`, `'${String(v)}' is not an http(s) URL`);
    else out.push(v);
  });
  return out;
}

/** A cron expression (see `cron.ts`), never with `interval`. */
function checkSchedule(ctx: Checker, pair: Pair<Node, Node> | undefined, interval: Pair<Node, Node> | undefined, field: string): string | undefined {
  if (pair === undefined) return undefined;
  const v = scalar(pair);
  if (typeof v !== 'string') return fail(ctx, pair.value, field, `'${String(v)}' is not a schedule: expected 5 fields (minute hour day-of-month month day-of-week) in quotes`);
  if (interval !== undefined) return fail(ctx, pair.key, field, 'give either interval or schedule, not both');
  const got = checkCron(v);
  return typeof got === 'string' ? fail(ctx, pair.value, field, `'${v}': ${got}`) : v;
}

/** URL prefixes: a non-empty list of absolute http(s) URLs. */
function prefixList(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string): string[] | undefined {
  if (pair === undefined) return undefined;
  if (!isSeq(pair.value) || pair.value.items.length === 0) return fail(ctx, pair.value, field, 'expected a non-empty list of URL prefixes');
  const out: string[] = [];
  pair.value.items.forEach((item, i) => {
    const v = isScalar(item) ? item.value : undefined;
    const problem = typeof v === 'string' ? urlPrefixProblem(v) : 'is not a URL';
    if (problem !== undefined) fail(ctx, item as Node, `${field}[${i}]`, `'${String(v)}' ${problem}`);
    else out.push(v as string);
  });
  return out;
}

function patternList(ctx: Checker, pair: Pair<Node, Node> | undefined, field: string): string[] | undefined {
  if (pair === undefined) return undefined;
  if (!isSeq(pair.value)) return fail(ctx, pair.value, field, 'expected a list of host patterns');
  const out: string[] = [];
  pair.value.items.forEach((item, i) => {
    const v = isScalar(item) ? item.value : undefined;
    if (typeof v !== 'string' || v === '') fail(ctx, item as Node, `${field}[${i}]`, `'${String(v)}' is not a host pattern`);
    else out.push(v);
  });
  return out;
}

/**
 * The publication fields, named as `build`'s options: `dumps` (true or false), `dump-format` (zip or warc) and
 * `package-size` (bytes, with `dumps`), `changelist-max` (entries) and `changelist-period` (seconds).
 */
function checkPublishing(ctx: Checker, top: Map<string, Pair<Node, Node>>): Pick<AggregateConfig, 'dumps' | 'changeList'> {
  const out: Pick<AggregateConfig, 'dumps' | 'changeList'> = {};
  const dumpsPair = top.get('dumps');
  const dumps = scalar(dumpsPair);
  if (dumpsPair !== undefined && typeof dumps !== 'boolean') fail(ctx, dumpsPair.value, 'dumps', `'${String(dumps)}' is not true or false`);
  const formatPair = top.get('dump-format');
  const format = scalar(formatPair);
  if (formatPair !== undefined && format !== 'zip' && format !== 'warc') fail(ctx, formatPair.value, 'dump-format', `'${String(format)}' is not zip or warc`);
  const size = positiveInteger(ctx, top.get('package-size'), 'package-size', 0, Number.MAX_SAFE_INTEGER);
  for (const f of ['dump-format', 'package-size'] as const) {
    if (top.has(f) && dumps !== true) fail(ctx, top.get(f), f, 'needs dumps: true');
  }
  if (dumps === true) out.dumps = { ...(format === 'warc' ? { format: 'warc' as const } : {}), ...(size !== undefined && size > 0 ? { maxPackageBytes: size } : {}) };
  const max = positiveInteger(ctx, top.get('changelist-max'), 'changelist-max', 0, 50_000);
  const period = positiveNumber(ctx, top.get('changelist-period'), 'changelist-period', undefined);
  if ((max !== undefined && max > 0) || period !== undefined) out.changeList = { ...(max !== undefined && max > 0 ? { maxEntries: max } : {}), ...(period === undefined ? {} : { periodMs: period * 1000 }) };
  return out;
}
