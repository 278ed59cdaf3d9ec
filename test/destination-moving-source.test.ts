import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { listFiles } from '../src/destination/audit.js';
import { CLI, runCli } from './helpers/mirror-check.js';
import { prng } from './helpers/prng.js';
import { tempDir } from './helpers/tmp.js';

const children: ChildProcess[] = [];
after(() => {
  for (const c of children) c.kill('SIGKILL');
});

/** Starts a CLI child that serves on a free port; resolves with its base URL from its `listening on` line. */
async function startListening(args: string[]): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line within 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  return { url, child };
}

/** Ends a child and waits for it to exit (bounded: SIGKILL after 30 s). */
async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}

async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of listFiles(dir).sort()) out[p] = await readFile(join(dir, ...p.split('/')), 'utf8');
  return out;
}

/** Writes (creates, updates, deletes) files of `site` at `rate` per second until `stop()`; resolves when stopped. */
function writer(site: string, rate: number, seed: number): { stop: () => Promise<void>; writes: () => number } {
  const rnd = prng(seed);
  let stopped = false;
  let n = 0;
  const done = (async () => {
    const started = performance.now();
    while (!stopped) {
      const i = Math.floor(rnd() * 200);
      const path = join(site, `d${i % 4}`, `r${i}.txt`);
      if (rnd() < 0.2) await rm(path, { force: true });
      else await writeFile(path, `resource ${i} version ${n}\n`.repeat(1 + (n % 9)));
      n++;
      const wait = started + (n * 1000) / rate - performance.now();
      if (wait > 0) await sleep(wait);
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await done;
    },
    writes: () => n,
  };
}

interface Report {
  created: number;
  failed: { url: string; code: string }[];
  warnings: { code: string }[];
}

const lastJson = (stdout: string): Report => JSON.parse(stdout.trim().split('\n').pop()!) as Report;

async function tenBaselines(rate: number): Promise<void> {
  const tmp = await tempDir('rs-moving-');
  try {
    const site = join(tmp.dir, 'site');
    for (let d = 0; d < 4; d++) await mkdir(join(site, `d${d}`), { recursive: true });
    for (let i = 0; i < 200; i++) await writeFile(join(site, `d${i % 4}`, `r${i}.txt`), `resource ${i}\n`);
    const { url, child } = await startListening(['serve', site, '--port', '0']);
    try {
      await baselinesThenCatchUp(url, site, tmp.dir, rate);
    } finally {
      await stopChild(child);
    }
  } finally {
    await tmp.cleanup();
  }
}

async function baselinesThenCatchUp(url: string, site: string, dir: string, rate: number): Promise<void> {
  const w = writer(site, rate, rate);
  const mirrors: string[] = [];
  try {
    for (let run = 0; run < 10; run++) {
      const dest = join(dir, `m${run}`);
      mirrors.push(dest);
      const r = await runCli(['sync', url, dest, '--json', '--no-fsync']);
      const report = lastJson(r.stdout);
      assert.deepEqual(report.failed, [], `run ${run}: ${r.stderr}`);
      assert.equal(r.status, 0, `run ${run} exit ${r.status}: ${r.stderr}`);
    }
    assert.ok(w.writes() > rate * 5, `the Source changed while it was read (${w.writes()} writes)`);
  } finally {
    await w.stop();
  }
  // the writer paused: an incremental run from each stored point brings each mirror to the Source, byte for byte
  const want = await tree(site);
  for (const dest of mirrors) {
    let same = false;
    const deadline = Date.now() + 90_000; // a busy machine publishes the last changes late
    for (let i = 0; i < 180 && !same && Date.now() < deadline; i++) {
      const r = await runCli(['sync', url, dest, '--json', '--no-fsync', '--delete']);
      assert.equal(r.status, 0, r.stderr);
      same = JSON.stringify(await tree(dest)) === JSON.stringify(want);
      if (!same) await sleep(500); // the Source publishes its last changes
    }
    assert.deepEqual(await tree(dest), want, dest);
  }
}

void test(
  'ten baselines in a row of a Source changing 4 times a second each exit 0, and each catches up to it once it pauses',
  { timeout: 600_000 },
  async () => {
    await tenBaselines(4);
  },
);

void test(
  'ten baselines in a row of a Source changing 20 times a second each exit 0, and each catches up to it once it pauses',
  { timeout: 600_000 },
  async () => {
    await tenBaselines(20);
  },
);
