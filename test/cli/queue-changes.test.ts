// The changes of an incremental `sync --queue` applied by `worker` processes: a baseline through the queue, then the
// Source changes (creates, updates, deletes, one resource changed twice), and the incremental run with two workers
// ends byte-identical to a plain sync, with the same report and exit code; a worker killed with -9 mid-run has its
// chunk done by another; a coordinator killed with -9 mid-window leaves the cursor where it was, and the same command
// run again finishes the window without doing the chunks done again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli, nothingCorrupt, withSource } from '../helpers/mirror-check.js';
import { startCli, until, type CliChild } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, usePostgresClient } from '../helpers/postgres.js';
import type { FakeSource } from '../helpers/fake-source.js';
import type { TestServer } from '../helpers/test-server.js';

const N = 1000;

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

/** How many times each resource path was fetched since `from` (an index into the server's requests). */
function fetches(server: TestServer, from = 0): Map<string, number> {
  const m = new Map<string, number>();
  for (const r of server.requests.slice(from)) if (r.method === 'GET' && r.url.endsWith('.txt')) m.set(r.url, (m.get(r.url) ?? 0) + 1);
  return m;
}

function worker(): CliChild {
  const c = startCli(['worker', '--queue', db.cluster().url, '--json', '--poll', '50', '--no-fsync']);
  children.push(c);
  return c;
}

/** `sync --queue --delete` in chunks of 100; a job expires after 10 s. */
function coordinator(src: FakeSource, dest: string): CliChild {
  const c = startCli(['sync', src.capabilityList, dest, '--queue', db.cluster().url, '--state', db.cluster().url, '--json', '--no-fsync', '--delete', '--chunk-size', '100', '--job-expiry', '10']);
  children.push(c);
  return c;
}

async function coordinated(src: FakeSource, dest: string): Promise<{ code: number | null; report: Report; out: string }> {
  const c = coordinator(src, dest);
  const [code] = await exited(c.child, 300_000);
  return { code, report: JSON.parse(c.out()) as Report, out: c.out() + c.err() };
}

/** The chunk lines a worker printed. */
function chunks(c: CliChild): { id: string; retry: number; entries: number; outcome?: { updated: number } }[] {
  return c
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { id: string; retry: number; entries: number; outcome?: { updated: number } });
}

async function stopAll(workers: CliChild[]): Promise<void> {
  for (const w of workers) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGTERM');
  for (const w of workers) await exited(w.child, 60_000);
}

async function rowCount(dest: string): Promise<number> {
  const r = await db.sql().query<{ n: string }>('SELECT count(*) AS n FROM resourcesync_resources WHERE destination = $1', [dest]);
  return Number(r.rows[0]!.n);
}

async function cursorOf(dest: string): Promise<unknown> {
  return (await db.sql().query('SELECT key, datetime, change_list, position FROM resourcesync_cursors WHERE destination = $1 ORDER BY key', [dest])).rows;
}

type Report = { mode: string; created: number; updated: number; deleted: number; unchanged: number; bytes: number; failed: unknown[]; warnings: unknown[]; deletionsSkippedCount: number; sets: unknown[] };
const counts = (r: Report): unknown => [r.mode, r.created, r.updated, r.deleted, r.unchanged, r.bytes, r.failed, r.warnings, r.deletionsSkippedCount, r.sets];

/** Creates, updates, deletions, one resource updated twice, one updated then deleted; returns the paths changed. */
function change(src: FakeSource, round: number): string[] {
  const changed: string[] = [];
  for (let i = 0; i < 150; i++) changed.push(`new${round}/n${i}.txt`);
  for (let i = 0; i < 250; i++) changed.push(`d${i % 10}/f${i}.txt`);
  for (const p of changed) src.put(p, `${p} in round ${round}\n`);
  src.put('d0/f500.txt', `twice in round ${round}\n`);
  for (let i = 600; i < 640; i++) src.remove(`d${i % 10}/f${i}.txt`);
  src.put('d1/f701.txt', 'updated, then deleted\n');
  src.remove('d1/f701.txt');
  src.publish();
  return [...changed, 'd0/f500.txt'];
}

void test('an incremental sync --queue with two workers ends as a plain sync: same bytes, records, report and exit code', skip, () =>
  withSource(async (src, dest) => {
    files(src, N);
    src.publish();
    const plainArgs = ['sync', src.capabilityList, `${dest}/plain`, '--state', db.cluster().url, '--json', '--no-fsync', '--delete'];
    const plainBase = await runCli(plainArgs);
    assert.equal(plainBase.status, 0, plainBase.stderr);
    const workers = [worker(), worker()];
    const base = await coordinated(src, `${dest}/queued`);
    assert.equal(base.code, 0, base.out);
    assert.equal(base.report.created, N);
    change(src, 1);
    const plain = await runCli(plainArgs);
    const before = chunks(workers[0]!).length + chunks(workers[1]!).length;
    const queued = await coordinated(src, `${dest}/queued`);
    await stopAll(workers);
    assert.equal(plain.status, 0, plain.stderr);
    assert.equal(queued.code, 0, queued.out);
    const a = JSON.parse(plain.stdout) as Report;
    assert.deepEqual(counts(queued.report), counts(a));
    assert.deepEqual([a.mode, a.created, a.updated, a.deleted], ['incremental', 150, 251, 41]);
    const sent = chunks(workers[0]!).length + chunks(workers[1]!).length - before;
    assert.ok(sent >= 5, `${sent} chunks of changes: at most 100 changes a job`);
    assert.ok(chunks(workers[0]!).length > 0 && chunks(workers[1]!).length > 0, 'both workers took chunks');
    const paths = await nothingCorrupt(src, `${dest}/queued`);
    assert.deepEqual(paths, await nothingCorrupt(src, `${dest}/plain`));
    assert.equal(paths.length, src.files.size);
    assert.equal(await rowCount(`${dest}/queued`), src.files.size);
    assert.deepEqual(await cursorOf(`${dest}/queued`), await cursorOf(`${dest}/plain`));
  }),
);

void test('a worker killed with -9 during the changes: its chunk is done by another, every change applied once, in sync', skip, () =>
  withSource(async (src, dest, server) => {
    files(src, N);
    src.publish();
    const workers = [worker()];
    const base = await coordinated(src, dest);
    assert.equal(base.code, 0, base.out);
    const changed = change(src, 1);
    slow(server, 40);
    const from = server.requests.length;
    const sync = coordinator(src, dest);
    // the only worker is in the middle of a chunk of changes (it takes one job at a time)
    await until('the worker fetching changes', () => fetches(server, from).size >= 10, 120_000);
    workers[0]!.child.kill('SIGKILL');
    workers.push(worker(), worker());
    const [code] = await exited(sync.child, 300_000);
    assert.equal(code, 0, sync.out() + sync.err());
    const report = JSON.parse(sync.out()) as Report;
    // a retried chunk counts what the lost attempt wrote as the changes say (created, updated): as a plain sync counts
    assert.deepEqual([report.mode, report.created, report.updated, report.deleted, report.failed], ['incremental', 150, 251, 41, []]);
    await stopAll(workers.slice(1));
    const retried = [...chunks(workers[1]!), ...chunks(workers[2]!)].filter((c) => c.retry > 0);
    assert.equal(retried.length, 1, "the killed worker's chunk, done by another after it expired");
    assert.equal((await nothingCorrupt(src, dest)).length, src.files.size);
    assert.equal(await rowCount(dest), src.files.size);
    const got = fetches(server, from);
    assert.equal(got.size, changed.length, 'the changed resources, and nothing else, fetched');
    const total = [...got.values()].reduce((x, y) => x + y, 0);
    assert.ok(total <= changed.length + 100, `${total} fetches for ${changed.length} changes: at most the killed worker's chunk again`);
    const audit = await runCli(['audit', src.capabilityList, dest, '--state', db.cluster().url]);
    assert.equal(audit.status, 0, audit.stdout + audit.stderr);
    assert.match(audit.stdout, /: in sync/);
  }),
);

void test('a coordinator killed with -9 mid-window: the cursor stays; run again, it finishes the window without redoing chunks', skip, () =>
  withSource(async (src, dest, server) => {
    files(src, N);
    src.publish();
    const workers = [worker()];
    const base = await coordinated(src, dest);
    assert.equal(base.code, 0, base.out);
    const cursor = await cursorOf(dest);
    const changed = change(src, 1);
    slow(server, 20);
    const from = server.requests.length;
    const done0 = chunks(workers[0]!).length;
    const first = coordinator(src, dest);
    await until('a chunk of changes done', () => chunks(workers[0]!).length > done0, 120_000);
    first.child.kill('SIGKILL');
    await exited(first.child);
    assert.ok(chunks(workers[0]!).length - done0 < 5, 'killed with chunks of the window not done');
    assert.deepEqual(await cursorOf(dest), cursor, 'the cursor is not moved past changes not done');
    const again = coordinator(src, dest);
    const [code] = await exited(again.child, 300_000);
    assert.equal(code, 0, again.out() + again.err());
    const report = JSON.parse(again.out()) as Report;
    assert.deepEqual([report.mode, report.created, report.updated, report.deleted, report.failed], ['incremental', 150, 251, 41, []]);
    await stopAll(workers);
    assert.notDeepEqual(await cursorOf(dest), cursor);
    assert.equal((await nothingCorrupt(src, dest)).length, src.files.size);
    assert.equal(await rowCount(dest), src.files.size);
    const got = fetches(server, from);
    assert.equal(got.size, changed.length);
    assert.ok([...got.values()].every((n) => n === 1), 'every changed resource fetched once: the chunks done were counted, not done again');
  }),
);
