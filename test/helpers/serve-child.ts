import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** A `resourcesync serve` child process once it printed its `listening on` line. */
export interface ServeChild {
  child: ChildProcess;
  /** `http://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Everything it wrote on stderr so far. */
  log: () => string;
}

/**
 * Starts `resourcesync serve <args> --port 0` and resolves once it listens (at most `ms`); rejects with its
 * stderr when it exits first.
 */
export async function startServe(args: readonly string[], ms = 30_000): Promise<ServeChild> {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no 'listening on' line within ${ms} ms; stderr: ${err}`));
    }, ms);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}; stderr: ${err}`));
    });
  });
  return { child, url, port: Number(new URL(url).port), log: () => err };
}
