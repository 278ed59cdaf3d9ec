/**
 * Atomic file output for the document writer: bytes go to a temporary file in the target's
 * directory, which is renamed over the target only when everything was written. Readers never see
 * a half-written document; on error the temporary file is removed.
 *
 * The path is used as given: build it with `safeJoin` (src/node/safe-path.ts) when any part of it
 * comes from untrusted input.
 */

import { randomBytes } from 'node:crypto';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import type { PartSink } from '../core/xml/write-document-set.js';

/** Options of `fileSink` and `writeFileAtomic`. */
export interface FileSinkOptions {
  /**
   * fsync the file before the rename and the directory after it, so that the new document survives
   * a power cut; costs some speed. Default false.
   */
  fsync?: boolean;
  /** Create the target's directory (recursively) if missing. Default false. */
  mkdir?: boolean;
  /** File mode of the new file. Default 0o644 (less the umask). */
  mode?: number;
}

/** A `PartSink` whose `abort` is always there. */
export interface FileSink extends PartSink {
  abort(err?: unknown): Promise<void>;
}

/**
 * A `PartSink` that writes one file atomically: the temporary file is created on the first write
 * (or on `close`, for an empty document), `close()` renames it to `path`, `abort()` removes it.
 * Each `write` is awaited before the next chunk is produced (backpressure).
 * @example
 * await writeDocumentSet(header, entries, {
 *   indexUrl, partUrl, sink: ({ url }) => fileSink(safeJoin(dir, new URL(url).pathname)),
 * });
 */
export function fileSink(path: string, options: FileSinkOptions = {}): FileSink {
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let handle: FileHandle | undefined;
  let opening: Promise<FileHandle> | undefined;
  let state: 'open' | 'closed' | 'aborted' = 'open';

  const ensure = async (): Promise<FileHandle> => {
    if (handle) return handle;
    opening ??= (async () => {
      if (options.mkdir) await mkdir(dirname(path), { recursive: true });
      return open(temp, 'wx', options.mode ?? 0o644);
    })().catch((err: unknown) => {
      throw ioError(`File ${JSON.stringify(path)}: cannot create the temporary file.`, path, err);
    });
    handle = await opening;
    return handle;
  };
  const discard = async (): Promise<void> => {
    const h = handle ?? (opening ? await opening.catch(() => undefined) : undefined);
    handle = undefined;
    opening = undefined;
    await h?.close().catch(() => {});
    if (h) await rm(temp, { force: true });
  };

  return {
    async write(chunk: Uint8Array): Promise<void> {
      if (state !== 'open')
        throw ioError(`File ${JSON.stringify(path)}: write after ${state === 'closed' ? 'close' : 'abort'}.`, path);
      const h = await ensure();
      try {
        // FileHandle.write may write less than asked: loop until the whole chunk is on disk.
        let offset = 0;
        while (offset < chunk.byteLength) {
          const { bytesWritten } = await h.write(chunk, offset, chunk.byteLength - offset);
          offset += bytesWritten;
        }
      } catch (err) {
        throw ioError(`File ${JSON.stringify(path)}: writing failed.`, path, err);
      }
    },
    async close(): Promise<void> {
      if (state !== 'open')
        throw ioError(`File ${JSON.stringify(path)}: close after ${state === 'closed' ? 'close' : 'abort'}.`, path);
      state = 'closed';
      try {
        const h = await ensure();
        if (options.fsync) await h.sync();
        await h.close();
        handle = undefined;
        opening = undefined;
        await rename(temp, path);
        if (options.fsync) await syncDirectory(dirname(path));
      } catch (err) {
        await discard();
        throw err instanceof ResourceSyncError
          ? err
          : ioError(`File ${JSON.stringify(path)}: cannot complete the file.`, path, err);
      }
    },
    async abort(): Promise<void> {
      if (state === 'closed') return;
      state = 'aborted';
      await discard();
    },
  };
}

/**
 * Writes `chunks` to `path` atomically (temporary file in the same directory, then rename), awaiting
 * each write. On error the temporary file is removed, the target is left as it was, and the error
 * is rethrown.
 * @example await writeFileAtomic('resourcelist.xml', writeDocument(header, entries));
 */
export async function writeFileAtomic(
  path: string,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: FileSinkOptions = {},
): Promise<void> {
  const sink = fileSink(path, options);
  try {
    for await (const chunk of chunks) await sink.write(chunk);
    await sink.close();
  } catch (err) {
    await sink.abort();
    throw err;
  }
}

async function syncDirectory(dir: string): Promise<void> {
  let h: FileHandle | undefined;
  try {
    h = await open(dir, 'r');
    await h.sync();
  } catch {
    // Some platforms (Windows) cannot open or sync a directory: the file itself was synced.
  } finally {
    await h?.close().catch(() => {});
  }
}

function ioError(message: string, path: string, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_IO', message, cause === undefined ? { data: { path } } : { data: { path }, cause });
}
