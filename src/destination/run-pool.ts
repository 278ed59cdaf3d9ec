/** The Destination's bounded-concurrency schedulers: {@link runPool} (baseline, incremental sync, retries) and {@link orderedPool} (dumps). */
import { toError } from '../core/errors.js';

/**
 * Runs `fn` over `items` with at most `concurrency` at a time, pulling the next item only when a slot is free
 * (so a streamed list is never read ahead of the work). `fn` may give its slot back early by calling `release`
 * (its download is done and it only waits for the disk): the next item starts while it finishes, up to
 * `maxOutstanding` unfinished calls in all. Rejects with the first error `fn` throws, once the calls under way
 * have finished.
 */
export async function runPool<T>(
  items: AsyncIterable<T> | Iterable<T>,
  concurrency: number,
  fn: (item: T, release: () => void) => Promise<unknown>,
  maxOutstanding = Math.max(1, concurrency) * 64,
): Promise<void> {
  const it = Symbol.asyncIterator in items ? items[Symbol.asyncIterator]() : items[Symbol.iterator]();
  const slots = Math.max(1, concurrency);
  const most = Math.max(slots, maxOutstanding);
  let active = 0;
  let outstanding = 0;
  let failed: unknown;
  let wake: (() => void) | undefined;
  const changed = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  while (failed === undefined) {
    while (active >= slots || outstanding >= most) await new Promise<void>((r) => (wake = r));
    if (failed !== undefined) break;
    let next: IteratorResult<T>;
    try {
      next = await it.next();
    } catch (err) {
      failed = err;
      break;
    }
    if (next.done === true) break;
    active++;
    outstanding++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      active--;
      changed();
    };
    const item = next.value;
    void (async () => {
      try {
        await fn(item, release);
      } catch (err) {
        failed ??= err;
      } finally {
        release();
        outstanding--;
        changed();
      }
    })();
  }
  while (outstanding > 0) await new Promise<void>((r) => (wake = r));
  if (failed !== undefined) {
    await Promise.resolve(it.return?.()).catch(() => undefined);
    throw toError(failed);
  }
}

/** What an item of {@link orderedPool} reports once its work is done; called in item order. */
export type ItemReport = () => void | Promise<void>;

/** Options of {@link orderedPool}. */
export interface OrderedPoolOptions<T> {
  /** Most unfinished items at once (see {@link runPool}). Default `concurrency * 64`. */
  maxOutstanding?: number;
  /** Items of one key run one after another: an item's work starts once the previous one of its key has reported. */
  keyOf?: (item: T) => string | undefined;
}

/**
 * {@link runPool} whose results come out in order: `work(item, release)` runs concurrently (called in item order,
 * at most `concurrency` unreleased) and resolves with the item's report; the reports are called one at a time in
 * item order, each once the previous one has finished. A rejection of `work` or of a report stops the pulling of
 * items; the items under way still finish and report in order, then the first error rejects.
 * @example
 * await orderedPool(entries, 4, async (e, release) => { const r = await extract(e, release); return () => log(r); });
 */
export async function orderedPool<T>(
  items: AsyncIterable<T> | Iterable<T>,
  concurrency: number,
  work: (item: T, release: () => void) => Promise<ItemReport>,
  options: OrderedPoolOptions<T> = {},
): Promise<void> {
  let previousReported: Promise<void> = Promise.resolve();
  /** The last item started of each key, settled once it has reported. */
  const lastOfKey = new Map<string, Promise<void>>();
  await runPool(
    items,
    concurrency,
    async (item, release) => {
      const myTurn = previousReported;
      let reported!: () => void;
      const done = new Promise<void>((resolve) => (reported = resolve));
      previousReported = done;
      const key = options.keyOf?.(item);
      const before = key === undefined ? undefined : lastOfKey.get(key);
      if (key !== undefined) lastOfKey.set(key, done);
      try {
        await before;
        const report = await work(item, release);
        await myTurn;
        await report();
      } finally {
        await myTurn;
        reported();
        if (key !== undefined && lastOfKey.get(key) === done) lastOfKey.delete(key);
      }
    },
    options.maxOutstanding,
  );
}
