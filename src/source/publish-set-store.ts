/**
 * Where a published set keeps its state: its snapshot store (SQLite under `<dir>/.resourcesync/`, or under the
 * state folder), the bitstreams of its recorded changes beside it, and the options its documents depend on.
 * Shared by publication (./publish.ts) and by recording alone (./record-changes.ts).
 * @see Z39.99 §12, §13 (the changes and their bitstreams kept for Change Lists and Change Dumps)
 */
import { dirname, join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { setPaths, type Context } from './publish-context.js';
import type { SourceSnapshots } from './source-snapshots.js';
import { DOCUMENTS_PREFIX } from './url-path.js';

/** The store file of a set. */
export function storeFile(set: { name: string; dir?: string | undefined }, stateDir?: string): string {
  if (stateDir !== undefined) return join(stateDir, set.name, 'source.sqlite');
  if (set.dir === undefined) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Set '${set.name}' is a feed: its store is in the state folder, which is not given.`, { data: { name: set.name } });
  return join(set.dir, DOCUMENTS_PREFIX, 'source.sqlite');
}

/** Where the bitstreams of a set's recorded changes are kept for its Change Dumps: beside its store. */
export function bitstreamDir(storeFile: string): string {
  return join(dirname(storeFile), 'source-bitstreams');
}

/** Opens the snapshots of a set: `options.snapshots`, or the SQLite ones at `file`. */
export function openSetSnapshots(ctx: Context, set: { name: string; dir: string }, file: string): Promise<SourceSnapshots> {
  return Promise.resolve(ctx.snapshots({ name: set.name, dir: set.dir, file }));
}

/** What a set's documents depend on besides its resources: publishing with other options rewrites them all. */
export function setConfig(ctx: Context, set: { name: string }): string {
  const { docUrl, resBase } = setPaths(ctx, set);
  return JSON.stringify({ v: 1, resBase, docUrl, maxEntries: ctx.maxEntries, maxBytes: ctx.maxBytes, hashes: ctx.hashes, dumps: ctx.dumps, gzip: ctx.gzip, html: ctx.htmlDiscoveryLink });
}
