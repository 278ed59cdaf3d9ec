/**
 * An opt-in flush for `GroupCommit` on Linux: one `syncfs(2)` of the destination's file system per batch,
 * instead of an fsync of each file. Node has no binding for `syncfs`, so it runs coreutils' `sync --file-system`
 * through a helper shell that this object starts on first use and {@link SyncfsFlush.close} ends: nothing is
 * started unless the caller creates one. Where the command is missing or fails (macOS, Windows, an old busybox),
 * this object fsyncs each file from then on. `syncfs` also flushes what other programs wrote to the same file
 * system; that costs time, never correctness.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { Socket } from 'node:net';
import { fsyncAll } from './durability.js';

const TIMEOUT_MS = 120_000;
/** Fewer files than this are fsynced one by one: cheaper than a request to the helper. */
const SYNCFS_FROM = 4;

/**
 * A `GroupCommit` flush by `syncfs`, with a helper shell of its own.
 * @example
 * const syncfs = new SyncfsFlush();
 * try {
 *   await sync({ source, dest, durability: new GroupCommit({ flush: syncfs.flush }) });
 * } finally {
 *   syncfs.close();
 * }
 */
export class SyncfsFlush {
  #child: ChildProcess | undefined;
  #waiters: ((ok: boolean) => void)[] = [];
  #buffer = '';
  #works = process.platform === 'linux';

  /** Makes the data of `files` (all on one file system) durable. */
  readonly flush = async (files: readonly string[]): Promise<void> => {
    if (files.length === 0) return;
    const dir = dirname(files[0]!);
    if (this.#works && files.length >= SYNCFS_FROM && !dir.includes('\n')) {
      if (await this.#syncfs(dir)) return;
      if (existsSync(dir)) this.#works = false; // the command is missing or refused here: fsyncs from now on
    }
    await fsyncAll(files);
  };

  /** Ends the helper shell (a later flush starts another). */
  close(): void {
    const child = this.#child;
    this.#child = undefined;
    child?.stdin?.end();
    child?.kill();
  }

  #start(): ChildProcess {
    const script = 'while IFS= read -r d; do if sync -f -- "$d" 2>/dev/null; then echo 0; else echo 1; fi; done';
    const child = spawn('/bin/sh', ['-c', script], { stdio: ['pipe', 'pipe', 'ignore'], windowsHide: true });
    const stop = (): void => {
      if (this.#child === child) this.#child = undefined;
      for (const w of this.#waiters.splice(0)) w(false);
    };
    child.on('error', stop);
    child.on('exit', stop);
    child.stdin?.on('error', stop);
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (text: string) => {
      this.#buffer += text;
      for (let i = this.#buffer.indexOf('\n'); i >= 0; i = this.#buffer.indexOf('\n')) {
        const line = this.#buffer.slice(0, i);
        this.#buffer = this.#buffer.slice(i + 1);
        this.#waiters.shift()?.(line === '0');
      }
      if (this.#waiters.length === 0) hold(child, false);
    });
    child.unref();
    hold(child, false);
    this.#buffer = '';
    return child;
  }

  #syncfs(dir: string): Promise<boolean> {
    this.#child ??= this.#start();
    const child = this.#child;
    return new Promise((resolve) => {
      const timer = setTimeout(() => child.kill(), TIMEOUT_MS);
      this.#waiters.push((ok) => {
        clearTimeout(timer);
        resolve(ok);
      });
      hold(child, true);
      child.stdin?.write(`${dir}\n`);
    });
  }
}

/** Lets the helper's pipes keep this process alive (a request is pending) or not. */
function hold(child: ChildProcess, on: boolean): void {
  for (const pipe of [child.stdin, child.stdout]) {
    if (pipe instanceof Socket) {
      if (on) pipe.ref();
      else pipe.unref();
    }
  }
}
