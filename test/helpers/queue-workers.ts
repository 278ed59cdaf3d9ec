// Sync workers run in the test's own process over a queue, as `resourcesync worker` runs them.
import { runSyncWorker, type ChunkReport } from '../../src/destination/queue-worker.js';

/** Workers running until `stop`. */
export interface QueueWorkers {
  /** Every chunk the workers reported, in the order reported. */
  chunks: ChunkReport[];
  /** Stops every worker; answers their exit codes. */
  stop: () => Promise<number[]>;
}

/** Starts `n` workers (8 resources at once each, polling every 50 ms) on the queue at `queue` until `stop`. */
export function startQueueWorkers(queue: string, n: number): QueueWorkers {
  const ctl = new AbortController();
  const chunks: ChunkReport[] = [];
  const runs = Array.from({ length: n }, () => runSyncWorker({ queue, concurrency: 8, signal: ctl.signal, pollIntervalMs: 50, onChunk: (c) => chunks.push(c) }));
  return {
    chunks,
    stop: async () => {
      ctl.abort();
      return Promise.all(runs);
    },
  };
}
