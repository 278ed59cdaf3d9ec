import type { ResourceApplier } from './resource-applier.js';
import { runPool } from './run-pool.js';
import type { DestinationState } from './state.js';

/**
 * Applies the deletions that earlier runs saw but skipped (run without `delete`) and that the state still
 * remembers: each resource still held is removed, and the deletion forgotten once it is done (or nothing is held).
 * @see Z39.99 §5.2 (a Destination may apply deletions later; the state says which)
 */
export async function applySkippedDeletions(
  applier: ResourceApplier,
  store: DestinationState,
  setKey: string,
  concurrency: number,
): Promise<void> {
  const urls = await store.skippedDeletions(setKey);
  if (urls.length === 0) return;
  const done: string[] = [];
  await runPool(urls, concurrency, async (u) => {
    if (await applier.remove(u)) done.push(u);
  });
  await applier.flush();
  if (!store.readonly && done.length > 0) await store.apply({ forgetSkipped: done });
}
