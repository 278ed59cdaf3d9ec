import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listFiles } from '../../src/destination/audit.js';
import { FakeSource } from './fake-source.js';
import { REPO_ROOT } from './paths.js';
import { startTestServer, type TestServer } from './test-server.js';

/** The built CLI. */
export const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

const md5 = (b: Buffer | string): string => createHash('md5').update(b).digest('hex');

/**
 * Runs the CLI in a child process (asynchronously: the Source may run in this process) and resolves with its
 * exit status and output; the child is killed after `timeoutMs` (then `status` is null and `killed` true).
 */
export function runCli(args: string[], timeoutMs = 120_000): Promise<{ status: number | null; stdout: string; stderr: string; killed: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr, killed });
    });
  });
}

/** Every file in the destination matches the Source byte for byte, and no temporary file is left; returns the paths present. */
export async function nothingCorrupt(src: FakeSource, dest: string): Promise<string[]> {
  const present = listFiles(dest).sort();
  for (const p of present) {
    const f = src.files.get(p);
    assert.ok(f, `unexpected file ${p}`);
    assert.equal(md5(await readFile(join(dest, ...p.split('/')))), md5(f.body), `corrupt ${p}`);
  }
  const tmp = await readdir(join(dest, '.resourcesync', 'tmp')).catch(() => []);
  assert.deepEqual(tmp, [], 'no temporary files');
  return present;
}

/** A FakeSource on a fresh TestServer and an empty destination folder, both gone afterwards. */
export async function withSource(fn: (src: FakeSource, dest: string, server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-fault-'));
  try {
    await fn(new FakeSource(server), dest, server);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
}
