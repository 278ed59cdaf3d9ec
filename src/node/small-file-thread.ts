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
 * Calls go together, in one message (at most {@link BATCH_FILES} files or {@link BATCH_BYTES}, bodies packed
 * in one buffer; a group commit's renames as one call): while the thread works on a batch they wait;
 * otherwise they go once {@link SEND_FILES} are queued, or {@link GATHER_MS} after the first (each message
 * costs both threads as much as many files' calls). Bodies beyond {@link HELD_BYTES} not yet written are
 * written on the caller's thread. The thread keeps the process alive only while calls are pending. Should it fail to start or stop,
 * the calls it had not answered, and all later ones, are made on the caller's thread.
 */
import { existsSync, rmSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { isResourceSyncError, ResourceSyncError, type ErrorCode } from '../core/errors.js';
import { renameIntoPlace, type SmallFile } from './durability.js';
import { writeSmallFileSync } from './small-file.js';

/** A finished temporary file to rename into place. */
interface Rename {
  tmp: string;
  finalPath: string;
}

/**
 * One call: a small file to write (and rename, with `rename`), or renames only (a group commit's batch); `bytes`,
 * the body's length (0 for renames).
 */
type Call = { id: number; bytes: number; file: SmallFile; rename: boolean } | { id: number; bytes: 0; renames: readonly Rename[] };

/**
 * A batch as the thread receives it, packed so that it is cloned cheaply: per call five numbers in `nums` (id;
 * body length, or -1 for renames only; mtime or NaN, or the number of renames; index of its destination in
 * `roots` or -1; 1 to rename), its temporary and final paths in `paths` (each followed by a NUL, which no path
 * contains), its body in `bytes` after the previous call's.
 */
export interface SmallFileBatch {
  /** Destinations as pairs: real path, then the name as given. */
  roots: string[];
  nums: Float64Array;
  paths: string;
  bytes: Uint8Array;
}

/** An error as the thread reports it. */
interface ReplyError {
  message: string;
  code?: string;
  data?: Record<string, unknown>;
  rs?: boolean;
}

/** Why a call failed, as the thread reports it: its error, or for renames, each one's (null where it succeeded). */
export interface SmallFileFailure {
  id: number;
  error?: ReplyError;
  errors?: (ReplyError | null)[];
}

/**
 * The thread's answer to a batch: the id of each call that succeeded, and a {@link SmallFileFailure} for each one
 * that failed (numbers clone far more cheaply than objects).
 */
export type SmallFileReply = (number | SmallFileFailure)[];

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

/**
 * Runs one call where it is (the thread, or the caller's thread when there is none): undefined once done; for
 * renames, each one's error (undefined where it succeeded) when any failed. `gone` (the thread stopped without
 * answering): a rename whose temporary file is gone was made already.
 * @throws the write's error
 */
export function runCall(c: Call, gone = false): (Error | undefined)[] | undefined {
  if ('file' in c) {
    writeSmallFileSync(c.file, c.rename);
    return undefined;
  }
  let errors: (Error | undefined)[] | undefined;
  for (const [i, r] of c.renames.entries()) {
    if (gone && !existsSync(r.tmp)) continue;
    try {
      renameIntoPlace(r.tmp, r.finalPath);
    } catch (err) {
      errors ??= new Array<Error | undefined>(c.renames.length).fill(undefined);
      errors[i] = err instanceof Error ? err : new Error('The rename failed.');
    }
  }
  return errors;
}

/** An error for {@link SmallFileFailure}. */
export function replyOf(err: unknown): ReplyError {
  if (isResourceSyncError(err)) return { message: err.message, code: err.code, data: err.data, rs: true };
  const e = err as NodeJS.ErrnoException;
  return { message: e.message, ...(e.code !== undefined ? { code: e.code } : {}) };
}

/** The calls of a {@link SmallFileBatch}, with their ids. */
export function* unpackBatch(b: SmallFileBatch): Generator<Call> {
  let at = 0;
  let off = 0;
  const pair = (): Rename => {
    const t = b.paths.indexOf('\0', at);
    const f = b.paths.indexOf('\0', t + 1);
    const r = { tmp: b.paths.slice(at, t), finalPath: b.paths.slice(t + 1, f) };
    at = f + 1;
    return r;
  };
  for (let i = 0; i < b.nums.length; i += FIELDS) {
    const id = b.nums[i]!;
    const length = b.nums[i + 1]!;
    const mtime = b.nums[i + 2]!;
    if (length < 0) {
      yield { id, bytes: 0, renames: Array.from({ length: mtime }, pair) };
      continue;
    }
    const r = 2 * b.nums[i + 3]!;
    const { tmp, finalPath } = pair();
    const rename = b.nums[i + 4] === 1;
    const data = b.bytes.subarray(off, off + length);
    off += length;
    yield { id, bytes: length, file: { tmp, finalPath, data, mtimeMs: Number.isNaN(mtime) ? undefined : mtime, realRoot: b.roots[r]!, root: b.roots[r + 1]! }, rename };
  }
}

interface Pending {
  call: Call;
  resolve: (errors?: (Error | undefined)[]) => void;
  reject: (err: Error) => void;
}

function replyError(e: ReplyError): Error {
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
  async write(file: SmallFile, rename: boolean): Promise<void> {
    await this.#call({ id: this.#nextId++, bytes: file.data.byteLength, file, rename });
  }

  /** Renames each finished temporary file into place (creating missing folders); each one's error, in order. */
  async rename(files: readonly Rename[]): Promise<(Error | undefined)[]> {
    const errors = files.length === 0 ? undefined : await this.#call({ id: this.#nextId++, bytes: 0, renames: files });
    return errors ?? files.map(() => undefined);
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

  #call(call: Call): Promise<(Error | undefined)[] | undefined> {
    const worker = this.#stopped ? undefined : this.#worker;
    const bytes = call.bytes;
    if (worker === undefined || (bytes > 0 && this.#heldBytes + bytes > HELD_BYTES)) return here(call);
    return new Promise((resolve, reject) => {
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
    w.on('message', (reply: SmallFileReply) => this.#answer(reply));
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
    while (n < this.#queue.length && n < BATCH_FILES && size < BATCH_BYTES) size += this.#queue[n++]!.bytes;
    const calls = this.#queue.splice(0, n);
    const nums = new Float64Array(FIELDS * n);
    const bytes = new Uint8Array(size);
    const roots: string[] = [];
    const paths: string[] = [];
    let off = 0;
    for (let i = 0, at = 0; i < n; i++, at += FIELDS) {
      const c = calls[i]!;
      nums[at] = c.id;
      if (!('file' in c)) {
        nums[at + 1] = -1;
        nums[at + 2] = c.renames.length;
        nums[at + 3] = -1;
        nums[at + 4] = 1;
        for (const f of c.renames) paths.push(f.tmp, f.finalPath);
        continue;
      }
      const f = c.file;
      let r = 0;
      while (r < roots.length && (roots[r] !== f.realRoot || roots[r + 1] !== f.root)) r += 2;
      if (r === roots.length) roots.push(f.realRoot, f.root);
      bytes.set(f.data, off);
      off += f.data.byteLength;
      nums[at + 1] = f.data.byteLength;
      nums[at + 2] = f.mtimeMs ?? NaN;
      nums[at + 3] = r / 2;
      nums[at + 4] = c.rename ? 1 : 0;
      paths.push(f.tmp, f.finalPath);
    }
    paths.push('');
    this.#inFlight++;
    this.#worker.postMessage({ roots, nums, paths: paths.join('\0'), bytes } satisfies SmallFileBatch, [bytes.buffer, nums.buffer]);
  }

  #answer(reply: SmallFileReply): void {
    this.#inFlight--;
    for (const r of reply) {
      const id = typeof r === 'number' ? r : r.id;
      const p = this.#pending.get(id);
      if (p === undefined) continue;
      this.#pending.delete(id);
      this.#heldBytes -= p.call.bytes;
      if (typeof r === 'number') p.resolve();
      else if (r.errors !== undefined) p.resolve(r.errors.map((e) => (e === null ? undefined : replyError(e))));
      else p.reject(replyError(r.error ?? { message: 'The call failed.' }));
    }
    // what came meanwhile goes as a new call would: at once when there is enough of it, else after GATHER_MS
    if (this.#queue.length >= SEND_FILES) this.#send();
    else if (this.#queue.length > 0) this.#scheduled ??= setTimeout(() => this.#send(), GATHER_MS);
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
      if ('file' in p.call) rmSync(p.call.file.tmp, { force: true }); // a write the thread may have begun
      here(p.call, true).then(p.resolve, p.reject);
    }
    this.#drained?.resolve();
    this.#drained = undefined;
  }
}

function here(call: Call, gone = false): Promise<(Error | undefined)[] | undefined> {
  try {
    return Promise.resolve(runCall(call, gone));
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
