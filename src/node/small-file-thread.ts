/**
 * The worker thread of `SmallFileWriter` (small-file-writer.ts): runs each batch of small-file operations with
 * synchronous calls, in order, and answers it with one message. A failed operation does not stop the batch.
 * A durable operation's temporary file is committed by this thread's own {@link GroupCommit} (one `syncfs` for
 * a batch, then the renames) and answered later, with the others of its batch in one message.
 */

import { closeSync, futimesSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { parentPort } from 'node:worker_threads';
import { GroupCommit } from './group-commit.js';
import type { SmallFileBatch, SmallFileFailure, SmallFileReply } from './small-file-writer.js';

/**
 * The thread's group commits, one per temporary folder (one per destination): a barrier syncs the file system of
 * its batch's first file, so a batch must not mix destinations, which may sit on different file systems.
 */
const groups = new Map<string, GroupCommit>();

function groupOf(tmp: string): GroupCommit {
  const dir = dirname(tmp);
  let group = groups.get(dir);
  if (group === undefined) {
    // forgetting a group under way is harmless: it finishes its batches; the next file starts another one
    if (groups.size >= 64) groups.clear();
    group = new GroupCommit({ remember: false });
    groups.set(dir, group);
  }
  return group;
}

/** Answers of durable operations not sent yet: sent together once the current batch's renames are done. */
let later: SmallFileReply = [];

function answerLater(id: number, f?: SmallFileFailure): void {
  if (later.length === 0) {
    setImmediate(() => {
      const reply = later;
      later = [];
      parentPort?.postMessage(reply);
    });
  }
  later.push(id);
  if (f !== undefined) later.push(f);
}

function code(err: unknown): string | undefined {
  return (err as { code?: string }).code;
}

function failure(err: unknown): SmallFileFailure {
  const f: SmallFileFailure = { message: err instanceof Error ? err.message : String(err) };
  const c = code(err);
  const syscall = (err as { syscall?: string }).syscall;
  if (typeof c === 'string') f.code = c;
  if (typeof syscall === 'string') f.syscall = syscall;
  return f;
}

/** Creates `tmp` (new, mode 0644), writes `data`, sets the time and closes it. A missing folder is created. */
function write(tmp: string, data: Uint8Array, mtime: number | undefined): void {
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', 0o644);
  } catch (err) {
    if (code(err) !== 'ENOENT') throw err;
    mkdirSync(dirname(tmp), { recursive: true });
    fd = openSync(tmp, 'wx', 0o644);
  }
  try {
    for (let off = 0; off < data.byteLength; ) off += writeSync(fd, data, off, data.byteLength - off);
    if (mtime !== undefined) futimesSync(fd, mtime / 1000, mtime / 1000);
  } finally {
    closeSync(fd);
  }
}

/** Renames `tmp` to `to`, creating the parent folders when they are missing (removed meanwhile, or new). */
function place(tmp: string, to: string): void {
  try {
    renameSync(tmp, to);
  } catch (err) {
    if (code(err) !== 'ENOENT') throw err;
    mkdirSync(dirname(to), { recursive: true });
    renameSync(tmp, to);
  }
}

parentPort?.on('message', ({ nums, paths, bytes }: SmallFileBatch) => {
  const reply: SmallFileReply = [];
  const names = paths.split('\0');
  let name = 0;
  let at = 0;
  for (let i = 0; i < nums.length; i += 4) {
    const id = nums[i]!;
    const length = nums[i + 1]!;
    const mtime = nums[i + 2]!;
    const tmp = names[name++]!;
    const how = nums[i + 3]!;
    const to = how !== 0 ? names[name++] : undefined;
    const data = length >= 0 ? new Uint8Array(bytes, at, length) : undefined;
    if (length > 0) at += length;
    try {
      if (data !== undefined) write(tmp, data, Number.isNaN(mtime) ? undefined : mtime);
      if (to !== undefined && how === 2) {
        const dest = to;
        groupOf(tmp).commit(tmp, dest, () => place(tmp, dest)).then(
          () => answerLater(id),
          (err: unknown) => answerLater(id, failure(err)),
        );
        continue;
      }
      if (to !== undefined) place(tmp, to);
      reply.push(id);
    } catch (err) {
      reply.push(id, failure(err));
    }
  }
  if (reply.length > 0) parentPort?.postMessage(reply);
});
