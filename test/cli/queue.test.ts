// `sync --queue` and `worker` as child processes: a coordinator and workers over one throwaway PostgreSQL (queue and
// state) writing to one shared folder, against a Source of a few thousand small files on a test server. A worker
// killed with -9 has its chunk done by another; SIGTERM finishes the chunk in hand; a killed coordinator run again
// resumes its run without redoing the jobs done; a 404 is reported as a plain sync reports it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli, nothingCorrupt, withSource } from '../helpers/mirror-check.js';
import { startCli, until, type CliChild } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, usePostgresClient } from '../helpers/postgres.js';
import type { FakeSource } from '../helpers/fake-source.js';
import type { TestServer } from '../helpers/test-server.js';

const N = 2000;

const children: CliChild[] = [];
const db = usePostgresClient({
  beforeStop: () => {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  },
});
const skip = POSTGRES_SKIP === false ? { timeout: 600_000 } : { skip: POSTGRES_SKIP };

function files(src: FakeSource, n: number): void {
  for (let i = 0; i < n; i++) src.put(`d${i % 10}/f${i}.txt`, `file ${i}\n`.repeat(1 + (i % 4)));
}

/** Every resource GET slowed down by `ms`, so that a run lasts long enough to be interrupted. */
function slow(server: TestServer, ms: number): void {
  server.fault = async (req) => {
    if (req.url?.endsWith('.txt') === true) await sleep(ms);
    return false;
  };
}

/** How many times each resource path was fetched. */
function fetches(server: TestServer): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of server.requests) if (r.method === 'GET' && r.url.endsWith('.txt')) m.set(r.url, (m.get(r.url) ?? 0) + 1);
  return m;
}

function worker(extra: string[] = []): CliChild {
  const c = startCli(['worker', '--queue', db.cluster().url, '--json', '--poll', '50', '--no-fsync', ...extra]);
  children.push(c);
  return c;
}

/** `sync --queue` in chunks of 100; a job expires after 10 s (a chunk takes up to ~4 s on a loaded 2-core machine). */
function coordinator(src: FakeSource, dest: string, extra: string[] = []): CliChild {
  const c = startCli(['sync', src.capabilityList, dest, '--queue', db.cluster().url, '--state', db.cluster().url, '--json', '--no-fsync', '--chunk-size', '100', '--job-expiry', '10', ...extra]);
  children.push(c);
  return c;
}

/** The chunk lines a worker printed. */
function chunks(c: CliChild): { id: string; retry: number; outcome?: { created: number; unchanged: number } }[] {
  return c
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { id: string; retry: number; outcome?: { created: number; unchanged: number } });
}

async function stopAll(workers: CliChild[]): Promise<void> {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
  for (const w of workers) await exited(w.child, 60_000);
}

async function rowCount(dest: string): Promise<number> {
  const r = await db.sql().query<{ n: string }>('SELECT count(*) AS n FROM resourcesync_resources WHERE destination = $1', [dest]);
  return Number(r.rows[0]!.n);
}

void test('three workers, one killed with -9 mid-run: exit 0, in sync, every file intact, nothing committed twice', skip, () =>
  withSource(async (src, dest, server) => {
    files(src, N);
    src.publish();
    slow(server, 15);
    const workers = [worker(), worker(), worker()];
    const sync = coordinator(src, dest);
    await until('a first chunk done by the first worker', () => chunks(workers[0]!).length >= 1, 120_000);
    workers[0]!.child.kill('SIGKILL');
    const [code] = await exited(sync.child, 300_000);
    assert.equal(code, 0, sync.out() + sync.err());
    const report = JSON.parse(sync.out()) as { mode: string; created: number; unchanged: number; failed: unknown[] };
    assert.equal(report.mode, 'baseline');
    assert.equal(report.created, N);
    assert.deepEqual(report.failed, []);
    await stopAll(workers.slice(1));
    const retried = [...chunks(workers[1]!), ...chunks(workers[2]!)].filter((c) => c.retry > 0);
    assert.equal(retried.length, 1, "the killed worker's chunk, done by another after it expired");
    assert.equal(retried[0]!.outcome?.created, 100);
    assert.equal((await nothingCorrupt(src, dest)).length, N);
    assert.equal(await rowCount(dest), N);
    const got = fetches(server);
    assert.equal(got.size, N);
    const total = [...got.values()].reduce((a, b) => a + b, 0);
    assert.ok(total <= N + 100, `${total} fetches for ${N} resources: at most the killed worker's chunk again`);
    const audit = await runCli(['audit', src.capabilityList, dest, '--state', db.cluster().url]);
    assert.equal(audit.status, 0, audit.stdout + audit.stderr);
    assert.match(audit.stdout, /: in sync/);
  }),
);

void test('SIGTERM to a worker: the chunk in hand is finished and reported, then it exits 0', skip, () =>
  withSource(async (src, dest, server) => {
    files(src, 500);
    src.publish();
    slow(server, 30);
    const first = worker(['--concurrency', '4']);
    const sync = coordinator(src, dest);
    await until('the worker fetching', () => fetches(server).size >= 3, 120_000);
    first.child.kill('SIGTERM');
    const [code] = await exited(first.child, 60_000);
    assert.equal(code, 0, first.err());
    const done = chunks(first);
    assert.equal(done.length, 1, first.out());
    assert.equal(done[0]!.outcome?.created, 100);
    const second = worker();
    const [syncCode] = await exited(sync.child, 300_000);
    assert.equal(syncCode, 0, sync.out() + sync.err());
    assert.equal((JSON.parse(sync.out()) as { created: number }).created, 500);
    await stopAll([second]);
    assert.equal((await nothingCorrupt(src, dest)).length, 500);
  }),
);

void test('a coordinator killed with -9 and run again resumes its run: the jobs done are not done again', skip, () =>
  withSource(async (src, dest, server) => {
    files(src, N);
    src.publish();
    slow(server, 15);
    const workers = [worker(), worker()];
    const first = coordinator(src, dest);
    await until('chunks done', () => chunks(workers[0]!).length + chunks(workers[1]!).length >= 3, 120_000);
    first.child.kill('SIGKILL');
    await exited(first.child);
    const again = coordinator(src, dest);
    const [code] = await exited(again.child, 300_000);
    assert.equal(code, 0, again.out() + again.err());
    const report = JSON.parse(again.out()) as { mode: string; created: number; unchanged: number; failed: unknown[] };
    assert.equal(report.mode, 'baseline');
    assert.equal(report.created, N);
    assert.deepEqual(report.failed, []);
    await stopAll(workers);
    assert.equal((await nothingCorrupt(src, dest)).length, N);
    assert.equal(await rowCount(dest), N);
    const got = fetches(server);
    assert.equal(got.size, N);
    assert.ok([...got.values()].every((n) => n === 1), 'every resource fetched once');
  }),
);

void test('a resource that answers 404 is a failure of the report, exit 1, as a plain sync reports it', skip, () =>
  withSource(async (src, dest) => {
    files(src, 300);
    src.put('missing.txt', 'listed, not served');
    src.publish();
    src.server.delete('/missing.txt');
    const plain = await runCli(['sync', src.capabilityList, `${dest}/plain`, '--state', db.cluster().url, '--json', '--no-fsync']);
    const workers = [worker()];
    const queued = coordinator(src, `${dest}/queued`);
    const [code] = await exited(queued.child, 300_000);
    await stopAll(workers);
    assert.equal(plain.status, 1, plain.stderr);
    assert.equal(code, 1, queued.err());
    type Report = { mode: string; created: number; updated: number; unchanged: number; failed: { url: string; code: string; status?: number; message: string }[]; warnings: unknown[] };
    const a = JSON.parse(plain.stdout) as Report;
    const b = JSON.parse(queued.out()) as Report;
    assert.deepEqual(b.failed, a.failed);
    assert.deepEqual([b.mode, b.created, b.updated, b.unchanged, b.warnings], [a.mode, a.created, a.updated, a.unchanged, a.warnings]);
    assert.equal(b.failed[0]?.status, 404);
    // the human output of a second run (incremental: the failure retried), with and without the queue
    const human = await runCli(['sync', src.capabilityList, `${dest}/queued`, '--queue', db.cluster().url, '--state', db.cluster().url, '--no-fsync']);
    const plainHuman = await runCli(['sync', src.capabilityList, `${dest}/plain`, '--state', db.cluster().url, '--no-fsync']);
    assert.equal(human.status, 1, human.stderr);
    assert.equal(plainHuman.status, 1, plainHuman.stderr);
    const norm = (out: string, d: string): string => out.split(d).join('DEST').replace(/\(\d+\.\d MB in \d+\.\d s\)/, '(…)');
    assert.equal(norm(human.stdout, `${dest}/queued`), norm(plainHuman.stdout, `${dest}/plain`));
    assert.match(human.stdout, /failed: .*missing\.txt/);
  }),
);

void test('usage errors: --queue without a PostgreSQL state, a queue that is not PostgreSQL, worker without --queue', skip, async () => {
  const noState = await runCli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', '/tmp/never', '--queue', db.cluster().url]);
  assert.equal(noState.status, 2);
  assert.match(noState.stderr, /--queue needs --state postgres/);
  const fileState = await runCli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', '/tmp/never', '--queue', db.cluster().url, '--state', '/tmp/never.sqlite']);
  assert.equal(fileState.status, 2);
  const notPg = await runCli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', '/tmp/never', '--queue', 'redis://127.0.0.1/', '--state', db.cluster().url]);
  assert.equal(notPg.status, 2);
  assert.doesNotMatch(notPg.stderr, /password/);
  const noQueue = await runCli(['worker']);
  assert.equal(noQueue.status, 2);
  assert.match(noQueue.stderr, /--queue/);
});
