/**
 * A set of strings that only grows, as a sync's baseline needs it: the resources on offer in every Resource List
 * read in full (Z39.99 §5.2: what the Destination holds and no snapshot offers was deleted). Implementations may
 * keep fingerprints rather than strings ({@link FingerprintSet}) and spill to disk past a bound; `close` lets go of
 * what they hold (a temporary file).
 */
export interface SeenSet {
  /** Adds `s`. */
  add(s: string): void;
  /** True when `s` was added before (a fingerprint's collision may say true for a string never added). */
  has(s: string): boolean;
  /** Strings added (each counted once). */
  readonly size: number;
  /** Lets go of what the set holds; it is not used afterwards. */
  close?(): void;
}

/**
 * A set of strings kept as 64-bit fingerprints in an open-addressing table of two `Int32Array`s: the locs seen
 * in a document (the validator's duplicate check, Z39.99 §10.1), the resources on offer during an audit and after
 * a sync's baseline (to infer deletions).
 *
 * Fingerprints, not the strings: parsed strings may be slices that pin whole chunks of the document, and a
 * list of millions of resources would keep them all; here each costs 16 bytes at most. Typed arrays, not a
 * `Set` of numbers: a 52-bit number is a heap object of its own, and a growing `Set` of them is rehashed and
 * collected over and over, which costs validation time and peak memory. Two different strings collide with
 * probability about n²/2^65 (7·10⁻¹¹ for 50,000, 3·10⁻⁶ for 10 million): a collision makes a string look
 * present that is not.
 * @example
 * const seen = new FingerprintSet({ capacity: 50_000 });
 * if (seen.seen(loc)) report('loc-duplicate');
 */
export class FingerprintSet implements SeenSet {
  readonly #capacity: number;
  #mask: number;
  #hi: Int32Array;
  #lo: Int32Array;
  #size = 0;

  /** @param options.capacity most strings remembered (later ones are looked up, not added); default no limit */
  constructor(options: { capacity?: number } = {}) {
    this.#capacity = Math.max(0, options.capacity ?? Infinity);
    let slots = 1024;
    while (Number.isFinite(this.#capacity) && slots < this.#capacity * 2 && slots < 1 << 20) slots *= 2;
    this.#mask = slots - 1;
    this.#hi = new Int32Array(slots);
    this.#lo = new Int32Array(slots);
  }

  /** Strings remembered. */
  get size(): number {
    return this.#size;
  }

  /** True when `s` was added before. */
  has(s: string): boolean {
    fingerprint(s);
    return this.#slot(fpA, fpB) < 0;
  }

  /** Adds `s` (while fewer than the capacity are held). */
  add(s: string): void {
    this.seen(s);
  }

  /** True when `s` was added before; otherwise adds it (while fewer than the capacity are) and returns false. */
  seen(s: string): boolean {
    fingerprint(s);
    const a = fpA;
    const b = fpB;
    let k = this.#slot(a, b);
    if (k < 0) return true;
    if (this.#size >= this.#capacity) return false;
    if ((this.#size + 1) * 2 > this.#hi.length) {
      this.#grow();
      k = this.#slot(a, b);
    }
    this.#hi[k] = a;
    this.#lo[k] = b;
    this.#size++;
    return false;
  }

  /**
   * True when the fingerprint (`hi`, `lo`) (see {@link fingerprintOf}) is held.
   */
  hasFingerprint(hi: number, lo: number): boolean {
    return this.#slot(hi | 0, lo | 0) < 0;
  }

  /** Calls `f` with each fingerprint held (`hi`, `lo`), in no order. */
  forEachFingerprint(f: (hi: number, lo: number) => void): void {
    const hi = this.#hi;
    const lo = this.#lo;
    for (let k = 0; k < hi.length; k++) if (hi[k] !== 0 || lo[k] !== 0) f(hi[k]!, lo[k]!);
  }

  /** Forgets every string; the table keeps its size (a set that spills refills it). */
  clear(): void {
    this.#hi.fill(0);
    this.#lo.fill(0);
    this.#size = 0;
  }

  /** The slot holding (a, b) as `-1 - slot`, or the empty slot where it would go. */
  #slot(a: number, b: number): number {
    const hi = this.#hi;
    const lo = this.#lo;
    const mask = this.#mask;
    for (let k = (a ^ b) & mask; ; k = (k + 1) & mask) {
      const h = hi[k]!;
      const l = lo[k]!;
      if (h === a && l === b) return -1 - k;
      if (h === 0 && l === 0) return k;
    }
  }

  /** Doubles the table (load factor at most 1/2: short probes). */
  #grow(): void {
    const oldHi = this.#hi;
    const oldLo = this.#lo;
    this.#hi = new Int32Array(oldHi.length * 2);
    this.#lo = new Int32Array(oldLo.length * 2);
    this.#mask = this.#hi.length - 1;
    for (let k = 0; k < oldHi.length; k++) {
      const a = oldHi[k]!;
      const b = oldLo[k]!;
      if (a === 0 && b === 0) continue;
      const s = this.#slot(a, b);
      this.#hi[s] = a;
      this.#lo[s] = b;
    }
  }
}

/**
 * The 64-bit fingerprint a {@link FingerprintSet} keeps of `s`, as two signed 32-bit halves (never both 0).
 * @example const [hi, lo] = fingerprintOf('http://example.com/r/1');
 */
export function fingerprintOf(s: string): [hi: number, lo: number] {
  fingerprint(s);
  return [fpA, fpB];
}

/** The last fingerprint computed (two values without an object per call). */
let fpA = 0;
let fpB = 0;

/** Two FNV-1a-like 32-bit hashes of `s`, two UTF-16 units per step, into {@link fpA} and {@link fpB}; never (0, 0). */
function fingerprint(s: string): void {
  let a = 0x811c9dc5 | 0;
  let b = 0x01000193 ^ 0x5bd1e995 ^ s.length;
  const n = s.length - 1;
  let i = 0;
  for (; i < n; i += 2) {
    const c = s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  if (i === n) {
    const c = s.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
  }
  if (a === 0 && b === 0) b = 1; // (0, 0) marks an empty slot
  fpA = a;
  fpB = b;
}
