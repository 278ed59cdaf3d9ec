/**
 * What a sync reports as it goes and at its end: the counts of resources created, updated, deleted and
 * unchanged, the failures, the deletions not applied, and the progress events.
 * @see Z39.99 §5.2
 */
import type { ErrorCode } from '../core/errors.js';
import type { DestinationNote } from './notes.js';

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
