/**
 * The mirror as a local folder: the embedded {@link MirrorStorage}, and the default wherever none is given.
 * A key is a relative path under the folder; staged bytes go to `<dest>/.resourcesync/tmp/`; a commit checks
 * that the target's folder lies inside the destination once symbolic links are resolved, then hands the
 * temporary file to the run's `Durability` (a group commit, an fsync each, a rename only), which makes it
 * durable and renames it into place.
 */

import { closeSync, openSync, readSync, readdirSync, statSync } from 'node:fs';
import { open, readdir, realpath, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { ResourceSyncError, toError } from '../core/errors.js';
import { RESOURCESYNC_DIR, type HashAlgorithm } from '../core/constants.js';
import { digestHex } from '../node/digest.js';
import { DestinationRoot } from '../node/destination-root.js';
import { FsyncEach, type Durability } from '../node/durability.js';
import { hashStreamed } from '../node/hash-file.js';
import { safeJoin } from '../node/safe-path.js';
import { readFileCapped } from './apply-patch.js';
import { LocalStagedWrite } from './local-staged-write.js';
import type { MirrorStorage, ReadOptions, StageOptions, StagedWrite, StoredDigests, StoredFacts, StoredItem } from './mirror-storage.js';

/** The tool's own folder in the destination (and trees beside it, such as `.resourcesync-describedby`). */
const STATE_PREFIX = RESOURCESYNC_DIR;
/** Files that fit are hashed with synchronous calls into one reused buffer; larger ones are streamed. */
const READ_BUFFER = Buffer.allocUnsafe(1024 * 1024);
const READ_CHUNK = 1024 * 1024;

/** Options of {@link createLocalDirectory}. */
export interface LocalDirectoryOptions {
  /**
   * How committed files are made durable; settled by {@link MirrorStorage.settle}. Default: an fsync of each
   * file before its rename ({@link FsyncEach}).
   */
  durability?: Durability;
}

function isMissing(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * A destination folder as a {@link MirrorStorage}. One object serves one run (its temporary files, the
 * confinement check's real path and pooled buffers are the run's, in its {@link DestinationRoot}).
 */
export class LocalDirectory implements MirrorStorage {
  readonly location: string;
  /** Temporary files, the real path for confinement checks, pooled buffers. */
  readonly root: DestinationRoot;
  readonly durability: Durability;

  constructor(dest: string | DestinationRoot, options: LocalDirectoryOptions = {}) {
    this.root = typeof dest === 'string' ? new DestinationRoot(dest) : dest;
    this.location = this.root.path;
    this.durability = options.durability ?? new FsyncEach();
  }

  /**
   * The local path of `key`.
   * @throws ResourceSyncError RS_UNSAFE_PATH when `key` is not a safe relative path (absolute, `..`, ...)
   */
  pathOf(key: string): string {
    if (key.startsWith('/')) {
      throw new ResourceSyncError('RS_UNSAFE_PATH', `Path '${key}' is absolute.`, { data: { path: key }, recoverable: true });
    }
    return safeJoin(this.location, key);
  }

  async stat(key: string): Promise<StoredFacts | undefined> {
    const st = await stat(this.pathOf(key)).catch(() => undefined);
    return st?.isFile() === true ? { size: st.size, mtimeMs: st.mtimeMs } : undefined;
  }

  async read(key: string, options: ReadOptions): Promise<Uint8Array | undefined> {
    const path = this.pathOf(key);
    try {
      return await readFileCapped(path, options.maxBytes);
    } catch (err) {
      if (isMissing(err) || (err as { code?: string }).code === 'EISDIR') return undefined;
      throw err;
    }
  }

  async openRead(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    const path = this.pathOf(key);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    if (!(await handle.stat()).isFile()) {
      await handle.close();
      return undefined;
    }
    return readChunks(handle);
  }

  hash(key: string, algorithms: readonly HashAlgorithm[]): Promise<StoredDigests | undefined> {
    try {
      const path = this.pathOf(key);
      const small = hashSmallFile(path, algorithms);
      if (small !== 'large') return Promise.resolve(small);
      return hashLargeFile(path, algorithms);
    } catch (err) {
      return Promise.reject(toError(err));
    }
  }

  async stage(key: string, options: StageOptions = {}): Promise<StagedWrite> {
    const finalPath = this.pathOf(key);
    const tmp = await this.root.tempPath();
    return new LocalStagedWrite(key, { root: this.root, durability: this.durability, finalPath, tmp, mtimeMs: options.mtimeMs });
  }

  /**
   * Removes the copy under `key` and prunes the folders it leaves empty; false when there is none.
   * @throws ResourceSyncError RS_UNSAFE_PATH when a folder on the way is a symbolic link out of the destination
   */
  async remove(key: string): Promise<boolean> {
    const path = this.pathOf(key);
    let folder: string;
    try {
      folder = await realpath(dirname(path));
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
    const top = this.root.realPath;
    if (folder !== top && !folder.startsWith(top.endsWith(sep) ? top : top + sep)) {
      throw new ResourceSyncError('RS_UNSAFE_PATH', `Path '${key}' leads outside the destination '${this.location}' through a symbolic link.`, {
        data: { path: key, root: this.location },
        recoverable: true,
      });
    }
    try {
      await unlink(path);
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
    await this.#pruneFolders(dirname(path));
    return true;
  }

  list(): AsyncIterable<StoredItem> {
    return listed(this.location);
  }

  async isEmpty(): Promise<boolean> {
    try {
      const names = await readdir(this.location);
      return names.every((n) => n === STATE_PREFIX);
    } catch {
      return true;
    }
  }

  settle(): Promise<void> {
    return this.durability.settle();
  }

  discardStaged(): Promise<void> {
    return this.root.cleanTemp();
  }

  scratchFile(): Promise<string> {
    return this.root.tempPath();
  }

  /** Removes the folders that `dir` and its parents leave empty, up to (not including) the destination. */
  async #pruneFolders(dir: string): Promise<void> {
    const top = this.location;
    let folder = dir;
    while (folder.length > top.length && folder.startsWith(top)) {
      try {
        await rmdir(folder);
      } catch {
        return; // not empty
      }
      folder = dirname(folder);
    }
  }
}

/**
 * A local folder as the mirror's storage.
 * @example
 * const storage = createLocalDirectory('./mirror', { durability: new GroupCommit() });
 * await sync({ source: 'https://example.org/', dest: './mirror', storage });
 */
export function createLocalDirectory(dest: string, options: LocalDirectoryOptions = {}): MirrorStorage {
  return new LocalDirectory(dest, options);
}

/** The files under `dest` (relative paths with `/`), one at a time, outside `.resourcesync*` folders; none when it is missing. */
export function* walkFiles(dest: string): Generator<string> {
  function* walk(dir: string, rel: string): Generator<string> {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const key = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) {
        if (rel === '' && entry.name.startsWith(STATE_PREFIX)) continue; // the state, and trees beside it
        yield* walk(`${dir}${sep}${entry.name}`, key);
      } else if (entry.isFile() || entry.isSymbolicLink()) {
        yield key;
      }
    }
  }
  try {
    yield* walk(dest, '');
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
  }
}

/**
 * A file found by {@link listed}: its size and modification time are read when first asked for (an audit that
 * only needs the keys of 10^5 files makes no `stat` of them); a dangling symbolic link has 0 and 0.
 */
class ListedFile implements StoredItem {
  readonly key: string;
  readonly #path: string;
  #facts: StoredFacts | undefined;

  constructor(key: string, path: string) {
    this.key = key;
    this.#path = path;
  }

  get size(): number {
    return this.#stat().size;
  }

  get mtimeMs(): number {
    return this.#stat().mtimeMs;
  }

  #stat(): StoredFacts {
    if (this.#facts === undefined) {
      try {
        const st = statSync(this.#path);
        this.#facts = { size: st.size, mtimeMs: st.mtimeMs };
      } catch {
        this.#facts = { size: 0, mtimeMs: 0 };
      }
    }
    return this.#facts;
  }
}

/**
 * The files under `dest` (see {@link ListedFile}), as an async iterable over synchronous calls: a walk of many
 * small files costs a few microseconds each this way, where a call through the thread pool for each would cost tens.
 */
function listed(dest: string): AsyncIterable<StoredItem> {
  function* items(): Generator<StoredItem> {
    for (const key of walkFiles(dest)) yield new ListedFile(key, sep === '/' ? `${dest}/${key}` : safeJoin(dest, key));
  }
  return {
    [Symbol.asyncIterator](): AsyncIterator<StoredItem> {
      const iterator = items();
      return {
        next: () => {
          try {
            return Promise.resolve(iterator.next());
          } catch (err) {
            return Promise.reject(toError(err));
          }
        },
        return: () => Promise.resolve(iterator.return(undefined)),
      };
    },
  };
}

async function* readChunks(handle: FileHandle): AsyncGenerator<Uint8Array> {
  try {
    for (;;) {
      const buffer = Buffer.allocUnsafe(READ_CHUNK);
      const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}

/**
 * Digests of a file that fits {@link READ_BUFFER}, read with synchronous calls (open, fstat, read, close: the
 * fastest way to hash many small files). Undefined when it is missing or a folder; `'large'` when it does not
 * fit (the caller streams it).
 */
function hashSmallFile(path: string, algorithms: readonly HashAlgorithm[]): StoredDigests | undefined | 'large' {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if (isMissing(err) || (err as { code?: string }).code === 'EISDIR') return undefined;
    throw err;
  }
  let length = 0;
  try {
    // a read that returns less than asked for has met the end of a regular file: no second read to see 0
    for (;;) {
      const want = READ_BUFFER.length - length;
      const got = readSync(fd, READ_BUFFER, length, want, null);
      length += got;
      if (length === READ_BUFFER.length) return 'large';
      if (got === 0 || got < want) break;
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'EISDIR') return undefined;
    throw err;
  } finally {
    closeSync(fd);
  }
  const data = READ_BUFFER.subarray(0, length);
  const hashes: Partial<Record<HashAlgorithm, string>> = {};
  for (const algorithm of algorithms) hashes[algorithm] ??= digestHex(algorithm, data);
  return new SmallFileDigests(path, length, hashes);
}

/** Digests of a small file; its modification time is read when first asked for (an audit with hashes needs none). */
class SmallFileDigests implements StoredDigests {
  readonly length: number;
  readonly hashes: Partial<Record<HashAlgorithm, string>>;
  readonly #path: string;
  #mtimeMs: number | undefined;

  constructor(path: string, length: number, hashes: Partial<Record<HashAlgorithm, string>>) {
    this.#path = path;
    this.length = length;
    this.hashes = hashes;
  }

  get mtimeMs(): number {
    this.#mtimeMs ??= statSync(this.#path, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    return this.#mtimeMs;
  }
}

async function hashLargeFile(path: string, algorithms: readonly HashAlgorithm[]): Promise<StoredDigests | undefined> {
  const st = await stat(path).catch(() => undefined);
  if (st?.isFile() !== true) return undefined;
  try {
    const got = await hashStreamed(path, [...new Set(algorithms)]);
    return { length: got.length, hashes: got.hashes, mtimeMs: st.mtimeMs };
  } catch (err) {
    if (isMissing(err)) return undefined;
    throw err;
  }
}
