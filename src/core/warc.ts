/**
 * WARC (ISO 28500:2017, WARC/1.1) as ResourceSync uses it: the record header written and read, the digests
 * (`sha1:` + base32, as web archives write them), the 14-digit timestamps and the SURT keys of a CDXJ index.
 * Pure text and bytes: the files are written and read in `src/node/warc-write.ts` and `src/node/warc-read.ts`.
 * The convention for dump packages (Z39.99 §11.1, §13.1 allow another package format) is in docs/source.md,
 * "Dumps as WARC".
 * @see ISO 28500:2017 §4–§6 (record, named fields), Annex D (record-at-a-time gzip); Z39.99 §11.1, §13.1
 */
import { ResourceSyncError } from './errors.js';

/** The version line every record this package writes starts with. */
export const WARC_VERSION = 'WARC/1.1';
/** The media type of a WARC file (IANA), the `type` of a WARC package in a Resource Dump or Change Dump. */
export const WARC_MEDIA_TYPE = 'application/warc';
/** The record types of ISO 28500 §6. */
export const WARC_RECORD_TYPES = ['warcinfo', 'response', 'resource', 'request', 'metadata', 'revisit', 'conversion', 'continuation'] as const;
/** A record type of ISO 28500 §6. */
export type WarcRecordType = (typeof WARC_RECORD_TYPES)[number];

/** One named field of a record header, in the order written. */
export type WarcField = readonly [name: string, value: string];

/** A parsed record header. */
export interface WarcHeader {
  /** `WARC/1.0` or `WARC/1.1`. */
  version: string;
  /** Fields by lower-cased name (a repeated field keeps its first value). */
  fields: Map<string, string>;
}

function warcError(message: string, data: Record<string, unknown> = {}): ResourceSyncError {
  return new ResourceSyncError('RS_WARC', message, { data, recoverable: true });
}

/**
 * The header block of a record: the version line, `Name: value` lines and the empty line, in UTF-8. A value
 * with a line break or a name that is not a token is refused (it would forge fields).
 * @example formatWarcHeader([['WARC-Type', 'resource'], ['Content-Length', '5']]) // 'WARC/1.1\r\nWARC-Type: resource\r\n…\r\n\r\n'
 * @see ISO 28500 §4 (record), §5 (named fields)
 */
export function formatWarcHeader(fields: readonly WarcField[]): string {
  let out = `${WARC_VERSION}\r\n`;
  for (const [name, value] of fields) {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw warcError(`WARC field name '${name}' is not a token.`, { name });
    if (/[\r\n]/.test(value)) throw warcError(`WARC field '${name}' has a line break in its value.`, { name });
    out += `${name}: ${value}\r\n`;
  }
  return `${out}\r\n`;
}

/**
 * Parses a record header (up to and without the empty line that ends it). Folded continuation lines (a line
 * starting with a space or tab) extend the previous value, as ISO 28500 §4 allows.
 * @throws ResourceSyncError RS_WARC when the version line or a field is malformed
 * @example parseWarcHeader('WARC/1.1\r\nWARC-Type: resource\r\nContent-Length: 0').fields.get('warc-type') // 'resource'
 */
export function parseWarcHeader(text: string): WarcHeader {
  const lines = text.split('\r\n');
  const version = lines[0] ?? '';
  if (!/^WARC\/1\.[01]$/.test(version)) throw warcError(`Record starts with '${version.slice(0, 40)}', not a WARC/1.0 or WARC/1.1 version line.`);
  const fields = new Map<string, string>();
  let last: string | undefined;
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i]!;
    if (line === '') continue;
    if ((line.startsWith(' ') || line.startsWith('\t')) && last !== undefined) {
      fields.set(last, `${fields.get(last)!} ${line.trim()}`);
      continue;
    }
    const colon = line.indexOf(':');
    if (colon <= 0) throw warcError(`WARC header line '${line.slice(0, 60)}' is not a named field.`);
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!fields.has(name)) fields.set(name, line.slice(colon + 1).trim());
    last = name;
  }
  return { version, fields };
}

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/**
 * RFC 4648 base32 (upper case, padded), the form of WARC digests (`sha1:` + 32 characters).
 * @example base32(new Uint8Array([0x66])) // 'MY======'
 */
export function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  while (out.length % 8 !== 0) out += '=';
  return out;
}

/** The bytes of base32 text (padding and case ignored); undefined when it is not base32. */
function fromBase32(text: string): Uint8Array | undefined {
  const clean = text.replace(/=+$/, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const ch of clean) {
    const v = BASE32.indexOf(ch);
    if (v < 0) return undefined;
    value = ((value << 5) | v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Uint8Array.from(out);
}

/** A digest field read: the algorithm as Node names it and the digest in lower-case hex. */
export interface WarcDigest {
  algorithm: 'sha1' | 'sha256' | 'md5';
  hex: string;
}

const DIGEST_LENGTHS = { sha1: 20, sha256: 32, md5: 16 } as const;

/**
 * Reads `WARC-Block-Digest` / `WARC-Payload-Digest`: `sha1:`, `sha256:`/`sha-256:` or `md5:` with the digest in
 * base32 (what web archives write) or hex. Undefined for an algorithm or an encoding not known here.
 * @example parseWarcDigest('sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ') // { algorithm: 'sha1', hex: 'da39a3ee…' }
 * @see ISO 28500 §5.8, §5.9
 */
export function parseWarcDigest(value: string | undefined): WarcDigest | undefined {
  if (value === undefined) return undefined;
  const colon = value.indexOf(':');
  if (colon < 0) return undefined;
  const name = value.slice(0, colon).trim().toLowerCase().replace('-', '');
  const digest = value.slice(colon + 1).trim();
  if (name !== 'sha1' && name !== 'sha256' && name !== 'md5') return undefined;
  const size = DIGEST_LENGTHS[name];
  if (digest.length === size * 2 && /^[0-9a-fA-F]+$/.test(digest)) return { algorithm: name, hex: digest.toLowerCase() };
  const bytes = fromBase32(digest);
  if (bytes === undefined || bytes.length !== size) return undefined;
  return { algorithm: name, hex: Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('') };
}

/**
 * `WARC-Date`: UTC, to the second, or with the fraction WARC/1.1 allows when the milliseconds are not zero.
 * @example warcDate(Date.UTC(2026, 0, 2, 3, 4, 5)) // '2026-01-02T03:04:05Z'
 * @see ISO 28500 §5.4
 */
export function warcDate(ms: number): string {
  const iso = new Date(ms).toISOString();
  return iso.endsWith('.000Z') ? `${iso.slice(0, 19)}Z` : iso;
}

/**
 * The 14-digit timestamp of a CDXJ line (`yyyyMMddHHmmss`) from a `WARC-Date`.
 * @example cdxTimestamp('2026-01-02T03:04:05Z') // '20260102030405'
 */
export function cdxTimestamp(date: string): string {
  return date.replace(/[^0-9]/g, '').slice(0, 14).padEnd(14, '0');
}

/**
 * The SURT key of a URL as pywb and warcio write it in CDXJ: scheme dropped, host labels reversed and joined
 * by commas (a leading `www.` dropped, the port kept unless it is the scheme's default), `)` then the path, the
 * query's parameters sorted, no fragment, all in lower case.
 * @example surtKey('https://www.Example.com/a/B?z=1&a=2#x') // 'com,example)/a/b?a=2&z=1'
 */
export function surtKey(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return url.toLowerCase();
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return url.toLowerCase();
  let host = u.hostname.toLowerCase().replace(/\.$/, '');
  if (host.startsWith('www.')) host = host.slice(4);
  const reversed = host.startsWith('[') ? host : host.split('.').reverse().join(',');
  const port = u.port === '' ? '' : `:${u.port}`;
  const query = u.search.length > 1 ? `?${u.search.slice(1).split('&').sort().join('&')}` : '';
  return `${reversed}${port})${u.pathname}${query}`.toLowerCase();
}
