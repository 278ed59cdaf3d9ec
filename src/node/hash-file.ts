import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { isKnownHashAlgorithm, nodeHashName } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import { digestHex } from './digest.js';

/** Digests of a local file for the given algorithms (md5 always). Small files are read in one call. */
export async function hashFile(path: string, algorithms: Iterable<string>): Promise<{ length: number; hashes: Record<string, string> }> {
  const algs = new Set<HashAlgorithm>(['md5']);
  for (const a of algorithms) if (isKnownHashAlgorithm(a)) algs.add(a);
  const st = await stat(path);
  if (st.size <= 1024 * 1024) {
    const data = readFileSync(path);
    return { length: data.length, hashes: Object.fromEntries([...algs].map((a) => [a, digestHex(a, data)])) };
  }
  return hashStreamed(path, [...algs]);
}

const CHUNK = 1024 * 1024;

/**
 * Streams a file through every hash in 1 MiB chunks, reading the next chunk while hashing this one; `check`
 * runs after each chunk (it may throw, e.g. when aborted). Rejects with the file system's errors as they are.
 */
export async function hashStreamed(
  path: string,
  algorithms: readonly HashAlgorithm[],
  check?: () => void,
): Promise<{ length: number; hashes: Partial<Record<HashAlgorithm, string>> }> {
  const fh = await open(path, 'r');
  try {
    const hs = algorithms.map((a) => createHash(nodeHashName(a)));
    const bufs = [Buffer.allocUnsafe(CHUNK), Buffer.allocUnsafe(CHUNK)];
    let which = 0;
    let length = 0;
    let pending = fh.read(bufs[0]!, 0, CHUNK, null);
    for (;;) {
      const { bytesRead } = await pending;
      if (bytesRead === 0) break;
      const cur = bufs[which]!;
      which ^= 1;
      pending = fh.read(bufs[which]!, 0, CHUNK, null);
      const view = bytesRead === CHUNK ? cur : cur.subarray(0, bytesRead);
      for (const h of hs) h.update(view);
      length += bytesRead;
      try {
        check?.();
      } catch (err) {
        await pending.catch(() => undefined);
        throw err;
      }
    }
    const hashes: Partial<Record<HashAlgorithm, string>> = {};
    for (const [k, a] of algorithms.entries()) hashes[a] = hs[k]!.digest('hex');
    return { length, hashes };
  } finally {
    await fh.close();
  }
}
