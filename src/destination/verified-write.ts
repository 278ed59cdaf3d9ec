import { createHash, randomBytes, type Hash } from 'node:crypto';
import { closeSync, existsSync, fsync as fsyncCallback, futimesSync, mkdirSync, open as openCallback, openSync, realpathSync, renameSync, rmSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { isKnownHashAlgorithm, nodeHashName, type HashValue } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import { digestHex } from '../node/digest.js';
import { safeJoin } from '../node/safe-path.js';
import type { GroupCommit } from '../node/group-commit.js';
import { SmallFileWriter, SmallFileWriterStopped, type SmallFileOp } from '../node/small-file-writer.js';

/**
 * A body that reads into the caller's buffer (like a BYOB reader): no buffer is allocated per chunk, which
 * keeps large extractions free of garbage-collection work. `read` resolves the number of bytes placed at the
 * start of `into`, 0 at the end; it is never called again before the previous call resolved.
 */
export interface ByteSource {
  read(into: Uint8Array): Promise<number>;
}

function isByteSource(body: AsyncIterable<Uint8Array> | ByteSource): body is ByteSource {
  return typeof (body as Partial<ByteSource>).read === 'function' && !(Symbol.asyncIterator in body);
}

const POOLED = 1024 * 1024;
const pool: Buffer[] = [];

/** A 1 MiB buffer from the pool (kept across files: reading a large dump allocates nothing per chunk). */
function takeBuffer(): Buffer {
  return pool.pop() ?? Buffer.allocUnsafeSlow(POOLED);
}

function giveBack(bufs: readonly Buffer[]): void {
  for (const b of bufs) if (pool.length < 32) pool.push(b);
}

async function writeFully(h: FileHandle, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.byteLength; ) {
    const { bytesWritten } = await h.write(data, off, data.byteLength - off);
    off += bytesWritten;
  }
}

/**
 * The digests of a body. A body that comes in one chunk (most small resources) is hashed at the end in one shot
 * ({@link digestHex}); a longer body is streamed through `Hash` objects. A chunk kept for later must not change
 * meanwhile: pass `now` for a buffer that will be reused.
 */
class BodyDigests {
  readonly #algs: readonly HashAlgorithm[];
  #hashers: [HashAlgorithm, Hash][] | undefined;
  #first: Uint8Array | undefined;

  constructor(algs: Iterable<HashAlgorithm>) {
    this.#algs = [...algs];
  }

  update(chunk: Uint8Array, now = false): void {
    if (this.#hashers === undefined) {
      if (this.#first === undefined && !now) {
        this.#first = chunk;
        return;
      }
      this.#hashers = this.#algs.map((a) => [a, createHash(nodeHashName(a))]);
      if (this.#first !== undefined) for (const [, h] of this.#hashers) h.update(this.#first);
      this.#first = undefined;
    }
    for (const [, h] of this.#hashers) h.update(chunk);
  }

  /** Lower-case hex digests by algorithm. */
  digest(): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.#hashers !== undefined) {
      for (const [a, h] of this.#hashers) out[a] = h.digest('hex');
    } else {
      const data = this.#first ?? EMPTY;
      for (const a of this.#algs) out[a] = digestHex(a, data);
    }
    return out;
  }
}

const EMPTY = new Uint8Array(0);

/** Options of {@link writeVerified}. */
export interface WriteVerifiedOptions {
  /** The destination directory. */
  root: string;
  /** Untrusted relative path (`a/b.txt`); it goes through `safeJoin`. */
  relPath: string;
  /** The bytes: chunks (an HTTP body), or a {@link ByteSource} that reads into pooled buffers. */
  body: AsyncIterable<Uint8Array> | ByteSource;
  /** What the Source declared: `length` and `hash` of `rs:md` (unknown algorithms are ignored). */
  expected?: { length?: number; hashes?: HashValue[] };
  /** Set as the file's modification (and access) time, e.g. the resource's `lastmod`. */
  mtime?: Date;
  /** Make the file durable before the rename. Default true. */
  fsync?: boolean;
  /**
   * With `fsync`: make a small file (a body up to 256 KiB) durable together with others (one barrier for a
   * batch, see {@link GroupCommit}) instead of with an fsync of its own. Larger files keep their own fsync. With
   * the default barrier, the small-file thread commits the file with its own group commit and this one's `settle`
   * makes the renames durable; with a given barrier, every file goes through this one.
   */
  groupCommit?: GroupCommit;
  /**
   * Called once, for a small body, when it is received and verified and needs only the disk: handed to the
   * small-file thread, or in its temporary file waiting for a group commit's barrier and the rename. The caller may
   * start its next download meanwhile.
   */
  onStaged?: () => void;
  /**
   * Where small bodies are written when they need no fsync of their own (`fsync: false`, or a `groupCommit`): a
   * {@link SmallFileWriter}, or `false` for the caller's thread. By default the process's shared thread.
   */
  smallFiles?: SmallFileWriter | false;
}

/** What was written. */
export interface WriteVerifiedResult {
  /** Absolute path of the file. */
  path: string;
  length: number;
  /** Digests computed while streaming (`md5` always, plus every known algorithm expected), lower-case hex. */
  hashes: Record<string, string>;
}

const tempDirs = new Map<string, string>();

/** Folder (inside the destination, so on the same file system) for temporary files. */
export function tempDir(root: string): string {
  let dir = tempDirs.get(root);
  if (dir === undefined) {
    dir = join(root, '.resourcesync', 'tmp');
    if (tempDirs.size > 64) tempDirs.clear();
    tempDirs.set(root, dir);
  }
  return dir;
}

const SMALL = 256 * 1024;
/** Most bytes handed to the small-file thread before a caller's slot is released early (see `onStaged`). */
const HANDED_OVER_MAX = 16 * 1024 * 1024;
const WRITE_BATCH = 1024 * 1024;
const knownDirs = new Set<string>();
let counter = 0;
const fsyncFd = promisify(fsyncCallback);
const openFd = promisify(openCallback);
const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;

const realRoots = new Map<string, string>();
const confinedDirs = new Set<string>();

/**
 * Makes sure that `dir` is (or will be, once created) really inside `root`: a folder of the
 * destination that is a symbolic link to elsewhere must not carry writes out of it. The deepest
 * existing ancestor is resolved before anything is created, so `mkdir -p` never runs through a link.
 * @throws ResourceSyncError RS_UNSAFE_PATH
 */
function confine(root: string, dir: string): void {
  if (confinedDirs.has(dir)) return;
  let realRoot = realRoots.get(root);
  if (realRoot === undefined) {
    mkdirSync(root, { recursive: true });
    realRoot = realpathSync(root);
    realRoots.set(root, realRoot);
  }
  let probe = dir;
  while (!existsSync(probe) && dirname(probe) !== probe) probe = dirname(probe);
  const real = realpathSync(probe);
  if (real !== realRoot && !real.startsWith(realRoot + sep)) {
    throw new ResourceSyncError('RS_UNSAFE_PATH', `Folder '${probe}' leads outside the destination '${root}' through a symbolic link.`, {
      data: { path: probe, root },
      recoverable: true,
    });
  }
  if (probe !== dir) ensureDirSync(dir);
  if (confinedDirs.size > 10_000) confinedDirs.clear();
  confinedDirs.add(dir);
}

function ensureDirSync(dir: string): void {
  if (knownDirs.has(dir)) return;
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw ioError(dir, 'cannot be created', err);
  }
  if (knownDirs.size > 10_000) knownDirs.clear();
  knownDirs.add(dir);
}

/**
 * Writes a small, already verified body to its temporary file on this thread (with an fsync of its own, or
 * staged for a group commit or without fsync when no small-file thread is used: {@link smallFileWriterFor}).
 * Without an fsync every step is a synchronous call (create, write, time, close: for 1 KB each costs less than a
 * thread-pool round trip). With an fsync of its own the create and the fsync run on the thread pool (they can
 * wait for the journal and the disk; several overlap) while the write, the time and the close stay synchronous.
 */
async function writeSmallTemp(tmp: string, data: Uint8Array, mtime: Date | undefined, fsync: boolean): Promise<void> {
  const create = (): number | Promise<number> => (fsync ? openFd(tmp, 'wx', 0o644) : openSync(tmp, 'wx', 0o644));
  let fd: number;
  try {
    fd = await create();
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw ioError(tmp, 'cannot be created', err);
    knownDirs.delete(dirname(tmp)); // removed under us: create it again
    ensureDirSync(dirname(tmp));
    try {
      fd = await create();
    } catch (again) {
      throw ioError(tmp, 'cannot be created', again);
    }
  }
  try {
    let off = 0;
    while (off < data.byteLength) off += writeSync(fd, data, off, data.byteLength - off);
    if (mtime !== undefined) futimesSync(fd, mtime, mtime);
    if (fsync) await fsyncFd(fd);
  } catch (err) {
    throw ioError(tmp, 'cannot be written', err); // the caller removes the temporary file
  } finally {
    closeSync(fd);
  }
}

/**
 * The thread that writes a small body, or undefined to write it here: never with an fsync of its own; `smallFiles`
 * when given; by default {@link defaultSmallFileWriter}.
 */
function smallFileWriterFor(given: SmallFileWriter | false | undefined, fsync: boolean, grouped: boolean): SmallFileWriter | undefined {
  if (fsync && !grouped) return undefined;
  if (given !== undefined) return given === false ? undefined : given;
  return defaultSmallFileWriter(fsync, grouped);
}

/**
 * The process's shared small-file thread when small bodies need no fsync of their own (`fsync: false`, or a group
 * commit), started on first call. A sync calls it when it starts, so that the thread boots (30–80 ms) while
 * discovery runs: a fresh process would otherwise hold its first files that long, and with a group commit a kill
 * soon after start would find nothing in place.
 */
export function defaultSmallFileWriter(fsync: boolean, grouped: boolean): SmallFileWriter | undefined {
  return fsync && !grouped ? undefined : SmallFileWriter.shared();
}

/**
 * Hands a small, verified body to the small-file thread: written to `tmp` and, with `to`, renamed there. Calls
 * `onStaged` as soon as it is handed over (while the thread holds less than {@link HANDED_OVER_MAX}; otherwise once
 * written). Resolves false when the thread has stopped (nothing is left behind; the caller writes the file itself).
 */
async function writeSmallOnThread(
  writer: SmallFileWriter,
  tmp: string,
  data: Uint8Array,
  mtime: Date | undefined,
  to: string | undefined,
  onStaged: () => void,
  durable = false,
): Promise<boolean> {
  const op: SmallFileOp = { tmp, data };
  if (mtime !== undefined) op.mtime = mtime.getTime();
  if (to !== undefined) op.to = to;
  if (durable) op.durable = true;
  const written = writer.run(op);
  const early = writer.pendingBytes <= HANDED_OVER_MAX;
  if (early) onStaged();
  try {
    await written;
  } catch (err) {
    if (!(err instanceof SmallFileWriterStopped)) throw ioError(tmp, 'cannot be written', err);
    rmSync(tmp, { force: true });
    return false;
  }
  if (!early) onStaged();
  return true;
}

/** Renames a staged temporary file into place on the small-file thread (here when the thread has stopped). */
async function placeOnThread(writer: SmallFileWriter, tmp: string, to: string): Promise<void> {
  try {
    await writer.run({ tmp, to });
  } catch (err) {
    if (!(err instanceof SmallFileWriterStopped)) throw ioError(to, 'cannot be written', err);
    renameIntoSync(tmp, to);
  }
}

/**
 * The rename of a staged file after its barrier: on the small-file thread, or here without one. Made outside
 * `writeVerified`: a closure made there would hold that call's whole scope (its body chunks, options and digests)
 * while the batch gathers, for each of the hundreds of files waiting (measured: 12–13 ms less scavenging per
 * 5,000 files, paired runs 2–4% faster).
 */
function placer(writer: SmallFileWriter | undefined, tmp: string, to: string): () => void | Promise<void> {
  return writer === undefined ? () => renameIntoSync(tmp, to) : () => placeOnThread(writer, tmp, to);
}

/**
 * Waits for a staged file's group commit (`place` renames it after the barrier); on failure removes the
 * temporary file. Holds only what it needs: a batch keeps hundreds of files waiting.
 */
async function committed<T>(group: GroupCommit, tmp: string, finalPath: string, place: () => void | Promise<void>, result: T): Promise<T> {
  try {
    await group.commit(tmp, finalPath, place);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  return result;
}

/**
 * Hands a small, verified body to the small-file thread, which writes it, makes it durable with its own group
 * commit and renames it (`SmallFileOp.durable`); the rename is then recorded in `group`, whose `settle` makes it
 * durable. When the thread has stopped, the file is written here and committed through `group`. On failure the
 * temporary file is removed. Made outside `writeVerified` (see {@link placer}): it holds only what it needs while
 * the batch gathers.
 */
async function committedOnThread<T>(
  writer: SmallFileWriter,
  group: GroupCommit,
  tmp: string,
  data: Uint8Array,
  mtime: Date | undefined,
  finalPath: string,
  onStaged: () => void,
  result: T,
): Promise<T> {
  try {
    if (await writeSmallOnThread(writer, tmp, data, mtime, finalPath, onStaged, true)) {
      group.placed(finalPath);
      return result;
    }
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  return committedHere(group, tmp, data, mtime, finalPath, onStaged, result);
}

/**
 * Writes a small, verified body to its temporary file here (no small-file thread, or it stopped) and commits it
 * through `group`. On failure the temporary file is removed.
 */
async function committedHere<T>(
  group: GroupCommit,
  tmp: string,
  data: Uint8Array,
  mtime: Date | undefined,
  finalPath: string,
  onStaged: () => void,
  result: T,
): Promise<T> {
  try {
    await writeSmallTemp(tmp, data, mtime, false);
  } catch (err) {
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
  onStaged();
  return committed(group, tmp, finalPath, placer(undefined, tmp, finalPath), result);
}

/**
 * `fn`, called at most once. Made outside `writeVerified`: a closure made there would hold that call's whole scope
 * (its body chunks among it) for as long as a small file waits for its group commit.
 */
function once(fn: (() => void) | undefined): () => void {
  let called = fn === undefined;
  return () => {
    if (called) return;
    called = true;
    fn!();
  };
}

/** {@link renameInto} with a synchronous rename (small files). */
function renameIntoSync(tmp: string, finalPath: string): void {
  const parent = dirname(finalPath);
  ensureDirSync(parent);
  try {
    renameSync(tmp, finalPath);
  } catch (err) {
    knownDirs.delete(parent);
    if ((err as { code?: string }).code !== 'ENOENT') throw ioError(finalPath, 'cannot be written', err);
    ensureDirSync(parent);
    try {
      renameSync(tmp, finalPath);
    } catch (again) {
      knownDirs.delete(parent);
      throw ioError(finalPath, 'cannot be written', again);
    }
  }
}

/** Renames a finished temporary file into place, creating (or re-creating) the parent folders. */
async function renameInto(tmp: string, finalPath: string): Promise<void> {
  const parent = dirname(finalPath);
  ensureDirSync(parent);
  try {
    await rename(tmp, finalPath);
  } catch (err) {
    knownDirs.delete(parent);
    if ((err as { code?: string }).code !== 'ENOENT') throw ioError(finalPath, 'cannot be written', err);
    ensureDirSync(parent);
    try {
      await rename(tmp, finalPath);
    } catch (again) {
      knownDirs.delete(parent);
      throw ioError(finalPath, 'cannot be written', again);
    }
  }
}

async function ensureDir(dir: string): Promise<void> {
  if (knownDirs.has(dir)) return;
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    throw ioError(dir, 'cannot be created', err);
  }
  if (knownDirs.size > 10_000) knownDirs.clear();
  knownDirs.add(dir);
}

function ioError(path: string, what: string, cause: unknown): ResourceSyncError {
  const msg = cause instanceof Error ? cause.message : String(cause);
  return new ResourceSyncError('RS_IO', `Path '${path}' ${what}: ${msg}.`, { data: { path }, cause, recoverable: true });
}

function lengthMismatch(relPath: string, expected: number, actual: number, truncatedAt?: boolean): ResourceSyncError {
  return new ResourceSyncError(
    'RS_LENGTH_MISMATCH',
    `Resource '${relPath}' has ${truncatedAt ? 'more than ' : ''}${actual} bytes, expected '${expected}'.`,
    { data: { path: relPath, expected, actual }, recoverable: true },
  );
}

/**
 * Streams a resource to disk with its fixity checked on the way: the bytes go to a temporary file in
 * `<root>/.resourcesync/tmp/` while md5 (always, for the state) and every other known algorithm the Source
 * declared are computed; length and each declared hash are compared; the file is made durable (an fsync of
 * its own, or with a `groupCommit` one barrier for a batch of small files), given `mtime` and renamed into
 * place (`safeJoin(root, relPath)`, parents created). A mismatch throws `RS_LENGTH_MISMATCH` or
 * `RS_HASH_MISMATCH` (recoverable) and leaves nothing behind: an unverified copy is never committed.
 * Bodies that fit in 256 KiB are buffered and written with one call (without fsync of their own, by default
 * on the {@link SmallFileWriter} thread, which writes and renames them in batches); larger ones are written
 * here in batches of about 1 MiB; a {@link ByteSource} is read into two pooled 1 MiB buffers, one written while
 * the other is filled.
 * @see Z39.99 §7 (`hash`, `length`), §5.2 (audit relies on them)
 * @example
 * const r = await writeVerified({ root: '/mirror', relPath: 'a/b.txt', body: res.body,
 *   expected: { length: 12, hashes: parseHashes('md5:…') } });
 */
export async function writeVerified(options: WriteVerifiedOptions): Promise<WriteVerifiedResult> {
  const { root, relPath } = options;
  const finalPath = safeJoin(root, relPath);
  confine(root, dirname(finalPath));
  const expectedLength = options.expected?.length;
  const algs = new Set<HashAlgorithm>(['md5']);
  for (const h of options.expected?.hashes ?? []) if (isKnownHashAlgorithm(h.algorithm)) algs.add(h.algorithm);
  const digests = new BodyDigests(algs);
  const fsync = options.fsync ?? true;

  const onStaged = once(options.onStaged);
  const tmpDir = tempDir(root);
  if (!knownDirs.has(tmpDir)) await ensureDir(tmpDir);
  const tmp = `${tmpDir}${sep}${tag}-${(counter++).toString(36)}.tmp`;
  const mtime = options.mtime !== undefined && !Number.isNaN(options.mtime.getTime()) ? options.mtime : undefined;

  let length = 0;
  let handle: FileHandle | undefined;
  // small bodies are kept whole; larger ones are written in batches of about 1 MiB (one `writev` each), one batch
  // in flight while the next is received and hashed
  let small: Uint8Array[] = [];
  let pending = 0;
  let inFlight: Promise<void> | undefined;
  let writeError: unknown;
  const writeBatch = async (h: FileHandle): Promise<void> => {
    const batch = small;
    const bytes = pending;
    small = [];
    pending = 0;
    if (inFlight !== undefined) await inFlight;
    if (writeError !== undefined) throw ioError(tmp, 'cannot be written', writeError);
    inFlight = h.writev(batch).then(
      (r) => {
        if (r.bytesWritten !== bytes) writeError = new Error(`short write (${r.bytesWritten} of ${bytes} bytes)`);
      },
      (e: unknown) => {
        writeError = e;
      },
    );
  };
  const openTemp = async (): Promise<FileHandle> =>
    open(tmp, 'wx', 0o644).catch((e: unknown) => {
      throw ioError(tmp, 'cannot be created', e);
    });
  try {
    const source = isByteSource(options.body) ? options.body : undefined;
    if (source !== undefined && expectedLength !== undefined && expectedLength <= SMALL) {
      // a small body read whole into one buffer (one byte more than declared, to catch a longer body)
      const buf = Buffer.allocUnsafe(expectedLength + 1);
      while (length < buf.length) {
        const n = await source.read(buf.subarray(length));
        if (n === 0) break;
        length += n;
      }
      if (length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
      const data = buf.subarray(0, length);
      digests.update(data);
      small.push(data);
    } else if (source !== undefined) {
      // two pooled buffers: one is read into and hashed while the other is written; no allocation per chunk
      const bufs = [takeBuffer(), takeBuffer()] as const;
      try {
        for (let k = 0; ; k++) {
          const buf = k % 2 === 0 ? bufs[0] : bufs[1];
          const n = await source.read(buf);
          if (n === 0) break;
          const view = buf.subarray(0, n);
          length += n;
          if (expectedLength !== undefined && length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
          digests.update(view, true); // the pooled buffer is read into again: hashed now
          handle ??= await openTemp();
          if (inFlight !== undefined) await inFlight; // the other buffer's write is done before it is read into again
          if (writeError !== undefined) throw ioError(tmp, 'cannot be written', writeError);
          inFlight = writeFully(handle, view).catch((e: unknown) => {
            writeError = e;
          });
        }
        await inFlight;
      } finally {
        if (inFlight !== undefined) await inFlight;
        inFlight = undefined;
        giveBack(bufs);
      }
      if (writeError !== undefined) throw ioError(tmp, 'cannot be written', writeError);
      handle ??= await openTemp(); // an empty body
    }
    for await (const chunk of source === undefined ? (options.body as AsyncIterable<Uint8Array>) : []) {
      length += chunk.byteLength;
      if (expectedLength !== undefined && length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
      digests.update(chunk);
      small.push(chunk);
      pending += chunk.byteLength;
      if (handle === undefined && length <= SMALL) continue;
      handle ??= await openTemp();
      if (pending >= WRITE_BATCH || small.length >= 256) await writeBatch(handle);
    }
    if (handle !== undefined) {
      if (small.length > 0) await writeBatch(handle);
      await inFlight;
      inFlight = undefined;
      if (writeError !== undefined) throw ioError(tmp, 'cannot be written', writeError);
    }
    if (expectedLength !== undefined && length !== expectedLength) throw lengthMismatch(relPath, expectedLength, length);
    const hashes = digests.digest();
    for (const e of options.expected?.hashes ?? []) {
      const actual = hashes[e.algorithm];
      if (actual !== undefined && actual !== e.digest.toLowerCase()) {
        throw new ResourceSyncError('RS_HASH_MISMATCH', `Resource '${relPath}' has ${e.algorithm} '${actual}', expected '${e.digest}'.`, {
          data: { path: relPath, algorithm: e.algorithm, expected: e.digest, actual },
          recoverable: true,
        });
      }
    }
    if (handle === undefined) {
      const data = small.length === 1 ? small[0]! : Buffer.concat(small);
      const group = fsync ? options.groupCommit : undefined;
      const writer = smallFileWriterFor(options.smallFiles, fsync, group !== undefined);
      const result = { path: finalPath, length, hashes };
      if (writer !== undefined && group?.defaultBarrier === true) {
        // returned, not awaited: this call's frame is let go while the thread's batch gathers
        return committedOnThread(writer, group, tmp, data, mtime, finalPath, onStaged, result);
      }
      if (writer !== undefined && (await writeSmallOnThread(writer, tmp, data, mtime, group === undefined ? finalPath : undefined, onStaged))) {
        // returned, not awaited: this call's frame (body, digests, closures) is let go while the batch gathers
        return group === undefined ? result : committed(group, tmp, finalPath, placer(writer, tmp, finalPath), result);
      }
      if (group !== undefined) return committedHere(group, tmp, data, mtime, finalPath, onStaged, result);
      await writeSmallTemp(tmp, data, mtime, fsync);
      if (fsync) await renameInto(tmp, finalPath);
      else renameIntoSync(tmp, finalPath);
      return result;
    }
    // A large file is synced on its own even with a group commit: its fsync costs about what writing its bytes
    // costs anyway, and it overlaps with the other downloads instead of waiting for a batch.
    if (mtime !== undefined) await handle.utimes(mtime, mtime);
    if (fsync) await handle.sync();
    await handle.close();
    handle = undefined;
    await renameInto(tmp, finalPath);
    return { path: finalPath, length, hashes };
  } catch (err) {
    if (inFlight !== undefined) await inFlight;
    if (handle !== undefined) await handle.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}

/** Removes leftover temporary files (from a sync that was killed). */
export async function cleanTemp(root: string): Promise<void> {
  await rm(tempDir(root), { recursive: true, force: true });
  for (const d of knownDirs) if (d.startsWith(root)) knownDirs.delete(d);
}
