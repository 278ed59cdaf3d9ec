/**
 * How a served Source hears of changes in its folders: on Linux one plain `fs.watch` (inotify) per visible
 * folder, added as folders appear; elsewhere Node's recursive `fs.watch`; where neither is available (or when
 * asked), a rescan of sizes and modification times every `pollMs`. Each change of a visible file is reported
 * as its absolute path; hidden names (a leading `.`) never are. The scheduling of what follows a change is in
 * `watch.ts`.
 */
import { readdirSync, statSync, watch, type Dirent, type FSWatcher } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, sep } from 'node:path';

/** A running detection. */
export interface ChangeDetection {
  readonly mode: 'watch' | 'poll';
  close(): void;
}

function hiddenPath(name: string): boolean {
  return name.startsWith('.') || name.includes('/.') || name.includes('\\.');
}

/** A cheap signature of a tree: path → size and modification time of each visible file, bounded in work. */
async function signature(dir: string, budget = 200_000): Promise<Map<string, string>> {
  const parts = new Map<string, string>();
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
          parts.set(p, `${st.size}:${st.mtimeMs}`);
        } catch {
          // vanished meanwhile: the next scan sees it
        }
      }
    }
  }
  return parts;
}

/**
 * Linux: one plain watcher (inotify) per visible folder, added as folders appear, instead of Node's
 * recursive mode, which reads the whole folder again on every event there (its cost grows with the
 * number of files, and a Source changing 50 times a second in a folder of thousands paid it each time).
 * The files already in a folder that appears are reported as changed.
 */
function treeWatch(root: string, touched: (file: string) => void, onError: (e: unknown) => void, all: FSWatcher[]): void {
  const byDir = new Map<string, FSWatcher>();
  const forget = (dir: string): void => {
    for (const [d, w] of byDir) {
      if (d === dir || d.startsWith(`${dir}${sep}`)) {
        w.close();
        byDir.delete(d);
        const i = all.indexOf(w);
        if (i >= 0) all.splice(i, 1);
      }
    }
  };
  const add = (dir: string, report: boolean): void => {
    if (byDir.has(dir)) return;
    let w: FSWatcher;
    try {
      w = watch(dir, (event, name) => {
        if (typeof name !== 'string') {
          touched(dir);
          return;
        }
        if (name.startsWith('.')) return;
        const file = join(dir, name);
        touched(file);
        if (event === 'rename') {
          const st = statSync(file, { throwIfNoEntry: false });
          if (st?.isDirectory() === true) add(file, true);
          else if (st === undefined) forget(file);
        }
      });
    } catch (error) {
      if (dir === root) throw error;
      return; // gone meanwhile, or unreadable: its parent's next event says more
    }
    w.on('error', (error) => {
      forget(dir);
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'EPERM') onError(error);
    });
    byDir.set(dir, w);
    all.push(w);
    let entries: Dirent[] = [];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      // gone meanwhile
    }
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const p = join(dir, e.name);
      if (e.isDirectory()) add(p, report);
      else if (report) touched(p);
    }
  };
  add(root, false);
}

/** Size and modification time of a file (`gone`, `other` for what is not a file), as a poll compares them. */
export function fileSig(file: string): string {
  try {
    const st = statSync(file, { throwIfNoEntry: false });
    if (st === undefined) return 'gone';
    return st.isFile() ? `${st.size}:${st.mtimeMs}` : 'other';
  } catch {
    return 'gone';
  }
}

/**
 * Starts detecting changes under `dirs`: `touched(file, sig)` for each change (`sig`, the size and
 * modification time a poll saw, or `gone`, only when polling).
 */
export function detectChanges(
  options: { dirs: readonly string[]; poll: boolean; pollMs: number; onError: (e: unknown) => void },
  touched: (file: string, sig?: string) => void,
): ChangeDetection {
  const { onError } = options;
  let stopped = false;
  const watchers: FSWatcher[] = [];
  let pollTimer: NodeJS.Timeout | undefined;
  let mode: 'watch' | 'poll' = options.poll ? 'poll' : 'watch';
  if (mode === 'watch') {
    try {
      for (const dir of options.dirs) {
        if (process.platform === 'linux') treeWatch(dir, touched, onError, watchers);
        else {
          const w = watch(dir, { recursive: true }, (_event, name) => {
            if (typeof name === 'string' && hiddenPath(name)) return;
            touched(typeof name === 'string' ? join(dir, name) : dir);
          });
          w.on('error', (error) => onError(error));
          watchers.push(w);
        }
      }
    } catch (error) {
      for (const w of watchers) w.close();
      watchers.length = 0;
      if ((error as NodeJS.ErrnoException).code !== 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM') onError(error);
      mode = 'poll';
    }
  }
  if (mode === 'poll') {
    const every = options.pollMs;
    let last: Map<string, string> | undefined;
    let scanning = false;
    const scan = async (): Promise<void> => {
      const now = new Map<string, string>();
      for (const d of options.dirs) for (const [file, sig] of await signature(d)) now.set(file, sig);
      if (last !== undefined) {
        for (const [file, sig] of now) if (last.get(file) !== sig) touched(file, sig);
        for (const file of last.keys()) if (!now.has(file)) touched(file, 'gone');
      }
      last = now;
    };
    const tick = (): void => {
      if (scanning || stopped) return;
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

  return {
    mode,
    close() {
      stopped = true;
      for (const w of watchers) w.close();
      if (pollTimer !== undefined) clearInterval(pollTimer);
    },
  };
}
