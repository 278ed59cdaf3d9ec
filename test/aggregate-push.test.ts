/**
 * Aggregates followed by push, every part a real process: a live `resourcesync serve` Source with its embedded
 * hub; aggregator A following it by push (mode push); aggregator B whose only Source is A, following A by push
 * through A's embedded hub. A file changed at the origin reaches B's mirror (announced from hub to hub, no poll:
 * the intervals are an hour), and B's republished Resource List carries a `via` naming the origin, not A (§14.8).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readAggregateStatus, type SourceStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { freePort, startCli, until, type CliChild } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { startServe } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';

function statusOf(out: string, id: string): SourceStatus | undefined {
  try {
    return readAggregateStatus(out).find((s) => s.id === id);
  } catch {
    return undefined; // not written yet
  }
}

async function fileIs(file: string, want: string): Promise<boolean> {
  return readFile(file, 'utf8').then(
    (c) => c === want,
    () => false,
  );
}

/** Polls an async predicate against a deadline. */
async function untilAsync(
  what: string,
  predicate: () => Promise<boolean>,
  timeoutMs = 60_000,
  logs: () => string = () => '',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await predicate()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${logs()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function startAggregate(config: string): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['aggregate', config, '--port', '0', '--verbose']);
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  return { p, url: /^listening on (\S+)/m.exec(p.out())![1]! };
}

const locs = (xml: string): string[] => [...xml.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]!);

/** The Resource List of the aggregate at `url` (its only set). */
async function resourceList(url: string): Promise<string> {
  const sd = await (await fetch(`${url}/.well-known/resourcesync`)).text();
  const capabilityList = await (await fetch(locs(sd)[0]!)).text();
  const rl =
    /<url><loc>([^<]+)<\/loc><rs:md capability="resourcelist"/.exec(capabilityList) ??
    /<loc>([^<]*resourcelist[^<]*)<\/loc>/.exec(capabilityList);
  assert.ok(rl, capabilityList);
  assert.match(capabilityList, /capability="change-notification"/, 'the Capability List advertises the change channel');
  return (await fetch(rl[1]!)).text();
}

void test('aggregate push: origin → A → B by push, via naming the origin', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-push-');
  const children: CliChild['child'][] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await cleanup();
  });
  const originDir = join(dir, 'origin');
  await mkdir(originDir);
  const past = new Date(Date.now() - 60_000);
  await writeFile(join(originDir, 'a.txt'), 'alpha\n');
  await utimes(join(originDir, 'a.txt'), past, past);
  const origin = await startServe([originDir]);
  children.push(origin.child);

  const outA = join(dir, 'a');
  await writeFile(
    join(dir, 'a.yaml'),
    `out: ${outA}\nsources:\n  - url: ${origin.url}/\n    id: origin\n    interval: 3600\n    mode: push\n`,
  );
  const a = await startAggregate(join(dir, 'a.yaml'));
  children.push(a.p.child);
  await until('A following the origin by push', () => statusOf(outA, 'origin')?.mode === 'push', 60_000);

  const outB = join(dir, 'b');
  await writeFile(
    join(dir, 'b.yaml'),
    `out: ${outB}\nsources:\n  - url: ${a.url}/\n    id: a\n    interval: 3600\n    mode: push\n`,
  );
  const b = await startAggregate(join(dir, 'b.yaml'));
  children.push(b.p.child);
  await until('B following A by push', () => statusOf(outB, 'a')?.mode === 'push', 60_000);
  const inB = join(outB, 'sources', 'a', 'mirror', 'origin', 'a.txt');
  await untilAsync('the first copy in B', () => fileIs(inB, 'alpha\n'));

  // a change at the origin goes origin hub → A → A's hub → B; the intervals (an hour) rule out polling
  await writeFile(join(originDir, 'a.txt'), 'alpha, changed\n');
  await writeFile(join(originDir, 'b.txt'), 'beta\n');
  await untilAsync(
    'the change in A',
    () => fileIs(join(outA, 'sources', 'origin', 'mirror', 'a.txt'), 'alpha, changed\n'),
    90_000,
  );
  const logs = (): string => `A:\n${a.p.err()}\nB:\n${b.p.err()}`;
  await untilAsync('the change in B', () => fileIs(inB, 'alpha, changed\n'), 90_000, logs);
  await untilAsync(
    'the new file in B',
    () => fileIs(join(outB, 'sources', 'a', 'mirror', 'origin', 'b.txt'), 'beta\n'),
    90_000,
  );

  // B's Resource List names the origin in its via links, with the original's hash
  await untilAsync(
    'B republished the change',
    async () => (await resourceList(b.url)).includes(`href="${origin.url}/b.txt"`),
    30_000,
  );
  const rl = await resourceList(b.url);
  assert.ok(!rl.includes(`href="${a.url}/`), 'no via names A');
  const via = new RegExp(`<rs:ln [^>]*href="${origin.url}/a.txt"[^>]*>`).exec(rl)?.[0] ?? '';
  assert.match(via, /rel="via"/, rl);
  assert.match(via, /hash="md5:/, rl);

  // status tells the mode in use
  const st = await runCli(['aggregate', 'status', join(dir, 'b.yaml'), '--json']);
  assert.equal(st.status, 0, st.stderr);
  assert.equal((JSON.parse(st.stdout) as { sources: SourceStatus[] }).sources[0]!.mode, 'push');

  for (const p of [b.p.child, a.p.child]) {
    p.kill('SIGTERM');
    assert.equal((await exited(p))[0], 0);
  }
});

void test(
  'aggregate push: a hub that cannot be reached falls back to polling; auto without a channel polls',
  { timeout: 300_000 },
  async (t) => {
    const { dir, cleanup } = await tempDir('rs-aggregate-push-fallback-');
    const children: CliChild['child'][] = [];
    t.after(async () => {
      for (const c of children) c.kill('SIGKILL');
      await cleanup();
    });
    const past = new Date(Date.now() - 60_000);
    const src = async (name: string): Promise<string> => {
      const d = join(dir, name);
      await mkdir(d);
      await writeFile(join(d, 'a.txt'), `${name}\n`);
      await utimes(join(d, 'a.txt'), past, past);
      return d;
    };
    // a Source advertising a hub nothing listens on, and one advertising no channel at all
    const deadHub = `http://127.0.0.1:${await freePort()}/hub`;
    const unreachableDir = await src('unreachable');
    const unreachable = await startServe([unreachableDir, '--hub', deadHub]);
    children.push(unreachable.child);
    const silentDir = await src('silent');
    const silent = await startServe([silentDir, '--no-hub']);
    children.push(silent.child);
    const out = join(dir, 'agg');
    await writeFile(
      join(dir, 'agg.yaml'),
      `out: ${out}\nsources:\n  - url: ${unreachable.url}/\n    id: u\n    interval: 1\n    mode: push\n  - url: ${silent.url}/\n    id: s\n    interval: 1\n`,
    );
    const agg = await startAggregate(join(dir, 'agg.yaml'));
    children.push(agg.p.child);
    await untilAsync(
      'both first copies',
      async () =>
        (await fileIs(join(out, 'sources', 'u', 'mirror', 'a.txt'), 'unreachable\n')) &&
        (await fileIs(join(out, 'sources', 's', 'mirror', 'a.txt'), 'silent\n')),
    );
    assert.equal(statusOf(out, 'u')?.mode, 'poll', 'the hub cannot be reached: polled');
    assert.equal(statusOf(out, 's')?.mode, 'poll', 'auto, no channel: polled');
    await writeFile(join(unreachableDir, 'a.txt'), 'unreachable, changed\n');
    await writeFile(join(silentDir, 'a.txt'), 'silent, changed\n');
    await untilAsync(
      'the change of the Source whose hub is away, by polling',
      () => fileIs(join(out, 'sources', 'u', 'mirror', 'a.txt'), 'unreachable, changed\n'),
      90_000,
    );
    await untilAsync(
      'the change of the Source without a channel',
      () => fileIs(join(out, 'sources', 's', 'mirror', 'a.txt'), 'silent, changed\n'),
      90_000,
    );
    assert.equal(statusOf(out, 'u')?.mode, 'poll');
    agg.p.child.kill('SIGTERM');
    assert.equal((await exited(agg.p.child))[0], 0);
  },
);
