/**
 * How a finished temporary file becomes a durable file under its final name: one small interface,
 * {@link Durability}, and its plain implementations. A local folder's staged write (`LocalDirectory`,
 * src/destination/local-directory.ts) holds a verified body in a temporary file, then hands it to the folder's
 * `Durability` with `commit(tmp, finalPath)`; the run settles the storage (`settle()`) once at the end, before it
 * reports the work done.
 *
 * - {@link RenameOnly}: the file is renamed into place, nothing is flushed (`--no-fsync`).
 * - {@link FsyncEach}: an fsync of the file before its rename (`--fsync-method file`).
 * - `GroupCommit` (src/node/group-commit.ts, the default): the files of about 50 ms are fsynced together, in
 *   parallel, then renamed.
 * - Each takes an optional `thread` (a `SmallFileThread`, src/node/small-file-thread.ts, opt-in): the file
 *   calls of small bodies, and a group commit's renames, are then made on that worker thread.
 *
 * With every implementation a file is never visible under its final name before its bytes are written in full;
 * with the durable ones, not before they are on stable storage either. `settle` fsyncs the folders that
 * received files, so that the renames themselves survive a power cut.
 */

import { mkdirSync, renameSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Makes verified temporary files durable under their final names. One object serves one run (a sync, a dump):
 * it is created by the caller and passed down.
 * @example
 * const durability: Durability = new FsyncEach();
 * await durability.commit('/m/.resourcesync/tmp/1.tmp', '/m/a/b.txt'); // durable and in place
 * await durability.settle(); // the renames are durable too
 */
export interface Durability {
  /**
   * Makes the finished file `tmp` durable (as the implementation promises) and renames it to `finalPath`
   * (missing parent folders are created). Resolves once it is in place; rejects with the file system's error,
   * and the temporary file is then the caller's to remove.
   */
  commit(tmp: string, finalPath: string): Promise<void>;
  /** Waits for every commit under way, then makes the renames made so far durable. */
  settle(): Promise<void>;
  /**
   * Optional: writes a small verified body and commits it elsewhere than on the caller's thread (see
   * `SmallFileThread`): the confinement check of its folder, the temporary file, and the commit. Without it,
   * `writeVerified` makes these calls itself (`writeSmallFileSync`), then calls `commit`.
   */
  writeSmall?(file: SmallFile): Promise<void>;
}

/**
 * Where the calls of small files can be made off the caller's thread: `SmallFileThread` is one. `write`
 * checks the confinement of the file's folder and writes its temporary file (and renames it into place with
 * `rename`); `rename` renames finished temporary files into place, each one's error in order.
 */
export interface SmallFileCalls {
  write(file: SmallFile, rename: boolean): Promise<void>;
  rename(files: readonly { tmp: string; finalPath: string }[]): Promise<(Error | undefined)[]>;
}

/** Options of the durabilities that can use a {@link SmallFileCalls}. */
export interface DurabilityOptions {
  /** Makes the calls of small files there (a `SmallFileThread`); without it, on the caller's thread. */
  thread?: SmallFileCalls;
}

/**
 * A durability's `writeSmall` with a thread that only writes: the temporary file is written there, then
 * committed by the durability as any other.
 */
export function writtenThere(thread: SmallFileCalls, durability: Durability): (file: SmallFile) => Promise<void> {
  return async (file) => {
    await thread.write(file, false);
    await durability.commit(file.tmp, file.finalPath);
  };
}

/** A small verified body on its way to its final name (see {@link Durability.writeSmall}). */
export interface SmallFile {
  /** The temporary file to create (it must not exist), in the destination's temporary folder. */
  tmp: string;
  data: Uint8Array;
  /** Set as its access and modification time, ms since the epoch. */
  mtimeMs?: number | undefined;
  finalPath: string;
  /**
   * The destination's real path and its name as given: the folder of `finalPath` must resolve inside it
   * (`confineDir`); missing folders are created.
   */
  realRoot: string;
  root: string;
}

/**
 * fsyncs each path, `atOnce` at a time, and returns each one's error (undefined where it succeeded), in the
 * order of `paths`.
 */
export async function fsyncEachOf(paths: readonly string[], atOnce = 8): Promise<(Error | undefined)[]> {
  const errors = new Array<Error | undefined>(paths.length).fill(undefined);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < paths.length) {
      const i = next++;
      try {
        await syncOne(paths[i]!);
      } catch (err) {
        errors[i] = err instanceof Error ? err : new Error(`Path '${paths[i]!}' cannot be synced.`);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(atOnce, paths.length) }, worker));
  return errors;
}

/** fsyncs each path, `atOnce` at a time; the first failure rejects once the others finished. */
export async function fsyncAll(paths: readonly string[], atOnce = 8): Promise<void> {
  const failure = (await fsyncEachOf(paths, atOnce)).find((e) => e !== undefined);
  if (failure !== undefined) throw failure;
}

/**
 * fsyncs a file, or a folder (opened read-only, the only way a folder opens); a folder that cannot be opened or
 * synced (Windows) is skipped.
 */
async function syncOne(path: string): Promise<void> {
  let h: FileHandle;
  let folder = false;
  try {
    h = await open(path, 'r+');
  } catch (err) {
    if ((err as { code?: string }).code !== 'EISDIR') throw err;
    folder = true;
    try {
      h = await open(path, 'r');
    } catch {
      return;
    }
  }
  try {
    await h.sync();
  } catch (err) {
    if (!folder) throw err;
  } finally {
    await h.close();
  }
}

/**
 * Renames `tmp` to `finalPath`, creating the parent folder when it is missing (or was removed meanwhile). A
 * synchronous call: for a small file it costs less than a round trip through the thread pool.
 */
export function renameIntoPlace(tmp: string, finalPath: string): void {
  try {
    renameSync(tmp, finalPath);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
    mkdirSync(dirname(finalPath), { recursive: true });
    renameSync(tmp, finalPath);
  }
}

/**
 * Remembers the folders that received files since the last `settle`, and fsyncs them then (POSIX does not
 * promise that an fsync of a file makes its rename durable).
 */
export class TouchedFolders {
  #dirs = new Set<string>();

  add(finalPath: string): void {
    this.#dirs.add(dirname(finalPath));
  }

  async sync(): Promise<void> {
    if (this.#dirs.size === 0) return;
    const dirs = [...this.#dirs];
    this.#dirs = new Set();
    try {
      await fsyncAll(dirs);
    } catch (err) {
      for (const d of dirs) this.#dirs.add(d); // not durable: the next settle tries them again
      throw err;
    }
  }
}

/**
 * No durability step: the file is renamed into place as soon as it is written (`--no-fsync`). A killed process
 * leaves no partial file; a power cut may leave files empty or short.
 * @example
 * await writeVerified({ root, relPath, body, durability: new RenameOnly() });
 */
export class RenameOnly implements Durability {
  /** With a `thread`: the file written and renamed there. */
  readonly writeSmall?: (file: SmallFile) => Promise<void>;

  constructor(options: DurabilityOptions = {}) {
    const thread = options.thread;
    if (thread !== undefined) this.writeSmall = (file) => thread.write(file, true);
  }

  commit(tmp: string, finalPath: string): Promise<void> {
    return new Promise((resolve) => {
      renameIntoPlace(tmp, finalPath); // a throw here rejects
      resolve();
    });
  }

  settle(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * An fsync of each file before its rename (`--fsync-method file`); `settle` fsyncs the folders that received
 * files.
 * @example
 * const durability = new FsyncEach();
 * await writeVerified({ root, relPath, body, durability });
 * await durability.settle();
 */
export class FsyncEach implements Durability {
  readonly #folders = new TouchedFolders();
  readonly #pending = new Set<Promise<void>>();
  /** With a `thread`: the temporary file written there, then committed here. */
  readonly writeSmall?: (file: SmallFile) => Promise<void>;

  constructor(options: DurabilityOptions = {}) {
    if (options.thread !== undefined) this.writeSmall = writtenThere(options.thread, this);
  }

  commit(tmp: string, finalPath: string): Promise<void> {
    const done = (async () => {
      await fsyncAll([tmp], 1);
      renameIntoPlace(tmp, finalPath);
      this.#folders.add(finalPath);
    })();
    const tracked = done.then(
      () => undefined,
      () => undefined,
    );
    this.#pending.add(tracked);
    void tracked.then(() => this.#pending.delete(tracked));
    return done;
  }

  async settle(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
    await this.#folders.sync();
  }
}
