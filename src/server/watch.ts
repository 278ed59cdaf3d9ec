/**
 * Live change tracking for a served Source: watches the set directories and re-publishes, debounced and
 * serialized (never two runs at once; changes during a run coalesce into one more run), so that a change
 * shows up in the open Change List within about a second. Hidden names (the tool's own `.resourcesync`
 * state and output among them) never trigger a run.
 * @see Z39.99 §12 (Change List)
 */
import { watch, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** Options of `watchSources`. */
export interface WatchOptions {
  /** Directories to watch (recursively). */
  dirs: readonly string[];
  /** The action to run after changes, typically `() => publish(...)`. Its rejections go to `onError`. */
  run: () => Promise<unknown>;
  /** Quiet period after the last event before running. Default 200 ms. */
  debounceMs?: number;
  /**
   * Longest wait after the first event of a batch, however often events keep coming (a steady stream of
   * changes would otherwise never be published). Default: none.
   */
  maxWaitMs?: number;
  /** Interval of the rescan used when recursive `fs.watch` is unavailable (or `poll` is set). Default 1000 ms. */
  pollMs?: number;
  /** Use periodic rescans instead of `fs.watch`. Default false. */
  poll?: boolean;
  /** Aborting it closes the watcher. */
  signal?: AbortSignal;
  /** Errors of `run` and of the watchers; the watcher keeps going. */
  onError?: (error: unknown) => void;
  /** Called at once (not debounced) for every change event of a visible name, e.g. to drop server caches. */
  onEvent?: () => void;
  /** Called after each completed run with its result. */
  onRun?: (result: unknown) => void;
}

/** A running watcher. */
export interface SourceWatcher {
  /** How changes are detected. */
  readonly mode: 'watch' | 'poll';
  /** Runs now (serialized with other runs) and resolves when no run is pending or in flight. */
  flush(): Promise<void>;
  /** Stops watching; resolves once an in-flight run has finished. */
  close(): Promise<void>;
}

function hiddenPath(name: string): boolean {
  return name.startsWith('.') || name.includes('/.') || name.includes('\\.');
}

/** A cheap signature of a tree: names, sizes and modification times of visible files, bounded in work. */
async function signature(dir: string, budget = 200_000): Promise<string> {
  const parts: string[] = [];
  const stack = [dir];
  let seen = 0;
  while (stack.length > 0 && seen < budget) {
    const d = stack.pop()!;
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      seen++;
      const p = join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else {
        try {
          const st = await stat(p);
          parts.push(`${p}\0${st.size}\0${st.mtimeMs}`);
        } catch {
          // vanished meanwhile: the next scan sees it
        }
      }
    }
  }
  return parts.sort().join('\n');
}

/**
 * Watches `dirs` and calls `run` after changes, debounced and serialized.
 * @example
 * const watcher = watchSources({ dirs: ['data'], run: () => publish(opts), onError: (e) => log(e) });
 * // …later
 * await watcher.close();
 */
export function watchSources(options: WatchOptions): SourceWatcher {
  const debounce = options.debounceMs ?? 200;
  const onError = options.onError ?? (() => undefined);
  let closed = false;
  let timer: NodeJS.Timeout | undefined;
  let batchStart: number | undefined;
  let running: Promise<void> | undefined;
  let pending = false;
  let idle: Array<() => void> = [];

  const settle = (): void => {
    if (running === undefined && !pending && timer === undefined) {
      const waiting = idle;
      idle = [];
      for (const w of waiting) w();
    }
  };

  const start = (): void => {
    if (running !== undefined) {
      pending = true;
      return;
    }
    pending = false;
    running = (async () => {
      try {
        const result = await options.run();
        options.onRun?.(result);
      } catch (error) {
        onError(error);
      }
    })().finally(() => {
      running = undefined;
      if (pending && !closed) start();
      else {
        pending = false;
        settle();
      }
    });
  };

  const trigger = (): void => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    const now = Date.now();
    batchStart ??= now;
    const wait = options.maxWaitMs === undefined ? debounce : Math.max(0, Math.min(debounce, batchStart + options.maxWaitMs - now));
    timer = setTimeout(() => {
      timer = undefined;
      batchStart = undefined;
      start();
    }, wait);
  };

  const watchers: FSWatcher[] = [];
  let pollTimer: NodeJS.Timeout | undefined;
  let mode: 'watch' | 'poll' = options.poll === true ? 'poll' : 'watch';
  if (mode === 'watch') {
    try {
      for (const dir of options.dirs) {
        const w = watch(dir, { recursive: true }, (_event, name) => {
          if (typeof name === 'string' && hiddenPath(name)) return;
          options.onEvent?.();
          trigger();
        });
        w.on('error', (error) => onError(error));
        watchers.push(w);
      }
    } catch (error) {
      for (const w of watchers) w.close();
      watchers.length = 0;
      if ((error as NodeJS.ErrnoException).code !== 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM') onError(error);
      mode = 'poll';
    }
  }
  if (mode === 'poll') {
    const every = options.pollMs ?? 1000;
    let last: string | undefined;
    let scanning = false;
    const scan = async (): Promise<void> => {
      const sig = (await Promise.all(options.dirs.map((d) => signature(d)))).join('\n\n');
      if (last !== undefined && sig !== last) {
        options.onEvent?.();
        trigger();
      }
      last = sig;
    };
    const tick = (): void => {
      if (scanning || closed) return;
      scanning = true;
      scan()
        .catch(onError)
        .finally(() => {
          scanning = false;
        });
    };
    tick();
    pollTimer = setInterval(tick, every);
  }

  const close = async (): Promise<void> => {
    closed = true;
    for (const w of watchers) w.close();
    if (pollTimer !== undefined) clearInterval(pollTimer);
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    pending = false;
    await running;
  };
  options.signal?.addEventListener('abort', () => void close(), { once: true });

  return {
    get mode() {
      return mode;
    },
    flush() {
      if (timer !== undefined) {
        clearTimeout(timer);
        timer = undefined;
      }
      if (!closed) start();
      return new Promise<void>((resolve) => {
        idle.push(resolve);
        settle();
      });
    },
    close,
  };
}
