// `resourcesync simulate` as a child process: the `listening on` line, reproducible `--json` change lines,
// usage errors, and a `sync` of the simulator that converges to byte-identical files once it has paused.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ChangeSimulator, changeDigest } from '../../src/source/simulator.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { tempDir } from '../helpers/tmp.js';
import { runCli as runCliProcess } from '../helpers/mirror-check.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const children: ChildProcess[] = [];

after(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

interface Simulation {
  child: ChildProcess;
  url: string;
  /** stdout lines after `listening on`, as they arrive */
  lines: string[];
  stderr: () => string;
  exited: Promise<number | null>;
}

async function start(args: string[]): Promise<Simulation> {
  const child = spawn(process.execPath, [MAIN, 'simulate', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines: string[] = [];
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    let listening: string | undefined;
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line within 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const parts = out.split('\n');
      out = parts.pop()!;
      for (const line of parts) {
        if (listening === undefined) {
          // `listening on URL`, or with --json `{"listening":URL}`: every line of stdout is JSON then
          const m = args.includes('--json')
            ? /^\{"listening":"(http:\/\/127\.0\.0\.1:\d+)"\}$/.exec(line)
            : /^listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line);
          assert.ok(m !== null, `first line: ${line}`);
          listening = m[1]!;
          clearTimeout(timer);
          resolve(listening);
        } else lines.push(line);
      }
    });
    void exited.then((code) => reject(new Error(`simulate exited with ${code}; stderr: ${stderr}`)));
  });
  return { child, url, lines, stderr: () => stderr, exited };
}

/** Waits (bounded: 60 s, however busy the machine) until `n` change lines have arrived. */
async function waitLines(sim: Simulation, n: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let i = 0; i < 10_000 && sim.lines.length < n && Date.now() < deadline; i++) await sleep(50);
  assert.equal(sim.lines.length, n, `change lines; stderr: ${sim.stderr()}`);
}

async function stopped(sim: Simulation): Promise<number | null> {
  sim.child.kill('SIGTERM');
  return sim.exited;
}

/** The CLI as a child process (bounded in time), its exit code as `code`. */
async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runCliProcess(args);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function tree(dir: string, prefix = ''): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) for (const [k, v] of await tree(join(dir, e.name), rel)) out.set(k, v);
    else
      out.set(
        rel,
        createHash('md5')
          .update(await readFile(join(dir, e.name)))
          .digest('hex'),
      );
  }
  return out;
}

const ARGS = ['--resources', '30', '--size', '200', '--seed', '1234', '--mix', '1:2:1', '--json'];

void test('the same seed gives the same --json change lines; each line describes its change', async () => {
  const a = await start([...ARGS, '--rate', '200', '--changes', '25']);
  const b = await start([...ARGS, '--rate', '200', '--changes', '25']);
  await waitLines(a, 25);
  await waitLines(b, 25);
  const strip = (line: string): unknown => {
    const { url, at, ...rest } = JSON.parse(line) as Record<string, unknown>;
    assert.match(String(at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
    assert.ok(typeof url === 'string' && url.endsWith(`/${String(rest.path)}`), String(url));
    return rest;
  };
  const linesA = a.lines.map(strip);
  assert.deepEqual(b.lines.map(strip), linesA);
  // the lines are exactly the library's sequence for these options
  const sim = new ChangeSimulator({ resources: 30, size: 200, seed: 1234, mix: [1, 2, 1] });
  assert.equal([...sim.initial()].length, 30);
  const expected = Array.from({ length: 25 }, () => {
    const c = sim.next();
    return {
      seq: c.seq,
      change: c.change,
      path: c.path,
      ...(c.bytes === undefined ? {} : { length: c.bytes.length, md5: changeDigest(c) }),
    };
  });
  assert.deepEqual(linesA, expected);
  // the resources changed are served as the lines say
  const last = new Map<string, Record<string, unknown>>();
  for (const line of a.lines)
    last.set(String((JSON.parse(line) as { path: string }).path), JSON.parse(line) as Record<string, unknown>);
  await sleep(50);
  for (const [, line] of last) {
    const res = await fetch(String(line.url));
    if (line.change === 'deleted') {
      assert.equal(res.status, 404, String(line.url));
      await res.body?.cancel();
    } else {
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.equal(createHash('md5').update(bytes).digest('hex'), line.md5, String(line.url));
    }
  }
  assert.equal(await stopped(a), 0);
  assert.equal(await stopped(b), 0);
});

void test('a sync of the simulator converges to byte-identical files once it has paused', async () => {
  const { dir, cleanup } = await tempDir('rs-simulate-sync-');
  try {
    const during = join(dir, 'during');
    const after = join(dir, 'after');
    const sim = await start([...ARGS, '--rate', '20', '--changes', '40']);
    // a first sync while the Source is changing: resources change under it (exit 0 or 1)
    const first = await runCli(['sync', sim.url, during, '--delete', '--no-fsync', '--json']);
    assert.ok(first.code === 0 || first.code === 1, `sync while changing: ${first.code} ${first.stderr}`);
    await waitLines(sim, 40);
    const expected = new Map<string, string>();
    const model = new ChangeSimulator({ resources: 30, size: 200, seed: 1234, mix: [1, 2, 1] });
    for (const r of model.initial()) expected.set(r.path, createHash('md5').update(r.bytes).digest('hex'));
    for (let i = 0; i < 40; i++) {
      const c = model.next();
      if (c.bytes === undefined) expected.delete(c.path);
      else expected.set(c.path, changeDigest(c)!);
    }
    const want = JSON.stringify([...expected].sort());
    // The last changes reach the Change List within a publication or two: sync until converged (bounded). The
    // mirror begun during the changes ends with the same files and exit 0: what failed in its baseline because
    // the Source changed under it is resolved by the changes since.
    let converged = false;
    let last = first;
    const deadline = Date.now() + 90_000;
    for (let attempt = 0; attempt < 200 && !converged && (attempt < 20 || Date.now() < deadline); attempt++) {
      last = await runCli(['sync', sim.url, during, '--delete', '--no-fsync', '--json']);
      converged = last.code === 0 && JSON.stringify([...(await tree(during))].sort()) === want;
      if (!converged) await sleep(300);
    }
    assert.ok(
      converged,
      `mirror begun while changing: not converged; last sync ${last.code}: ${last.stdout} ${last.stderr}`,
    );
    // a mirror begun after the pause: one sync, exit 0, byte-identical
    const fresh = await runCli(['sync', sim.url, after, '--delete', '--no-fsync', '--json']);
    assert.equal(fresh.code, 0, fresh.stdout + fresh.stderr);
    assert.deepEqual(await tree(after), expected);
    const audit = await runCli(['audit', sim.url, after, '--json']);
    assert.equal(audit.code, 0, audit.stdout + audit.stderr);
    assert.equal(await stopped(sim), 0);
  } finally {
    await cleanup();
  }
});

void test('usage errors exit 2 and name the option', async () => {
  for (const [args, word] of [
    [['--mix', '1:2'], '--mix'],
    [['--mix', '0:0:0'], '--mix'],
    [['--rate', '-1'], '--rate'],
    [['--seed', 'x'], '--seed'],
    [['--resources', '1.5'], '--resources'],
    [['extra'], 'unexpected'],
  ] as const) {
    const r = await runCli(['simulate', ...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.includes(word), r.stderr);
  }
});
