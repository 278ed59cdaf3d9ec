import { open, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { isKnownHashAlgorithm, type HashValue } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import { safeJoin } from '../node/safe-path.js';
import { BodyDigests } from '../node/body-digests.js';
import { confineDir, DestinationRoot, ioError } from '../node/destination-root.js';
import { FsyncEach, type Durability, type SmallFile } from '../node/durability.js';
import { writeSmallFileSync } from '../node/small-file.js';

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

async function writeFully(h: FileHandle, data: Uint8Array): Promise<void> {
  for (let off = 0; off < data.byteLength; ) {
    const { bytesWritten } = await h.write(data, off, data.byteLength - off);
    off += bytesWritten;
  }
}

/** Options of {@link writeVerified}. */
export interface WriteVerifiedOptions {
  /** The destination: a folder, or the run's {@link DestinationRoot} (temporary files, buffers reused). */
  root: string | DestinationRoot;
  /** Untrusted relative path (`a/b.txt`); it goes through `safeJoin`. */
  relPath: string;
  /** The bytes: chunks (an HTTP body), or a {@link ByteSource} that reads into pooled buffers. */
  body: AsyncIterable<Uint8Array> | ByteSource;
  /** What the Source declared: `length` and `hash` of `rs:md` (unknown algorithms are ignored). */
  expected?: { length?: number; hashes?: HashValue[] };
  /** Set as the file's modification (and access) time, e.g. the resource's `lastmod`. */
  mtime?: Date;
  /**
   * How the verified file is made durable and put in place (`commit`); the caller settles it at the end of its
   * run. Default: an fsync of the file, and of its folder before this call resolves ({@link FsyncEach}).
   */
  durability?: Durability;
  /**
   * Called once the body is received in full and verified, before it is committed: the caller may start its
   * next download while this file waits for the disk (a group commit's batch).
   */
  onVerified?: () => void;
}

/** What was written. */
export interface WriteVerifiedResult {
  /** Absolute path of the file. */
  path: string;
  length: number;
  /** Digests computed while streaming (`md5` always, plus every known algorithm expected), lower-case hex. */
  hashes: Record<string, string>;
}

/** Bodies up to this size are kept whole and written with one call. */
const SMALL = 256 * 1024;
const WRITE_BATCH = 1024 * 1024;

/**
 * Puts a verified file in place: the confinement check of its folder, then the commit of its temporary file.
 * A small body (`data`) is written to its temporary file here first, or handed whole to a durability that
 * writes small files itself (`writeSmall`). On failure the temporary file is removed and the promise rejects
 * with a recoverable `RS_IO` (or the `ResourceSyncError` met). Made outside `writeVerified`: a closure made
 * there would hold that call's whole scope (its body chunks, options and digests) for as long as the file
 * waits for its group commit.
 */
async function committed<T>(durability: Durability, own: boolean, file: Omit<SmallFile, 'data'>, data: Uint8Array | undefined, result: T): Promise<T> {
  try {
    if (data !== undefined && durability.writeSmall !== undefined) await durability.writeSmall({ ...file, data });
    else {
      if (data !== undefined) writeSmallFileSync({ ...file, data }, false);
      else confineDir(file.realRoot, dirname(file.finalPath), file.root);
      await durability.commit(file.tmp, file.finalPath);
    }
    if (own) await durability.settle();
  } catch (err) {
    await rm(file.tmp, { force: true }).catch(() => undefined);
    throw err instanceof ResourceSyncError ? err : ioError(file.finalPath, 'cannot be written', err);
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

/**
 * Streams a resource to disk with its fixity checked on the way: the bytes go to a temporary file in
 * `<root>/.resourcesync/tmp/` while md5 (always, for the state) and every other known algorithm the Source
 * declared are computed; length and each declared hash are compared; the file is given `mtime` and handed to
 * `durability`, which makes it durable and renames it into place (`safeJoin(root, relPath)`, parents created).
 * Right before the commit, the target's folder is checked to lie inside the destination once symbolic links
 * are resolved (`RS_UNSAFE_PATH`). A mismatch throws `RS_LENGTH_MISMATCH` or `RS_HASH_MISMATCH` (recoverable)
 * and leaves nothing behind: an unverified copy is never committed. Bodies that fit in 256 KiB are buffered and
 * written with one call; larger ones in batches of about 1 MiB; a {@link ByteSource} is read into two pooled
 * 1 MiB buffers, one written while the other is filled.
 * @see Z39.99 §7 (`hash`, `length`), §5.2 (audit relies on them)
 * @example
 * const r = await writeVerified({ root: '/mirror', relPath: 'a/b.txt', body: res.body,
 *   expected: { length: 12, hashes: parseHashes('md5:…') } });
 */
export async function writeVerified(options: WriteVerifiedOptions): Promise<WriteVerifiedResult> {
  const { relPath } = options;
  const dest = typeof options.root === 'string' ? new DestinationRoot(options.root) : options.root;
  const finalPath = safeJoin(dest.path, relPath);
  const expectedLength = options.expected?.length;
  const algs = new Set<HashAlgorithm>(['md5']);
  for (const h of options.expected?.hashes ?? []) if (isKnownHashAlgorithm(h.algorithm)) algs.add(h.algorithm);
  const digests = new BodyDigests(algs);
  const own = options.durability === undefined;
  const durability: Durability = options.durability ?? new FsyncEach();
  const tmp = await dest.tempPath();
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
      const bufs = [dest.takeBuffer(), dest.takeBuffer()] as const;
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
        dest.giveBack(bufs);
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
    const result = { path: finalPath, length, hashes };
    // a small body is written whole (one create, write, time and close) where the durability says, right before
    // its commit; a larger one is complete in its temporary file
    let data: Uint8Array | undefined;
    if (handle === undefined) data = small.length === 1 ? small[0]! : Buffer.concat(small);
    else {
      if (mtime !== undefined) await handle.utimes(mtime, mtime);
      await handle.close();
      handle = undefined;
    }
    small = [];
    options.onVerified?.();
    const file = { tmp, mtimeMs: mtime?.getTime(), finalPath, realRoot: dest.realPath, root: dest.path };
    // returned, not awaited: this call's frame (body, digests, closures) is let go while the file waits
    return committed(durability, own, file, data, result);
  } catch (err) {
    if (inFlight !== undefined) await inFlight;
    if (handle !== undefined) await handle.close().catch(() => undefined);
    await rm(tmp, { force: true }).catch(() => undefined);
    throw err;
  }
}


