/**
 * A pure compare of two sorted streams of resources (by path, UTF-8 byte order): what was created,
 * updated, deleted or left unchanged between a stored snapshot and a new inventory.
 * @see Z39.99 §12.1 (`change`: created, updated, deleted)
 */
import { compareUtf8 } from '../core/utf8-order.js';

/** One result of `compareSorted`. */
export type Comparison<N, B> =
  | { kind: 'created'; path: string; now: N }
  | { kind: 'updated'; path: string; now: N; before: B }
  | { kind: 'deleted'; path: string; before: B }
  | { kind: 'unchanged'; path: string; now: N; before: B };

/**
 * Merges two streams sorted by `path` and classifies every path. `same(now, before)` decides whether a
 * path present in both is unchanged. Throws if either stream is out of order.
 * @example
 * for await (const c of compareSorted(inventory(dir), store.snapshot(), sameContent)) if (c.kind !== 'unchanged') …
 */
export async function* compareSorted<N extends { path: string }, B extends { path: string }>(
  now: AsyncIterable<N> | Iterable<N>,
  before: AsyncIterable<B> | Iterable<B>,
  same: (now: N, before: B) => boolean,
): AsyncGenerator<Comparison<N, B>> {
  const a = toAsyncIterator(now);
  const b = toAsyncIterator(before);
  let x = await a.next();
  let y = await b.next();
  let lastA: string | undefined;
  let lastB: string | undefined;
  const check = (last: string | undefined, path: string, which: string): string => {
    if (last !== undefined && compareUtf8(last, path) >= 0) {
      throw new Error(`compareSorted: the ${which} stream is not sorted at '${path}'.`);
    }
    return path;
  };
  if (!x.done) lastA = check(undefined, x.value.path, 'new');
  if (!y.done) lastB = check(undefined, y.value.path, 'stored');
  while (!x.done || !y.done) {
    const c = x.done ? 1 : y.done ? -1 : compareUtf8(x.value.path, y.value.path);
    if (c < 0) {
      const n = x.value as N;
      yield { kind: 'created', path: n.path, now: n };
      x = await a.next();
      if (!x.done) lastA = check(lastA, x.value.path, 'new');
    } else if (c > 0) {
      const o = y.value as B;
      yield { kind: 'deleted', path: o.path, before: o };
      y = await b.next();
      if (!y.done) lastB = check(lastB, y.value.path, 'stored');
    } else {
      const n = x.value as N;
      const o = y.value as B;
      yield same(n, o) ? { kind: 'unchanged', path: n.path, now: n, before: o } : { kind: 'updated', path: n.path, now: n, before: o };
      x = await a.next();
      y = await b.next();
      if (!x.done) lastA = check(lastA, x.value.path, 'new');
      if (!y.done) lastB = check(lastB, y.value.path, 'stored');
    }
  }
}

function toAsyncIterator<T>(it: AsyncIterable<T> | Iterable<T>): AsyncIterator<T> | Iterator<T> {
  return Symbol.asyncIterator in it ? it[Symbol.asyncIterator]() : it[Symbol.iterator]();
}
