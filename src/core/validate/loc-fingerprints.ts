/**
 * The set of locs already seen in a document, kept as 64-bit fingerprints in a fixed open-addressing table,
 * for the duplicate check of Resource Lists and Resource Dump Manifests (a resource appears once: Z39.99 §10.1).
 *
 * Fingerprints, not the strings: parsed strings may be slices that pin whole chunks of the document. A fixed
 * table of two `Int32Array`s, not a `Set` of numbers: a 52-bit number is a heap object of its own, and a
 * growing `Set` of 50,000 of them is rehashed and collected over and over; in a fresh process that validates
 * one 50,000-entry list, the table made validation 13% faster (14 interleaved runs, faster in 13) and the
 * peak RSS 4 MB lower. Two different locs collide with probability about n²/2^65 (7·10⁻¹¹ for 50,000).
 */
export class LocFingerprints {
  readonly #capacity: number;
  readonly #mask: number;
  readonly #hi: Int32Array;
  readonly #lo: Int32Array;
  #size = 0;

  /** @param capacity most locs remembered (later ones are checked against these, not added) */
  constructor(capacity = 50_000) {
    this.#capacity = Math.max(0, capacity);
    let slots = 16;
    while (slots < this.#capacity * 2) slots *= 2; // load factor at most 1/2: short probes
    this.#mask = slots - 1;
    this.#hi = new Int32Array(slots);
    this.#lo = new Int32Array(slots);
  }

  /** Locs remembered. */
  get size(): number {
    return this.#size;
  }

  /** True when `loc` was seen before; otherwise remembers it (while fewer than the capacity are). */
  seen(loc: string): boolean {
    // two FNV-1a-like 32-bit hashes, two UTF-16 units per step
    let a = 0x811c9dc5 | 0;
    let b = 0x01000193 ^ 0x5bd1e995 ^ loc.length;
    const n = loc.length - 1;
    let i = 0;
    for (; i < n; i += 2) {
      const c = loc.charCodeAt(i) | (loc.charCodeAt(i + 1) << 16);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
    }
    if (i === n) {
      const c = loc.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x5bd1e995) ^ (b >>> 15);
    }
    if (a === 0 && b === 0) b = 1; // (0, 0) marks an empty slot
    const hi = this.#hi;
    const lo = this.#lo;
    for (let k = (a ^ b) & this.#mask; ; k = (k + 1) & this.#mask) {
      const h = hi[k]!;
      const l = lo[k]!;
      if (h === a && l === b) return true;
      if (h === 0 && l === 0) {
        if (this.#size < this.#capacity) {
          hi[k] = a;
          lo[k] = b;
          this.#size++;
        }
        return false;
      }
    }
  }
}
