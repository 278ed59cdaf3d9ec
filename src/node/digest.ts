import { hash } from 'node:crypto';
import { nodeHashName } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';

/**
 * Lower-case hex digest of bytes held in memory, with one-shot `crypto.hash` (Node 20.12+): for a few KB it costs a
 * fraction of a `Hash` object. Data that arrives in pieces goes through `createHash` instead.
 */
export function digestHex(algorithm: HashAlgorithm, data: Uint8Array): string {
  return hash(nodeHashName(algorithm), data, 'hex');
}
