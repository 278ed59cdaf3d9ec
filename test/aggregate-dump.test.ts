/**
 * An aggregator over a dump-only Source (its Capability List offers a Resource Dump and nothing else): the
 * aggregator takes the Source in from the dump, serves the copies with their `via`, and `aggregate status` reports
 * it in step. Real processes: `resourcesync build --dumps`, a loopback static server, `resourcesync aggregate`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exited } from './helpers/exited.js';
import { startCli, until } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { parseXml } from './helpers/xml-oracle.js';

void test('aggregate: a dump-only Source is taken in from its Resource Dump', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-dump-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const root = join(dir, 'root');
  await mkdir(root);
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (path.includes('..')) return void res.writeHead(400).end();
    readFile(join(root, ...path.split('/'))).then(
      (b) => res.writeHead(200, { 'content-type': path.endsWith('.zip') ? 'application/zip' : path.endsWith('.txt') ? 'text/plain' : 'application/xml' }).end(b),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  teardown.push(() => new Promise((r) => server.close(r)));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const data = join(dir, 'data');
  await mkdir(join(data, 'd'), { recursive: true });
  await writeFile(join(data, 'one.txt'), 'one\n');
  await writeFile(join(data, 'd', 'two.txt'), 'two\n');
  const build = await runCli(['build', data, '--base-url', `${origin}/`, '--out', root, '--state', join(dir, 'state'), '--dumps']);
  assert.equal(build.status, 0, build.stderr);
  // the Capability List offers the Resource Dump alone; the resources themselves are not served
  const capFile = join(root, '.resourcesync', 'data', 'capabilitylist.xml');
  const cap = await readFile(capFile, 'utf8');
  const onlyDump = cap.replace(/<url>(?:(?!<\/url>)[\s\S])*<\/url>/g, (u) => (/capability="resourcedump"/.test(u) ? u : ''));
  assert.match(onlyDump, /capability="resourcedump"/);
  assert.doesNotMatch(onlyDump, /capability="resourcelist"|capability="changelist"/);
  await writeFile(capFile, onlyDump);

  const config = join(dir, 'agg.yaml');
  const out = join(dir, 'out');
  await writeFile(config, `out: ${out}\nsources:\n  - url: ${origin}/.well-known/resourcesync\n    id: dumped\n    interval: 1\n`);
  const agg = startCli(['aggregate', config, '--port', '0']);
  teardown.push(() => agg.child.kill('SIGKILL'));
  await until('the aggregator listening', () => /^listening on /m.test(agg.out()) || agg.child.exitCode !== null);
  const url = /^listening on (\S+)/m.exec(agg.out())![1]!;
  let status: { sources: { id: string; lastSync?: number; resources?: number; lastSyncMode?: string }[] } = { sources: [] };
  const deadline = Date.now() + 120_000;
  while (status.sources[0]?.lastSync === undefined) {
    assert.ok(Date.now() < deadline, `the dump-only Source never synced: ${agg.err()}`);
    const r = await runCli(['aggregate', 'status', config, '--json']);
    if (r.status === 0 || r.status === 1) status = JSON.parse(r.stdout) as typeof status;
    await new Promise((res) => setTimeout(res, 200));
  }
  assert.equal(status.sources[0].resources, 2);
  const human = await runCli(['aggregate', 'status', config]);
  assert.equal(human.status, 0, human.stderr);
  assert.match(human.stdout, /^SOURCE +STATE +MODE +LAST SYNC +RESOURCES +NEXT +LAST ERROR$/m);
  assert.match(human.stdout, /^dumped +(waiting|syncing) +poll +\d+s ago +2 +/m);
  assert.equal(status.sources[0].lastSyncMode, 'baseline');
  assert.equal(await readFile(join(out, 'sources', 'dumped', 'mirror', 'd', 'two.txt'), 'utf8'), 'two\n');
  let rl = parseXml('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>');
  // polled against a deadline, not a count: the republication takes longer on a busy machine
  for (const deadline = Date.now() + 120_000; rl.entries.length < 2 && Date.now() < deadline; ) {
    const res = await fetch(`${url}/.resourcesync/dumped/resourcelist.xml`);
    if (res.status === 200) rl = parseXml(await res.text());
    else await res.body?.cancel();
    if (rl.entries.length < 2) await new Promise((r) => setTimeout(r, 100));
  }
  const two = rl.entries.find((e) => e.loc === `${url}/dumped/d/two.txt`);
  assert.equal(two?.ln?.find((l) => l.rel === 'via')?.href, `${origin}/d/two.txt`);
  agg.child.kill('SIGTERM');
  assert.equal((await exited(agg.child))[0], 0, agg.err());
});
