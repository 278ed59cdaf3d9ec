import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/**
 * The exit of `child` as `[code, signal]`, bounded: a process that already ended answers at once, and one still
 * running after `ms` is killed and the test fails with its command line.
 */
export async function exited(child: ChildProcess, ms = 30_000): Promise<[number | null, NodeJS.Signals | null]> {
  if (child.exitCode !== null || child.signalCode !== null) return [child.exitCode, child.signalCode];
  try {
    return (await once(child, 'exit', { signal: AbortSignal.timeout(ms) })) as [number | null, NodeJS.Signals | null];
  } catch {
    if (child.exitCode !== null || child.signalCode !== null) return [child.exitCode, child.signalCode];
    child.kill('SIGKILL');
    throw new Error(`process ${child.pid} (${child.spawnargs.slice(1, 4).join(' ')}) did not exit within ${ms} ms`);
  }
}
