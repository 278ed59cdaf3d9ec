import { HASH_ALGORITHMS, type HashAlgorithm } from './constants.js';

/**
 * Fixity values of `rs:md hash` / `rs:ln hash`: a whitespace-delimited list of `alg:hexdigest`.
 * @see Z39.99 §7 (`hash`)
 */
export interface HashValue {
  /** Algorithm token as written, lower-cased (`md5`, `sha-1`, `sha-256`, or another). */
  algorithm: string;
  /** The digest as written (hex, lower-cased when hex). */
  digest: string;
}

const HEX = /^[0-9a-fA-F]+$/;
const WHITESPACE = /\s/;

/** Splits a hash attribute into its values. Malformed tokens (no `:`) are returned with algorithm ''. */
export function parseHashes(value: string | undefined): HashValue[] {
  if (value === undefined) return [];
  const out: HashValue[] = [];
  for (const token of WHITESPACE.test(value) ? value.split(/\s+/) : [value]) {
    if (token === '') continue;
    const colon = token.indexOf(':');
    if (colon <= 0) {
      out.push({ algorithm: '', digest: token });
      continue;
    }
    const algorithm = token.slice(0, colon).toLowerCase();
    const digest = token.slice(colon + 1);
    out.push({ algorithm, digest: HEX.test(digest) ? digest.toLowerCase() : digest });
  }
  return out;
}

/** Formats hash values as an attribute value: `md5:… sha-256:…`. */
export function formatHashes(values: Iterable<HashValue> | Partial<Record<string, string>>): string {
  const list: HashValue[] = Symbol.iterator in values
    ? [...(values)]
    : Object.entries(values as Record<string, string | undefined>)
        .filter((e): e is [string, string] => e[1] !== undefined)
        .map(([algorithm, digest]) => ({ algorithm, digest }));
  return list.map((h) => `${h.algorithm}:${h.digest}`).join(' ');
}

/** True for md5, sha-1 and sha-256. */
export function isKnownHashAlgorithm(alg: string): alg is HashAlgorithm {
  return Object.hasOwn(HASH_ALGORITHMS, alg);
}

const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * The digest of a known algorithm as lower-case hex: hex as written, or base64 (standard or URL-safe, padded or
 * not) of the right length converted, as some producers publish it (tolerated in lenient reading). Undefined for an
 * unknown algorithm or a digest that is neither.
 * @example hexDigest({ algorithm: 'md5', digest: 'XUFAKrxLKna5cZ2REBfFkg==' }) // '5d41402abc4b2a76b9719d911017c592'
 */
function hexDigest(h: HashValue): string | undefined {
  if (!isKnownHashAlgorithm(h.algorithm)) return undefined;
  const hexLength = HASH_ALGORITHMS[h.algorithm];
  if (h.digest.length === hexLength && HEX.test(h.digest)) return h.digest.toLowerCase();
  if (!BASE64.test(h.digest)) return undefined;
  let binary: string;
  try {
    binary = atob(h.digest.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, ''));
  } catch {
    return undefined;
  }
  if (binary.length * 2 !== hexLength) return undefined;
  let hex = '';
  for (let i = 0; i < binary.length; i++) hex += binary.charCodeAt(i).toString(16).padStart(2, '0');
  return hex;
}

/**
 * The values of a hash attribute whose algorithm is known (md5, sha-1, sha-256), digests as lower-case hex
 * ({@link hexDigest}: base64 ones converted); what a Destination verifies against.
 */
export function knownHashes(value: string | undefined): HashValue[] {
  const out: HashValue[] = [];
  for (const h of parseHashes(value)) {
    if (isKnownHashAlgorithm(h.algorithm)) out.push({ algorithm: h.algorithm, digest: hexDigest(h) ?? h.digest });
  }
  return out;
}

/** Node's `crypto.createHash` name for a ResourceSync algorithm token. */
export function nodeHashName(alg: HashAlgorithm): 'md5' | 'sha1' | 'sha256' {
  return alg === 'md5' ? 'md5' : alg === 'sha-1' ? 'sha1' : 'sha256';
}

/** Parses a `length` attribute: a non-negative decimal integer. Undefined when absent or malformed. */
export function parseLength(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}
