/**
 * Watching the file of a feed (`serve --jsonl FILE`): its folder is watched (a file replaced by a rename is seen
 * too), and a change of the file's size, modification time or inode, once it has been quiet for `settleMs`, calls
 * `onChange`; the file is also looked at every `pollMs`, for file systems whose events go missing. Nothing is
 * called for a change that leaves the file as it was.
 */
import { statSync, watch, type FSWatcher, type Stats } from 'node:fs';
import { basename, dirname } from 'node:path';

/** A running watch of a feed's file. */
export interface FeedFileWatch {
  close(): void;
}

function signature(st: Stats | undefined): string {
  return st === undefined ? 'gone' : `${st.ino}:${st.size}:${st.mtimeMs}`;
}

/**
 * Calls `onChange` after each settled change of `file`.
 * @example const w = watchFeedFile('/srv/items.jsonl', () => void source.publishNow()); … w.close();
 */
export function watchFeedFile(file: string, onChange: () => void, options: { settleMs?: number; pollMs?: number; signal?: AbortSignal } = {}): FeedFileWatch {
  const settleMs = options.settleMs ?? 100;
  const name = basename(file);
  const look = (): string => signature(statSync(file, { throwIfNoEntry: false }));
  let seen = look();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;
  const check = (): void => {
    timer = undefined;
    if (closed) return;
    const now = look();
    if (now === seen) return;
    seen = now;
    onChange();
  };
  const soon = (): void => {
    if (closed) return;
    if (timer !== undefined) clearTimeout(timer);
    timer = setTimeout(check, settleMs);
  };
  let watcher: FSWatcher | undefined;
  try {
    watcher = watch(dirname(file), (_event, changed) => {
      if (changed === null || changed.toString() === name) soon();
    });
    watcher.on('error', () => undefined); // the poll goes on
  } catch {
    watcher = undefined;
  }
  const poll = setInterval(() => {
    if (timer === undefined && look() !== seen) soon();
  }, options.pollMs ?? 2000);
  poll.unref();
  const close = (): void => {
    if (closed) return;
    closed = true;
    watcher?.close();
    clearInterval(poll);
    if (timer !== undefined) clearTimeout(timer);
  };
  options.signal?.addEventListener('abort', close, { once: true });
  return { close };
}
