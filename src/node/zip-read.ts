/**
 * Reading ZIP packages (Resource Dump and Change Dump packages, Z39.99 §11.2, §13.2) with bounds: the central
 * directory listed with a cap on entries and no two entries of one name; an entry's bytes read straight from
 * its byte range when stored, inflated otherwise, and cut off past its declared size (no decompression bomb
 * is inflated). yauzl refuses absolute, `..` and backslash names. Writing packages is in
 * `src/source/zip-package.ts`.
 */
import { createReadStream } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { ResourceSyncError, isResourceSyncError, type ErrorCode, messageOf } from '../core/errors.js';

/** An open ZIP file and one of its entries. */
export type ZipFile = yauzl.ZipFile;
export type ZipEntry = yauzl.Entry;

function rsError(code: ErrorCode, message: string, data: Record<string, unknown> = {}, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError(code, message, { data, recoverable: true, ...(cause === undefined ? {} : { cause }) });
}

/** Opens a ZIP file for listing (lazily, entry by entry); entry sizes are validated as they are read. */
export function openZip(path: string): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      path,
      { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true },
      (err, zip) => {
        if (err) reject(err);
        else resolve(zip);
      },
    );
  });
}

/** Lists a ZIP's entries (central directory only). yauzl refuses absolute, `..` and backslash names. */
export function listEntries(zip: yauzl.ZipFile, max: number, pkg: string): Promise<Map<string, yauzl.Entry>> {
  return new Promise((resolve, reject) => {
    const map = new Map<string, yauzl.Entry>();
    let count = 0;
    const onError = (err: Error) =>
      reject(rsError('RS_ZIP', `Package '${pkg}' is refused: ${err.message}.`, { url: pkg }, err));
    zip.on('error', onError);
    zip.on('entry', (entry: yauzl.Entry) => {
      if (++count > max) {
        reject(rsError('RS_LIMIT_ENTRIES', `Package '${pkg}' has more than ${max} entries.`, { url: pkg, max }));
        return;
      }
      if (map.has(entry.fileName)) {
        reject(
          rsError('RS_ZIP', `Package '${pkg}' has two entries named '${entry.fileName}'.`, {
            url: pkg,
            path: entry.fileName,
          }),
        );
        return;
      }
      map.set(entry.fileName, entry);
      zip.readEntry();
    });
    zip.on('end', () => resolve(map));
    zip.readEntry();
  });
}

/** A stored (not compressed, not encrypted) entry, read straight from its byte range. */
export function isStored(entry: yauzl.Entry): boolean {
  return entry.compressionMethod === 0 && !entry.isEncrypted();
}

/** Where a stored entry's bytes lie in the ZIP file; its two sizes must agree. */
async function storedRange(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<{ start: number; length: number }> {
  if (entry.compressedSize !== entry.uncompressedSize) {
    throw rsError('RS_ZIP', `ZIP entry '${entry.fileName}' is stored but its sizes differ.`, {
      path: entry.fileName,
    });
  }
  const { fileDataStart } = await zip.readLocalFileHeaderPromise(entry, { minimal: true });
  return { start: fileDataStart, length: entry.compressedSize };
}

/**
 * Opens an entry's stream. An error listener is attached at once: yauzl's size check and inflate
 * errors can fire before the stream is consumed (`capped` re-throws them).
 */
export async function openEntry(zip: yauzl.ZipFile, entry: yauzl.Entry, file?: string): Promise<Readable> {
  if (file !== undefined && isStored(entry)) {
    // Stored: read the byte range directly in 1 MiB chunks (yauzl's reader hands out 16 KiB chunks,
    // which halves the throughput). The size checks stay: `capped` stops past the declared size.
    const { start, length } = await storedRange(zip, entry);
    if (length === 0) return Readable.from([]);
    const stream = createReadStream(file, { start, end: start + length - 1, highWaterMark: 1 << 20 });
    stream.on('error', () => {});
    return stream;
  }
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) {
        reject(err);
        return;
      }
      stream.on('error', () => {});
      resolve(stream);
    });
  });
}

/**
 * A stored entry's bytes read from the ZIP file's open handle into the caller's buffers (no allocation, no stream
 * per entry; the shape of `writeVerified`'s `ByteSource`). `read` resolves the bytes placed at the start of `into`,
 * 0 at the end; exactly the entry's size is read, and a file cut short fails with `RS_ZIP`.
 */
export async function storedEntrySource(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  file: FileHandle,
  onBytes: (n: number) => void,
): Promise<{ read(into: Uint8Array): Promise<number> }> {
  let { start: position, length: left } = await storedRange(zip, entry);
  return {
    async read(into: Uint8Array): Promise<number> {
      if (left === 0) return 0;
      const { bytesRead } = await file.read(into, 0, Math.min(into.byteLength, left), position);
      if (bytesRead === 0) {
        throw rsError('RS_ZIP', `ZIP entry '${entry.fileName}' is cut short.`, { path: entry.fileName });
      }
      position += bytesRead;
      left -= bytesRead;
      onBytes(bytesRead);
      return bytesRead;
    },
  };
}

/**
 * The bytes of an entry, stopping with `RS_LIMIT_BYTES` as soon as more than `limit` bytes come out
 * (a decompression bomb is never inflated past its declared size).
 */
export async function* capped(
  stream: Readable,
  limit: number,
  what: string,
  onBytes: (n: number) => void,
): AsyncGenerator<Uint8Array> {
  let n = 0;
  try {
    if (stream.errored) throw stream.errored;
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      n += chunk.byteLength;
      if (n > limit)
        throw rsError('RS_LIMIT_BYTES', `ZIP entry '${what}' inflates past ${limit} bytes.`, { path: what, limit });
      onBytes(chunk.byteLength);
      yield chunk;
    }
    if (stream.errored) throw stream.errored as Error;
  } catch (err) {
    if (isResourceSyncError(err)) throw err;
    // yauzl's size validation ("too many bytes in the stream") and inflate errors.
    throw rsError(
      'RS_ZIP',
      `ZIP entry '${what}' cannot be read: ${messageOf(err)}.`,
      { path: what },
      err,
    );
  } finally {
    stream.destroy();
  }
}
