/**
 * One resource of an inventory given as records rather than found in a folder: a line of a JSON-lines feed or a
 * row of a database query, named with the spec's words (`loc`, `lastmod`, `length`, `hash`, `type`, and `change`
 * for a deletion). Pure: checks the values and turns them into a record, or says which field is wrong.
 * @see Z39.99 §7 (`loc`, `lastmod`, `rs:md` `hash`, `length`, `type`), §10.1 (Resource List), §12.1 (`change`)
 */
import { HASH_ALGORITHMS, type HashAlgorithm } from './constants.js';
import { ResourceSyncError } from './errors.js';
import { parseHttpUrl } from './http-url.js';
import { parseW3CDatetime } from './w3c-datetime.js';

/** One resource of a feed: where it is and what the Source says of it. */
export interface FeedRecord {
  /** Absolute http(s) URL of the resource, as given. */
  loc: string;
  /** True for `"change": "deleted"`: the resource is no longer published. */
  deleted: boolean;
  /** Last modification, ms since the epoch; undefined when not given. */
  lastmod?: number;
  /** Length in bytes; undefined when not given. */
  length?: number;
  /** Media type; undefined when not given. */
  type?: string;
  /** Fixity by algorithm, lower-case hex. */
  hashes: Partial<Record<HashAlgorithm, string>>;
}

/** Longest `loc` accepted (sitemaps.org: a URL of at most 2,048 characters). */
const FEED_LOC_MAX = 2048;

const MEDIA_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*(\s*;\s*[A-Za-z0-9!#$&^_.+-]+=("[^"\\\r\n]*"|[A-Za-z0-9!#$&^_.+-]+))*$/;
const HEX = /^[0-9a-fA-F]+$/;

/** The error of a bad record: the line (or row) and the field named first. */
export function feedError(line: number, field: string, message: string, value?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_FEED', `line ${line}: ${field === '' ? '' : `${field}: `}${message}`, {
    data: { line, field, ...(value === undefined ? {} : { value: typeof value === 'string' ? value.slice(0, 200) : value }) },
  });
}

function show(v: unknown): string {
  const s = typeof v === 'string' ? JSON.stringify(v) : String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
}

/**
 * The hashes of an `rs:md hash` value, `md5:… sha-256:…`: known algorithms (md5, sha-1, sha-256), hex digests of
 * their length, each algorithm once. Throws `RS_INVALID_FEED` naming the field.
 * @example parseFeedHash('md5:5d41402abc4b2a76b9719d911017c592', 1, 'hash') // { md5: '5d41…' }
 */
function parseFeedHash(value: string, line: number, field: string, into: Partial<Record<HashAlgorithm, string>> = {}): Partial<Record<HashAlgorithm, string>> {
  for (const token of value.trim().split(/\s+/)) {
    if (token === '') continue;
    const colon = token.indexOf(':');
    const algorithm = colon > 0 ? token.slice(0, colon).toLowerCase() : '';
    const digest = token.slice(colon + 1);
    if (!Object.hasOwn(HASH_ALGORITHMS, algorithm)) throw feedError(line, field, `${show(token)} is not algorithm:hexdigest with md5, sha-1 or sha-256`, value);
    const alg = algorithm as HashAlgorithm;
    if (digest.length !== HASH_ALGORITHMS[alg] || !HEX.test(digest)) throw feedError(line, field, `${show(token)} is not a ${alg} digest of ${HASH_ALGORITHMS[alg]} hex digits`, value);
    if (into[alg] !== undefined) throw feedError(line, field, `${alg} is given twice`, value);
    into[alg] = digest.toLowerCase();
  }
  return into;
}

function text(raw: Record<string, unknown>, key: string, line: number): string | undefined {
  const v = raw[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw feedError(line, key, `${show(v)} is not a string`, v);
  return v;
}

function lastmodOf(raw: Record<string, unknown>, line: number): number | undefined {
  const v = raw.lastmod;
  if (v === undefined || v === null) return undefined;
  if (v instanceof Date) {
    if (Number.isNaN(v.getTime())) throw feedError(line, 'lastmod', 'is not a valid date');
    return v.getTime();
  }
  if (typeof v !== 'string') throw feedError(line, 'lastmod', `${show(v)} is not a W3C datetime string`, v);
  const d = parseW3CDatetime(v);
  if (d === undefined) throw feedError(line, 'lastmod', `${show(v)} is not a W3C datetime (e.g. 2024-05-01T12:00:00Z)`, v);
  return d.ms;
}

function lengthOf(raw: Record<string, unknown>, line: number): number | undefined {
  const v = raw.length;
  if (v === undefined || v === null) return undefined;
  // a database's bigint arrives as a string of digits
  const n = typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw feedError(line, 'length', `${show(v)} is not a non-negative integer`, v);
  return n;
}

function locOf(raw: Record<string, unknown>, line: number): string {
  const loc = text(raw, 'loc', line);
  if (loc === undefined || loc === '') throw feedError(line, 'loc', 'is missing');
  if (loc.length > FEED_LOC_MAX) throw feedError(line, 'loc', `is longer than ${FEED_LOC_MAX} characters`, loc);
  const u = parseHttpUrl(loc);
  // eslint-disable-next-line no-control-regex
  if (u === undefined || loc.trim() !== loc || /[\s\u0000-\u001f\u007f]/.test(loc)) throw feedError(line, 'loc', `${show(loc)} is not an absolute http(s) URL`, loc);
  if (u.hash !== '' || loc.includes('#')) throw feedError(line, 'loc', `${show(loc)} has a fragment`, loc);
  return loc;
}

/**
 * A record from the values of one line or row (`loc`, `lastmod`, `length`, `hash`, `type`, `change`; `md5`,
 * `sha-1`, `sha-256` as separate fields too; other fields are ignored). A `"change": "deleted"` record needs only
 * its `loc`. Throws `RS_INVALID_FEED` with `data.line` and `data.field`.
 * @example feedRecord({ loc: 'https://example.org/a', lastmod: '2024-05-01T12:00:00Z', length: 3 }, 1).length // 3
 */
export function feedRecord(raw: Record<string, unknown>, line: number): FeedRecord {
  const loc = locOf(raw, line);
  const change = text(raw, 'change', line);
  if (change !== undefined && change !== 'created' && change !== 'updated' && change !== 'deleted')
    throw feedError(line, 'change', `${show(change)} is not created, updated or deleted`, change);
  if (change === 'deleted') return { loc, deleted: true, hashes: {} };
  const record: FeedRecord = { loc, deleted: false, hashes: {} };
  const lastmod = lastmodOf(raw, line);
  if (lastmod !== undefined) record.lastmod = lastmod;
  const length = lengthOf(raw, line);
  if (length !== undefined) record.length = length;
  const type = text(raw, 'type', line);
  if (type !== undefined) {
    if (!MEDIA_TYPE.test(type)) throw feedError(line, 'type', `${show(type)} is not a media type (type/subtype)`, type);
    record.type = type;
  }
  const hash = text(raw, 'hash', line);
  if (hash !== undefined) parseFeedHash(hash, line, 'hash', record.hashes);
  for (const alg of Object.keys(HASH_ALGORITHMS) as HashAlgorithm[]) {
    const digest = text(raw, alg, line);
    if (digest !== undefined) parseFeedHash(`${alg}:${digest}`, line, alg, record.hashes);
  }
  return record;
}

/**
 * A record from one line of a JSON-lines feed (a JSON object); throws `RS_INVALID_FEED` naming the line, and the
 * field when one is wrong.
 * @example parseFeedLine('{"loc":"https://example.org/a","change":"deleted"}', 7).deleted // true
 */
export function parseFeedLine(line: string, lineNumber: number): FeedRecord {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (err) {
    throw feedError(lineNumber, '', `not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw feedError(lineNumber, '', 'not a JSON object');
  return feedRecord(raw as Record<string, unknown>, lineNumber);
}
