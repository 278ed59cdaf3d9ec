/**
 * A destination folder as one run (a sync, a dump, one `writeVerified` call) sees it: where its temporary files
 * go, how they are named, the confinement check of every write, and the large buffers reused from file to file.
 * Everything that used to be cached for the whole process lives here, for as long as the run holds the object.
 */

import { randomBytes } from 'node:crypto';
import { mkdirSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { RESOURCESYNC_DIR } from '../core/constants.js';

/** Size of a pooled buffer (large bodies are read into two of them). */
const POOLED_BUFFER = 1024 * 1024;

/**
 * The destination folder of a run.
 * @example
 * const dest = new DestinationRoot('/mirror');
 * await writeVerified({ root: dest, relPath: 'a/b.txt', body });
 */
export class DestinationRoot {
  /** The folder, as given. */
  readonly path: string;
  /** Folder (inside the destination, so on the same file system) for temporary files. */
  readonly tempDir: string;
  readonly #tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  #counter = 0;
  #realPath: string | undefined;
  #tempReady = false;
  readonly #buffers: Buffer[] = [];

  constructor(path: string) {
    this.path = path;
    this.tempDir = join(path, RESOURCESYNC_DIR, 'tmp');
  }

  /** A new temporary file's path in {@link tempDir} (the folder exists once this resolves). */
  async tempPath(): Promise<string> {
    if (!this.#tempReady) {
      try {
        await mkdir(this.tempDir, { recursive: true });
      } catch (err) {
        throw ioError(this.tempDir, 'cannot be created', err);
      }
      this.#tempReady = true;
    }
    return `${this.tempDir}${sep}${this.#tag}-${(this.#counter++).toString(36)}.tmp`;
  }

  /** The destination's real path (symbolic links resolved; the folder is created on first use). */
  get realPath(): string {
    if (this.#realPath === undefined) {
      mkdirSync(this.path, { recursive: true });
      this.#realPath = realpathSync.native(this.path);
    }
    return this.#realPath;
  }

  /** A 1 MiB buffer, reused across the files of this run. */
  takeBuffer(): Buffer {
    return this.#buffers.pop() ?? Buffer.allocUnsafeSlow(POOLED_BUFFER);
  }

  giveBack(bufs: readonly Buffer[]): void {
    for (const b of bufs) if (this.#buffers.length < 4) this.#buffers.push(b);
  }

  /** Removes leftover temporary files (from a run that was killed). */
  async cleanTemp(): Promise<void> {
    await rm(this.tempDir, { recursive: true, force: true });
    this.#tempReady = false;
  }
}

/** A recoverable `RS_IO` for `path`. */
export function ioError(path: string, what: string, cause: unknown): ResourceSyncError {
  const msg = messageOf(cause);
  return new ResourceSyncError('RS_IO', `Path '${path}' ${what}: ${msg}.`, { data: { path }, cause, recoverable: true });
}

/**
 * Makes sure that `dir` is really inside the destination whose real path is `realRoot` (see
 * {@link DestinationRoot.realPath}; `root` as the caller named it, for the error) and exists: a folder of the
 * destination that is a symbolic link to elsewhere must not carry writes out of it. Checked for every file,
 * right before its commit, wherever the write is made (a worker thread too), since a folder may be replaced by
 * a link between two writes: the deepest existing folder on the way is resolved before anything is created,
 * so `mkdir -p` never runs through a link. A link swapped in between the check and the rename (for a group
 * commit, while the file waits for its batch) is not seen: Node has no rename relative to a checked folder.
 * @throws ResourceSyncError RS_UNSAFE_PATH, RS_IO
 */
export function confineDir(realRoot: string, dir: string, root: string): void {
  // the deepest existing folder on the way, resolved (one call where the folder exists, as it mostly does)
  let probe = dir;
  let real: string;
  for (;;) {
    try {
      real = realpathSync.native(probe);
      break;
    } catch (err) {
      const code = (err as { code?: string }).code;
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || dirname(probe) === probe) throw ioError(probe, 'cannot be resolved', err);
      probe = dirname(probe);
    }
  }
  if (real !== realRoot && !real.startsWith(realRoot.endsWith(sep) ? realRoot : realRoot + sep)) {
    throw new ResourceSyncError('RS_UNSAFE_PATH', `Folder '${probe}' leads outside the destination '${root}' through a symbolic link.`, {
      data: { path: probe, root },
      recoverable: true,
    });
  }
  if (probe === dir) return;
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw ioError(dir, 'cannot be created', err);
  }
}
