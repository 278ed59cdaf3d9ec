import { ResourceSyncError } from '../core/errors.js';
import { isKnownHashAlgorithm, type HashValue } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import { safeRelativePath } from '../node/safe-path.js';
import { BodyDigests } from '../node/body-digests.js';
import { DestinationRoot, ioError } from '../node/destination-root.js';
import type { Durability } from '../node/durability.js';
import { LocalDirectory } from './local-directory.js';
import type { MirrorStorage, StagedWrite } from './mirror-storage.js';

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

/** Large buffers reused from file to file of a run (a {@link DestinationRoot} is one). */
export interface BufferPool {
  /** A 1 MiB buffer. */
  takeBuffer(): Buffer;
  giveBack(buffers: readonly Buffer[]): void;
}

/** Options of {@link writeVerified}. */
export interface WriteVerifiedOptions {
  /**
   * Where the verified body goes: the run's {@link MirrorStorage} (settled by the caller). Without it, the
   * folder `root` as a `LocalDirectory` with `durability`.
   */
  storage?: MirrorStorage;
  /** Without `storage`: the destination, a folder or the run's {@link DestinationRoot} (temporary files, buffers reused). */
  root?: string | DestinationRoot;
  /** Untrusted relative path (`a/b.txt`, a manifest's `/a/b.txt`): the key, once checked (`safeRelativePath`). */
  relPath: string;
  /** The bytes: chunks (an HTTP body), or a {@link ByteSource} that reads into pooled buffers. */
  body: AsyncIterable<Uint8Array> | ByteSource;
  /** What the Source declared: `length` and `hash` of `rs:md` (unknown algorithms are ignored). */
  expected?: { length?: number; hashes?: HashValue[] };
  /** Set as the file's modification (and access) time, e.g. the resource's `lastmod`. */
  mtime?: Date;
  /**
   * Without `storage`: how the verified file is made durable and put in place (`commit`); the caller settles
   * it at the end of its run. Default: an fsync of the file, and of its folder before this call resolves
   * (`FsyncEach`).
   */
  durability?: Durability;
  /** Where a {@link ByteSource} is read into. Default: the `LocalDirectory`'s or `root`'s pool, else two new buffers. */
  buffers?: BufferPool;
  /**
   * Called once the body is received in full and verified, before it is committed: the caller may start its
   * next download while this file waits for the disk (a group commit's batch).
   */
  onVerified?: () => void;
}

/** What was written. */
export interface WriteVerifiedResult {
  /** Absolute path of the file in a local folder; the key in any other storage. */
  path: string;
  length: number;
  /** Digests computed while streaming (`md5` always, plus every known algorithm expected), lower-case hex. */
  hashes: Record<string, string>;
}

/** A {@link ByteSource} body declared this small is read whole into one buffer. */
const SMALL = 256 * 1024;
const NOTHING = new Uint8Array(0);

/**
 * Commits a verified body (and settles the storage when this call owns it). Made outside `writeVerified`: a
 * closure made there would hold that call's whole scope (its body chunks, options and digests) for as long as
 * the file waits for its group commit.
 */
async function committed<T>(staged: StagedWrite, ownStorage: MirrorStorage | undefined, where: string, result: T): Promise<T> {
  try {
    await staged.commit();
    if (ownStorage !== undefined) await ownStorage.settle();
  } catch (err) {
    throw err instanceof ResourceSyncError ? err : ioError(where, 'cannot be written', err);
  }
  return result;
}

function lengthMismatch(relPath: string, expected: number, actual: number, truncatedAt?: boolean): ResourceSyncError {
  return new ResourceSyncError(
    'RS_LENGTH_MISMATCH',
    `Resource '${relPath}' has ${truncatedAt ? 'more than ' : ''}${actual} bytes, expected '${expected}'.`,
    { data: { path: relPath, expected, actual }, recoverable: true },
  );
}

/** How a body is received: where it goes, what it must not exceed, what it is hashed with. */
interface Receiving {
  staged: StagedWrite;
  digests: BodyDigests;
  expectedLength: number | undefined;
  relPath: string;
  buffers: BufferPool | undefined;
}

/**
 * Reads a {@link ByteSource} into the stage: a small declared body whole into one buffer (one byte more than
 * declared, to catch a longer body), a larger one into two pooled 1 MiB buffers, one hashed while the other is
 * written. Returns the length read.
 */
async function receiveBytes(source: ByteSource, into: Receiving): Promise<number> {
  const { staged, digests, expectedLength, relPath } = into;
  let length = 0;
  if (expectedLength !== undefined && expectedLength <= SMALL) {
    const buf = Buffer.allocUnsafe(expectedLength + 1);
    while (length < buf.length) {
      const n = await source.read(buf.subarray(length));
      if (n === 0) break;
      length += n;
    }
    if (length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
    const data = buf.subarray(0, length);
    digests.update(data);
    await staged.write(data);
    return length;
  }
  const pool = into.buffers;
  const bufs = pool === undefined ? [Buffer.allocUnsafeSlow(1024 * 1024), Buffer.allocUnsafeSlow(1024 * 1024)] : [pool.takeBuffer(), pool.takeBuffer()];
  try {
    for (let k = 0; ; k++) {
      const buf = bufs[k % 2]!;
      const n = await source.read(buf);
      if (n === 0) break;
      const view = buf.subarray(0, n);
      length += n;
      if (expectedLength !== undefined && length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
      digests.update(view, true); // the pooled buffer is read into again: hashed now
      await staged.write(view, { reused: true }); // the other buffer's write is done once this resolves
    }
  } finally {
    // an empty write lets go of the last buffer written (and makes the file of an empty body)
    await staged.write(NOTHING, { reused: true }).catch(() => undefined);
    pool?.giveBack(bufs);
  }
  return length;
}

/** Reads chunks into the stage; returns the length read. */
async function receiveChunks(body: AsyncIterable<Uint8Array>, into: Receiving): Promise<number> {
  const { staged, digests, expectedLength, relPath } = into;
  let length = 0;
  for await (const chunk of body) {
    length += chunk.byteLength;
    if (expectedLength !== undefined && length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
    digests.update(chunk);
    await staged.write(chunk);
  }
  return length;
}

/** Throws `RS_HASH_MISMATCH` for the first declared hash that the body does not have. */
function checkHashes(relPath: string, expected: readonly HashValue[], hashes: Record<string, string>): void {
  for (const e of expected) {
    const actual = hashes[e.algorithm];
    if (actual !== undefined && actual !== e.digest.toLowerCase()) {
      throw new ResourceSyncError('RS_HASH_MISMATCH', `Resource '${relPath}' has ${e.algorithm} '${actual}', expected '${e.digest}'.`, {
        data: { path: relPath, algorithm: e.algorithm, expected: e.digest, actual },
        recoverable: true,
      });
    }
  }
}

/** The storage of a call: the caller's, or a `LocalDirectory` of `root` (owned, settled here, without a durability). */
function storageOf(options: WriteVerifiedOptions): { storage: MirrorStorage; own: boolean } {
  if (options.storage !== undefined) return { storage: options.storage, own: false };
  if (options.root === undefined) throw new ResourceSyncError('RS_INVALID_ARGUMENT', 'writeVerified needs a storage or a root.', { data: {} });
  const durability = options.durability === undefined ? {} : { durability: options.durability };
  return { storage: new LocalDirectory(options.root, durability), own: options.durability === undefined };
}

/**
 * Streams a resource into the mirror's storage with its fixity checked on the way: the bytes are staged
 * (in a local folder: a temporary file in `<root>/.resourcesync/tmp/`) while md5 (always, for the state) and
 * every other known algorithm the Source declared are computed; length and each declared hash are compared;
 * only then is the stage committed, which makes the copy visible under its key (in a local folder: the file
 * is given `mtime` and handed to the durability, which makes it durable and renames it into place, after a
 * check that its folder lies inside the destination once symbolic links are resolved, `RS_UNSAFE_PATH`). A
 * mismatch throws `RS_LENGTH_MISMATCH` or `RS_HASH_MISMATCH` (recoverable) and leaves nothing behind: an
 * unverified copy is never committed. A {@link ByteSource} is read into two pooled 1 MiB buffers, one written
 * while the other is filled.
 * @see Z39.99 §7 (`hash`, `length`), §5.2 (audit relies on them)
 * @example
 * const r = await writeVerified({ storage, relPath: 'a/b.txt', body: res.body,
 *   expected: { length: 12, hashes: parseHashes('md5:…') } });
 */
export async function writeVerified(options: WriteVerifiedOptions): Promise<WriteVerifiedResult> {
  const { relPath } = options;
  const key = safeRelativePath(relPath);
  const { storage, own } = storageOf(options);
  const local = storage instanceof LocalDirectory ? storage : undefined;
  const where = local === undefined ? key : local.pathOf(key);
  const expectedLength = options.expected?.length;
  const algs = new Set<HashAlgorithm>(['md5']);
  for (const h of options.expected?.hashes ?? []) if (isKnownHashAlgorithm(h.algorithm)) algs.add(h.algorithm);
  const digests = new BodyDigests(algs);
  const mtime = options.mtime !== undefined && !Number.isNaN(options.mtime.getTime()) ? options.mtime.getTime() : undefined;
  const staged = await storage.stage(key, { mtimeMs: mtime, sizeHint: expectedLength });
  let result: WriteVerifiedResult;
  try {
    const buffers = options.buffers ?? local?.root;
    const receiving: Receiving = { staged, digests, expectedLength, relPath, buffers };
    const length = isByteSource(options.body) ? await receiveBytes(options.body, receiving) : await receiveChunks(options.body, receiving);
    if (expectedLength !== undefined && length !== expectedLength) throw lengthMismatch(relPath, expectedLength, length);
    const hashes = digests.digest();
    checkHashes(relPath, options.expected?.hashes ?? [], hashes);
    result = { path: where, length, hashes };
  } catch (err) {
    await staged.abort();
    throw err;
  }
  options.onVerified?.();
  // returned, not awaited: this call's frame (body, digests) is let go while the file waits
  return committed(staged, own ? storage : undefined, where, result);
}
