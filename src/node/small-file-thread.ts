/**
 * A worker thread for the file calls of small files, which a {@link Durability} may be given (opt-in).
 *
 * A baseline of thousands of small resources is limited by the main thread: HTTP, hashing and the state
 * share it with the calls each file needs (the confinement check of its folder, create, write, time, close,
 * rename). Given a `SmallFileThread`, `RenameOnly`, `FsyncEach` and `GroupCommit` make those calls on it
 * (`writeSmall`; a group commit's renames too), many files per message, while the main thread goes on with
 * the next downloads; the durability still decides when a file is renamed. Worth it where a second core is
 * free and files are a few kilobytes; nothing starts a thread unless its caller makes one (the CLI does).
 *
 * Calls wait while the thread works on a batch and then go together, in one message (at most
 * {@link BATCH_FILES} files or {@link BATCH_BYTES}, bodies packed in one buffer); an idle thread gets the
 * calls of about a millisecond. Bodies beyond {@link HELD_BYTES} not yet written are written on the caller's
 * thread. The thread keeps the process alive only while calls are pending. Should it fail to start or stop,
 * the calls it had not answered, and all later ones, are made on the caller's thread.
 */
import { existsSync, rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { ResourceSyncError, type ErrorCode } from '../core/errors.js';
import { renameIntoPlace, type SmallFile } from './durability.js';
import { writeSmallFileSync } from './small-file.js';

/** One call: a small file to write (and rename, with `rename`), or, without `data`, a rename only. */
interface Call {
  id: number;
  file: SmallFile | { tmp: string; finalPath: string };
  rename: boolean;
}

/**
 * A batch as the thread receives it, packed so that it is cloned cheaply: per call five numbers in `nums` (id,
 * body length or -1 for a rename only, mtime or NaN, index of its destination in `roots` or -1, 1 to rename),
 * its temporary and final paths in `paths` (each followed by a NUL, which no path contains), its body in
 * `bytes` after the previous call's.
 */
export interface SmallFileBatch {
  /** Destinations as pairs: real path, then the name as given. */
  roots: string[];
  nums: Float64Array;
  paths: string;
  bytes: Uint8Array;
}

/** The thread's answer for one call: its id, and its error when it failed. */
export interface SmallFileReply {
  id: number;
  error?: { message: string; code?: string; data?: Record<string, unknown>; rs?: boolean };
}

const FIELDS = 5;
/** Most calls in one message… */
const BATCH_FILES = 256;
/** …and most bytes. */
const BATCH_BYTES = 4 * 1024 * 1024;
/** An idle thread gets a message once this many calls are queued… */
const SEND_FILES = 64;
/** …or this long after the first one (ms): waking the thread costs as much as many files' calls. */
const GATHER_MS = 1;
/**
 * Most bytes of bodies held for the thread (queued or sent, not answered); a body past it is written on the
 * caller's thread, so that downloads that outrun the thread do not pile up bodies in memory.
 */
const HELD_BYTES = 4 * BATCH_BYTES;

/** Runs one call where it is (the thread, or the caller's thread when there is none). */
export function runCall(c: { file: SmallFile | { tmp: string; finalPath: string }; rename: boolean }): void {
  if ('data' in c.file) writeSmallFileSync(c.file, c.rename);
  else renameIntoPlace(c.file.tmp, c.file.finalPath);
}

function bodyBytes(c: Call): number {
  return 'data' in c.file ? c.file.data.byteLength : 0;
}

/** The calls of a {@link SmallFileBatch}, with their ids. */
export function* unpackBatch(b: SmallFileBatch): Generator<Call> {
  let at = 0;
  let off = 0;
  for (let i = 0; i < b.nums.length; i += FIELDS) {
    const length = b.nums[i + 1]!;
    const mtime = b.nums[i + 2]!;
    const r = 2 * b.nums[i + 3]!;
    const t = b.paths.indexOf('\0', at);
    const f = b.paths.indexOf('\0', t + 1);
    const tmp = b.paths.slice(at, t);
    const finalPath = b.paths.slice(t + 1, f);
    at = f + 1;
    const id = b.nums[i]!;
    const rename = b.nums[i + 4] === 1;
    if (length < 0) {
      yield { id, file: { tmp, finalPath }, rename };
      continue;
    }
    const data = b.bytes.subarray(off, off + length);
    off += length;
    yield { id, file: { tmp, finalPath, data, mtimeMs: Number.isNaN(mtime) ? undefined : mtime, realRoot: b.roots[r]!, root: b.roots[r + 1]! }, rename };
  }
}

interface Pending {
  call: Call;
  resolve: () => void;
  reject: (err: Error) => void;
}

function replyError(e: NonNullable<SmallFileReply['error']>): Error {
  if (e.rs === true) return new ResourceSyncError(e.code as ErrorCode, e.message, { data: e.data ?? {}, recoverable: true });
  return Object.assign(new Error(e.message), e.code !== undefined ? { code: e.code } : {});
}

/**
 * A worker thread for small files' calls, started with the object (its start-up overlaps the caller's first
 * requests; it does not keep the process alive while idle). Give it to a durability; `close()` ends it.
 * @example
 * const thread = new SmallFileThread();
 * try {
 *   await sync({ source: 'https://example.org/', dest: './mirror', durability: new GroupCommit({ thread }) });
 * } finally {
 *   await thread.close();
 * }
 */
export class SmallFileThread {
  readonly #script: URL;
  #worker: Worker | undefined;
  /** Set once the thread failed or was closed: calls are then made on the caller's thread. */
  #stopped = false;
  #queue: Call[] = [];
  #scheduled: NodeJS.Timeout | undefined;
  /** Messages sent and not answered yet. */
  #inFlight = 0;
  readonly #pending = new Map<number, Pending>();
  /** Bytes of the bodies in `#pending`. */
  #heldBytes = 0;
  /** Resolved when `#pending` empties (made by `close`). */
  #drained: { promise: Promise<void>; resolve: () => void } | undefined;
  #nextId = 0;

  /** @param script the thread's module (tests pass another) */
  constructor(script: URL = new URL('./small-file-worker.js', import.meta.url)) {
    this.#script = script;
    this.#start();
  }

  /**
   * Checks the confinement of `file`'s folder, writes its temporary file and, with `rename`, renames it into
   * place. Rejects with a recoverable `ResourceSyncError` (RS_UNSAFE_PATH, RS_IO).
   */
  write(file: SmallFile, rename: boolean): Promise<void> {
    return this.#call({ id: this.#nextId++, file, rename });
  }

  /** Renames each finished temporary file into place (creating missing folders); each one's error, in order. */
  rename(files: readonly { tmp: string; finalPath: string }[]): Promise<(Error | undefined)[]> {
    return Promise.all(
      files.map((f) =>
        this.#call({ id: this.#nextId++, file: { tmp: f.tmp, finalPath: f.finalPath }, rename: true }).then(
          () => undefined,
          (e: unknown) => (e instanceof Error ? e : new Error('The rename failed.')),
        ),
      ),
    );
  }

  /** Bytes of bodies handed to the thread and not written yet (at most {@link HELD_BYTES}). */
  get heldBytes(): number {
    return this.#heldBytes;
  }

  /** Waits for the calls under way, then ends the thread (later calls are made on the caller's thread). */
  async close(): Promise<void> {
    if (this.#pending.size > 0 && !this.#stopped) {
      if (this.#drained === undefined) {
        let resolve = (): void => undefined;
        const promise = new Promise<void>((r) => (resolve = r));
        this.#drained = { promise, resolve };
      }
      await this.#drained.promise;
    }
    this.#stopped = true;
    const w = this.#worker;
    this.#worker = undefined;
    if (w !== undefined) await w.terminate();
  }

  #call(call: Call): Promise<void> {
    const worker = this.#stopped ? undefined : this.#worker;
    const bytes = bodyBytes(call);
    if (worker === undefined || (bytes > 0 && this.#heldBytes + bytes > HELD_BYTES)) return here(call);
    return new Promise<void>((resolve, reject) => {
      if (this.#pending.size === 0) worker.ref();
      this.#pending.set(call.id, { call, resolve, reject });
      this.#heldBytes += bytes;
      this.#queue.push(call);
      if (this.#inFlight > 0) return; // sent when the thread answers
      if (this.#queue.length >= SEND_FILES) this.#send();
      else this.#scheduled ??= setTimeout(() => this.#send(), GATHER_MS);
    });
  }

  #start(): void {
    let w: Worker;
    try {
      w = new Worker(this.#script, { execArgv: [] });
    } catch {
      this.#stopped = true;
      return;
    }
    w.on('message', (reply: SmallFileReply[]) => this.#answer(reply));
    w.on('error', () => this.#fail());
    w.on('exit', () => this.#fail());
    w.unref();
    this.#worker = w;
  }

  /** Sends what is queued, up to the limits of one message. */
  #send(): void {
    if (this.#scheduled !== undefined) clearTimeout(this.#scheduled);
    this.#scheduled = undefined;
    if (this.#queue.length === 0 || this.#worker === undefined) return;
    let n = 0;
    let size = 0;
    while (n < this.#queue.length && n < BATCH_FILES && size < BATCH_BYTES) {
      const f = this.#queue[n++]!.file;
      if ('data' in f) size += f.data.byteLength;
    }
    const calls = this.#queue.splice(0, n);
    const nums = new Float64Array(FIELDS * n);
    const bytes = new Uint8Array(size);
    const roots: string[] = [];
    let paths = '';
    let off = 0;
    for (const [i, c] of calls.entries()) {
      const f = c.file;
      let r = -1;
      let length = -1;
      let mtime = NaN;
      if ('data' in f) {
        r = 0;
        while (r < roots.length && (roots[r] !== f.realRoot || roots[r + 1] !== f.root)) r += 2;
        if (r === roots.length) roots.push(f.realRoot, f.root);
        r /= 2;
        length = f.data.byteLength;
        mtime = f.mtimeMs ?? NaN;
        bytes.set(f.data, off);
        off += length;
      }
      nums.set([c.id, length, mtime, r, c.rename ? 1 : 0], FIELDS * i);
      paths += `${f.tmp}\0${f.finalPath}\0`;
    }
    this.#inFlight++;
    this.#worker.postMessage({ roots, nums, paths, bytes } satisfies SmallFileBatch, [bytes.buffer, nums.buffer]);
  }

  #answer(reply: SmallFileReply[]): void {
    this.#inFlight--;
    for (const r of reply) {
      const p = this.#pending.get(r.id);
      if (p === undefined) continue;
      this.#pending.delete(r.id);
      this.#heldBytes -= bodyBytes(p.call);
      if (r.error === undefined) p.resolve();
      else p.reject(replyError(r.error));
    }
    if (this.#queue.length > 0) this.#send();
    else if (this.#pending.size === 0) {
      this.#worker?.unref();
      this.#drained?.resolve();
      this.#drained = undefined;
    }
  }

  /** The thread stopped: what it had not answered is done here, and so is everything after. */
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
    this.#heldBytes = 0;
    for (const p of left) {
      const f = p.call.file;
      if ('data' in f) rmSync(f.tmp, { force: true }); // a write the thread may have begun
      else if (!existsSync(f.tmp)) {
        p.resolve(); // a rename the thread made before it stopped: the temporary file is gone
        continue;
      }
      here(p.call).then(p.resolve, p.reject);
    }
    this.#drained?.resolve();
    this.#drained = undefined;
  }
}

function here(call: Call): Promise<void> {
  try {
    runCall(call);
    return Promise.resolve();
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
