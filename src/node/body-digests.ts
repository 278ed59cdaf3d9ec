import { createHash, type Hash } from 'node:crypto';
import { nodeHashName } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import type { HashValue } from '../core/hash.js';
import { digestHex } from './digest.js';

const EMPTY = new Uint8Array(0);

/**
 * The digests of a body. A body that comes in one chunk (most small resources) is hashed at the end in one shot
 * ({@link digestHex}); a longer body is streamed through `Hash` objects. A chunk kept for later must not change
 * meanwhile: pass `now` for a buffer that will be reused.
 * @example
 * const d = new BodyDigests(['md5', 'sha-256']);
 * for await (const chunk of body) d.update(chunk);
 * d.digest(); // { md5: '…', 'sha-256': '…' }
 */
export class BodyDigests {
  readonly #algs: readonly HashAlgorithm[];
  #hashers: [HashAlgorithm, Hash][] | undefined;
  #first: Uint8Array | undefined;

  constructor(algs: Iterable<HashAlgorithm>) {
    this.#algs = [...algs];
  }

  update(chunk: Uint8Array, now = false): void {
    if (this.#hashers === undefined) {
      if (this.#first === undefined && !now) {
        this.#first = chunk;
        return;
      }
      this.#hashers = this.#algs.map((a) => [a, createHash(nodeHashName(a))]);
      if (this.#first !== undefined) for (const [, h] of this.#hashers) h.update(this.#first);
      this.#first = undefined;
    }
    for (const [, h] of this.#hashers) h.update(chunk);
  }

  /** Lower-case hex digests by algorithm. */
  digest(): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.#hashers !== undefined) {
      for (const [a, h] of this.#hashers) out[a] = h.digest('hex');
    } else {
      const data = this.#first ?? EMPTY;
      for (const a of this.#algs) out[a] = digestHex(a, data);
    }
    return out;
  }
}

/** A declared hash that the body's digest does not match. */
export interface HashMismatch {
  algorithm: string;
  expected: string;
  actual: string;
}

/**
 * The declared hashes that `digests` (from {@link BodyDigests.digest}) contradict, in declared order; an algorithm
 * that was not digested is passed over.
 * @example hashMismatches([{ algorithm: 'md5', digest: 'abc' }], d.digest()) // [{ algorithm: 'md5', expected: 'abc', actual: '…' }]
 */
export function hashMismatches(declared: readonly HashValue[], digests: Record<string, string>): HashMismatch[] {
  const out: HashMismatch[] = [];
  for (const h of declared) {
    const actual = digests[h.algorithm];
    if (actual !== undefined && actual !== h.digest) out.push({ algorithm: h.algorithm, expected: h.digest, actual });
  }
  return out;
}
