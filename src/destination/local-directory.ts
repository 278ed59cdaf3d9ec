/**
 * The mirror as a local folder: the embedded {@link MirrorStorage}, and the default wherever none is given.
 * A key is a relative path under the folder; staged bytes go to `<dest>/.resourcesync/tmp/`; a commit checks
 * that the target's folder lies inside the destination once symbolic links are resolved, then hands the
 * temporary file to the run's `Durability` (a group commit, an fsync each, a rename only), which makes it
 * durable and renames it into place.
 */

import { closeSync, fstatSync, openSync, readSync, readdirSync } from 'node:fs';
import { open, readdir, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import { dirname, sep } from 'node:path';
import { ResourceSyncError, toError } from '../core/errors.js';
import type { HashAlgorithm } from '../core/constants.js';
import { digestHex } from '../node/digest.js';
import { DestinationRoot } from '../node/destination-root.js';
import { FsyncEach, type Durability } from '../node/durability.js';
import { hashStreamed } from '../node/hash-file.js';
import { safeJoin } from '../node/safe-path.js';
import { readFileCapped } from './apply-patch.js';
import { LocalStagedWrite } from './local-staged-write.js';
import type { MirrorStorage, ReadOptions, StageOptions, StagedWrite, StoredDigests, StoredFacts, StoredItem } from './mirror-storage.js';

/** The tool's own folder in the destination (and trees beside it, such as `.resourcesync-describedby`). */
const STATE_PREFIX = '.resourcesync';
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

  async remove(key: string): Promise<boolean> {
    const path = this.pathOf(key);
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

/** The files under `dest` with their size and modification time (a dangling symbolic link: 0 and 0). */
async function* listed(dest: string): AsyncGenerator<StoredItem> {
  for (const key of walkFiles(dest)) {
    const st = await stat(sep === '/' ? `${dest}/${key}` : safeJoin(dest, key)).catch(() => undefined);
    yield { key, size: st?.size ?? 0, mtimeMs: st?.mtimeMs ?? 0 };
  }
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
 * fastest way to hash many small files). Undefined when it is missing or not a file; `'large'` when it does not
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
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return undefined;
    if (st.size >= READ_BUFFER.length) return 'large';
    // a read that returns less than asked for has met the end of a regular file: no second read to see 0
    let length = 0;
    for (;;) {
      const want = READ_BUFFER.length - length;
      const got = readSync(fd, READ_BUFFER, length, want, null);
      length += got;
      if (length === READ_BUFFER.length) return 'large';
      if (got === 0 || got < want) break;
    }
    const data = READ_BUFFER.subarray(0, length);
    const hashes: Partial<Record<HashAlgorithm, string>> = {};
    for (const algorithm of algorithms) hashes[algorithm] ??= digestHex(algorithm, data);
    return { length, hashes, mtimeMs: st.mtimeMs };
  } finally {
    closeSync(fd);
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
