// `sync`, `audit` and `sync --follow` with `--state postgres://…` (a throwaway cluster) and `--state FILE`, as child
// processes against a Source on a test server: the rows land in PostgreSQL and nothing in <dest>/.resourcesync/state*,
// destinations keep apart by key, the lease keeps a second run out (exit 4) and a run killed with -9 is taken over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { runCli, nothingCorrupt, withSource } from '../helpers/mirror-check.js';
import { freePort, startCli, until } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, startPostgres, usePostgresClient } from '../helpers/postgres.js';
import type { FakeSource } from '../helpers/fake-source.js';

const db = usePostgresClient();
const skip = POSTGRES_SKIP === false ? {} : { skip: POSTGRES_SKIP };

/** The URLs PostgreSQL holds for a destination key, sorted. */
async function rows(key: string): Promise<string[]> {
  const result = await db.sql().query<{ url: string }>('SELECT url FROM resourcesync_resources WHERE destination = $1 ORDER BY url', [key]);
  return result.rows.map((r) => r.url);
}

/** The lease row of a destination key, if any. */
async function leaseOf(key: string): Promise<{ holder: string; pid: number } | undefined> {
  return (await db.sql().query<{ holder: string; pid: number }>('SELECT holder, pid FROM resourcesync_leases WHERE destination = $1', [key])).rows[0];
}

/** Files whose name starts with `state` in the destination's state folder (none when the state is elsewhere). */
function localState(dest: string): string[] {
  const dir = join(dest, '.resourcesync');
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.startsWith('state')) : [];
}

function files(src: FakeSource, n: number, prefix = 'f'): void {
  for (let i = 0; i < n; i++) src.put(`d/${prefix}${i}.txt`, `${prefix} ${i}\n`.repeat(i + 1));
}

/** Holds every GET of `path` until the returned function is called. */
function stall(src: FakeSource, path: string): () => void {
  let open!: () => void;
  const gate = new Promise<void>((r) => (open = r));
  src.server.fault = async (req) => {
    if (req.url === path) await gate;
    return false;
  };
  return open;
}

void test('sync --state postgres://: baseline, incremental, audit and repair, the rows in PostgreSQL and no local state', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 6);
    src.publish();
    const state = ['--state', db.cluster().url];
    const first = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--json', ...state]);
    assert.equal(first.status, 0, first.stderr);
    assert.equal((JSON.parse(first.stdout) as { mode: string }).mode, 'baseline');
    assert.equal((await nothingCorrupt(src, dest)).length, 6);
    const key = resolve(dest);
    assert.equal((await rows(key)).length, 6, 'a row per resource under the absolute path of <dest>');
    assert.deepEqual(localState(dest), []);

    src.put('d/new.txt', 'new\n');
    src.put('d/f0.txt', 'changed\n');
    src.publish();
    const second = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--json', ...state]);
    assert.equal(second.status, 0, second.stderr);
    const report = JSON.parse(second.stdout) as { mode: string; created: number; updated: number };
    assert.deepEqual([report.mode, report.created, report.updated], ['incremental', 1, 1]);
    assert.equal((await nothingCorrupt(src, dest)).length, 7);
    assert.ok((await rows(key)).includes(`${src.origin}/d/new.txt`));

    const audit = await runCli(['audit', src.capabilityList, dest, ...state]);
    assert.equal(audit.status, 0, audit.stdout + audit.stderr);
    assert.match(audit.stdout, /: in sync/);
    const trusted = await runCli(['audit', src.capabilityList, dest, '--trust-state', ...state]);
    assert.equal(trusted.status, 0, trusted.stdout + trusted.stderr);
    assert.match(trusted.stdout, /7 on offer: 7 unchanged/);

    const links = await runCli(['links', dest, `${src.origin}/d/new.txt`, '--json', ...state]);
    assert.equal(links.status, 0, links.stderr);
    assert.deepEqual(JSON.parse(links.stdout), { url: `${src.origin}/d/new.txt`, path: 'd/new.txt', links: {} });
    assert.equal((await runCli(['links', dest])).status, 2, 'no state in <dest>');

    await writeFile(join(dest, 'd', 'f3.txt'), 'tampered\n');
    const repaired = await runCli(['audit', src.capabilityList, dest, '--repair', ...state]);
    assert.equal(repaired.status, 0, repaired.stdout + repaired.stderr);
    assert.match(repaired.stdout, /changed \(\w+\): d\/f3\.txt/);
    await nothingCorrupt(src, dest);
    assert.deepEqual(localState(dest), []);
    assert.equal(await leaseOf(key), undefined, 'every run let its lease go');
  });
});

void test('two destinations in one database keep apart; --state-key names one', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 3);
    src.publish();
    const other = await mkdtemp(join(tmpdir(), 'rs-pg-other-'));
    try {
      const a = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--state', db.cluster().url]);
      assert.equal(a.status, 0, a.stderr);
      src.put('d/only-b.txt', 'b\n');
      src.publish();
      const b = await runCli(['sync', src.capabilityList, other, '--no-fsync', '--state', db.cluster().url, '--state-key', 'mirror-b']);
      assert.equal(b.status, 0, b.stderr);
      assert.equal((await rows(resolve(dest))).length, 3);
      assert.equal((await rows('mirror-b')).length, 4);
      assert.deepEqual(await rows(resolve(other)), [], 'the key given, not the path');
      // the same folder under another key is a destination of its own: a baseline, which finds the files in place
      const again = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--json', '--state', db.cluster().url, '--state-key', 'mirror-c']);
      assert.equal(again.status, 0, again.stderr);
      assert.equal((JSON.parse(again.stdout) as { mode: string }).mode, 'baseline');
      assert.equal((await rows('mirror-c')).length, 4);
      assert.equal((await rows(resolve(dest))).length, 3, 'the first key unchanged');
    } finally {
      await rm(other, { recursive: true, force: true });
    }
  });
});

void test('a second sync on the same key while the first holds the lease exits 4; the first completes', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 4);
    src.publish();
    const open = stall(src, '/d/f2.txt');
    const key = 'shared-lease';
    const first = startCli(['sync', src.capabilityList, dest, '--no-fsync', '--state', db.cluster().url, '--state-key', key]);
    try {
      await until(`the lease row; ${first.err()}`, () => src.server.requests.some((r) => r.url === '/d/f2.txt'));
      assert.ok(await leaseOf(key));
      const elsewhere = await mkdtemp(join(tmpdir(), 'rs-pg-second-'));
      try {
        const second = await runCli(['sync', src.capabilityList, elsewhere, '--no-fsync', '--state', db.cluster().url, '--state-key', key]);
        assert.equal(second.status, 4, second.stderr);
        assert.match(second.stderr, /locked by '[^']+:\d+:/);
      } finally {
        await rm(elsewhere, { recursive: true, force: true });
      }
      open();
      assert.deepEqual(await exited(first.child, 60_000), [0, null], first.err());
      await nothingCorrupt(src, dest);
    } finally {
      open();
      if (first.child.exitCode === null) first.child.kill('SIGKILL');
    }
  });
});

void test('a sync killed with -9 holding the lease: the same command again takes the lease at once and completes', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 5);
    src.publish();
    const open = stall(src, '/d/f3.txt');
    const args = ['sync', src.capabilityList, dest, '--no-fsync', '--state', db.cluster().url];
    const first = startCli(args);
    try {
      await until(`the stalled request; ${first.err()}`, () => src.server.requests.some((r) => r.url === '/d/f3.txt'));
      assert.equal((await leaseOf(resolve(dest)))?.pid, first.child.pid);
      first.child.kill('SIGKILL');
      await exited(first.child);
    } finally {
      open();
    }
    src.server.fault = undefined;
    const started = Date.now();
    const again = await runCli(args);
    assert.equal(again.status, 0, again.stderr);
    assert.ok(Date.now() - started < 30_000, 'not held until the TTL ran out');
    assert.equal((await nothingCorrupt(src, dest)).length, 5);
    assert.equal((await rows(resolve(dest))).length, 5);
  });
});

void test('sync --follow --state postgres:// applies a change and records it in PostgreSQL', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 2);
    src.publish();
    const f = startCli(['sync', src.capabilityList, dest, '--follow', '--json', '--interval', '0.2', '--no-fsync', '--state', db.cluster().url, '--state-key', 'followed']);
    try {
      await until(`the polling notice; ${f.err()}`, () => /polling every 0.2 s/.test(f.err()));
      src.put('d/later.txt', 'later\n');
      src.publish();
      await until(`later.txt by polling; ${f.err()}`, () => existsSync(join(dest, 'd', 'later.txt')));
      const deadline = Date.now() + 30_000;
      while (!(await rows('followed')).includes(`${src.origin}/d/later.txt`)) {
        assert.ok(Date.now() < deadline, 'later.txt never recorded');
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(localState(dest), []);
      f.child.kill('SIGTERM');
      assert.equal((await exited(f.child))[0], 0, f.err());
      assert.equal(await leaseOf('followed'), undefined, 'the lease let go on SIGTERM');
      await nothingCorrupt(src, dest);
    } finally {
      if (f.child.exitCode === null) f.child.kill('SIGKILL');
    }
  });
});

void test('--state FILE keeps an SQLite state in that file, not in <dest>/.resourcesync', async () => {
  await withSource(async (src, dest) => {
    files(src, 3);
    src.publish();
    const dir = await mkdtemp(join(tmpdir(), 'rs-state-file-'));
    try {
      const file = join(dir, 'states', 'mirror.sqlite');
      const first = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--state', file]);
      assert.equal(first.status, 0, first.stderr);
      assert.ok(existsSync(file));
      assert.deepEqual(localState(dest), []);
      src.put('d/more.txt', 'more\n');
      src.publish();
      const second = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--json', '--state', file]);
      assert.equal(second.status, 0, second.stderr);
      assert.equal((JSON.parse(second.stdout) as { mode: string }).mode, 'incremental');
      const audit = await runCli(['audit', src.capabilityList, dest, '--trust-state', '--state', file]);
      assert.equal(audit.status, 0, audit.stdout + audit.stderr);
      assert.match(audit.stdout, /4 on offer: 4 unchanged/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

void test('--state errors: a bad URL and --state-key alone are usage errors; an unreachable server or a missing database exit 3 without the password', skip, async () => {
  await withSource(async (src, dest) => {
    files(src, 1);
    src.publish();
    const sync = (...extra: string[]): ReturnType<typeof runCli> => runCli(['sync', src.capabilityList, dest, '--no-fsync', ...extra]);
    const bad = await sync('--state', 'postgres://user:hunter2@/db');
    assert.equal(bad.status, 2, bad.stderr);
    assert.match(bad.stderr, /is not a PostgreSQL URL/);
    assert.doesNotMatch(bad.stderr, /hunter2/);
    const keyAlone = await runCli(['audit', src.capabilityList, dest, '--state-key', 'k']);
    assert.equal(keyAlone.status, 2);
    assert.match(keyAlone.stderr, /--state-key goes with --state postgres:/);

    const port = await freePort();
    const down = await sync('--state', `postgres://rs:hunter2@127.0.0.1:${port}/mirrors`);
    assert.equal(down.status, 3, down.stderr);
    assert.match(down.stderr, new RegExp(`^resourcesync sync: The state at postgres://rs@127\\.0\\.0\\.1:${port}/mirrors cannot be opened: .*ECONNREFUSED`));
    assert.equal(down.stderr.trim().split('\n').length, 1, 'one line');
    assert.doesNotMatch(down.stderr, /hunter2/);

    const url = new URL(db.cluster().url);
    url.password = 'hunter2';
    url.pathname = '/no_such_db';
    const missing = await runCli(['audit', src.capabilityList, dest, '--state', url.href]);
    assert.equal(missing.status, 3, missing.stderr);
    assert.match(missing.stderr, /cannot be opened: database "no_such_db" does not exist\./);
    assert.doesNotMatch(missing.stderr + missing.stdout, /hunter2/);
    assert.deepEqual(localState(dest), [], 'nothing opened locally');
  });
});

void test('--state with a login the server refuses exits 3 in one line naming host and database, never the password', skip, async () => {
  // a role that must give its password (scram-sha-256), ahead of the cluster's trust lines
  const hba = (await db.sql().query<{ file: string }>("SELECT current_setting('hba_file') AS file")).rows[0]!.file;
  const before = await readFile(hba, 'utf8');
  await db.sql().query("CREATE ROLE rs_login LOGIN PASSWORD 'right-one'");
  await writeFile(hba, `host all rs_login 127.0.0.1/32 scram-sha-256\n${before}`);
  await db.sql().query('SELECT pg_reload_conf()');
  try {
    await withSource(async (src, dest) => {
      files(src, 1);
      src.publish();
      const url = new URL(db.cluster().url);
      url.username = 'rs_login';
      url.password = 'wrong-one';
      const deadline = Date.now() + 30_000;
      let r = await runCli(['sync', src.capabilityList, dest, '--state', url.href]);
      while (r.status === 0 && Date.now() < deadline) r = await runCli(['sync', src.capabilityList, dest, '--state', url.href]); // the reload is asynchronous
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /^resourcesync sync: The state at postgres:\/\/rs_login@127\.0\.0\.1:\d+\/postgres cannot be opened: password authentication failed for user "rs_login"\.\n$/);
      assert.doesNotMatch(r.stderr, /wrong-one/);
      url.password = 'right-one';
      const ok = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--state', url.href, '--state-key', 'login']);
      assert.equal(ok.status, 3, 'the role may not create the tables in schema public');
      assert.match(ok.stderr, /^resourcesync sync: The state at postgres:\/\/rs_login@[^ ]+ cannot be opened: permission denied for schema public\.\n$/);
    });
  } finally {
    await writeFile(hba, before);
    await db.sql().query('SELECT pg_reload_conf()');
  }
});

void test('the database gone in the middle of a sync: exit 3 in one line that says the state could not be written', skip, async () => {
  const own = await startPostgres();
  let stopped = false;
  try {
    await withSource(async (src, dest) => {
      files(src, 5);
      src.publish();
      const open = stall(src, '/d/f3.txt');
      const p = startCli(['sync', src.capabilityList, dest, '--no-fsync', '--state', own.url]);
      try {
        await until(`the stalled request; ${p.err()}`, () => src.server.requests.some((r) => r.url === '/d/f3.txt'));
        await own.stop();
        stopped = true;
        open();
        assert.deepEqual(await exited(p.child, 60_000), [3, null], p.err());
        assert.match(p.err(), new RegExp(`^resourcesync sync: The state of destination '${resolve(dest).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}' could not be (written|read): .*ECONNREFUSED[^\n]*\n$`));
      } finally {
        open();
        if (p.child.exitCode === null) p.child.kill('SIGKILL');
      }
    });
  } finally {
    if (!stopped) await own.stop();
  }
});
