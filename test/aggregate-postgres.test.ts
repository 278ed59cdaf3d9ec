/**
 * `resourcesync aggregate --state postgres://…` end to end, every part real: a throwaway PostgreSQL cluster, a live
 * `resourcesync serve` child and a static Source (hand-written Resource List listing its own `type`) served on
 * loopback. In step, the aggregate is judged conformant by `check`; a `sync` of it has `via` links naming the origin
 * with the original's type; the states and snapshots are rows in PostgreSQL (no SQLite state in the mirrors); the
 * password of the URL is never printed nor written; `kill -9` and a restart: the next sync is incremental.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { join } from 'node:path';
import pg from 'pg';
import { readAggregateStatus, type SourceStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { freePort, startCli, until, type CliChild } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { POSTGRES_SKIP, startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { startServe, type ServeChild } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';
import { typedSource } from './helpers/typed-source.js';

const PASSWORD = 'pw-never-shown-7q';

function statusOf(out: string, id: string): SourceStatus | undefined {
  try {
    return readAggregateStatus(out).find((s) => s.id === id);
  } catch {
    return undefined; // not written yet
  }
}

const syncedSince = (out: string, id: string, t: number): boolean => (statusOf(out, id)?.lastSync ?? 0) >= t;

async function startAggregate(config: string, state: string, port: number): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['aggregate', config, '--port', String(port), '--verbose', '--state', state]);
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  return { p, url: /^listening on (\S+)/m.exec(p.out())![1]! };
}

/** Every file under `dir` (hidden ones included), relative. */
async function allFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(dir, { withFileTypes: true, recursive: true })) if (d.isFile()) out.push(join(d.parentPath, d.name));
  return out;
}

interface Via {
  href: string;
  hash?: string;
  length?: string;
  modified?: string;
  type?: string;
}

void test('aggregate --state postgres://: in step, conformant, via with the original type, rows in PostgreSQL, kill -9', { skip: POSTGRES_SKIP, timeout: 600_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-pg-');
  const children: CliChild['child'][] = [];
  const held: { cluster?: PostgresCluster; fixed?: Server } = {};
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    if (held.fixed !== undefined) await new Promise((r) => held.fixed!.close(r));
    await held.cluster?.stop();
    await cleanup();
  });
  const cluster = await startPostgres();
  held.cluster = cluster;
  const stateUrl = cluster.url.replace('postgres@', `postgres:${PASSWORD}@`); // trust auth: the password is ignored

  const liveDir = join(dir, 'live');
  await mkdir(join(liveDir, 'sub'), { recursive: true });
  const past = new Date(Date.now() - 60_000);
  for (const [p, c] of [['a.txt', 'alpha\n'], ['sub/b.xml', '<b/>\n']] as const) {
    await writeFile(join(liveDir, p), c);
    await utimes(join(liveDir, p), past, past);
  }
  const live: ServeChild = await startServe([liveDir]);
  children.push(live.child);
  const stat = await typedSource({ 'doc.txt': { body: 'a document\n', type: 'text/x-special' } });
  held.fixed = stat.server;

  const out = join(dir, 'agg');
  const config = join(dir, 'aggregate.yaml');
  await writeFile(config, `out: ${out}\nmax-backoff: 2\nsources:\n  - url: ${live.url}/\n    id: live\n    interval: 1\n  - url: ${stat.origin}/\n    id: static\n    interval: 1\n`);
  const started = Date.now();
  const port = await freePort(); // the same after the restart: the follower's topics name it
  let agg = await startAggregate(config, stateUrl, port);
  children.push(agg.p.child);
  await until('both Sources in step', () => syncedSince(out, 'live', started) && syncedSince(out, 'static', started), 120_000);
  assert.equal(await readFile(join(out, 'sources', 'live', 'mirror', 'a.txt'), 'utf8'), 'alpha\n');
  assert.equal(await readFile(join(out, 'sources', 'static', 'mirror', 'doc.txt'), 'utf8'), 'a document\n');
  assert.ok(!existsSync(join(out, 'sources', 'live', 'mirror', '.resourcesync', 'state.sqlite')), 'no SQLite state in the mirror');

  // the aggregate is a conformant Source once both are published
  let listed: string[] = [];
  for (let i = 0; i < 600 && listed.length < 2; i++) {
    const res = await fetch(`${agg.url}/.well-known/resourcesync`);
    listed = res.status === 200 ? [...(await res.text()).matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]!) : [];
    if (listed.length < 2) await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(listed.length, 2, listed.join('\n'));
  const check = await runCli(['check', agg.url]);
  assert.equal(check.status, 0, `check: ${check.stdout}${check.stderr}`);

  // a Destination of the aggregate: via links naming the origin, with the original's type
  const fresh = join(dir, 'fresh');
  const s1 = await runCli(['sync', `${agg.url}/`, fresh, '--delete']);
  assert.equal(s1.status, 0, s1.stderr);
  const links = await runCli(['links', fresh, '--json', '--rel', 'via']);
  assert.equal(links.status, 0, links.stderr);
  const vias = links.stdout.trim().split('\n').map((l) => JSON.parse(l) as { path: string; links: { via?: Via[] } });
  const viaOf = (path: string): Via | undefined => vias.find((v) => v.path === path)?.links.via?.[0];
  assert.deepEqual(viaOf('static/doc.txt'), {
    href: `${stat.origin}/doc.txt`,
    modified: '2026-01-02T03:04:05Z',
    hash: `md5:${createHash('md5').update('a document\n').digest('hex')}`,
    length: '11',
    type: 'text/x-special',
  });
  assert.equal(viaOf('live/a.txt')?.href, `${live.url}/a.txt`);
  assert.equal(viaOf('live/a.txt')?.length, '6');
  assert.match(viaOf('live/sub/b.xml')?.type ?? '', /xml/);

  // the states and snapshots are rows in PostgreSQL
  const client = new pg.Client({ connectionString: cluster.url });
  await client.connect();
  try {
    const rows = await client.query<{ destination: string; url: string; type: string | null }>('SELECT destination, url, type FROM resourcesync_resources ORDER BY url');
    assert.deepEqual(
      rows.rows.map((r) => [r.destination, r.url, r.type]),
      [
        [`aggregate:${out}:static`, `${stat.origin}/doc.txt`, 'text/x-special'],
        [`aggregate:${out}:live`, `${live.url}/a.txt`, 'text/plain'],
        [`aggregate:${out}:live`, `${live.url}/sub/b.xml`, rows.rows.find((r) => r.url.endsWith('b.xml'))?.type ?? null],
      ].sort((a, b) => (a[1]! < b[1]! ? -1 : 1)),
    );
    const sets = await client.query<{ n: string }>('SELECT count(*) AS n FROM resourcesync_snapshot_resources');
    assert.equal(Number(sets.rows[0]!.n), 3, 'the aggregate snapshots of every copy');
  } finally {
    await client.end();
  }
  assert.ok(!existsSync(join(out, 'sources', 'live', 'source.sqlite')), 'no SQLite snapshots');

  // a Destination follows the aggregate by push: its subscription is a row of the hub's store in PostgreSQL
  const followed = join(dir, 'followed');
  const follower = startCli(['sync', `${agg.url}/`, followed, '--delete', '--follow']);
  children.push(follower.child);
  const subscribed = async (): Promise<number> => {
    const c = new pg.Client({ connectionString: cluster.url });
    await c.connect();
    try {
      const r = await c.query<{ n: string }>(`SELECT count(*) AS n FROM resourcesync_hub_subscriptions WHERE hub = $1`, [`aggregate:${out}`]);
      return Number(r.rows[0]!.n);
    } catch {
      return 0; // the table not made yet
    } finally {
      await c.end();
    }
  };
  let subscriptions = 0;
  for (let deadline = Date.now() + 120_000; subscriptions === 0 && Date.now() < deadline; ) {
    subscriptions = await subscribed();
    if (subscriptions === 0) await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(subscriptions >= 1, `no subscription in the hub's store: ${follower.err()}`);

  // kill -9, a change at the live Source, restart: the next sync incremental
  agg.p.child.kill('SIGKILL');
  await exited(agg.p.child);
  const firstLog = agg.p.out() + agg.p.err();
  await writeFile(join(liveDir, 'a.txt'), 'alpha, changed\n');
  const restarted = Date.now();
  agg = await startAggregate(config, stateUrl, port);
  children.push(agg.p.child);
  await until('live synced after the restart', () => syncedSince(out, 'live', restarted) && statusOf(out, 'live')?.lastSyncMode !== undefined, 120_000);
  await until('the change mirrored', () => existsSync(join(out, 'sources', 'live', 'mirror', 'a.txt')) && statusOf(out, 'live')?.totals.updated === 1, 60_000);
  assert.equal(statusOf(out, 'live')?.lastSyncMode, 'incremental', JSON.stringify(statusOf(out, 'live')));
  assert.equal(await readFile(join(out, 'sources', 'live', 'mirror', 'a.txt'), 'utf8'), 'alpha, changed\n');
  let s2: Awaited<ReturnType<typeof runCli>> | undefined;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    s2 = await runCli(['sync', `${agg.url}/`, fresh, '--delete', '--json']);
    if (s2.status === 0 && (await readFile(join(fresh, 'live', 'a.txt'), 'utf8')) === 'alpha, changed\n') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.equal(s2?.status, 0, s2?.stderr);
  assert.equal(await readFile(join(fresh, 'live', 'a.txt'), 'utf8'), 'alpha, changed\n');
  // the hub restarted with its subscriptions from PostgreSQL: the follower gets the change
  await until('the follower has the change', () => {
    try {
      return readFileSync(join(followed, 'live', 'a.txt'), 'utf8') === 'alpha, changed\n';
    } catch {
      return false;
    }
  }, 120_000).catch((error: unknown) => {
    throw new Error(`${String(error)}\naggregator: ${agg.p.err()}\nfollower: ${follower.err()}`);
  });
  follower.child.kill('SIGTERM');
  await exited(follower.child);

  // the password: never printed, never written under out
  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, agg.p.err());
  // the status, from PostgreSQL: another machine (here: without the local file) reads it
  await rm(join(out, 'aggregate.sqlite'));
  const st = await runCli(['aggregate', 'status', config, '--state', stateUrl, '--json']);
  assert.equal(st.status, 0, st.stderr);
  const report = JSON.parse(st.stdout) as { sources: SourceStatus[] };
  assert.deepEqual(report.sources.map((s) => s.id).sort(), ['live', 'static']);
  assert.ok(report.sources.every((s) => s.lastSync !== undefined && s.failures === 0), st.stdout);
  assert.equal(report.sources.find((s) => s.id === 'live')?.lastSyncMode, 'incremental');
  for (const text of [firstLog, agg.p.out(), agg.p.err(), st.stdout, st.stderr]) assert.ok(!text.includes(PASSWORD), 'the password printed');
  for (const f of await allFiles(out)) assert.ok(!(await readFile(f)).includes(PASSWORD), `the password written in ${f}`);
});
