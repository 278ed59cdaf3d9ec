/**
 * An opt-in {@link Durability} that writes small files on a worker thread.
 *
 * A baseline of thousands of small resources is limited by the main thread: HTTP, hashing and the state
 * share it with the calls each file needs (the confinement check of its folder, create, write, time, close,
 * rename). This decorator moves them to one worker thread, where they run as synchronous calls, many per
 * message, while the main thread goes on with the next downloads. With {@link RenameOnly} inside, the thread
 * renames the files into place too; with a durable implementation it writes the temporary files and the
 * wrapped one commits them (its flush, then the rename). Worth it where a second core is free and files
 * are a few kilobytes; a library call never starts a thread unless its caller passes one (the CLI does).
 *
 * Writes wait while the thread works on a batch and then go together, in one message (at most
 * {@link BATCH_FILES} files or {@link BATCH_BYTES}, bodies packed in one buffer); an idle thread gets
 * the writes of about a millisecond. The thread keeps the process alive only while writes are
 * pending. Should it fail to start or stop, the writes it had not answered, and all later ones, are made on
 * the caller's thread.
 */
import { rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ResourceSyncError, type ErrorCode } from '../core/errors.js';
import { RenameOnly, type Durability, type SmallFile } from './durability.js';
import { writeSmallFileSync } from './small-file.js';

/**
 * A batch as the thread receives it, packed so that it is cloned cheaply: per file four numbers in `nums` (id,
 * body length, mtime or NaN, index of its destination in `roots`), its temporary and final paths in `paths`
 * (each followed by a NUL, which no path contains), its body in `bytes` after the previous file's.
 */
export interface SmallFileBatch {
  /** Rename each file into place after writing it (the wrapped durability is a {@link RenameOnly}). */
  rename: boolean;
  /** Destinations as pairs: real path, then the name as given. */
  roots: string[];
  nums: Float64Array;
  paths: string;
  bytes: Uint8Array;
}

/** The files of a {@link SmallFileBatch}, with their ids. */
export function* unpackBatch(b: SmallFileBatch): Generator<SmallFile & { id: number }> {
  let at = 0;
  let off = 0;
  for (let i = 0; i < b.nums.length; i += 4) {
    const length = b.nums[i + 1]!;
    const mtime = b.nums[i + 2]!;
    const r = 2 * b.nums[i + 3]!;
    const t = b.paths.indexOf('\0', at);
    const f = b.paths.indexOf('\0', t + 1);
    yield {
      id: b.nums[i]!,
      tmp: b.paths.slice(at, t),
      finalPath: b.paths.slice(t + 1, f),
      data: b.bytes.subarray(off, off + length),
      mtimeMs: Number.isNaN(mtime) ? undefined : mtime,
      realRoot: b.roots[r]!,
      root: b.roots[r + 1]!,
    };
    at = f + 1;
    off += length;
  }
}

/** The thread's answer for one file: its id, and its error when it failed. */
export interface SmallFileReply {
  id: number;
  error?: { message: string; code?: string; data?: Record<string, unknown>; rs?: boolean };
}

/** Most files in one message… */
const BATCH_FILES = 256;
/** …and most bytes. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** An idle thread gets a message once this many files are queued… */
const SEND_FILES = 64;
/** …or this long after the first one (ms): waking the thread costs as much as many files' calls. */
const GATHER_MS = 1;

interface Pending {
  file: SmallFile;
  resolve: () => void;
  reject: (err: Error) => void;
}

function replyError(e: NonNullable<SmallFileReply['error']>): Error {
  if (e.rs === true) return new ResourceSyncError(e.code as ErrorCode, e.message, { data: e.data ?? {}, recoverable: true });
  return Object.assign(new Error(e.message), e.code !== undefined ? { code: e.code } : {});
}

/**
 * Wraps a {@link Durability}: `commit` and `settle` are the wrapped one's, and `writeSmall` writes small
 * files on a worker thread (started on first use). `close()` ends the thread.
 * @example
 * const durability = new SmallFileThread(new GroupCommit());
 * try {
 *   await sync({ source: 'https://example.org/', dest: './mirror', durability });
 * } finally {
 *   await durability.close();
 * }
 */
export class SmallFileThread implements Durability {
  readonly #inner: Durability;
  readonly #rename: boolean;
  readonly #script: URL;
  #worker: Worker | undefined;
  /** Set once the thread failed or was closed: writes are then made on the caller's thread. */
  #stopped = false;
  #queue: Array<SmallFile & { id: number }> = [];
  #scheduled: NodeJS.Timeout | undefined;
  /** Messages sent and not answered yet. */
  #inFlight = 0;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;

  /**
   * @param inner commits the files (default {@link RenameOnly}, whose renames the thread makes itself)
   * @param script the thread's module (tests pass another)
   */
  constructor(inner: Durability = new RenameOnly(), script: URL = new URL('./small-file-worker.js', import.meta.url)) {
    this.#inner = inner;
    this.#rename = inner instanceof RenameOnly;
    this.#script = script;
  }

  commit(tmp: string, finalPath: string): Promise<void> {
    return this.#inner.commit(tmp, finalPath);
  }

  settle(): Promise<void> {
    return this.#inner.settle();
  }

  /** Writes `file` on the thread, then commits it as the wrapped durability does. */
  async writeSmall(file: SmallFile): Promise<void> {
    const worker = this.#stopped ? undefined : (this.#worker ?? this.#start());
    if (worker === undefined) writeSmallFileSync(file, this.#rename);
    else {
      await new Promise<void>((resolve, reject) => {
        const id = this.#nextId++;
        if (this.#pending.size === 0) worker.ref();
        this.#pending.set(id, { file, resolve, reject });
        this.#queue.push({ ...file, id });
        if (this.#inFlight > 0) return; // sent when the thread answers
        if (this.#queue.length >= SEND_FILES) this.#send();
        else this.#scheduled ??= setTimeout(() => this.#send(), GATHER_MS);
      });
    }
    if (!this.#rename) await this.#inner.commit(file.tmp, file.finalPath);
  }

  /** Waits for the writes under way, then ends the thread (later writes are made on the caller's thread). */
  async close(): Promise<void> {
    while (this.#pending.size > 0 && !this.#stopped) await new Promise((r) => setTimeout(r, 1));
    this.#stopped = true;
    const w = this.#worker;
    this.#worker = undefined;
    if (w !== undefined) await w.terminate();
  }

  #start(): Worker | undefined {
    let w: Worker;
    try {
      w = new Worker(this.#script, { execArgv: [] });
    } catch {
      this.#stopped = true;
      return undefined;
    }
    w.on('message', (reply: SmallFileReply[]) => this.#answer(reply));
    w.on('error', () => this.#fail());
    w.on('exit', () => this.#fail());
    w.unref();
    this.#worker = w;
    return w;
  }

  /** Sends what is queued, up to the limits of one message. */
  #send(): void {
    if (this.#scheduled !== undefined) clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    if (this.#queue.length === 0 || this.#worker === undefined) return;
    let n = 0;
    let size = 0;
    while (n < this.#queue.length && n < BATCH_FILES && size < BATCH_BYTES) size += this.#queue[n++]!.data.byteLength;
    const files = this.#queue.splice(0, n);
    const nums = new Float64Array(4 * n);
    const bytes = new Uint8Array(size);
    const roots: string[] = [];
    let paths = '';
    let off = 0;
    for (const [i, f] of files.entries()) {
      let r = 0;
      while (r < roots.length && (roots[r] !== f.realRoot || roots[r + 1] !== f.root)) r += 2;
      if (r === roots.length) roots.push(f.realRoot, f.root);
      nums.set([f.id, f.data.byteLength, f.mtimeMs ?? NaN, r / 2], 4 * i);
      paths += `${f.tmp}\0${f.finalPath}\0`;
      bytes.set(f.data, off);
      off += f.data.byteLength;
    }
    this.#inFlight++;
    this.#worker.postMessage({ rename: this.#rename, roots, nums, paths, bytes } satisfies SmallFileBatch, [bytes.buffer, nums.buffer]);
  }

  #answer(reply: SmallFileReply[]): void {
    this.#inFlight--;
    for (const r of reply) {
      const p = this.#pending.get(r.id);
      if (p === undefined) continue;
      this.#pending.delete(r.id);
      if (r.error === undefined) p.resolve();
      else p.reject(replyError(r.error));
    }
    if (this.#queue.length > 0) this.#send();
    else if (this.#pending.size === 0) this.#worker?.unref();
  }

  /** The thread stopped: what it had not answered is written here, and so is everything after. */
  #fail(): void {
    if (this.#stopped && this.#pending.size === 0) return;
    this.#stopped = true;
    this.#worker = undefined;
    if (this.#scheduled !== undefined) clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    this.#queue = [];
    this.#inFlight = 0;
    const left = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of left) {
      try {
        rmSync(p.file.tmp, { force: true }); // a write the thread may have begun
        writeSmallFileSync(p.file, this.#rename);
        p.resolve();
      } catch (err) {
        p.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
  }
}
