/**
 * Small, pure pieces of HTTP semantics used by the Source server: validators (ETag, Last-Modified),
 * conditional requests, byte ranges and content negotiation of gzip.
 * @see RFC 9110 §8.8 (validators), §13 (conditional requests), §14 (range requests), §12.5.3 (Accept-Encoding)
 */

/** A single satisfiable byte range: `start` inclusive, `end` exclusive. */
export interface ByteRange {
  start: number;
  end: number;
}

/**
 * Interprets a `Range` header against a representation of `size` bytes.
 * Returns `undefined` when the header is absent, syntactically invalid, uses another unit or asks for several
 * ranges (the server then ignores it and sends the whole representation, as RFC 9110 §14.2 allows),
 * `'unsatisfiable'` when it is valid but no byte of the representation is selected (→ 416),
 * or the selected range.
 * @example parseRange('bytes=0-99', 1000) // { start: 0, end: 100 }
 * @see RFC 9110 §14.1.1, §14.2
 */
export function parseRange(header: string | undefined, size: number): ByteRange | 'unsatisfiable' | undefined {
  if (header === undefined) return undefined;
  const m = /^\s*bytes\s*=\s*([^,]*?)\s*$/i.exec(header);
  if (m === null) return undefined;
  const spec = m[1]!;
  const dash = spec.indexOf('-');
  if (dash < 0) return undefined;
  const first = spec.slice(0, dash).trim();
  const last = spec.slice(dash + 1).trim();
  if (first === '') {
    // suffix-range: the last N bytes
    if (!/^\d+$/.test(last)) return undefined;
    const n = Number(last);
    if (n === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - n), end: size };
  }
  if (!/^\d+$/.test(first) || (last !== '' && !/^\d+$/.test(last))) return undefined;
  const start = Number(first);
  const endIncl = last === '' ? Infinity : Number(last);
  if (endIncl < start) return undefined; // invalid range-spec: ignore the header
  if (start >= size) return 'unsatisfiable';
  return { start, end: Math.min(endIncl + 1, size) };
}

/** Splits an entity-tag list (`If-None-Match`, `If-Match`). Returns `'*'` for the wildcard. */
function entityTags(header: string): string[] | '*' {
  if (header.trim() === '*') return '*';
  const tags: string[] = [];
  for (const m of header.matchAll(/(W\/)?"[^"]*"/g)) tags.push(m[0]);
  return tags;
}

function opaque(tag: string): string {
  return tag.startsWith('W/') ? tag.slice(2) : tag;
}

/** Weak comparison of `etag` against an `If-None-Match` value. @see RFC 9110 §13.1.2 */
export function noneMatch(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === '*') return false;
  const mine = opaque(etag);
  return !tags.some((t) => opaque(t) === mine);
}

/** Strong comparison of `etag` against an `If-Match` value. @see RFC 9110 §13.1.1 */
export function matches(header: string, etag: string): boolean {
  const tags = entityTags(header);
  if (tags === '*') return true;
  return !etag.startsWith('W/') && tags.some((t) => t === etag);
}

/** Parses an HTTP-date into whole seconds since the epoch, or undefined. @see RFC 9110 §5.6.7 */
function parseHttpDate(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** Outcome of evaluating the preconditions of a GET or HEAD. */
export type Precondition = 'proceed' | 'not-modified' | 'failed';

/** The request header fields that take part in conditional requests. */
export interface ConditionalHeaders {
  'if-match'?: string | undefined;
  'if-none-match'?: string | undefined;
  'if-modified-since'?: string | undefined;
  'if-unmodified-since'?: string | undefined;
}

/**
 * Evaluates preconditions in the order of RFC 9110 §13.2.2 for a GET/HEAD of a representation with the
 * given validators (`mtimeSeconds` is the Last-Modified time in whole seconds).
 */
export function evaluatePreconditions(h: ConditionalHeaders, etag: string, mtimeSeconds: number): Precondition {
  const ifMatch = h['if-match'];
  if (ifMatch !== undefined) {
    if (!matches(ifMatch, etag)) return 'failed';
  } else {
    const ius = parseHttpDate(h['if-unmodified-since']);
    if (ius !== undefined && mtimeSeconds > ius) return 'failed';
  }
  const inm = h['if-none-match'];
  if (inm !== undefined) {
    if (!noneMatch(inm, etag)) return 'not-modified';
  } else {
    const ims = parseHttpDate(h['if-modified-since']);
    if (ims !== undefined && mtimeSeconds <= ims) return 'not-modified';
  }
  return 'proceed';
}

/**
 * Whether an `If-Range` value lets the `Range` header apply: a strong entity-tag equal to the current one,
 * or an HTTP-date exactly equal to Last-Modified. Absent → true. @see RFC 9110 §13.1.5
 */
export function ifRangeHolds(value: string | undefined, etag: string, lastModified: string): boolean {
  if (value === undefined) return true;
  const v = value.trim();
  if (v.startsWith('"') || v.startsWith('W/')) return !etag.startsWith('W/') && v === etag;
  return v === lastModified;
}

/**
 * Whether the client accepts `coding` (e.g. `gzip`) per its `Accept-Encoding`, honouring `q=0` and `*`.
 * @see RFC 9110 §12.5.3
 */
export function acceptsEncoding(header: string | undefined, coding: string): boolean {
  if (header === undefined || header === '') return false;
  let star: boolean | undefined;
  for (const part of header.split(',')) {
    const [name = '', ...params] = part.trim().split(';');
    const token = name.trim().toLowerCase();
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m !== null) q = Number(m[1]);
    }
    if (token === coding || (coding === 'gzip' && token === 'x-gzip')) return q > 0;
    if (token === '*') star = q > 0;
  }
  return star ?? false;
}

/** Whether a media type is worth compressing (text and structured text). */
export function isCompressible(contentType: string): boolean {
  const t = contentType.split(';')[0]!.trim().toLowerCase();
  return (
    t.startsWith('text/') ||
    t.endsWith('+xml') ||
    t.endsWith('+json') ||
    t === 'application/xml' ||
    t === 'application/json' ||
    t === 'application/javascript' ||
    t === 'application/ecmascript' ||
    t === 'application/xhtml+xml' ||
    t === 'image/svg+xml' ||
    t === 'application/wasm'
  );
}
