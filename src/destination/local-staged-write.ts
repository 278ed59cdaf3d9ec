/**
 * A {@link StagedWrite} of a local folder: the bytes go to a temporary file in `<dest>/.resourcesync/tmp/`
 * (a small body is kept in memory and written with one call at commit), and `commit` hands the file to the
 * run's `Durability`, which makes it durable and renames it into place.
 */

import { open, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { confineDir, ioError, type DestinationRoot } from '../node/destination-root.js';
import type { Durability, SmallFile } from '../node/durability.js';
import { writeSmallFileSync } from '../node/small-file.js';
import type { StagedWrite, WriteChunkOptions } from './mirror-storage.js';

/** Bodies up to this size are kept whole and written with one call. */
const SMALL = 256 * 1024;
/** Larger bodies are written in batches of about this size (one `writev` each). */
const WRITE_BATCH = 1024 * 1024;

/** What a staged write needs of its folder. */
export interface StagePlace {
  root: DestinationRoot;
  durability: Durability;
  /** The key's final path (checked by the caller). */
  finalPath: string;
  /** A fresh temporary file's path in the root's temporary folder. */
  tmp: string;
  mtimeMs: number | undefined;
}

async function writeFully(handle: FileHandle, data: Uint8Array): Promise<void> {
  for (let offset = 0; offset < data.byteLength; ) {
    const { bytesWritten } = await handle.write(data, offset, data.byteLength - offset);
    offset += bytesWritten;
  }
}

/**
 * A body on its way to a temporary file. Small bodies stay in memory until `commit`; larger ones are written in
 * batches with one write in flight while the next chunks arrive; a reused (pooled) chunk is written at once, and
 * is let go when the next call resolves.
 */
export class LocalStagedWrite implements StagedWrite {
  readonly key: string;
  readonly #place: StagePlace;
  #handle: FileHandle | undefined;
  /** Chunks received and not yet written. */
  #chunks: Uint8Array[] = [];
  #chunkBytes = 0;
  #length = 0;
  #inFlight: Promise<void> | undefined;
  #writeError: unknown;
  #finished = false;

  constructor(key: string, place: StagePlace) {
    this.key = key;
    this.#place = place;
  }

  async write(chunk: Uint8Array, options?: WriteChunkOptions): Promise<void> {
    this.#length += chunk.byteLength;
    if (options?.reused === true) {
      this.#handle ??= await this.#openTemp();
      await this.#settleWrite();
      this.#inFlight = writeFully(this.#handle, chunk).catch((err: unknown) => {
        this.#writeError = err;
      });
      return;
    }
    this.#chunks.push(chunk);
    this.#chunkBytes += chunk.byteLength;
    if (this.#handle === undefined && this.#length <= SMALL) return;
    this.#handle ??= await this.#openTemp();
    if (this.#chunkBytes >= WRITE_BATCH || this.#chunks.length >= 256) await this.#writeBatch(this.#handle);
  }

  async commit(): Promise<void> {
    if (this.#finished) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Staged write of '${this.key}' is already finished.`, { data: { path: this.key } });
    this.#finished = true;
    const { root, durability, finalPath, tmp, mtimeMs } = this.#place;
    const file: Omit<SmallFile, 'data'> = { tmp, mtimeMs, finalPath, realRoot: root.realPath, root: root.path };
    try {
      let data: Uint8Array | undefined;
      const handle = this.#handle;
      if (handle === undefined) {
        data = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
        this.#chunks = [];
      } else {
        this.#handle = undefined;
        try {
          if (this.#chunks.length > 0) await this.#writeBatch(handle);
          await this.#settleWrite();
          if (mtimeMs !== undefined) await handle.utimes(mtimeMs / 1000, mtimeMs / 1000);
        } finally {
          await handle.close();
        }
      }
      if (data !== undefined && durability.writeSmall !== undefined) await durability.writeSmall({ ...file, data });
      else {
        if (data !== undefined) writeSmallFileSync({ ...file, data }, false);
        else confineDir(file.realRoot, dirname(finalPath), file.root);
        await durability.commit(tmp, finalPath);
      }
    } catch (err) {
      await rm(tmp, { force: true }).catch(() => undefined);
      throw err instanceof ResourceSyncError ? err : ioError(finalPath, 'cannot be written', err);
    }
  }

  async abort(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#chunks = [];
    if (this.#inFlight !== undefined) await this.#inFlight;
    this.#inFlight = undefined;
    if (this.#handle !== undefined) await this.#handle.close().catch(() => undefined);
    this.#handle = undefined;
    await rm(this.#place.tmp, { force: true }).catch(() => undefined);
  }

  /** Waits for the write in flight, and throws its failure. */
  async #settleWrite(): Promise<void> {
    if (this.#inFlight !== undefined) await this.#inFlight;
    this.#inFlight = undefined;
    if (this.#writeError !== undefined) throw ioError(this.#place.tmp, 'cannot be written', this.#writeError);
  }

  /** Writes the chunks received so far with one `writev`, once the previous write finished; does not wait for it. */
  async #writeBatch(handle: FileHandle): Promise<void> {
    const batch = this.#chunks;
    const bytes = this.#chunkBytes;
    this.#chunks = [];
    this.#chunkBytes = 0;
    await this.#settleWrite();
    this.#inFlight = handle.writev(batch).then(
      (written) => {
        if (written.bytesWritten !== bytes) this.#writeError = new Error(`short write (${written.bytesWritten} of ${bytes} bytes)`);
      },
      (err: unknown) => {
        this.#writeError = err;
      },
    );
  }

  #openTemp(): Promise<FileHandle> {
    const tmp = this.#place.tmp;
    return open(tmp, 'wx', 0o644).catch((err: unknown) => {
      throw ioError(tmp, 'cannot be created', err);
    });
  }
}
