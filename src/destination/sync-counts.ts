/**
 * What a sync reports as it goes and at its end: the counts of resources created, updated, deleted and
 * unchanged, the failures, the deletions not applied, and the progress events.
 * @see Z39.99 §5.2
 */
import type { ErrorCode } from '../core/errors.js';
import type { DestinationNote } from './notes.js';
import type { SeenSet } from '../core/fingerprint-set.js';

/** A resource that could not be brought in line with the Source. */
export interface SyncFailure {
  url: string;
  code: ErrorCode;
  message: string;
  /** The HTTP status, when the failure was one. */
  status?: number;
}

/** Progress of a sync, reported through `onProgress`. */
export interface SyncProgress {
  phase: 'discover' | 'baseline' | 'incremental';
  /** Resources dealt with so far in the run (any outcome). */
  done: number;
  /**
   * The run's total when known: what was done before this phase plus what the phase has to do. A streamed Resource
   * List is not counted ahead: its total is known once it has been read through.
   */
  total?: number;
  /**
   * Until `total` is known, an estimate of it when one is cheap (a streamed Resource List: the entries read so far
   * scaled by the share of its `Content-Length` read); never below `done`.
   */
  estimate?: number;
  /** Bytes written so far. */
  bytes: number;
  failed: number;
  /** The document being processed. */
  document?: string;
}

/** Counters and lists of one sync. */
export interface SyncCounts {
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  failed: SyncFailure[];
  /** Deletions announced by the Source but not applied (no `--delete`); at most 1,000 listed. */
  deletionsSkipped: string[];
  deletionsSkippedCount: number;
  bytes: number;
  /** What was skipped, tolerated or could not be done, with codes (see `NOTES`). */
  warnings: DestinationNote[];
}

/** Counters of a sync that has done nothing yet. */
export function emptyCounts(): SyncCounts {
  return { created: 0, updated: 0, deleted: 0, unchanged: 0, failed: [], deletionsSkipped: [], deletionsSkippedCount: 0, bytes: 0, warnings: [] };
}

/**
 * What another process brought in line for a run (a chunk a job queue's worker applied): its counts, the failures
 * (their pending entries recorded there), its notes, and how many resources it dealt with.
 */
export type AppliedElsewhere = Pick<SyncCounts, 'created' | 'updated' | 'deleted' | 'unchanged' | 'bytes' | 'failed' | 'warnings'> & { done: number };

/** What a resource brought in line counts as. */
export type Counted = 'created' | 'updated' | 'unchanged';

/**
 * Counts each resource once in a run: a resource that the baseline fetched and a change since its list names again
 * stays `created` (or moves from `unchanged` to `updated`), and a change applied again in a later round of the same
 * run is not counted twice. Remembers the resources counted after the baseline (a Change List's worth).
 */
export class CountOnce {
  readonly #counts: SyncCounts;
  readonly #touched = new Map<string, Counted>();
  /** The resources of this run's baseline, once it is done; `#fresh`: it created every one it wrote. */
  #baseline: SeenSet | undefined;
  #fresh = false;

  constructor(counts: SyncCounts) {
    this.#counts = counts;
  }

  /** The baseline is done: `seen` holds its resources; `fresh`: the destination held nothing before it. */
  endBaseline(seen: SeenSet, fresh: boolean): void {
    this.#baseline = seen;
    this.#fresh = fresh;
  }

  /** Counts `url` as `kind`; `failedBefore`: it failed earlier in the run (not counted then); `changes`: applying changes. */
  count(url: string, kind: Counted, failedBefore: boolean, changes: boolean): void {
    if (!changes) {
      this.#counts[kind]++;
      return;
    }
    let prior = this.#touched.get(url);
    if (prior === undefined && !failedBefore && this.#baseline?.has(url) === true) prior = this.#fresh ? 'created' : 'unchanged';
    const next: Counted = prior === undefined ? kind : kind === 'unchanged' || prior !== 'unchanged' ? prior : 'updated';
    if (prior !== undefined) this.#counts[prior]--;
    this.#counts[next]++;
    this.#touched.set(url, next);
  }
}
