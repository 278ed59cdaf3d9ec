/**
 * Reads the entry of one file for the inventory (src/node/inventory.ts): length, last modification, media type
 * and fixity, as the inventory's options say. Small files are read and hashed with synchronous calls into one
 * scratch buffer; a large one is left to {@link FileReader.readLarge}, which hashes it by streaming. A file whose
 * size and mtime equal the previous snapshot's keeps its stored hashes (stat only).
 * @see Z39.99 §10.1 (Resource List: `lastmod`, `length`, `type`, `hash`)
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, openSync, readSync, realpathSync, statSync, type Stats } from 'node:fs';
import type { HashAlgorithm } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';
import { nodeHashName } from '../core/hash.js';
import { mediaType } from '../core/media-type.js';
import { hashStreamed } from './hash-file.js';
import type { Hashes, InventoryEntry, InventoryOptions, InventoryProgress, PreviousState } from './inventory-types.js';

/** What {@link FileReader.read} found: an entry, a large file to hash by streaming, or nothing (gone, or held and unknown). */
export type ReadOutcome = InventoryEntry | { large: Stats } | undefined;

/** Reads one file's entry as the inventory options say, small files synchronously. */
export class FileReader {
  readonly realRoot: string;
  readonly excluded = new Set<string>();
  readonly progress: InventoryProgress = { files: 0, bytes: 0, hashed: 0 };
  readonly signal: AbortSignal | undefined;
  readonly previous: InventoryOptions['previous'];
  private readonly options: InventoryOptions;
  private readonly algorithms: HashAlgorithm[];
  private readonly hashNames: string[];
  private readonly smallLimit: number;
  private readonly typeOf: (path: string) => string;
  private readonly rewriteLimit: number;
  private readonly settleMs: number;
  private readonly scratch: Buffer;

  /** @throws ResourceSyncError RS_IO when `root` is not a readable folder */
  constructor(root: string, options: InventoryOptions) {
    this.options = options;
    this.algorithms = [...(options.hashes ?? ['md5'])];
    this.hashNames = this.algorithms.map(nodeHashName);
    this.previous = options.previous;
    this.signal = options.signal;
    this.smallLimit = options.smallFileLimit ?? 256 * 1024;
    this.typeOf = options.mediaType ?? mediaType;
    this.rewriteLimit = options.rewriteLimit ?? 1024 * 1024;
    this.settleMs = options.settleMs ?? 0;
    try {
      this.realRoot = realpathSync(root);
      if (!statSync(this.realRoot).isDirectory()) throw new Error('not a directory');
    } catch (cause) {
      throw new ResourceSyncError('RS_IO', `Directory '${root}' cannot be read as a set of resources.`, { data: { path: root }, cause });
    }
    this.scratch = Buffer.allocUnsafe(this.smallLimit);
    for (const p of options.exclude ?? []) {
      try {
        this.excluded.add(realpathSync(p));
      } catch {
        // an excluded path that does not exist excludes nothing
      }
    }
  }

  /**
   * The entry of a file (undefined: gone, or held and unknown before); `{ large }` for a file to hash by
   * streaming with `readLarge`. `known` is the file's stats when already known (a followed link), `prev` what
   * the previous snapshot knew of it.
   */
  read(abs: string, rel: string, known: Stats | undefined, prev: PreviousState | undefined): ReadOutcome {
    const hold = this.options.hold?.(rel);
    if (hold === true) return this.held(rel, prev);
    let st = known;
    let fd = -1;
    try {
      if (st === undefined) {
        if (prev === undefined && this.algorithms.length > 0) {
          // First sight of the file: one open, fstat on the descriptor, then read it (no second path lookup).
          try {
            fd = openSync(abs, 'r');
            st = fstatSync(fd);
          } catch (cause) {
            if (isGone(cause)) return undefined;
            throw ioError(abs, cause);
          }
        } else {
          st = statSync(abs, { throwIfNoEntry: false });
        }
      }
      if (st === undefined || !st.isFile()) return undefined;
      if (hold === undefined && this.settleMs > 0 && beingWritten(st.mtimeMs, this.settleMs)) return this.held(rel, prev);
      const rewrite = st.size <= this.rewriteLimit ? this.options.rewrite?.(rel) : undefined;
      if (rewrite !== undefined) {
        if (fd < 0) fd = this.open(abs);
        return fd < 0 ? undefined : this.readRewritten(abs, rel, st, fd, rewrite);
      }
      const stored = prev !== undefined && prev.size === st.size && prev.mtimeMs === st.mtimeMs ? this.knownHashes(prev) : undefined;
      if (stored !== undefined) return this.counted({ path: rel, size: st.size, mtimeMs: st.mtimeMs, type: this.typeOf(rel), hashes: stored });
      if (this.algorithms.length === 0) return this.counted({ path: rel, size: st.size, mtimeMs: st.mtimeMs, type: this.typeOf(rel), hashes: {} });
      if (st.size > this.smallLimit) return { large: st };
      if (fd < 0) fd = this.open(abs);
      return fd < 0 ? undefined : this.readSmall(abs, rel, st, fd);
    } finally {
      if (fd >= 0) closeSync(fd);
    }
  }

  /** The entry of a large file, hashed by streaming (undefined: gone meanwhile). */
  async readLarge(abs: string, rel: string, st: Stats): Promise<InventoryEntry | undefined> {
    let r: { length: number; hashes: Hashes };
    try {
      r = await hashStreamed(abs, this.algorithms, () => {
        if (this.signal?.aborted) throw abortError(this.signal);
      });
    } catch (cause) {
      if (cause instanceof ResourceSyncError) throw cause;
      if (isGone(cause)) return undefined;
      throw ioError(abs, cause);
    }
    this.progress.hashed++;
    return this.counted({ path: rel, size: r.length, mtimeMs: st.mtimeMs, type: this.typeOf(rel), hashes: r.hashes });
  }

  /** Opens a file to read it; -1 when it is gone. */
  private open(abs: string): number {
    try {
      return openSync(abs, 'r');
    } catch (cause) {
      if (isGone(cause)) return -1;
      throw ioError(abs, cause);
    }
  }

  /** An HTML file published with a discovery link: the length and hashes of the published bytes. */
  private readRewritten(abs: string, rel: string, st: Stats, fd: number, rewrite: (stored: Buffer) => Uint8Array): InventoryEntry | undefined {
    let stored: Buffer;
    try {
      stored = readWhole(fd, st.size);
    } catch (cause) {
      if (isGone(cause)) return undefined;
      throw ioError(abs, cause);
    }
    const published = rewrite(stored);
    this.progress.hashed++;
    return this.counted({ path: rel, size: published.length, mtimeMs: st.mtimeMs, type: this.typeOf(rel), hashes: this.digests(published) });
  }

  /** A small file read whole into the scratch buffer and hashed. */
  private readSmall(abs: string, rel: string, st: Stats, fd: number): InventoryEntry | undefined {
    let view: Buffer;
    try {
      // Read the length stat gave (as readFileSync does): content appended since is seen next time.
      const want = st.size;
      let total = 0;
      while (total < want) {
        const n = readSync(fd, this.scratch, total, want - total, null);
        if (n === 0) break;
        total += n;
      }
      view = this.scratch.subarray(0, total);
    } catch (cause) {
      if (isGone(cause)) return undefined;
      throw ioError(abs, cause);
    }
    this.progress.hashed++;
    return this.counted({ path: rel, size: view.length, mtimeMs: st.mtimeMs, type: this.typeOf(rel), hashes: this.digests(view) });
  }

  private digests(bytes: Uint8Array): Hashes {
    const hashes: Hashes = {};
    for (let k = 0; k < this.algorithms.length; k++) hashes[this.algorithms[k]!] = createHash(this.hashNames[k]!).update(bytes).digest('hex');
    return hashes;
  }

  private counted(entry: InventoryEntry): InventoryEntry {
    this.progress.files++;
    this.progress.bytes += entry.size;
    return entry;
  }

  /** The previous snapshot's digests of the algorithms asked for, when it has them all. */
  private knownHashes(prev: PreviousState | undefined): Hashes | undefined {
    if (prev === undefined || !this.algorithms.every((a) => prev.hashes[a] !== undefined)) return undefined;
    const hashes: Hashes = {};
    for (const a of this.algorithms) hashes[a] = prev.hashes[a]!;
    return hashes;
  }

  /** A file being written: what the previous snapshot knew of it, or nothing. */
  private held(rel: string, prev: PreviousState | undefined): InventoryEntry | undefined {
    const hashes = this.knownHashes(prev);
    return hashes === undefined ? undefined : this.counted({ path: rel, size: prev!.size, mtimeMs: prev!.mtimeMs, type: this.typeOf(rel), hashes });
  }
}

/** A modification time within the last `settleMs` (or the next second): the file may be being written. */
function beingWritten(mtimeMs: number, settleMs: number): boolean {
  const now = Date.now();
  return mtimeMs > now - settleMs && mtimeMs < now + 1000;
}

/** Reads the first `size` bytes of an open file (fewer if it was truncated meanwhile). */
function readWhole(fd: number, size: number): Buffer {
  const buf = Buffer.allocUnsafe(size);
  let total = 0;
  while (total < size) {
    const n = readSync(fd, buf, total, size - total, null);
    if (n === 0) break;
    total += n;
  }
  return buf.subarray(0, total);
}

/** A file or folder gone (or a path through a file). */
export function isGone(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

export function ioError(path: string, cause: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_IO', `File '${path}' cannot be read.`, { data: { path }, cause });
}

/** The error thrown when an inventory or publication is aborted through its signal. */
export function abortError(signal: AbortSignal): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', 'Operation aborted.', { cause: signal.reason });
}
