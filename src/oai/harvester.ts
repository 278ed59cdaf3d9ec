/**
 * A harvest into the bridge's record folder: each set of resources (the whole repository, or one OAI set) and each
 * metadata format listed with `ListRecords` (or `ListIdentifiers` then `GetRecord` per item), incrementally `from`
 * the start of the previous harvest or in full. A record is written where its bytes changed; a deleted record's
 * file is removed; after a complete full harvest, every file it did not see is removed too (how deletions show
 * in a repository that keeps none, `deletedRecord` `no`). Memory stays bounded whatever the size of the sets.
 * @see OAI-PMH 2.0 §2.5 (deleted records), §2.7 (selective harvesting), §3.3 (granularity)
 */
import { join } from 'node:path';
import type { OaiClient } from './client.js';
import type { HarvestState } from './harvest-state.js';
import { putRecord, recordPath, removeRecord } from './record-folder.js';
import type { OaiRecord } from './types.js';

/** A set of resources of the bridge: its name (a URL segment), its folder and the OAI set it holds, if any. */
export interface BridgeSet {
  name: string;
  dir: string;
  /** The setSpec harvested into it; undefined for the whole repository. */
  setSpec?: string;
}

/** What a harvest did. */
export interface HarvestCounts {
  /** Records and headers read. */
  records: number;
  /** Record files written (new or changed). */
  written: number;
  /** Records whose bytes had not changed. */
  unchanged: number;
  /** Record files removed: deleted records, records gone between list and fetch, records missing from a full harvest. */
  deleted: number;
  /** Records left out: an identifier that cannot name a file. */
  skipped: number;
}

/** Most changed files a harvest lists (see {@link HarvestResult.changedFiles}). */
const MAX_CHANGED_FILES = 10_000;

/** A harvest's counts and, when few enough, the files it wrote or removed. */
export interface HarvestResult extends HarvestCounts {
  /**
   * The record files written or removed (absolute paths), for recording them on their own; undefined after a
   * full harvest or past 10,000 files, when the Source rescans its folders.
   */
  changedFiles?: string[];
}

/** Options of {@link harvestInto}. */
export interface HarvestIntoOptions {
  client: OaiClient;
  state: HarvestState;
  sets: readonly BridgeSet[];
  metadataPrefixes: readonly string[];
  /** Lower bound of datestamps (an incremental harvest); undefined harvests in full. */
  from?: string;
  /** A full harvest's generation: files it does not see are removed when it completes. */
  generation: number;
  /** List with ListIdentifiers and fetch each record with GetRecord. Default false (ListRecords). */
  listIdentifiers?: boolean;
  signal?: AbortSignal;
  /** A record left out, and why. */
  onSkip?: (event: { set: string; identifier: string; reason: string }) => void;
  /** Progress, every 1,000 records. */
  onProgress?: (counts: HarvestCounts) => void;
}

/** Records of one set in one format, from ListRecords, or ListIdentifiers and GetRecord. */
async function* recordsOf(options: HarvestIntoOptions, set: BridgeSet, metadataPrefix: string): AsyncIterable<{ header: OaiRecord; record: OaiRecord | undefined }> {
  const args = {
    metadataPrefix,
    ...(options.from === undefined ? {} : { from: options.from }),
    ...(set.setSpec === undefined ? {} : { set: set.setSpec }),
  };
  if (options.listIdentifiers !== true) {
    for await (const record of options.client.listRecords(args)) yield { header: record, record };
    return;
  }
  for await (const header of options.client.listIdentifiers(args)) {
    // a record deleted between the list and the fetch answers idDoesNotExist (undefined) or a deleted header
    const record = header.deleted ? header : await options.client.getRecord(header.identifier, metadataPrefix);
    yield { header, record };
  }
}

/**
 * Harvests the sets into their folders and returns what changed. Throws what the client throws (the files written
 * so far stay, and a later harvest goes on from there); the removal of unseen files happens only after a full
 * harvest completed.
 * @example
 * const counts = await harvestInto({ client, state, sets: [{ name: 'oai', dir }], metadataPrefixes: ['oai_dc'], generation: 1 });
 */
export async function harvestInto(options: HarvestIntoOptions): Promise<HarvestResult> {
  const counts: HarvestCounts = { records: 0, written: 0, unchanged: 0, deleted: 0, skipped: 0 };
  let changed: string[] | undefined = options.from === undefined ? undefined : [];
  const note = (file: string): void => {
    if (changed !== undefined && changed.length < MAX_CHANGED_FILES) changed.push(file);
    else changed = undefined;
  };
  const { state, generation } = options;
  for (const set of options.sets) {
    for (const prefix of options.metadataPrefixes) {
      for await (const { header, record } of recordsOf(options, set, prefix)) {
        options.signal?.throwIfAborted();
        counts.records++;
        if (counts.records % 1000 === 0) options.onProgress?.({ ...counts });
        const path = recordPath(prefix, header.identifier);
        if (path === undefined) {
          counts.skipped++;
          options.onSkip?.({ set: set.name, identifier: header.identifier, reason: 'the identifier is too long to name a file' });
          continue;
        }
        const key = `${set.name}/${path}`;
        const file = join(set.dir, path);
        if (record === undefined || record.deleted || record.metadata === undefined) {
          if (removeRecord(file)) {
            counts.deleted++;
            note(file);
          }
          state.see(key, undefined);
          continue;
        }
        const outcome = putRecord(file, Buffer.from(record.metadata, 'utf8'), record.time);
        counts[outcome]++;
        if (outcome === 'written') note(file);
        state.see(key, generation);
      }
    }
  }
  state.flush();
  if (options.from === undefined) counts.deleted += sweep(options);
  return { ...counts, ...(changed === undefined ? {} : { changedFiles: changed }) };
}

/** After a full harvest: removes the files it did not see. */
function sweep(options: HarvestIntoOptions): number {
  let removed = 0;
  const dirs = new Map(options.sets.map((s) => [s.name, s.dir]));
  for (const key of options.state.unseen(options.generation)) {
    const slash = key.indexOf('/');
    const dir = dirs.get(key.slice(0, slash));
    if (dir !== undefined && removeRecord(join(dir, key.slice(slash + 1)))) removed++;
  }
  return removed;
}
