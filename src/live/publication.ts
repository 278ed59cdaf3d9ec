/**
 * The publications of a live Source: one `publish` (a rescan, or the documents only) or one recording of
 * settled files at a time as the watcher asks, each timed; the first publication's outcome kept (the
 * Source serves once it succeeded); each name that cannot be published reported once.
 * @see Z39.99 §12 (Change List)
 */
import { publish, type PublishOptions, type PublishResult } from '../source/publish.js';
import type { PublishWarning } from '../source/publish-context.js';
import { recordChanges, type RecordResult } from '../source/record-changes.js';
import type { SourceWatcher } from '../source/watch/watch.js';

/** A changed file is settled (recorded, listed) once it has had no change for this long, ms. */
export const SETTLE_MS = 25;

/** Most distinct warnings reported (a rescan finds the same names again; each is reported once). */
const MAX_WARNED = 10_000;

/** The outcome of the first publication: its result, or what it threw. */
export interface FirstPublication {
  result?: PublishResult;
  error?: unknown;
}

/** Runs the publications of a live Source with the options it was given. */
export class LivePublication {
  readonly options: PublishOptions;
  /** The watcher whose `hold` keeps a file still being written out of a publication. */
  watcher: SourceWatcher | undefined;
  /** The first publication's outcome, once it is known. */
  first: FirstPublication | undefined;
  /** The latest publication's result. */
  latest: PublishResult | undefined;
  /** How long the latest publication or recording took, ms. */
  runMs = 0;
  readonly #warned = new Set<string>();
  readonly #onWarning: (warning: PublishWarning) => void;

  constructor(options: PublishOptions, onWarning: (warning: PublishWarning) => void) {
    this.options = options;
    this.#onWarning = onWarning;
  }

  /** Publishes (rescanning the sets unless `rescan` is false); a file still being written keeps its previous state. */
  async publish({ rescan }: { rescan: boolean } = { rescan: true }): Promise<PublishResult> {
    const t0 = performance.now();
    try {
      const watcher = this.watcher;
      const result = await publish({
        ...this.options,
        scan: rescan,
        ...(watcher === undefined ? {} : { hold: (f: string) => watcher.hold(f), settleMs: SETTLE_MS }),
      });
      this.first ??= { result };
      this.latest = result;
      this.runMs = performance.now() - t0;
      this.#warn(result);
      return result;
    } catch (error) {
      this.first ??= { error };
      throw error;
    }
  }

  /** Records settled files on their own (push: announced at once; the documents follow). */
  async record(files: string[]): Promise<RecordResult> {
    const t0 = performance.now();
    const result = await recordChanges(this.options, files);
    this.runMs = performance.now() - t0;
    return result;
  }

  #warn(result: PublishResult): void {
    for (const warning of result.warnings) {
      const key = `${warning.set}\n${warning.path}`;
      if (this.#warned.has(key) || this.#warned.size >= MAX_WARNED) continue;
      this.#warned.add(key);
      this.#onWarning(warning);
    }
  }
}
