/**
 * The options and the report of `sync()`, composed from the parts other Destination calls share: how to reach the
 * Source ({@link ConnectionOptions}), the mirror it writes ({@link MirrorTarget}) and what the sync does
 * ({@link SyncBehaviour}).
 */
import type { Durability } from '../node/durability.js';
import type { ConnectionOptions } from './connection.js';
import type { MirrorStorage } from './mirror-storage.js';
import type { DestinationState } from './state.js';
import type { PlanItem, PlanSummary } from './plan.js';
import type { SyncCounts, SyncProgress } from './resource-applier.js';
import type { FetchArchive } from './resource-fetch.js';

/** The mirror a Destination call works on. */
export interface MirrorTarget {
  /** The destination directory (created if needed). */
  dest: string;
  /**
   * Where the mirror's copies go, instead of the folder `dest` (whose `.resourcesync` still holds the state unless
   * `state` is given): a {@link MirrorStorage} of the caller's, settled by the run. Default:
   * `createLocalDirectory(dest, { durability })`.
   */
  storage?: MirrorStorage;
  /**
   * The Destination's state; default the SQLite state in `<dest>/.resourcesync/`. The caller owns a state it
   * passes (the run does not close it); the run takes its lease either way.
   */
  state?: DestinationState;
}

/** What a sync does, beyond reaching the Source and naming the mirror. */
export interface SyncBehaviour {
  /** Apply deletions (otherwise they are only reported). Default false. */
  delete?: boolean;
  /**
   * Take a new baseline even when the state could go on incrementally: every file held is read and kept when it
   * matches the Resource List, the rest fetched again, and the cursor starts over at the list's `at`. Default false.
   */
  baseline?: boolean;
  /**
   * Plan only: nothing is fetched but documents, nothing is written, state included. The report's `plan` counts
   * the items by action and reason and lists the first 1,000 that change something; `onPlan` hears every item.
   */
  dryRun?: boolean;
  /**
   * Called with each plan item (create, update, delete or unchanged, with its reason) as it is decided. A promise
   * it returns holds that resource until it settles, so that a slow consumer (a pipe, a file) slows the sync down
   * instead of letting items pile up in memory.
   */
  onPlan?: (item: PlanItem) => void | Promise<void>;
  onProgress?: (p: SyncProgress) => void;
  /** With a Source Description (or several Capability Lists), sync only this Capability List. */
  capabilityList?: string;
  /**
   * Only the resources whose URL starts with one of these prefixes (absolute http(s) URLs) are mirrored: the others
   * are never fetched, written or deleted because of a change, and counted in the note `outside-url-prefixes`. A
   * resource held from before that falls outside them is removed by the next baseline (with `delete`; otherwise a
   * deletion skipped); a filter other than the one of the set's last baseline takes a new baseline. Default: every
   * resource. @see Z39.99 §5.2
   */
  urlPrefixes?: string[];
  /** Use a Resource Dump / Change Dump when offered. Default false. */
  preferDump?: boolean;
  /**
   * A set that offers no changes (no Change List, no Change Dump) and whose Resource Dump is the very one its last
   * baseline came from, applied whole (the same `at`, `completed` and packages), is taken as in step without reading
   * its packages again (mode incremental): a poll costs the dump's document alone. A copy changed behind the
   * mirror's back is then repaired only with the next new dump (or `baseline`). Default false: the packages are
   * read each run and every bitstream checked against its copy.
   * @see Z39.99 §11.1
   */
  skipSameDump?: boolean;
  /**
   * A Source of one capability set (or the one `capabilityList` names) that offers no changes (no Change List, no
   * Change Dump): its Resource List (and a Resource List Index's parts) is asked for conditionally with the
   * validators (`ETag`, else `Last-Modified`) of the last complete baseline, kept in the state; when every one
   * answers 304 Not Modified the set is in step without reading it (mode incremental). A document sent without a
   * validator is read each run. A copy changed behind the mirror's back is then repaired only when the list changes
   * (or with `baseline`). Default false: the list is read each run and every resource compared with its copy.
   * @see Z39.99 §5.2; RFC 9110 §13.1
   */
  skipSameList?: boolean;
  /** Try `duplicate` mirrors before the primary URL. Default false (mirrors only when the primary fails). */
  preferMirrors?: boolean;
  /** Extra attempts after a failed verification or a broken body. Default 2. */
  verifyRetries?: number;
  /**
   * Records every response fetched from a resource's URL and verified, e.g. as WARC (`openWarcArchive`); the
   * caller closes it. Not with `dryRun`.
   */
  archive?: FetchArchive;
  /**
   * Makes each file durable before it is renamed into place; settled by the sync. Default a group commit (the files
   * of about 50 ms fsynced together, then renamed); `new FsyncEach()` fsyncs each file, `new RenameOnly()` none.
   */
  durability?: Durability;
  /**
   * The resources on offer that a baseline remembers in memory (to infer deletions, §5.2) before it moves them to a
   * temporary SQLite file in `seenDir`, so memory stays flat whatever the number of resources. Default 262,144
   * (a table of 4 MB).
   */
  seenInMemory?: number;
  /** Where that temporary file is made (and removed at the end of the run). Default the OS temporary folder. */
  seenDir?: string;
}

/**
 * Options of `sync()`: the Source (`source`, the HTTP client and its limits: `concurrency` resources fetched at
 * once, default 16; `timeoutMs` default 30,000; `deadlineMs` default 600,000; `retries` default 3), the mirror
 * (`dest`) and what to do.
 */
export type SyncOptions = ConnectionOptions & MirrorTarget & SyncBehaviour;

/** The outcome of a sync. */
export interface SyncReport extends SyncCounts {
  /**
   * 'baseline' when any capability set was (re)built from a Resource List or Resource Dump, 'incremental' when
   * every set was brought up to date from changes, 'none' when nothing was done.
   */
  mode: 'baseline' | 'incremental' | 'none';
  source: string;
  dest: string;
  dryRun: boolean;
  /** Capability sets processed, with what was done for each. */
  sets: { key: string; mode: 'baseline' | 'incremental'; documents: string[] }[];
  /**
   * A dry run: the plan in figures, the count of each action and reason and the first 1,000 items that change
   * something, in the order decided. Its size does not grow with the number of resources: every item goes to
   * `onPlan`.
   */
  plan?: PlanSummary;
  durationMs: number;
}
