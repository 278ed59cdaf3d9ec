/**
 * `resourcesync aggregate` end to end, every part a real process: an aggregator over a live `resourcesync serve`,
 * a `resourcesync build` tree served by nginx (a loopback static server where nginx is missing), a Source that
 * refuses connections and then comes up, and one that answers garbage. It ends with every good Source in step,
 * the bad one reported by `aggregate status --json`, the aggregate judged conformant by `check`, mirrored whole by
 * `sync` with `via` links naming the origin; Sources added and removed by SIGHUP; `kill -9` and a restart lose
 * nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, cp, mkdir, readFile, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { readAggregateStatus, type SourceStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { freePort, startCli, until, type CliChild } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { startServe, type ServeChild } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';
import { WEB_SERVERS, startWebServer, type RunningServer } from './helpers/web-servers.js';
import { parseXml } from './helpers/xml-oracle.js';

/** Relative paths of the files under `dir`, hidden names and the names in `skip` left out, sorted. */
async function listTree(dir: string, skip: string[] = []): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
      const p = rel === '' ? d.name : `${rel}/${d.name}`;
      if (d.name.startsWith('.') || skip.includes(p)) continue;
      if (d.isDirectory()) await walk(p);
      else out.push(p);
    }
  };
  await walk('');
  return out.sort();
}

/** Every resource file of `source` is in `mirror` byte for byte, and nothing else (hidden names aside). */
async function assertSame(source: string, mirror: string, what: string, skip: string[] = []): Promise<void> {
  const want = await listTree(source, skip);
  assert.deepEqual(await listTree(mirror), want, `${what}: file names`);
  for (const rel of want) assert.ok((await readFile(join(source, rel))).equals(await readFile(join(mirror, rel))), `${what}: ${rel} differs`);
}

/**
 * Writes the files, dated a minute back: a live Source leaves out of its first publication a file modified just
 * before it reads it (it may still be being written), which a busy machine makes likely.
 */
async function write(dir: string, files: Record<string, string>): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  for (const [p, c] of Object.entries(files)) {
    await mkdir(join(dir, ...p.split('/').slice(0, -1)), { recursive: true });
    await writeFile(join(dir, ...p.split('/')), c);
    await utimes(join(dir, ...p.split('/')), past, past);
  }
}

/** A Source that answers 200 with garbage to everything. */
async function garbageSource(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const xml = req.url === '/.well-known/resourcesync';
    res.writeHead(200, { 'content-type': xml ? 'application/xml' : 'application/octet-stream' });
    res.end(xml ? '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>broken' : '\u0000\u0001garbage');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server };
}

/** A plain static server over `root` on loopback (where nginx is missing). */
async function staticServer(root: string): Promise<RunningServer> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    if (path.includes('..')) return void res.writeHead(400).end();
    readFile(join(root, ...path.split('/'))).then(
      (b) => res.writeHead(200, { 'content-type': path.endsWith('.xml') || path.endsWith('/resourcesync') ? 'application/xml' : 'text/plain' }).end(b),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, output: () => '', stop: () => new Promise((r) => server.close(() => r())) };
}

function statusOf(out: string, id: string): SourceStatus | undefined {
  try {
    return readAggregateStatus(out).find((s) => s.id === id);
  } catch {
    return undefined; // not written yet
  }
}

const syncedSince = (out: string, id: string, t: number): boolean => (statusOf(out, id)?.lastSync ?? 0) >= t;

async function startAggregate(config: string): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['aggregate', config, '--port', '0', '--verbose']);
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  return { p, url: /^listening on (\S+)/m.exec(p.out())![1]! };
}

void test('aggregate: live, static, failing-then-recovering and garbage Sources; check, sync, via, reload, kill -9', { timeout: 600_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-');
  const children: { kill(sig: NodeJS.Signals): unknown }[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const s of stops) await s().catch(() => undefined);
    await cleanup();
  });
  await chmod(dir, 0o755);
  const t0 = Date.now();

  // (a) a live Source
  t.diagnostic(`${Date.now() - t0} ms: (a) a live Source`);
  const liveDir = join(dir, 'live');
  await write(liveDir, { 'a.txt': 'alpha\n', 'sub/b.txt': 'beta\n', 'caf\u00e9 menu.txt': 'menu\n' });
  const live: ServeChild = await startServe([liveDir]);
  children.push(live.child);

  // (b) a build tree served by nginx (or a plain static server)
  t.diagnostic(`${Date.now() - t0} ms: (b) a build tree served by nginx (or a p`);
  const staticRoot = join(dir, 'static');
  await write(staticRoot, { 'robots.txt': 'User-agent: *\n' });
  const nginx = WEB_SERVERS.find((k) => k.name === 'nginx')!;
  const nginxBin = nginx.find();
  if (nginxBin === undefined) t.diagnostic('nginx not installed: the build tree is served by a loopback static server');
  await mkdir(join(dir, 'nginx'));
  const web = nginxBin === undefined ? await staticServer(staticRoot) : await startWebServer(nginx, nginxBin, join(dir, 'nginx'), staticRoot, '/robots.txt');
  stops.push(() => web.stop());
  const collection = join(dir, 'collection');
  await write(collection, { 'x/1.xml': '<one/>\n', 'x/2.txt': 'two\n', 'y.txt': 'why\n' });
  const build = await runCli(['build', collection, '--base-url', `${web.origin}/`, '--out', staticRoot, '--state', join(dir, 'build-state')]);
  assert.equal(build.status, 0, build.stderr);
  await cp(collection, staticRoot, { recursive: true });

  // (c) nothing listens there yet; (d) garbage
  const laterPort = await freePort();
  const garbage = await garbageSource();
  stops.push(() => new Promise((r) => garbage.server.close(r)));

  const out = join(dir, 'agg');
  const config = join(dir, 'aggregate.yaml');
  const sources = (extra = ''): string => `out: ${out}
max-backoff: 2
sources:
  - url: ${live.url}/.well-known/resourcesync
    id: live
    interval: 1
    mode: poll
  - url: ${web.origin}/.well-known/resourcesync
    id: static
    interval: 1
  - url: http://127.0.0.1:${laterPort}/
    id: later
    interval: 1
    mode: poll
  - url: ${garbage.url}
    id: garbage
    interval: 1
${extra}`;
  await writeFile(config, sources());
  const started = Date.now();
  let agg = await startAggregate(config);
  children.push(agg.p.child);

  await until('live and static in step, later and garbage failing', () =>
    syncedSince(out, 'live', started) && syncedSince(out, 'static', started) && (statusOf(out, 'later')?.failures ?? 0) >= 1 && (statusOf(out, 'garbage')?.failures ?? 0) >= 1,
  );
  // (c) recovers: the Source comes up on the port that refused
  t.diagnostic(`${Date.now() - t0} ms: (c) recovers: the Source comes up on the`);
  const laterDir = join(dir, 'later-src');
  await write(laterDir, { 'late.txt': 'at last\n' });
  const laterServe = startCli(['serve', laterDir, '--port', String(laterPort)]);
  children.push(laterServe.child);
  await until('later serving', () => /^listening on /m.test(laterServe.out()));
  await until('later in step', () => statusOf(out, 'later')?.lastSync !== undefined, 60_000);

  await assertSame(liveDir, join(out, 'sources', 'live', 'mirror'), 'live');
  await assertSame(collection, join(out, 'sources', 'static', 'mirror'), 'static');
  await assertSame(laterDir, join(out, 'sources', 'later', 'mirror'), 'later');

  const st = await runCli(['aggregate', 'status', config, '--json']);
  assert.equal(st.status, 1, 'status exits 1 while a Source is failing');
  const report = JSON.parse(st.stdout) as { sources: (SourceStatus & { lagMs?: number })[] };
  const bad = report.sources[0]!;
  assert.equal(bad.id, 'garbage', 'the failing Source comes first');
  assert.ok(bad.failures >= 1 && (bad.state === 'failing' || bad.state === 'syncing'), JSON.stringify(bad));
  assert.match(bad.lastError?.code ?? '', /^RS_/);
  assert.ok(bad.nextAttempt !== undefined && bad.nextAttempt > bad.lastError!.at, 'a next attempt after the failure');
  for (const id of ['live', 'static', 'later']) {
    const s = report.sources.find((x) => x.id === id)!;
    assert.equal(s.failures, 0, id);
    assert.equal(s.mode, 'poll');
    assert.ok(typeof s.lagMs === 'number' && s.resources !== undefined && s.resources > 0, id);
  }

  // Prometheus metrics of every Source
  t.diagnostic(`${Date.now() - t0} ms: Prometheus metrics of every Source`);
  const metrics = await (await fetch(`${agg.url}/metrics`)).text();
  assert.match(metrics, /^resourcesync_aggregate_source_up\{source="garbage"\} 0$/m);
  assert.match(metrics, /^resourcesync_aggregate_source_up\{source="live"\} 1$/m);
  assert.match(metrics, /^resourcesync_aggregate_source_changes_total\{source="live",change="created"\} 3$/m);
  assert.match(metrics, /^resourcesync_aggregate_source_last_sync_timestamp_seconds\{source="static"\} \d+(\.\d+)?$/m);
  assert.match(metrics, /^resourcesync_aggregate_source_errors_total\{source="garbage"\} [1-9]\d*$/m);

  // the aggregate is a conformant Source
  t.diagnostic(`${Date.now() - t0} ms: the aggregate is a conformant Source`);
  const check = await runCli(['check', agg.url]);
  assert.equal(check.status, 0, `check: ${check.stdout}${check.stderr}`);
  const sd = parseXml(await (await fetch(`${agg.url}/.well-known/resourcesync`)).text());
  assert.deepEqual(sd.entries.map((e) => e.loc).sort(), ['later', 'live', 'static'].map((id) => `${agg.url}/.resourcesync/${id}/capabilitylist.xml`));

  // a Destination of the aggregate gets every copy, with via links to the origin
  t.diagnostic(`${Date.now() - t0} ms: a Destination of the aggregate gets ever`);
  const fresh = join(dir, 'fresh');
  const s1 = await runCli(['sync', `${agg.url}/`, fresh, '--delete']);
  assert.equal(s1.status, 0, s1.stderr);
  await assertSame(liveDir, join(fresh, 'live'), 'fresh live');
  await assertSame(collection, join(fresh, 'static'), 'fresh static');
  const links = await runCli(['links', fresh, '--json', '--rel', 'via']);
  assert.equal(links.status, 0, links.stderr);
  const vias = links.stdout.trim().split('\n').map((l) => JSON.parse(l) as { path: string; links: { via?: { href: string; hash?: string; length?: string; modified?: string }[] } });
  const viaOf = (path: string): { href: string; hash?: string; length?: string; modified?: string } | undefined => vias.find((v) => v.path === path)?.links.via?.[0];
  assert.equal(viaOf('live/a.txt')?.href, `${live.url}/a.txt`);
  assert.equal(viaOf('live/a.txt')?.length, '6');
  assert.match(viaOf('live/a.txt')?.hash ?? '', /^md5:/);
  assert.equal(viaOf('static/x/1.xml')?.href, `${web.origin}/x/1.xml`);
  assert.equal(viaOf('later/late.txt')?.href, `http://127.0.0.1:${laterPort}/late.txt`);

  // a change at the live Source reaches the aggregate's Change List, in the order applied
  t.diagnostic(`${Date.now() - t0} ms: a change at the live Source reaches the `);
  const beforeChange = Date.now();
  await writeFile(join(liveDir, 'a.txt'), 'alpha, changed\n');
  await rm(join(liveDir, 'sub', 'b.txt'));
  await until('the change mirrored', () => syncedSince(out, 'live', beforeChange) && statusOf(out, 'live')?.resources === 2, 60_000);
  await assertSame(liveDir, join(out, 'sources', 'live', 'mirror'), 'live after the change');
  let cl = parseXml('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>');
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    cl = parseXml(await (await fetch(`${agg.url}/.resourcesync/live/changelist.xml`)).text());
    if (cl.entries.length >= 2) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const changes = cl.entries.map((e) => `${e.md?.change} ${e.loc}`);
  assert.ok(changes.includes(`updated ${agg.url}/live/a.txt`) && changes.includes(`deleted ${agg.url}/live/sub/b.txt`), changes.join('\n'));
  const updated = cl.entries.find((e) => e.loc === `${agg.url}/live/a.txt`)!;
  assert.equal(updated.ln?.find((l) => l.rel === 'via')?.href, `${live.url}/a.txt`);
  const s2 = await runCli(['sync', `${agg.url}/`, fresh, '--delete', '--json']);
  assert.equal(s2.status, 0, s2.stderr);
  assert.equal((JSON.parse(s2.stdout) as { mode: string }).mode, 'incremental');
  await assertSame(liveDir, join(fresh, 'live'), 'fresh live after the change');

  // SIGHUP: one Source added, one removed
  t.diagnostic(`${Date.now() - t0} ms: SIGHUP: one Source added, one removed`);
  const extraDir = join(dir, 'extra');
  await write(extraDir, { 'e.txt': 'extra\n' });
  const extra = await startServe([extraDir]);
  children.push(extra.child);
  await writeFile(config, sources(`  - url: ${extra.url}/\n    id: extra\n    interval: 1\n    mode: poll\n`).replace(/ {2}- url: \S+\n {4}id: static\n {4}interval: 1\n/, ''));
  agg.p.child.kill('SIGHUP');
  await until('extra in step', () => statusOf(out, 'extra')?.lastSync !== undefined && statusOf(out, 'static')?.state === 'stopped', 60_000);
  await assertSame(extraDir, join(out, 'sources', 'extra', 'mirror'), 'extra');
  let listed: string[] = [];
  for (let i = 0; i < 600; i++) {
    listed = parseXml(await (await fetch(`${agg.url}/.well-known/resourcesync`)).text()).entries.map((e) => e.loc);
    if (listed.some((l) => l.includes('/extra/')) && !listed.some((l) => l.includes('/static/'))) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(listed.some((l) => l.includes('/extra/')) && !listed.some((l) => l.includes('/static/')), listed.join('\n'));
  assert.ok((await listTree(join(out, 'sources', 'static', 'mirror'))).length > 0, 'a removed Source keeps its mirror');
  assert.match(agg.p.err(), /reloaded: 1 added, 1 removed, 0 changed/);

  // a change of the file alone reloads it too
  t.diagnostic(`${Date.now() - t0} ms: a change of the file alone reloads it to`);
  await writeFile(config, (await readFile(config, 'utf8')).replace(/(id: live\n {4}interval:) 1/, '$1 2'));
  await until('the file change seen', () => /reloaded: 0 added, 0 removed, 1 changed/.test(agg.p.err()), 30_000);

  // kill -9, restart: mirrors and status intact, the next sync incremental
  t.diagnostic(`${Date.now() - t0} ms: kill -9, restart: mirrors and status int`);
  const before = readAggregateStatus(out);
  agg.p.child.kill('SIGKILL');
  await exited(agg.p.child);
  const restarted = Date.now();
  agg = await startAggregate(config);
  children.push(agg.p.child);
  for (const s of before.filter((x) => x.lastSync !== undefined)) assert.ok(statusOf(out, s.id)?.lastSync !== undefined, `${s.id} keeps its status`);
  await until('live synced after the restart', () => syncedSince(out, 'live', restarted), 60_000);
  assert.equal(statusOf(out, 'live')?.lastSyncMode, 'incremental');
  assert.ok((statusOf(out, 'live')?.totals.syncs ?? 0) > (before.find((s) => s.id === 'live')?.totals.syncs ?? 0));
  await assertSame(liveDir, join(out, 'sources', 'live', 'mirror'), 'live after the restart');
  await assertSame(extraDir, join(out, 'sources', 'extra', 'mirror'), 'extra after the restart');
  const s3 = await runCli(['sync', `${agg.url}/`, join(dir, 'fresh2'), '--delete']);
  assert.equal(s3.status, 0, s3.stderr);
  await assertSame(liveDir, join(dir, 'fresh2', 'live'), 'a fresh mirror after the restart');

  // a second aggregator over the first: a chain keeps the origin's via, not the intermediary's (§14.8)
  t.diagnostic(`${Date.now() - t0} ms: a second aggregator over the first: a ch`);
  const config2 = join(dir, 'second.yaml');
  const out2 = join(dir, 'agg2');
  await writeFile(config2, `out: ${out2}\nsources:\n  - url: ${agg.url}/\n    id: first\n    interval: 1\n`);
  const second = await startAggregate(config2);
  children.push(second.p.child);
  await until('the second aggregator in step', () => statusOf(out2, 'first')?.lastSync !== undefined, 60_000);
  await assertSame(liveDir, join(out2, 'sources', 'first', 'mirror', 'live'), 'the second aggregator');
  const chain = join(dir, 'chain');
  const s4 = await runCli(['sync', `${second.url}/`, chain, '--delete']);
  assert.equal(s4.status, 0, s4.stderr);
  await assertSame(liveDir, join(chain, 'first', 'live'), 'a mirror of the second aggregator');
  const chained = await runCli(['links', chain, 'first/live/a.txt', '--json', '--rel', 'via']);
  assert.equal(chained.status, 0, chained.stderr);
  const chainVia = (JSON.parse(chained.stdout) as { links: { via?: { href: string; hash?: string }[] } }).links.via;
  assert.equal(chainVia?.length, 1);
  assert.equal(chainVia[0]!.href, `${live.url}/a.txt`, 'the origin, not the first aggregator');
  assert.match(chainVia[0]!.hash ?? '', /^md5:/);
  second.p.child.kill('SIGTERM');
  assert.equal((await exited(second.p.child))[0], 0);

  agg.p.child.kill('SIGTERM');
  const [code] = await exited(agg.p.child);
  assert.equal(code, 0, agg.p.err());
});
