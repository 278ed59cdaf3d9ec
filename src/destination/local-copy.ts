import type { HashAlgorithm } from '../core/constants.js';
import { isKnownHashAlgorithm, type HashValue } from '../core/hash.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import type { MirrorStorage } from './mirror-storage.js';
import type { LocalFacts } from './plan.js';
import type { ResourceRecord } from './state-store.js';

/** What the state's record says of the local copy, for the plan. */
export function localFacts(r: ResourceRecord): LocalFacts {
  const f: LocalFacts = { length: r.length, hashes: r.hashes };
  if (r.lastmod !== undefined) {
    const t = parseW3CDatetime(r.lastmod, true);
    if (t !== undefined) f.lastmod = t.ms;
  }
  return f;
}

/** The algorithms to hash a copy with: md5 (kept in the state) and those of `hashes`. */
function withMd5(hashes: readonly HashValue[]): HashAlgorithm[] {
  const algorithms = new Set<HashAlgorithm>(['md5']);
  for (const h of hashes) if (isKnownHashAlgorithm(h.algorithm)) algorithms.add(h.algorithm);
  return [...algorithms];
}

/**
 * The facts of a copy the state does not vouch for, when it matches what the Source says: its hashes (read), or,
 * with no hash offered, its size and modification time (like rsync). Undefined when it does not match.
 */
export async function adoptable(
  storage: MirrorStorage,
  key: string,
  hashes: HashValue[],
  length: number | undefined,
  lastmod: number | undefined,
): Promise<LocalFacts | undefined> {
  const st = await storage.stat(key);
  if (st === undefined) return undefined;
  if (length !== undefined && st.size !== length) return undefined;
  if (hashes.length > 0) {
    const got = await storage.hash(key, withMd5(hashes));
    return got !== undefined && got.length === st.size ? { length: got.length, hashes: got.hashes } : undefined;
  }
  // no hash: like rsync, trust size and modification time (set from lastmod when written)
  if (length !== undefined && lastmod !== undefined && Math.abs(st.mtimeMs - lastmod) < 1000) {
    const got = await storage.hash(key, ['md5']);
    return got === undefined ? undefined : { length: got.length, hashes: got.hashes, lastmod };
  }
  return undefined;
}

/**
 * True when a record has every hash given (and the length, when given) and its copy under `key` the recorded
 * length: a dump's bitstream with these facts need not be written again. With `read`, the copy's bytes are hashed too.
 */
export async function recordHolds(
  r: ResourceRecord,
  storage: MirrorStorage,
  key: string,
  expected: { length?: number; hashes: HashValue[] },
  read: boolean,
): Promise<boolean> {
  if (expected.hashes.length === 0) return false;
  if (expected.length !== undefined && expected.length !== r.length) return false;
  if (!expected.hashes.every((h) => r.hashes[h.algorithm] === h.digest)) return false;
  const st = await storage.stat(key);
  if (st === undefined || st.size !== r.length) return false;
  if (!read) return true;
  const got = await storage.hash(key, withMd5(expected.hashes));
  return got !== undefined && expected.hashes.every((h) => got.hashes[h.algorithm as HashAlgorithm] === h.digest);
}
