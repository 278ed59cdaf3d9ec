/**
 * A response body saved to a file under a byte cap, its declared length and hashes checked on the way
 * (through {@link BodyDigests}); what dumps, `check` and the explorer do with a dump's ZIP package before they
 * open it. The file is removed when the download fails.
 * @see Z39.99 §11.2, §13.2 (packages), §12.1 (`length`, `hash`)
 */
import { open, rm } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { ResourceSyncError } from '../core/errors.js';
import type { HashAlgorithm } from '../core/constants.js';
import type { HashValue } from '../core/hash.js';
import { BodyDigests, hashMismatches } from '../node/body-digests.js';
import type { HttpResponse } from './http.js';

/** Options of {@link downloadToFile}. */
export interface DownloadToFileOptions {
  /** The URL the body was asked for, named in errors. */
  url: string;
  /** What the body is, first word of error messages. Default 'Package'. */
  what?: string;
  /** A longer body stops with `RS_LIMIT_BYTES` as soon as it passes this many bytes. */
  maxBytes?: number;
  /**
   * The declared length: a longer body stops with `RS_LENGTH_MISMATCH` as soon as it passes it, a shorter one
   * fails at its end (only with `verify`).
   */
  length?: number;
  /** The declared hashes: the body is digested with their algorithms (digests in the result). */
  hashes?: readonly HashValue[];
  /** Throw `RS_LENGTH_MISMATCH` / `RS_HASH_MISMATCH` when the body is not what `length` and `hashes` declare. Default true. */
  verify?: boolean;
  /** Stops the download with `RS_ABORTED`. */
  signal?: AbortSignal;
  /** Called with the bytes received so far, after each chunk. */
  onBytes?: (total: number) => void;
}

/** What {@link downloadToFile} saved. */
export interface DownloadedFile {
  /** Bytes written to the file. */
  bytes: number;
  /** Lower-case hex digests of the body, by algorithm of `hashes`. */
  digests: Record<string, string>;
}

/**
 * Streams `response.body` to a new file `file` (which must not exist), with backpressure, stopping at the caps;
 * then checks the declared length and hashes. On any failure the body is let go and `file` removed.
 * @throws ResourceSyncError RS_LIMIT_BYTES, RS_LENGTH_MISMATCH, RS_HASH_MISMATCH, RS_ABORTED; the body's and the
 *   file system's errors as they come
 * @example
 * const { bytes } = await downloadToFile(await http(url), '/tmp/rs/part1.zip', { url, maxBytes: 2 ** 28 });
 */
export async function downloadToFile(response: HttpResponse, file: string, options: DownloadToFileOptions): Promise<DownloadedFile> {
  const what = `${options.what ?? 'Package'} '${options.url}'`;
  const declared = options.hashes ?? [];
  const digests = new BodyDigests(new Set(declared.map((h) => h.algorithm as HashAlgorithm)));
  let bytes = 0;
  const counted = async function* (body: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of body) {
      bytes += chunk.byteLength;
      options.onBytes?.(bytes);
      checkChunk(options, what, bytes);
      if (declared.length > 0) digests.update(chunk);
      yield chunk;
    }
  };
  const handle = await open(file, 'wx').catch(async (err: unknown) => {
    await response.discard().catch(() => undefined);
    throw err; // a file that was there already (EEXIST) is not ours to remove
  });
  try {
    await pipeline(response.body, counted, handle.createWriteStream());
  } catch (err) {
    await handle.close().catch(() => undefined);
    await rm(file, { force: true });
    throw err;
  }
  const result: DownloadedFile = { bytes, digests: declared.length > 0 ? digests.digest() : {} };
  if (options.verify !== false) {
    try {
      verifyDownload(options, what, result);
    } catch (err) {
      await rm(file, { force: true });
      throw err;
    }
  }
  return result;
}

/** The caps and the abort signal, after each chunk. */
function checkChunk(options: DownloadToFileOptions, what: string, bytes: number): void {
  const { url, maxBytes, length, signal } = options;
  if (signal?.aborted === true)
    throw new ResourceSyncError('RS_ABORTED', `URL '${url}' was not fetched: aborted.`, { data: { url }, cause: signal.reason });
  if (maxBytes !== undefined && bytes > maxBytes)
    throw new ResourceSyncError('RS_LIMIT_BYTES', `${what} is larger than ${maxBytes} bytes.`, { data: { url, max: maxBytes } });
  if (options.verify !== false && length !== undefined && bytes > length)
    throw new ResourceSyncError('RS_LENGTH_MISMATCH', `${what} is longer than its length '${length}'.`, {
      data: { url, expected: length },
      recoverable: true,
    });
}

/** The declared length and hashes against what came. */
function verifyDownload(options: DownloadToFileOptions, what: string, { bytes, digests }: DownloadedFile): void {
  const { url, length } = options;
  if (length !== undefined && bytes !== length)
    throw new ResourceSyncError('RS_LENGTH_MISMATCH', `${what} has ${bytes} bytes, not '${length}'.`, {
      data: { url, expected: length, actual: bytes },
      recoverable: true,
    });
  const [mismatch] = hashMismatches(options.hashes ?? [], digests);
  if (mismatch !== undefined)
    throw new ResourceSyncError('RS_HASH_MISMATCH', `${what} has ${mismatch.algorithm} '${mismatch.actual}', not '${mismatch.expected}'.`, {
      data: { url, expected: mismatch.expected, actual: mismatch.actual },
      recoverable: true,
    });
}
