/**
 * Recording a set given as a feed (`InventoryFeed`): one run of its records is staged (checked, keyed by `loc`),
 * then recorded in the set's snapshots in one transaction: a whole inventory by `rebuild` (what it no longer lists
 * is deleted), a feed of changes by `update` (only what it lists changes). Its first run is the baseline.
 * @see Z39.99 §10.1 (Resource List), §12.1 (Change List)
 */
import { ResourceSyncError } from '../core/errors.js';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { STAGING_PREFIX, stageFeed, type InventoryFeed } from './inventory-feed.js';
import { warn, type Context } from './publish-context.js';
import type { RebuildOptions, RebuildResult } from './snapshot-rows.js';
import type { SourceSnapshots } from './source-snapshots.js';

/** What recording a feed did: the recording, and how many bad records it left out. */
export interface FeedRecording {
  recording: RebuildResult;
  skipped: number;
}

/**
 * Reads one run of `feed` and records it in `snapshots`. Nothing is recorded when a bad record stops the run.
 * @throws ResourceSyncError RS_INVALID_FEED (a bad record, unless the feed skips them), RS_ABORTED
 */
export async function recordFeed(
  ctx: Context,
  set: { name: string; feed: InventoryFeed },
  snapshots: SourceSnapshots,
  options: { onChange?: RebuildOptions['onChange']; onProgress?: (records: number) => void },
): Promise<FeedRecording> {
  const { feed } = set;
  const onSkipped = (err: ResourceSyncError): void => {
    const line = typeof err.data.line === 'number' ? err.data.line : undefined;
    warn(ctx, { code: 'RS_INVALID_FEED', set: set.name, path: feed.location, ...(line === undefined ? {} : { line }), message: `${feed.location}: ${err.message}` });
  };
  // staged beside the set's store; what a run that died left there goes first (this run holds the recording lease)
  const dir = join(ctx.stateDir!, set.name);
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) if (name.startsWith(STAGING_PREFIX)) rmSync(join(dir, name), { recursive: true, force: true });
  const staged = await stageFeed(feed, {
    dir,
    ...(ctx.signal ? { signal: ctx.signal } : {}),
    onSkipped,
    origin: new URL(ctx.baseUrl).origin,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
  });
  try {
    const recordOptions: RebuildOptions = {
      now: ctx.now,
      ...ctx.changeList,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
      ...(options.onChange ? { onChange: options.onChange } : {}),
    };
    const changesOnly = feed.scope === 'changes' && (await snapshots.snapshotAt()) !== undefined;
    if (!changesOnly && staged.records === 0 && (await snapshots.count()) > 0) {
      // an export that failed and left an empty file would otherwise delete every resource
      throw new ResourceSyncError('RS_INVALID_FEED', `${feed.location}: lists no resource; as the whole inventory it would delete all ${await snapshots.count()}. Delete them with "change": "deleted" lines (--jsonl-changes) instead.`, {
        data: { location: feed.location, field: '' },
      });
    }
    if (staged.foreign.count > 0) {
      warn(ctx, {
        code: 'RS_AUTHORITY',
        set: set.name,
        path: feed.location,
        message: `${staged.foreign.count} resource(s) are on another origin than the base URL ${ctx.baseUrl} (first: ${staged.foreign.first!}): a Destination follows them only when it allows that origin (sync --allow-origin).`,
      });
    }
    const recording = changesOnly ? await snapshots.update(staged.states(), recordOptions) : await snapshots.rebuild(staged.entries(), recordOptions);
    if (changesOnly) recording.resources = await snapshots.count();
    return { recording, skipped: staged.skipped };
  } finally {
    staged.close();
  }
}
