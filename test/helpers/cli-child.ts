import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** A `resourcesync` child process and what it printed so far. */
export interface CliChild {
  child: ChildProcess;
  out: () => string;
  err: () => string;
}

/**
 * Starts `resourcesync <args>` (the built `dist/src/cli/main.js`) and collects its stdout and stderr.
 * @example const p = startCli(['serve', dir, '--port', '0']); await until('listening', () => /^listening on /m.test(p.out()));
 */
export function startCli(args: string[], env?: NodeJS.ProcessEnv): CliChild {
  const child = spawn(process.execPath, [MAIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(env ? { env } : {}),
  });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return { child, out: () => out, err: () => err };
}

/** Polls `predicate` every 20 ms until it holds; throws naming `what` after `timeoutMs` (default 60 s, for busy machines). */
export async function until(what: string, predicate: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export async function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}
