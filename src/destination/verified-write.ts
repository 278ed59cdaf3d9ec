import { createHash, randomBytes, type Hash } from 'node:crypto';
import { closeSync, futimesSync, mkdirSync, open as openCallback, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { isKnownHashAlgorithm, nodeHashName, type HashValue } from '../core/hash.js';
import type { HashAlgorithm } from '../core/constants.js';
import { safeJoin } from '../node/safe-path.js';

/** Options of {@link writeVerified}. */
export interface WriteVerifiedOptions {
  /** The destination directory. */
  root: string;
  /** Untrusted relative path (`a/b.txt`); it goes through `safeJoin`. */
  relPath: string;
  body: AsyncIterable<Uint8Array>;
  /** What the Source declared: `length` and `hash` of `rs:md` (unknown algorithms are ignored). */
  expected?: { length?: number; hashes?: HashValue[] };
  /** Set as the file's modification (and access) time, e.g. the resource's `lastmod`. */
  mtime?: Date;
  /** fsync the file before the rename. Default true. */
  fsync?: boolean;
}

/** What was written. */
export interface WriteVerifiedResult {
  /** Absolute path of the file. */
  path: string;
  length: number;
  /** Digests computed while streaming (`md5` always, plus every known algorithm expected), lower-case hex. */
  hashes: Record<string, string>;
}

/** Folder (inside the destination, so on the same file system) for temporary files. */
export function tempDir(root: string): string {
  return join(root, '.resourcesync', 'tmp');
}

const SMALL = 256 * 1024;
const WRITE_BATCH = 1024 * 1024;
const knownDirs = new Set<string>();
let counter = 0;
const openFd = promisify(openCallback);
const tag = `${process.pid}-${randomBytes(4).toString('hex')}`;

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
 * Writes a small, already verified body: the file is created on the thread pool (creating an inode is the slow
 * part, and several proceed at once), then written, timed and closed with synchronous calls (for 1 KB these cost
 * less than the thread-pool round trips of `fs.promises`), then renamed into place.
 */
async function commitSmall(tmp: string, finalPath: string, data: Uint8Array, mtime: Date | undefined): Promise<void> {
  let fd: number;
  try {
    fd = await openFd(tmp, 'wx', 0o644);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw err;
    knownDirs.delete(dirname(tmp)); // removed under us: create it again
    ensureDirSync(dirname(tmp));
    fd = await openFd(tmp, 'wx', 0o644);
  }
  try {
    let off = 0;
    while (off < data.byteLength) off += writeSync(fd, data, off, data.byteLength - off);
    if (mtime !== undefined) futimesSync(fd, mtime, mtime);
  } finally {
    closeSync(fd);
  }
  await renameInto(tmp, finalPath);
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
 * declared are computed; length and each declared hash are compared; the file is fsynced, given `mtime` and
 * renamed into place (`safeJoin(root, relPath)`, parents created). A mismatch throws `RS_LENGTH_MISMATCH`
 * or `RS_HASH_MISMATCH` (recoverable) and leaves nothing behind: an unverified copy is never committed.
 * Bodies that fit in 256 KiB are buffered and written with one call.
 * @see Z39.99 §7 (`hash`, `length`), §5.2 (audit relies on them)
 * @example
 * const r = await writeVerified({ root: '/mirror', relPath: 'a/b.txt', body: res.body,
 *   expected: { length: 12, hashes: parseHashes('md5:…') } });
 */
export async function writeVerified(options: WriteVerifiedOptions): Promise<WriteVerifiedResult> {
  const { root, relPath } = options;
  const finalPath = safeJoin(root, relPath);
  const expectedLength = options.expected?.length;
  const algs = new Set<HashAlgorithm>(['md5']);
  for (const h of options.expected?.hashes ?? []) if (isKnownHashAlgorithm(h.algorithm)) algs.add(h.algorithm);
  const hashers = [...algs].map((a) => [a, createHash(nodeHashName(a))] as [HashAlgorithm, Hash]);
  const fsync = options.fsync ?? true;

  const tmpDir = tempDir(root);
  if (!knownDirs.has(tmpDir)) await ensureDir(tmpDir);
  const tmp = join(tmpDir, `${tag}-${(counter++).toString(36)}.tmp`);
  const mtime = options.mtime !== undefined && !Number.isNaN(options.mtime.getTime()) ? options.mtime : undefined;

  let length = 0;
  let handle: FileHandle | undefined;
  let inflight: Promise<unknown> | undefined;
  const small: Uint8Array[] = [];
  try {
    // Large bodies: chunks are gathered into writes of about 1 MiB, one in flight while the next is hashed.
    let gathered: Uint8Array[] = [];
    let gatheredBytes = 0;
    const flushGathered = async (): Promise<void> => {
      const data = gathered.length === 1 ? gathered[0]! : Buffer.concat(gathered, gatheredBytes);
      gathered = [];
      gatheredBytes = 0;
      await inflight;
      inflight = handle!.write(data);
      inflight.catch(() => undefined); // awaited later; never unhandled
    };
    for await (const chunk of options.body) {
      length += chunk.byteLength;
      if (expectedLength !== undefined && length > expectedLength) throw lengthMismatch(relPath, expectedLength, length, true);
      for (const [, h] of hashers) h.update(chunk);
      if (handle === undefined && length <= SMALL) {
        small.push(chunk);
        continue;
      }
      if (handle === undefined) {
        handle = await open(tmp, 'wx', 0o644).catch((e: unknown) => {
          throw ioError(tmp, 'cannot be created', e);
        });
        gathered = small.splice(0);
        gatheredBytes = length - chunk.byteLength;
      }
      gathered.push(chunk);
      gatheredBytes += chunk.byteLength;
      if (gatheredBytes >= WRITE_BATCH) await flushGathered();
    }
    if (handle !== undefined && gatheredBytes > 0) await flushGathered();
    await inflight;
    if (expectedLength !== undefined && length !== expectedLength) throw lengthMismatch(relPath, expectedLength, length);
    const hashes: Record<string, string> = {};
    for (const [a, h] of hashers) hashes[a] = h.digest('hex');
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
      if (!fsync) {
        await commitSmall(tmp, finalPath, data, mtime);
        return { path: finalPath, length, hashes };
      }
      handle = await open(tmp, 'wx', 0o644);
      await handle.writeFile(data);
    }
    if (mtime !== undefined) await handle.utimes(mtime, mtime);
    if (fsync) await handle.sync();
    await handle.close();
    handle = undefined;
    await renameInto(tmp, finalPath);
    return { path: finalPath, length, hashes };
  } catch (err) {
    await inflight?.catch(() => undefined);
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
