import { createHash } from 'node:crypto';
import { createReadStream, readFileSync } from 'node:fs';
import { stat } from 'node:fs/promises';
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
  const hashers = [...algs].map((a) => [a, createHash(nodeHashName(a))] as const);
  let length = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
    length += chunk.length;
    for (const [, h] of hashers) h.update(chunk);
  }
  return { length, hashes: Object.fromEntries(hashers.map(([a, h]) => [a, h.digest('hex')])) };
}

