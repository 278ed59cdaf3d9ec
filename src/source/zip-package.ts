/**
 * Writes one ZIP package of a Resource Dump or Change Dump: `manifest.xml` at the top level, then the
 * bitstreams at the manifest's paths, stored (not deflated) and streamed from their files (no
 * whole-file buffering). yazl switches to ZIP64 by itself past 4 GiB or 65,535 entries. The package is
 * written to a temporary file and renamed into place; its length and md5 are measured on the way out.
 * Each bitstream is hashed while it is read and checked against the expected md5, so a file that
 * changed after the inventory cannot slip into a package under a stale manifest entry.
 * @see Z39.99 §11.1, §11.2, §13.1, §13.2
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import yazl from 'yazl';
import { ResourceSyncError } from '../core/errors.js';

/**
 * yazl computes each entry's CRC-32 through `buffer-crc32`, a table-driven JavaScript loop (about
 * 270 MB/s here), which bounds stored packaging well below the disk. `node:zlib` has had `crc32`
 * since Node 20.15 (about 2 GB/s) and gives the same values with the same chaining, so the module
 * yazl itself loads is pointed at it. Strings and Buffer seeds keep the original code path.
 */
function useNativeCrc32(): void {
  if (typeof zlib.crc32 !== 'function') return;
  const fromYazl = createRequire(createRequire(import.meta.url).resolve('yazl'));
  const mod = fromYazl('buffer-crc32') as { unsigned: (buf: unknown, previous?: unknown) => number; nativeCrc32?: boolean };
  if (mod.nativeCrc32 === true) return;
  const original = mod.unsigned;
  mod.unsigned = (buf: unknown, previous?: unknown): number =>
    buf instanceof Uint8Array && (previous === undefined || typeof previous === 'number')
      ? zlib.crc32(buf, previous ?? 0)
      : original(buf, previous);
  mod.nativeCrc32 = true;
}
useNativeCrc32();

/** One bitstream of a package. */
export interface PackageItem {
  /** Path inside the ZIP, without the leading slash (the manifest writes it with one). */
  zipPath: string;
  /** The file to read. */
  file: string;
  /** Expected length. */
  size: number;
  /** Last modification (the ZIP entry's time). */
  mtimeMs: number;
  /** Expected md5 (hex); when given, a mismatch fails the package with RS_HASH_MISMATCH. */
  md5?: string;
  /**
   * The published bytes from the file's stored ones (an HTML page given its discovery link): the file is then
   * read whole and the result, of `size` bytes and `md5`, is packaged.
   */
  rewrite?: (stored: Buffer) => Uint8Array;
}

/** The written package. */
export interface PackageResult {
  length: number;
  md5: string;
}

/**
 * Writes `outFile` atomically as a ZIP package with `manifest` as `manifest.xml` and the `items`.
 * @example await writeZipPackage('/pub/part1.zip', manifestBytes, [{ zipPath: 'resources/a.txt', file: '/srv/a.txt', size: 5, mtimeMs }])
 */
export async function writeZipPackage(
  outFile: string,
  manifest: Uint8Array,
  items: readonly PackageItem[],
  options: { signal?: AbortSignal; now?: () => number } = {},
): Promise<PackageResult> {
  const zip = new yazl.ZipFile();
  const now = new Date((options.now ?? Date.now)());
  zip.addBuffer(Buffer.from(manifest.buffer, manifest.byteOffset, manifest.byteLength), 'manifest.xml', { compress: false, mtime: now });
  const mismatches: string[] = [];
  // yazl does not listen for errors of the streams it is given: a read error fails the whole package.
  const fail = (err: unknown): void => {
    (zip.outputStream as NodeJS.ReadableStream & { destroy(e?: unknown): void }).destroy(err);
  };
  for (const item of items) {
    zip.addReadStreamLazy(item.zipPath, { compress: false, size: item.size, mtime: new Date(item.mtimeMs) }, (cb) => {
      const rewrite = item.rewrite;
      if (rewrite !== undefined) {
        readFile(item.file).then((stored) => {
          const bytes = Buffer.from(rewrite(stored));
          if (bytes.length !== item.size) {
            fail(changed(item.file));
            return;
          }
          if (item.md5 !== undefined && createHash('md5').update(bytes).digest('hex') !== item.md5) mismatches.push(item.file);
          cb(null, Readable.from([bytes]));
        }, fail);
        return;
      }
      const input = createReadStream(item.file, { highWaterMark: 1024 * 1024 });
      input.on('error', fail);
      if (item.md5 === undefined) {
        cb(null, input);
        return;
      }
      const h = createHash('md5');
      const tap = new Transform({
        transform(chunk: Buffer, _enc, done) {
          h.update(chunk);
          done(null, chunk);
        },
        flush(done) {
          if (h.digest('hex') !== item.md5) mismatches.push(item.file);
          done();
        },
      });
      tap.on('error', fail);
      cb(null, input.pipe(tap));
    });
  }
  zip.on('error', fail);
  zip.end();
  const tmp = `${outFile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const pkgHash = createHash('md5');
  let length = 0;
  const measure = new Transform({
    transform(chunk: Buffer, _enc, done) {
      pkgHash.update(chunk);
      length += chunk.length;
      done(null, chunk);
    },
  });
  try {
    await pipeline(zip.outputStream, measure, createWriteStream(tmp), options.signal ? { signal: options.signal } : {});
    if (mismatches.length > 0) throw changed(mismatches[0]!);
    await rename(tmp, outFile);
  } catch (err) {
    await rm(tmp, { force: true });
    if (err instanceof ResourceSyncError) throw err;
    const code = (err as { name?: string }).name === 'AbortError' ? 'RS_ABORTED' : 'RS_ZIP';
    throw new ResourceSyncError(code, `Package '${outFile}' cannot be written.`, { data: { path: outFile }, cause: err });
  }
  return { length, md5: pkgHash.digest('hex') };
}

function changed(file: string): ResourceSyncError {
  return new ResourceSyncError('RS_HASH_MISMATCH', `File '${file}' changed while it was being packaged.`, { data: { path: file }, recoverable: true });
}

/**
 * Splits items into packages of at most `maxBytes` of bitstreams each (an item larger than that gets a
 * package of its own), keeping their order.
 */
export function splitPackages<T extends { size: number }>(items: Iterable<T>, maxBytes: number): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const it of items) {
    if (cur.length > 0 && bytes + it.size > maxBytes) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(it);
    bytes += it.size;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}
