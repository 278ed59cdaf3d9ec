/**
 * Inventory of a directory: every published file with its length, last modification, media type and
 * fixity, in a stable order (UTF-8 byte order of the relative path, the order of SQLite's BINARY
 * collation), as an async iterable.
 *
 * Never published: hidden names (any segment starting with `.`, which covers the tool's own
 * `.resourcesync` state), names with control characters, backslashes or bytes that are not UTF-8,
 * symbolic links that leave the tree, symbolic links to directories (not
 * followed, so no cycles), and anything that is neither a file nor a directory.
 *
 * Speed: small files are read and hashed with synchronous calls in batches (several times faster than
 * `fs.promises` for 1 KB files), yielding to the event loop between batches; large files are read in
 * 1 MiB chunks, double-buffered, feeding every hash in one pass. A file whose size and mtime equal the
 * previous snapshot's keeps its stored hashes (stat only).
 * @see Z39.99 §10.1 (Resource List: `lastmod`, `length`, `type`, `hash`)
 */
import { createHash } from 'node:crypto';
import { closeSync, fstatSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync, type Dirent, type Stats } from 'node:fs';
import { join, sep } from 'node:path';
import type { HashAlgorithm } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';
import { nodeHashName } from '../core/hash.js';
import { compareUtf8 } from '../core/utf8-order.js';
import { mediaType } from '../core/media-type.js';
import { hashStreamed } from './hash-file.js';

/** Fixity values by algorithm, lower-case hex. */
export type Hashes = Partial<Record<HashAlgorithm, string>>;

/** One published file. */
export interface InventoryEntry {
  /** Relative path, `/`-separated, never hidden. */
  path: string;
  /** Length in bytes. */
  size: number;
  /** Last modification, milliseconds since the epoch (as `fs.Stats.mtimeMs`). */
  mtimeMs: number;
  /** Media type from the extension. */
  type: string;
  hashes: Hashes;
}

/** What a previous snapshot knew of a file. */
export interface PreviousState {
  size: number;
  mtimeMs: number;
  hashes: Hashes;
}

/** Progress of an inventory. */
export interface InventoryProgress {
  files: number;
  bytes: number;
  /** Files whose content was read and hashed (the others were unchanged since the previous snapshot). */
  hashed: number;
}

export interface InventoryOptions {
  /** Fixity algorithms; default `['md5']`. An empty list reads no content. */
  hashes?: readonly HashAlgorithm[];
  /** Previous state of a path; called in inventory order (so a store may answer with a forward cursor). */
  previous?: (path: string) => PreviousState | undefined;
  signal?: AbortSignal;
  /** Called after each batch. */
  onProgress?: (p: InventoryProgress) => void;
  /** Files up to this size are read with one synchronous call; default 256 KiB. */
  smallFileLimit?: number;
  /** Files handled between two yields to the event loop; default 512. */
  batchSize?: number;
  /** Media type of a path; default `mediaType` from the extension table. */
  mediaType?: (path: string) => string;
  /** Absolute paths (files or folders) never published, e.g. a publish folder or state folder inside the tree. */
  exclude?: readonly string[];
  /**
   * Files published with other bytes than they hold (an HTML page given its discovery link, §6.3.3): for a
   * path, the function from the stored to the published bytes, or undefined for a file published as stored.
   * A file it applies to, when at most `rewriteLimit` bytes, is read whole, and its length and hashes are
   * those of the published bytes; its previous hashes are never reused (its size on disk is not the listed one).
   */
  rewrite?: (path: string) => ((stored: Buffer) => Uint8Array) | undefined;
  /** Largest file `rewrite` is applied to; default 1 MiB. */
  rewriteLimit?: number;
  /**
   * What a watcher knows of a file (relative path): true while it is being written (not settled), to keep
   * what the previous snapshot knew of it (size, mtime, hashes; a file it did not know is left out), so that
   * no half-written content is listed (its next inventory reads it); false once it has settled (read as it
   * is); undefined when the watcher knows nothing of it lately (`settleMs` applies).
   */
  hold?: (path: string) => boolean | undefined;
  /**
   * A file modified less than this long (ms) before it is read, that `hold` says nothing of, is held as
   * `hold` holds it: a write that began before a watcher heard of it is not read half-done. (A modification
   * time more than a second in the future is not taken for a write in progress.) Default 0.
   */
  settleMs?: number;
  /**
   * Called for each file or folder of the walk left out because its name cannot be published (a control
   * character such as a newline, CR or tab, a backslash, or bytes that are not UTF-8), with its relative path
   * (undecodable bytes shown as U+FFFD). Hidden names are left out without a call.
   */
  onUnpublishable?: (path: string) => void;
}

interface DirItem {
  name: string;
  key: string;
  dir: boolean;
  stats: Stats | undefined;
}

/**
 * Names no Destination could write back safely (control characters, backslashes; `safeRelativePath`
 * refuses them) or that do not survive UTF-8 decoding (U+FFFD stands for undecodable bytes).
 */
// eslint-disable-next-line no-control-regex
const UNPUBLISHABLE = /[\u0000-\u001f\u007f\\\ufffd]/;

/**
 * Walks `root` and yields every published file in UTF-8 byte order of its relative path.
 * @example
 * for await (const e of inventory('/srv/data', { hashes: ['md5', 'sha-256'] })) console.log(e.path, e.hashes.md5);
 */
export async function* inventory(root: string, options: InventoryOptions = {}): AsyncGenerator<InventoryEntry> {
  const reader = fileReader(root, options);
  const { realRoot, progress, signal } = reader;
  const batchSize = Math.max(1, options.batchSize ?? 512);
  let inBatch = 0;

  // Depth-first walk with sorted siblings; a directory sorts as `name/`, which gives the global byte order.
  const stack: { abs: string; rel: string; items: DirItem[]; i: number }[] = [
    { abs: realRoot, rel: '', items: listDir(realRoot, realRoot, '', options.onUnpublishable), i: 0 },
  ];
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    const item = top.items[top.i++];
    if (item === undefined) {
      stack.pop();
      continue;
    }
    const abs = (top.abs.endsWith(sep) ? top.abs : top.abs + sep) + item.name;
    const rel = top.rel + item.name;
    if (reader.excluded.size > 0 && reader.excluded.has(abs)) continue;
    if (item.dir) {
      stack.push({ abs, rel: `${rel}/`, items: listDir(abs, realRoot, `${rel}/`, options.onUnpublishable), i: 0 });
      continue;
    }
    const read = reader.read(abs, rel, item.stats);
    const entry = read === undefined || 'path' in read ? read : await reader.readLarge(abs, rel, read.large);
    if (entry === undefined) continue;
    if (read !== undefined && !('path' in read)) inBatch = batchSize; // a large file is a batch of its own
    yield entry;
    if (++inBatch >= batchSize) {
      inBatch = 0;
      options.onProgress?.({ ...progress });
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (signal?.aborted) throw abortError(signal);
    }
  }
  options.onProgress?.({ ...progress });
}

/** What {@link inventoryFiles} found at one of the paths it was given. */
export type FileState =
  | { path: string; kind: 'file'; entry: InventoryEntry }
  /** Not published (gone, hidden, excluded, under a symbolic link, not a file): a listed resource there was deleted. */
  | { path: string; kind: 'absent' }
  /** A folder: its files are only known from a walk ({@link inventory}). */
  | { path: string; kind: 'folder' };

/**
 * The state of the given files of `root` (relative paths, `/`-separated), judged exactly as {@link inventory}
 * judges them, without walking the tree: for a watcher that knows which files changed. Each path's folders
 * are checked on the way (a hidden, excluded or linked folder hides what it holds). `previous` may be called
 * in any order. Entries come in the order of `paths`.
 */
export async function* inventoryFiles(root: string, paths: readonly string[], options: InventoryOptions = {}): AsyncGenerator<FileState> {
  const reader = fileReader(root, options);
  const { realRoot } = reader;
  for (const path of paths) {
    const segments = path.split('/');
    if (segments.some((s) => s === '' || !publishableName(s))) {
      yield { path, kind: 'absent' };
      continue;
    }
    // every folder on the way must be a real folder (inventory follows no linked folder), not excluded
    let abs = realRoot;
    let hidden = false;
    for (let i = 0; i < segments.length - 1 && !hidden; i++) {
      abs = (abs.endsWith(sep) ? abs : abs + sep) + segments[i]!;
      const st = lstatSync(abs, { throwIfNoEntry: false });
      hidden = st === undefined || !st.isDirectory() || reader.excluded.has(abs);
    }
    abs = (abs.endsWith(sep) ? abs : abs + sep) + segments[segments.length - 1]!;
    if (hidden || reader.excluded.has(abs)) {
      yield { path, kind: 'absent' };
      continue;
    }
    let st: Stats | undefined;
    try {
      st = lstatSync(abs, { throwIfNoEntry: false });
      if (st?.isSymbolicLink() === true) {
        // published only when it resolves to a file inside the tree (as listDir judges it)
        const target = realpathSync(abs);
        st = target.startsWith(realRoot + sep) ? statSync(target) : undefined;
        if (st?.isDirectory() === true) st = undefined;
      }
    } catch {
      st = undefined;
    }
    if (st?.isDirectory() === true) {
      yield { path, kind: 'folder' };
      continue;
    }
    if (st === undefined || !st.isFile()) {
      yield { path, kind: 'absent' };
      continue;
    }
    const read = reader.read(abs, path, st);
    const entry = read === undefined || 'path' in read ? read : await reader.readLarge(abs, path, read.large);
    yield entry === undefined ? { path, kind: 'absent' } : { path, kind: 'file', entry };
  }
}

/** Reads one file's entry as the inventory options say, small files synchronously. */
interface FileReader {
  realRoot: string;
  excluded: Set<string>;
  progress: InventoryProgress;
  signal: AbortSignal | undefined;
  /**
   * The entry of a file (undefined: gone, or held and unknown before); `{ large }` for a file to hash by
   * streaming with `readLarge`. `st` is the file's stats when already known (a followed link).
   */
  read(abs: string, rel: string, st: Stats | undefined): InventoryEntry | { large: Stats } | undefined;
  readLarge(abs: string, rel: string, st: Stats): Promise<InventoryEntry | undefined>;
}

function fileReader(root: string, options: InventoryOptions): FileReader {
  const algorithms = [...(options.hashes ?? ['md5'])];
  const names = algorithms.map(nodeHashName);
  const previous = options.previous;
  const signal = options.signal;
  const smallLimit = options.smallFileLimit ?? 256 * 1024;
  const typeOf = options.mediaType ?? mediaType;
  const rewriteLimit = options.rewriteLimit ?? 1024 * 1024;
  let realRoot: string;
  try {
    realRoot = realpathSync(root);
    if (!statSync(realRoot).isDirectory()) throw new Error('not a directory');
  } catch (cause) {
    throw new ResourceSyncError('RS_IO', `Directory '${root}' cannot be read as a set of resources.`, { data: { path: root }, cause });
  }
  const progress: InventoryProgress = { files: 0, bytes: 0, hashed: 0 };
  const scratch = Buffer.allocUnsafe(smallLimit);
  const excluded = new Set<string>();
  for (const p of options.exclude ?? []) {
    try {
      excluded.add(realpathSync(p));
    } catch {
      // an excluded path that does not exist excludes nothing
    }
  }
  const settleMs = options.settleMs ?? 0;
  const counted = (entry: InventoryEntry): InventoryEntry => {
    progress.files++;
    progress.bytes += entry.size;
    return entry;
  };

  /** The previous snapshot's digests of the algorithms asked for, when it has them all. */
  const knownHashes = (prev: PreviousState | undefined): Hashes | undefined => {
    if (prev === undefined || !algorithms.every((a) => prev.hashes[a] !== undefined)) return undefined;
    const hashes: Hashes = {};
    for (const a of algorithms) hashes[a] = prev.hashes[a]!;
    return hashes;
  };

  /** A file being written: what the previous snapshot knew of it, or nothing. */
  const held = (rel: string, prev: PreviousState | undefined): InventoryEntry | undefined => {
    const hashes = knownHashes(prev);
    return hashes === undefined ? undefined : counted({ path: rel, size: prev!.size, mtimeMs: prev!.mtimeMs, type: typeOf(rel), hashes });
  };

  const read = (abs: string, rel: string, known: Stats | undefined): InventoryEntry | { large: Stats } | undefined => {
    const prev = previous?.(rel);
    const hold = options.hold?.(rel);
    if (hold === true) return held(rel, prev);
    let st = known;
    let fd = -1;
    try {
      if (st === undefined) {
        if (prev === undefined && algorithms.length > 0) {
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
      if (hold === undefined && settleMs > 0 && beingWritten(st.mtimeMs, settleMs)) return held(rel, prev);
      const rewrite = st.size <= rewriteLimit ? options.rewrite?.(rel) : undefined;
      if (rewrite !== undefined) {
        let stored: Buffer;
        try {
          if (fd < 0) fd = openSync(abs, 'r');
          stored = readWhole(fd, st.size);
        } catch (cause) {
          if (isGone(cause)) return undefined;
          throw ioError(abs, cause);
        }
        const published = rewrite(stored);
        const hashes: Hashes = {};
        for (let k = 0; k < algorithms.length; k++) hashes[algorithms[k]!] = createHash(names[k]!).update(published).digest('hex');
        progress.hashed++;
        return counted({ path: rel, size: published.length, mtimeMs: st.mtimeMs, type: typeOf(rel), hashes });
      }
      const known = prev !== undefined && prev.size === st.size && prev.mtimeMs === st.mtimeMs ? knownHashes(prev) : undefined;
      if (known !== undefined) return counted({ path: rel, size: st.size, mtimeMs: st.mtimeMs, type: typeOf(rel), hashes: known });
      if (algorithms.length === 0) return counted({ path: rel, size: st.size, mtimeMs: st.mtimeMs, type: typeOf(rel), hashes: {} });
      if (st.size > smallLimit) return { large: st };
      let view: Buffer;
      try {
        if (fd < 0) fd = openSync(abs, 'r');
        // Read the length stat gave (as readFileSync does): content appended since is seen next time.
        const want = st.size;
        let total = 0;
        while (total < want) {
          const n = readSync(fd, scratch, total, want - total, null);
          if (n === 0) break;
          total += n;
        }
        view = scratch.subarray(0, total);
      } catch (cause) {
        if (isGone(cause)) return undefined;
        throw ioError(abs, cause);
      }
      const hashes: Hashes = {};
      for (let k = 0; k < algorithms.length; k++) hashes[algorithms[k]!] = createHash(names[k]!).update(view).digest('hex');
      progress.hashed++;
      return counted({ path: rel, size: view.length, mtimeMs: st.mtimeMs, type: typeOf(rel), hashes });
    } finally {
      if (fd >= 0) closeSync(fd);
    }
  };

  const readLarge = async (abs: string, rel: string, st: Stats): Promise<InventoryEntry | undefined> => {
    let r: { length: number; hashes: Hashes };
    try {
      r = await hashStreamed(abs, algorithms, () => {
        if (signal?.aborted) throw abortError(signal);
      });
    } catch (cause) {
      if (cause instanceof ResourceSyncError) throw cause;
      if (isGone(cause)) return undefined;
      throw ioError(abs, cause);
    }
    progress.hashed++;
    return counted({ path: rel, size: r.length, mtimeMs: st.mtimeMs, type: typeOf(rel), hashes: r.hashes });
  };

  return { realRoot, excluded, progress, signal, read, readLarge };
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

/** Reads one directory: published names only, sorted in UTF-8 byte order (directories as `name/`). */
/** A name the inventory publishes: not hidden (a leading `.`, which covers `..` too), nothing unpublishable in it. */
function publishableName(name: string): boolean {
  return name.charCodeAt(0) !== 46 /* . */ && !UNPUBLISHABLE.test(name);
}

function listDir(abs: string, realRoot: string, rel: string, onUnpublishable?: (path: string) => void): DirItem[] {
  let dirents: Dirent[];
  try {
    dirents = readdirSync(abs, { withFileTypes: true });
  } catch (cause) {
    if (isGone(cause)) return [];
    throw ioError(abs, cause);
  }
  const items: DirItem[] = [];
  for (const d of dirents) {
    const name = d.name;
    if (!publishableName(name)) {
      if (onUnpublishable !== undefined && name.charCodeAt(0) !== 46 /* . */) onUnpublishable(rel + name);
      continue;
    }
    if (d.isFile()) {
      items.push({ name, key: name, dir: false, stats: undefined });
    } else if (d.isDirectory()) {
      items.push({ name, key: `${name}/`, dir: true, stats: undefined });
    } else if (d.isSymbolicLink() || (!d.isFIFO() && !d.isSocket() && !d.isBlockDevice() && !d.isCharacterDevice())) {
      // A symbolic link (or an unknown type): published only when it resolves to a file inside the tree.
      const full = join(abs, name);
      let target: string;
      let st: Stats;
      try {
        target = realpathSync(full);
        st = d.isSymbolicLink() ? statSync(target) : lstatSync(full);
      } catch {
        continue;
      }
      if (!target.startsWith(realRoot + sep)) continue;
      if (st.isFile()) items.push({ name, key: name, dir: false, stats: st });
      else if (st.isDirectory() && !d.isSymbolicLink()) items.push({ name, key: `${name}/`, dir: true, stats: undefined });
    }
  }
  items.sort((a, b) => compareUtf8(a.key, b.key));
  return items;
}

function isGone(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

function ioError(path: string, cause: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_IO', `File '${path}' cannot be read.`, { data: { path }, cause });
}

/** The error thrown when an inventory or publication is aborted through its signal. */
export function abortError(signal: AbortSignal): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', 'Operation aborted.', { cause: signal.reason });
}
