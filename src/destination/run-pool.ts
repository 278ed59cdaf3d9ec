/** The Destination's bounded-concurrency scheduler, shared by baseline, incremental sync and retries. */
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
