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
  /** Runs now (serialized with other runs) and resolves when no run is pending or in flight. */
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

/**
 * Watches `dirs` and calls `run` once changed files have settled, serialized.
 * @example
 * const watcher = watchSources({ dirs: ['data'], run: () => publish({ ...opts, hold: (f) => watcher.hold(f) }), onError: (e) => log(e) });
 * // …later
 * await watcher.close();
 */
export function watchSources(options: WatchOptions): SourceWatcher {
  const settleMs = options.settleMs ?? 25;
  const batchMs = options.batchMs ?? 2;
  const maxHoldMs = options.maxHoldMs ?? 2000;
  const onError = options.onError ?? (() => undefined);
  let closed = false;
  /** The run in flight (documents or rescan), and which. */
  let running: Promise<void> | undefined;
  let runningKind: WatchAction | undefined;
  /** The recording in flight (with `record`): it may overlap a documents run, never a rescan. */
  let recording: Promise<void> | undefined;
  /** A run asked for: without `record`, by every settled change. */
  let pending = false;
  let idle: Array<() => void> = [];
  const changed = new Map<string, Changed>();
  /** When each file settled lately (pruned as it ages past SETTLED_MEMORY_MS). */
  const settledAt = new Map<string, number>();
  let settledPruned = 0;
  let checkTimer: NodeJS.Timeout | undefined;
  let checkAt = Infinity;

  // the fast path: files settled since they were last recorded or rescanned, and which run is due when
  const record = options.record;
  const documentsAfterMs = options.documentsAfterMs ?? 250;
  const documentsEveryMs = options.documentsEveryMs ?? 1000;
  const rescanEveryMs = options.rescanEveryMs ?? 300_000;
  const due = new Set<string>();
  let rescanNow = true; // the first run rescans
  let lastRescan = -Infinity;
  let documentsNow = false;
  let recordedSince: number | undefined;
  let documentsTimer: NodeJS.Timeout | undefined;
  // after failures: a rescan later, with a backoff that doubles up to a cap
  const retryMinMs = options.retryMinMs ?? 1000;
  const retryMaxMs = Math.max(options.retryMaxMs ?? 60_000, retryMinMs);
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;
  const failed = (error: unknown): void => {
    onError(error);
    failures++;
    if (retryTimer !== undefined || closed) return;
    const wait = Math.min(retryMaxMs, retryMinMs * 2 ** Math.min(failures - 1, 30));
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      if (record === undefined) pending = true;
      else rescanNow = true;
      kick();
    }, wait);
  };
  const succeeded = (): void => {
    failures = 0;
  };
  // a documents run that a run asked for later, although nothing changed
  let followUpTimer: NodeJS.Timeout | undefined;
  const followUp = (result: unknown): void => {
    const ms = record === undefined ? undefined : options.followUp?.(result);
    if (ms === undefined || closed) return;
    if (followUpTimer !== undefined) clearTimeout(followUpTimer);
    followUpTimer = setTimeout(() => {
      followUpTimer = undefined;
      documentsNow = true;
      kick();
    }, ms);
  };

  /** Nothing in flight and nothing due: `flush` callers are told. */
  const settle = (): void => {
    if (running !== undefined || recording !== undefined || pending || (record !== undefined && (rescanNow || due.size > 0))) return;
    const waiting = idle;
    idle = [];
    for (const w of waiting) w();
  };

  /** A documents run after the recordings: once quiet, or at the latest `documentsEveryMs` after the first. */
  const documentsLater = (): void => {
    const now = performance.now();
    recordedSince ??= now;
    if (documentsTimer !== undefined) clearTimeout(documentsTimer);
    const at = Math.min(now + documentsAfterMs, recordedSince + documentsEveryMs);
    documentsTimer = setTimeout(() => {
      documentsTimer = undefined;
      documentsNow = true;
      kick();
    }, Math.max(0, at - now));
  };

  /** Starts what is due and may start: a recording of the settled files, a run. */
  const kick = (): void => {
    if (closed) return;
    if (record !== undefined && recording === undefined && due.size > 0 && !rescanNow && runningKind !== 'rescan') {
      const files = [...due];
      due.clear();
      recording = (async () => {
        try {
          const result = await record(files);
          if (result.complete) documentsLater();
          else rescanNow = true;
          options.onRun?.(result, 'record');
        } catch (error) {
          // the files are read again by the rescan that follows at once, and by the retries if it fails too
          rescanNow = true;
          onError(error);
        }
      })().finally(() => {
        recording = undefined;
        kick();
        settle();
      });
    }
    if (running !== undefined || !(pending || (record !== undefined && (rescanNow || documentsNow)))) return;
    const now = performance.now();
    const rescan = record === undefined || rescanNow || now - lastRescan >= rescanEveryMs;
    if (rescan && recording !== undefined) return; // after the recording in flight
    pending = false;
    rescanNow = false;
    documentsNow = false;
    recordedSince = undefined;
    if (documentsTimer !== undefined) clearTimeout(documentsTimer);
    documentsTimer = undefined;
    if (rescan) {
      due.clear(); // the rescan reads them
      lastRescan = now;
    }
    const kind: WatchAction = rescan ? 'rescan' : 'documents';
    runningKind = kind;
    running = (async () => {
      try {
        const result = await options.run({ rescan });
        succeeded();
        followUp(result);
        options.onRun?.(result, kind);
      } catch (error) {
        failed(error);
      }
    })().finally(() => {
      running = undefined;
      runningKind = undefined;
      kick();
      settle();
    });
  };

  /** Files have settled: recorded (with `record`), or a run. */
  const start = (): void => {
    if (record === undefined) pending = true;
    kick();
  };

  /** Settles what is due, runs when something settled, and waits for the next file due. */
  const check = (): void => {
    checkTimer = undefined;
    checkAt = Infinity;
    if (closed) return;
    const now = performance.now();
    let settled = false;
    let next = Infinity;
    for (const [file, c] of changed) {
      if (now - c.first >= maxHoldMs) {
        changed.delete(file);
        settledAt.set(file, now);
        due.add(file);
        settled = true;
        continue;
      }
      if (now - c.last < settleMs) {
        next = Math.min(next, c.last + settleMs, c.first + maxHoldMs);
        continue;
      }
      if (c.sig !== undefined) {
        // polling: settled when size and mtime are what the scan saw, settleMs ago
        const sig = fileSig(file);
        if (sig !== c.sig && sig !== 'gone' && sig !== 'other') {
          c.sig = sig;
          c.last = now;
          next = Math.min(next, now + settleMs);
          continue;
        }
      }
      changed.delete(file);
      settledAt.set(file, now);
      due.add(file);
      settled = true;
    }
    if (settledAt.size > 0 && now - settledPruned > SETTLED_MEMORY_MS) {
      settledPruned = now;
      for (const [f, t] of settledAt) if (now - t > SETTLED_MEMORY_MS) settledAt.delete(f);
    }
    if (settled) start();
    if (next < Infinity) schedule(next);
  };

  const schedule = (due: number): void => {
    const at = due + batchMs;
    if (checkTimer !== undefined && checkAt <= at) return;
    if (checkTimer !== undefined) clearTimeout(checkTimer);
    checkAt = at;
    checkTimer = setTimeout(check, Math.max(0, at - performance.now()));
  };

  /** A change of `file` (absolute); `sig` is what a scan saw (poll mode). */
  const touched = (file: string, sig?: string): void => {
    if (closed) return;
    options.onEvent?.();
    const now = performance.now();
    const c = changed.get(file);
    if (c === undefined) changed.set(file, { last: now, first: now, sig });
    else {
      c.last = now;
      if (sig !== undefined) c.sig = sig;
    }
    schedule(now + settleMs);
  };

  const detection = detectChanges({ dirs: options.dirs, poll: options.poll === true, pollMs: options.pollMs ?? 1000, onError }, touched);

  const close = async (): Promise<void> => {
    closed = true;
    detection.close();
    if (checkTimer !== undefined) clearTimeout(checkTimer);
    checkTimer = undefined;
    if (documentsTimer !== undefined) clearTimeout(documentsTimer);
    documentsTimer = undefined;
    if (retryTimer !== undefined) clearTimeout(retryTimer);
    retryTimer = undefined;
    if (followUpTimer !== undefined) clearTimeout(followUpTimer);
    followUpTimer = undefined;
    pending = false;
    await Promise.all([running, recording]);
  };
  options.signal?.addEventListener('abort', () => void close(), { once: true });

  return {
    get mode() {
      return detection.mode;
    },
    hold(file) {
      if (changed.has(file)) return true;
      const t = settledAt.get(file);
      return t !== undefined && performance.now() - t <= SETTLED_MEMORY_MS ? false : undefined;
    },
    flush() {
      if (record === undefined) pending = true;
      else rescanNow = true;
      kick();
      return new Promise<void>((resolve) => {
        idle.push(resolve);
        settle();
      });
    },
    close,
  };
}
