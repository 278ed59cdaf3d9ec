/**
 * Live change tracking for a served Source: watches the set directories, settles each changed file on its
 * own (it is settled once it has had no change for `settleMs`), and acts as soon as a change has settled,
 * serialized (never two actions at once; changes during one coalesce into the next). Without `record`,
 * each action is a run that rescans the sets. With `record` (push), settled files are recorded on their
 * own at once, and runs follow less often: a documents run (no rescan) once no file has settled for
 * `documentsAfterMs` (at least every `documentsEveryMs` while files keep settling), and a rescan at the
 * start, when a recording could not judge its files, and every `rescanEveryMs`. Changes elsewhere never
 * hold a settled file back, and a file still being written is held out of a run
 * ({@link SourceWatcher.hold}, passed to `publish`), so that no half-written file is
 * listed. Hidden names (the tool's own `.resourcesync` state and output among them) never trigger a run.
 * An action that fails is followed by a rescan after a backoff (1 s, doubling, at most 60 s), until one succeeds.
 * @see Z39.99 §12 (Change List)
 */
import { detectChanges, fileSig } from './change-detection.js';

/** Options of `watchSources`. */
export interface WatchOptions {
  /** Directories to watch (recursively). */
  dirs: readonly string[];
  /**
   * The run after changes, typically `({ rescan }) => publish({ ...options, scan: rescan })`. Without
   * `record`, `rescan` is always true. Its rejections go to `onError`.
   */
  run: (o: { rescan: boolean }) => Promise<unknown>;
  /**
   * The fast path, typically `(files) => recordChanges(options, files)`: the files settled since the
   * previous action (absolute paths) are recorded on their own, before any run. A result with
   * `complete: false`, or a rejection (which goes to `onError`), asks for a rescan at once.
   */
  record?: (files: string[]) => Promise<{ complete: boolean }>;
  /** With `record`: a documents run follows once no file has settled for this long, ms. Default 250. */
  documentsAfterMs?: number;
  /** With `record`: and at least this often while files keep settling, ms. Default 1,000. */
  documentsEveryMs?: number;
  /**
   * With `record`: a run rescans the sets at least this often (it reconciles anything the watch missed),
   * ms. Default 300,000.
   */
  rescanEveryMs?: number;
  /**
   * A changed file is settled once it has had no change for this long (with `fs.watch`, every write is an
   * event; when polling, its size and modification time are compared across this span). Default 25 ms.
   */
  settleMs?: number;
  /** Files that settle within this span of the first one go into the same action. Default 2 ms. */
  batchMs?: number;
  /**
   * A file that keeps changing for this long is taken as it is (published, then again once it settles), so
   * that a file written without pause is not held back for ever. Default 2,000 ms.
   */
  maxHoldMs?: number;
  /** Interval of the rescan used when recursive `fs.watch` is unavailable (or `poll` is set). Default 1000 ms. */
  pollMs?: number;
  /** Use periodic rescans instead of `fs.watch`. Default false. */
  poll?: boolean;
  /** Aborting it closes the watcher. */
  signal?: AbortSignal;
  /**
   * After a run or recording that failed (disk full, store locked, any I/O error), a rescan is tried again
   * after this long, doubling on each failure in a row up to `retryMaxMs`, until one succeeds; it publishes
   * what changed meanwhile. Default 1,000 ms.
   */
  retryMinMs?: number;
  /** The longest wait between two tries after failures. Default 60,000 ms. */
  retryMaxMs?: number;
  /**
   * With `record`: after a run, in how many ms another documents run is due although nothing changed (e.g.
   * `PublishResult.resourceListDueInMs`, a Resource List put off), or undefined. Default: never.
   */
  followUp?: (result: unknown) => number | undefined;
  /** Errors of `run` and of the watchers; the watcher keeps going. */
  onError?: (error: unknown) => void;
  /** Called at once (not settled) for every change event of a visible name, e.g. to drop server caches. */
  onEvent?: () => void;
  /** Called after each completed action with its result and what it was (a recording or a run). */
  onRun?: (result: unknown, action: WatchAction) => void;
}

/** How long the watcher remembers that a file settled (see {@link SourceWatcher.hold}), ms. */
const SETTLED_MEMORY_MS = 10_000;

/** What the watcher did: recorded settled files, wrote the documents, or rescanned the sets (and wrote them). */
export type WatchAction = 'record' | 'documents' | 'rescan';

/** A running watcher. */
export interface SourceWatcher {
  /** How changes are detected. */
  readonly mode: 'watch' | 'poll';
  /**
   * What the watcher knows of the file at this absolute path (under one of the watched directories, as given),
   * as `publish`'s `hold` takes it: true while it has changed and not settled yet (a run keeps its previous
   * state), false when it settled (or was taken as it is after `maxHoldMs`) within the last 10 s, undefined
   * when nothing was heard of it lately.
   */
  hold(file: string): boolean | undefined;
  /** Runs now (serialized with other runs) and resolves when no run is pending or in flight (or the watcher is closed). */
  flush(): Promise<void>;
  /** Stops watching; resolves once an in-flight run has finished. */
  close(): Promise<void>;
}

interface Changed {
  /** When it was seen changing last (ms, `performance.now()`). */
  last: number;
  /** When it was first seen changing since it last settled. */
  first: number;
  /** Size and mtime when seen last (poll mode), to compare with. */
  sig: string | undefined;
}

/** The watcher's timings, with their defaults filled in. */
interface WatchTimings {
  settleMs: number;
  batchMs: number;
  maxHoldMs: number;
  documentsAfterMs: number;
  documentsEveryMs: number;
  rescanEveryMs: number;
  retryMinMs: number;
  retryMaxMs: number;
}

function timingsOf(options: WatchOptions): WatchTimings {
  const retryMinMs = options.retryMinMs ?? 1000;
  return {
    settleMs: options.settleMs ?? 25,
    batchMs: options.batchMs ?? 2,
    maxHoldMs: options.maxHoldMs ?? 2000,
    documentsAfterMs: options.documentsAfterMs ?? 250,
    documentsEveryMs: options.documentsEveryMs ?? 1000,
    rescanEveryMs: options.rescanEveryMs ?? 300_000,
    retryMinMs,
    retryMaxMs: Math.max(options.retryMaxMs ?? 60_000, retryMinMs),
  };
}

class Watcher implements SourceWatcher {
  readonly #options: WatchOptions;
  readonly #timings: WatchTimings;
  readonly #onError: (error: unknown) => void;
  /** The fast path (push): files settled since they were last recorded or rescanned are recorded on their own. */
  readonly #record: WatchOptions['record'];
  readonly #detection: ReturnType<typeof detectChanges>;
  #closed = false;
  /** The run in flight (documents or rescan), and which. */
  #running: Promise<void> | undefined;
  #runningKind: WatchAction | undefined;
  /** The recording in flight (with `record`): it may overlap a documents run, never a rescan. */
  #recording: Promise<void> | undefined;
  /** A run asked for: without `record`, by every settled change. */
  #pending = false;
  /** `flush` callers waiting for nothing to be in flight or due. */
  #idle: Array<() => void> = [];
  /** Files changed and not settled yet. */
  readonly #changed = new Map<string, Changed>();
  /** When each file settled lately (pruned as it ages past SETTLED_MEMORY_MS). */
  readonly #settledAt = new Map<string, number>();
  #settledPruned = 0;
  #checkTimer: NodeJS.Timeout | undefined;
  #checkAt = Infinity;
  /** With `record`: files settled and not recorded yet. */
  readonly #due = new Set<string>();
  /** A rescan is due (the first run rescans). */
  #rescanNow = true;
  #lastRescan = -Infinity;
  /** A documents run is due. */
  #documentsNow = false;
  /** When the first recording since the last run was done. */
  #recordedSince: number | undefined;
  #documentsTimer: NodeJS.Timeout | undefined;
  /** Failed runs or recordings in a row: the rescan after them waits longer each time, up to a cap. */
  #failures = 0;
  #retryTimer: NodeJS.Timeout | undefined;
  /** A documents run that a run asked for later, although nothing changed. */
  #followUpTimer: NodeJS.Timeout | undefined;

  constructor(options: WatchOptions) {
    this.#options = options;
    this.#timings = timingsOf(options);
    this.#onError = options.onError ?? (() => undefined);
    this.#record = options.record;
    this.#detection = detectChanges(
      { dirs: options.dirs, poll: options.poll === true, pollMs: options.pollMs ?? 1000, onError: this.#onError },
      (file, sig) => this.#touched(file, sig),
    );
    options.signal?.addEventListener('abort', () => void this.close(), { once: true });
  }

  get mode(): 'watch' | 'poll' {
    return this.#detection.mode;
  }

  hold(file: string): boolean | undefined {
    if (this.#changed.has(file)) return true;
    const t = this.#settledAt.get(file);
    return t !== undefined && performance.now() - t <= SETTLED_MEMORY_MS ? false : undefined;
  }

  flush(): Promise<void> {
    if (this.#record === undefined) this.#pending = true;
    else this.#rescanNow = true;
    this.#kick();
    return new Promise<void>((resolve) => {
      this.#idle.push(resolve);
      this.#settle();
    });
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#detection.close();
    for (const timer of [this.#checkTimer, this.#documentsTimer, this.#retryTimer, this.#followUpTimer]) {
      if (timer !== undefined) clearTimeout(timer);
    }
    this.#checkTimer = undefined;
    this.#documentsTimer = undefined;
    this.#retryTimer = undefined;
    this.#followUpTimer = undefined;
    this.#pending = false;
    await Promise.all([this.#running, this.#recording]);
    // nothing more runs: a `flush` caller still waiting is told
    this.#release();
  }

  /** Tells the `flush` callers waiting. */
  #release(): void {
    const waiting = this.#idle;
    this.#idle = [];
    for (const w of waiting) w();
  }

  /** After a failed run or recording: a rescan later, with a backoff that doubles up to a cap. */
  #failed(error: unknown): void {
    this.#onError(error);
    this.#failures++;
    if (this.#retryTimer !== undefined || this.#closed) return;
    const { retryMinMs, retryMaxMs } = this.#timings;
    const wait = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(this.#failures - 1, 30));
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (this.#record === undefined) this.#pending = true;
      else this.#rescanNow = true;
      this.#kick();
    }, wait);
  }

  /** A documents run that `result` asks for later, although nothing changed. */
  #followUp(result: unknown): void {
    const ms = this.#record === undefined ? undefined : this.#options.followUp?.(result);
    if (ms === undefined || this.#closed) return;
    if (this.#followUpTimer !== undefined) clearTimeout(this.#followUpTimer);
    this.#followUpTimer = setTimeout(() => {
      this.#followUpTimer = undefined;
      this.#documentsNow = true;
      this.#kick();
    }, ms);
  }

  /** Nothing in flight and nothing due: `flush` callers are told. */
  #settle(): void {
    if (this.#running !== undefined || this.#recording !== undefined || this.#pending) return;
    if (!this.#closed && this.#record !== undefined && (this.#rescanNow || this.#due.size > 0)) return;
    this.#release();
  }

  /** A documents run after the recordings: once quiet, or at the latest `documentsEveryMs` after the first. */
  #documentsLater(): void {
    const now = performance.now();
    this.#recordedSince ??= now;
    if (this.#documentsTimer !== undefined) clearTimeout(this.#documentsTimer);
    const at = Math.min(now + this.#timings.documentsAfterMs, this.#recordedSince + this.#timings.documentsEveryMs);
    this.#documentsTimer = setTimeout(() => {
      this.#documentsTimer = undefined;
      this.#documentsNow = true;
      this.#kick();
    }, Math.max(0, at - now));
  }

  /** Starts what is due and may start: a recording of the settled files, a run. */
  #kick(): void {
    if (this.#closed) return;
    this.#startRecording();
    this.#startRun();
  }

  /** With `record`: records the settled files, unless a recording is in flight or a rescan is due or running. */
  #startRecording(): void {
    const record = this.#record;
    if (record === undefined || this.#recording !== undefined || this.#due.size === 0) return;
    if (this.#rescanNow || this.#runningKind === 'rescan') return;
    const files = [...this.#due];
    this.#due.clear();
    this.#recording = (async () => {
      try {
        const result = await record(files);
        if (result.complete) this.#documentsLater();
        else this.#rescanNow = true;
        this.#options.onRun?.(result, 'record');
      } catch (error) {
        // the files are read again by the rescan that follows at once, and by the retries if it fails too
        this.#rescanNow = true;
        this.#onError(error);
      }
    })().finally(() => {
      this.#recording = undefined;
      this.#kick();
      this.#settle();
    });
  }

  /** Starts the run that is due (a rescan, or the documents only), unless one is in flight. */
  #startRun(): void {
    const record = this.#record;
    if (this.#running !== undefined || !(this.#pending || (record !== undefined && (this.#rescanNow || this.#documentsNow)))) return;
    const now = performance.now();
    const rescan = record === undefined || this.#rescanNow || now - this.#lastRescan >= this.#timings.rescanEveryMs;
    if (rescan && this.#recording !== undefined) return; // after the recording in flight
    this.#pending = false;
    this.#rescanNow = false;
    this.#documentsNow = false;
    this.#recordedSince = undefined;
    if (this.#documentsTimer !== undefined) clearTimeout(this.#documentsTimer);
    this.#documentsTimer = undefined;
    if (rescan) {
      this.#due.clear(); // the rescan reads them
      this.#lastRescan = now;
    }
    const kind: WatchAction = rescan ? 'rescan' : 'documents';
    this.#runningKind = kind;
    this.#running = (async () => {
      try {
        const result = await this.#options.run({ rescan });
        this.#failures = 0;
        this.#followUp(result);
        this.#options.onRun?.(result, kind);
      } catch (error) {
        this.#failed(error);
      }
    })().finally(() => {
      this.#running = undefined;
      this.#runningKind = undefined;
      this.#kick();
      this.#settle();
    });
  }

  /** Settles what is due, acts when something settled, and waits for the next file due. */
  readonly #check = (): void => {
    this.#checkTimer = undefined;
    this.#checkAt = Infinity;
    if (this.#closed) return;
    const now = performance.now();
    let settled = false;
    let next = Infinity;
    for (const [file, changed] of this.#changed) {
      const settleAt = this.#settleAt(file, changed, now);
      if (settleAt === undefined) {
        this.#changed.delete(file);
        this.#settledAt.set(file, now);
        this.#due.add(file);
        settled = true;
      } else {
        next = Math.min(next, settleAt);
      }
    }
    if (this.#settledAt.size > 0 && now - this.#settledPruned > SETTLED_MEMORY_MS) {
      this.#settledPruned = now;
      for (const [f, t] of this.#settledAt) if (now - t > SETTLED_MEMORY_MS) this.#settledAt.delete(f);
    }
    if (settled) {
      // files have settled: recorded (with `record`), or a run
      if (this.#record === undefined) this.#pending = true;
      this.#kick();
    }
    if (next < Infinity) this.#schedule(next);
  };

  /** Undefined when `file` has settled (or is taken as it is after `maxHoldMs`), else when to look again. */
  #settleAt(file: string, changed: Changed, now: number): number | undefined {
    const { settleMs, maxHoldMs } = this.#timings;
    if (now - changed.first >= maxHoldMs) return undefined;
    if (now - changed.last < settleMs) return Math.min(changed.last + settleMs, changed.first + maxHoldMs);
    if (changed.sig !== undefined) {
      // polling: settled when size and mtime are what the scan saw, settleMs ago
      const sig = fileSig(file);
      if (sig !== changed.sig && sig !== 'gone' && sig !== 'other') {
        changed.sig = sig;
        changed.last = now;
        return now + settleMs;
      }
    }
    return undefined;
  }

  #schedule(due: number): void {
    const at = due + this.#timings.batchMs;
    if (this.#checkTimer !== undefined && this.#checkAt <= at) return;
    if (this.#checkTimer !== undefined) clearTimeout(this.#checkTimer);
    this.#checkAt = at;
    this.#checkTimer = setTimeout(this.#check, Math.max(0, at - performance.now()));
  }

  /** A change of `file` (absolute); `sig` is what a scan saw (poll mode). */
  #touched(file: string, sig?: string): void {
    if (this.#closed) return;
    this.#options.onEvent?.();
    const now = performance.now();
    const changed = this.#changed.get(file);
    if (changed === undefined) this.#changed.set(file, { last: now, first: now, sig });
    else {
      changed.last = now;
      if (sig !== undefined) changed.sig = sig;
    }
    this.#schedule(now + this.#timings.settleMs);
  }
}

/**
 * Watches `dirs` and calls `run` once changed files have settled, serialized.
 * @example
 * const watcher = watchSources({ dirs: ['data'], run: () => publish({ ...opts, hold: (f) => watcher.hold(f) }), onError: (e) => log(e) });
 * // …later
 * await watcher.close();
 */
export function watchSources(options: WatchOptions): SourceWatcher {
  return new Watcher(options);
}
