import { stat } from 'node:fs/promises';
import type { HashValue } from '../core/hash.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { hashFile } from '../node/hash-file.js';
import type { LocalFacts } from './plan.js';
import type { ResourceRecord } from './state.js';

/** What the state's record says of the local copy, for the plan. */
export function localFacts(r: ResourceRecord): LocalFacts {
  const f: LocalFacts = { length: r.length, hashes: r.hashes };
  if (r.lastmod !== undefined) {
    const t = parseW3CDatetime(r.lastmod, true);
    if (t !== undefined) f.lastmod = t.ms;
  }
  return f;
}

/**
 * The facts of a file the state does not vouch for, when it matches what the Source says: its hashes (read), or,
 * with no hash offered, its size and modification time (like rsync). Undefined when it does not match.
 */
export async function adoptable(
  full: string,
  hashes: HashValue[],
  length: number | undefined,
  lastmod: number | undefined,
): Promise<LocalFacts | undefined> {
  const st = await stat(full).catch(() => undefined);
  if (st === undefined || !st.isFile()) return undefined;
  if (length !== undefined && st.size !== length) return undefined;
  if (hashes.length > 0) {
    const got = await hashFile(
      full,
      hashes.map((h) => h.algorithm),
    );
    return got.length === st.size ? { length: got.length, hashes: got.hashes } : undefined;
  }
  // no hash: like rsync, trust size and modification time (set from lastmod when written)
  if (length !== undefined && lastmod !== undefined && Math.abs(st.mtimeMs - lastmod) < 1000) {
    const got = await hashFile(full, []);
    return { length: got.length, hashes: got.hashes, lastmod };
  }
  return undefined;
}

/**
 * True when a record has every hash given (and the length, when given) and its file `full` the recorded length:
 * a dump's bitstream with these facts need not be written again. With `read`, the file's bytes are hashed too.
 */
export async function recordHolds(
  r: ResourceRecord,
  full: string,
  expected: { length?: number; hashes: HashValue[] },
  read: boolean,
): Promise<boolean> {
  if (expected.hashes.length === 0) return false;
  if (expected.length !== undefined && expected.length !== r.length) return false;
  if (!expected.hashes.every((h) => r.hashes[h.algorithm] === h.digest)) return false;
  const st = await stat(full).catch(() => undefined);
  if (st?.isFile() !== true || st.size !== r.length) return false;
  if (!read) return true;
  const got = await hashFile(
    full,
    expected.hashes.map((h) => h.algorithm),
  );
  return expected.hashes.every((h) => got.hashes[h.algorithm] === h.digest);
}
