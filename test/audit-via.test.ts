/**
 * `audit --via`, every part a real process: a live `resourcesync serve` origin, an aggregator over it (polling
 * hourly, so that its copies stay as first taken), a mirror of the aggregate made by `sync`. While the origin is
 * unchanged the provenance check passes (exit 0); once a file at the origin changed and another was deleted, it
 * reports the first as changed and the second as gone (exit 1), though the mirror is still in step with the
 * aggregate.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ViaAuditReport } from '../src/destination/audit-via.js';
import { readAggregateStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { startCli, until } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { startServe } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';

const synced = (out: string): boolean => {
  try {
    return readAggregateStatus(out).some((s) => s.lastSync !== undefined);
  } catch {
    return false;
  }
};

void test('audit --via: originals unchanged (exit 0), then changed and gone (exit 1); usage errors', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-audit-via-');
  const children: { kill(sig: NodeJS.Signals): unknown }[] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await cleanup();
  });
  const originDir = join(dir, 'origin');
  await mkdir(originDir);
  const past = new Date(Date.now() - 60_000);
  for (const [name, content] of [['a.txt', 'alpha\n'], ['b.txt', 'beta\n']]) {
    await writeFile(join(originDir, name!), content!);
    await utimes(join(originDir, name!), past, past);
  }
  const origin = await startServe([originDir, '--no-hub']);
  children.push(origin.child);
  const out = join(dir, 'agg');
  await writeFile(join(dir, 'agg.yaml'), `out: ${out}\nsources:\n  - url: ${origin.url}/\n    id: o\n    interval: 3600\n    mode: poll\n`);
  const agg = startCli(['aggregate', join(dir, 'agg.yaml'), '--port', '0']);
  children.push(agg.child);
  await until('the aggregator listening', () => /^listening on /m.test(agg.out()) || agg.child.exitCode !== null);
  const aggUrl = /^listening on (\S+)/m.exec(agg.out())![1]!;
  await until('the origin synced', () => synced(out));
  const mirror = join(dir, 'mirror');
  let s = await runCli(['sync', `${aggUrl}/`, mirror]);
  for (const deadline = Date.now() + 120_000; s.status !== 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 200)); // the first publication may still be under way (503)
    s = await runCli(['sync', `${aggUrl}/`, mirror]);
  }
  assert.equal(s.status, 0, s.stderr);

  const ok = await runCli(['audit', `${aggUrl}/`, mirror, '--via', '--allow-origin', origin.url, '--json']);
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  const before = (JSON.parse(ok.stdout) as { via: ViaAuditReport }).via;
  assert.equal(before.checked, 2);
  assert.equal(before.current, 2);
  // an origin nobody named is not contacted: its originals are reported unreachable
  const unnamed = await runCli(['audit', `${aggUrl}/`, mirror, '--via', '--json']);
  assert.equal(unnamed.status, 1, unnamed.stdout + unnamed.stderr);
  const refused = (JSON.parse(unnamed.stdout) as { via: ViaAuditReport }).via;
  assert.deepEqual([refused.checked, refused.current, refused.counts.unreachable], [2, 0, 2]);
  assert.match(refused.movedOn[0]!.detail ?? '', /not allowed \(--allow-origin\)/);

  await writeFile(join(originDir, 'a.txt'), 'alpha, moved on\n');
  await rm(join(originDir, 'b.txt'));
  // the live origin serves what it published: wait until it published the change
  for (let i = 0; ; i++) {
    const r = await fetch(`${origin.url}/b.txt`);
    await r.body?.cancel();
    if (r.status === 404) break;
    assert.ok(i < 300, 'the origin published the deletion');
    await new Promise((r2) => setTimeout(r2, 100));
  }
  const bad = await runCli(['audit', `${aggUrl}/`, mirror, '--via', '--allow-origin', origin.url, '--json']);
  assert.equal(bad.status, 1, bad.stdout + bad.stderr);
  const report = JSON.parse(bad.stdout) as { inSync: boolean; via: ViaAuditReport };
  assert.equal(report.inSync, true, 'the mirror is in step with the aggregate');
  assert.equal(report.via.inStep, false);
  assert.deepEqual(
    report.via.movedOn.map((d) => [d.path, d.reason, d.original]),
    [
      ['o/a.txt', 'length', `${origin.url}/a.txt`],
      ['o/b.txt', 'gone', `${origin.url}/b.txt`],
    ],
  );
  const text = await runCli(['audit', `${aggUrl}/`, mirror, '--via', '--allow-origin', origin.url]);
  assert.equal(text.status, 1);
  assert.match(text.stdout, /ORIGINALS MOVED ON/);
  assert.match(text.stdout, /gone: o\/b\.txt/);

  const usage = await runCli(['audit', `${aggUrl}/`, mirror, '--via', '--repair']);
  assert.equal(usage.status, 2);

  agg.child.kill('SIGTERM');
  assert.equal((await exited(agg.child))[0], 0);
});
