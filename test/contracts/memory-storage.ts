/**
 * A {@link MirrorStorage} in memory, for tests: it shows that the contract and the Destination need nothing of a
 * local folder (no paths, no rename), as an object store would not have them.
 */

import { createHash, randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceSyncError, toError } from '../../src/core/errors.js';
import type { HashAlgorithm } from '../../src/core/constants.js';
import { nodeHashName } from '../../src/core/hash.js';
import { safeRelativePath } from '../../src/node/safe-path.js';
import type { MirrorStorage, ReadOptions, StageOptions, StagedWrite, StoredDigests, StoredFacts, StoredItem, WriteChunkOptions } from '../../src/destination/mirror-storage.js';

interface Held {
  bytes: Buffer;
  mtimeMs: number;
}

function checkedKey(key: string): string {
  if (key.startsWith('/') || safeRelativePath(key) !== key) {
    throw new ResourceSyncError('RS_UNSAFE_PATH', `Path '${key}' is not a safe relative path.`, { data: { path: key }, recoverable: true });
  }
  return key;
}

class MemoryStagedWrite implements StagedWrite {
  readonly key: string;
  #chunks: Buffer[] = [];
  #finished = false;
  readonly #onCommit: (bytes: Buffer) => void;

  constructor(key: string, onCommit: (bytes: Buffer) => void) {
    this.key = key;
    this.#onCommit = onCommit;
  }

  write(chunk: Uint8Array, _options?: WriteChunkOptions): Promise<void> {
    this.#chunks.push(Buffer.from(chunk)); // a copy: the caller may read into a reused buffer again
    return Promise.resolve();
  }

  commit(): Promise<void> {
    if (this.#finished) return Promise.reject(new ResourceSyncError('RS_INVALID_ARGUMENT', `Staged write of '${this.key}' is already finished.`, { data: {} }));
    this.#finished = true;
    this.#onCommit(Buffer.concat(this.#chunks));
    this.#chunks = [];
    return Promise.resolve();
  }

  abort(): Promise<void> {
    this.#finished = true;
    this.#chunks = [];
    return Promise.resolve();
  }
}

/** A mirror held in a `Map` (`copies`, by key), shared by every object made on it. */
export class MemoryStorage implements MirrorStorage {
  readonly location = 'memory:';
  readonly copies: Map<string, Held>;

  constructor(copies = new Map<string, Held>()) {
    this.copies = copies;
  }

  stat(key: string): Promise<StoredFacts | undefined> {
    return this.#answer(() => {
      const held = this.copies.get(checkedKey(key));
      return held === undefined ? undefined : { size: held.bytes.length, mtimeMs: held.mtimeMs };
    });
  }

  read(key: string, options: ReadOptions): Promise<Uint8Array | undefined> {
    return this.#answer(() => {
      const held = this.copies.get(checkedKey(key));
      if (held !== undefined && held.bytes.length > options.maxBytes) {
        throw new ResourceSyncError('RS_LIMIT_BYTES', `Copy '${key}' is larger than ${options.maxBytes} bytes.`, { data: { path: key, max: options.maxBytes }, recoverable: true });
      }
      return held?.bytes;
    });
  }

  openRead(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    return this.#answer(() => {
      const held = this.copies.get(checkedKey(key));
      return held === undefined ? undefined : (async function* () { yield await Promise.resolve(held.bytes); })();
    });
  }

  hash(key: string, algorithms: readonly HashAlgorithm[]): Promise<StoredDigests | undefined> {
    return this.#answer(() => {
      const held = this.copies.get(checkedKey(key));
      if (held === undefined) return undefined;
      const hashes: Partial<Record<HashAlgorithm, string>> = {};
      for (const a of algorithms) hashes[a] = createHash(nodeHashName(a)).update(held.bytes).digest('hex');
      return { length: held.bytes.length, hashes, mtimeMs: held.mtimeMs };
    });
  }

  stage(key: string, options: StageOptions = {}): Promise<StagedWrite> {
    return this.#answer(() => {
      const checked = checkedKey(key);
      return new MemoryStagedWrite(checked, (bytes) => this.copies.set(checked, { bytes, mtimeMs: options.mtimeMs ?? Date.now() }));
    });
  }

  remove(key: string): Promise<boolean> {
    return this.#answer(() => this.copies.delete(checkedKey(key)));
  }

  async *list(): AsyncIterable<StoredItem> {
    for (const [key, held] of [...this.copies]) yield await Promise.resolve({ key, size: held.bytes.length, mtimeMs: held.mtimeMs });
  }

  isEmpty(): Promise<boolean> {
    return Promise.resolve(this.copies.size === 0);
  }

  settle(): Promise<void> {
    return Promise.resolve();
  }

  discardStaged(): Promise<void> {
    return Promise.resolve();
  }

  scratchFile(): Promise<string> {
    return Promise.resolve(join(tmpdir(), `rs-memory-${process.pid}-${randomUUID()}.tmp`));
  }

  /** `compute`'s answer, or its throw, as a promise. */
  #answer<T>(compute: () => T): Promise<T> {
    try {
      return Promise.resolve(compute());
    } catch (err) {
      return Promise.reject(toError(err));
    }
  }
}
