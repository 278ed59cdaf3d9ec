/**
 * What the explorer's status views show, as the layers that own the data give it (the page never reads a status
 * file or a queue itself): the Aggregate view (every Source of an aggregator) and the Queue view (each sync run
 * spread over a job queue). The providers are injected into {@link ExplorerOptions}; neither view holds a secret
 * (credentials appear as the name of their environment variable, connection URLs not at all).
 * @see Z39.99 §14.8 (aggregation), §5.2 (baseline synchronization)
 */

/** One Source of an aggregate, as the Aggregate view shows it. Times are ms since the epoch. */
export interface AggregateSourceRow {
  id: string;
  /** The Source's start URL (without user information). */
  url: string;
  mode: 'poll' | 'push';
  /** `waiting`, `syncing`, `failing` or `stopped`. */
  state: string;
  /** The last attempt failed. */
  failing: boolean;
  /** Failed attempts in a row. */
  failures: number;
  lastSync?: number;
  /** How far the aggregate may be behind the Source: now minus the start of the last successful sync, ms. */
  lagMs?: number;
  /** Resources the Source's mirror holds. */
  resources?: number;
  /** Since the Source was added: syncs, failed attempts, resources created, updated, deleted. */
  totals: { syncs: number; errors: number; created: number; updated: number; deleted: number };
  lastError?: { code: string; message: string; at: number };
  nextAttempt?: number;
  /** Name of the environment variable the Source's credentials come from (never its value). */
  credentialsEnv?: string;
}

/** The Aggregate view: every Source, failing ones first. */
export interface AggregateStatusView {
  /** When the status was read. */
  at: number;
  sources: AggregateSourceRow[];
}

/** One sync run on the job queue, as the Queue view shows it. */
export interface QueueRunRow {
  /** The run's id (the same for a coordinator run again after a kill). */
  run: string;
  /** The destination's key in the shared state. */
  destination: string;
  /** Chunk jobs by state: waiting (created or retry), active, done (completed), failed (failed or cancelled). */
  chunks: { waiting: number; active: number; done: number; failed: number; total: number };
  /** Resources of the done chunks: applied, and failed (left pending for the next run). */
  resources: { done: number; failed: number };
  /** When the run's first chunk was sent and when a chunk last changed state, ms since the epoch. */
  createdAt: number;
  updatedAt: number;
}

/** The Queue view: the runs of the queue, most recent first. */
export interface QueueStatusView {
  at: number;
  /** The queue's database, without credentials (no password, no query). */
  queue: string;
  runs: QueueRunRow[];
}
