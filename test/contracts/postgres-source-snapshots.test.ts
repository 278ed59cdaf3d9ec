import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { isResourceSyncError } from '../../src/core/errors.js';
import { openPostgresSnapshots } from '../../src/source/postgres-snapshots.js';
import type { SourceSnapshots } from '../../src/source/source-snapshots.js';
import { collect } from '../helpers/collect.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { entry, steps } from './snapshots-fixture.js';
import { describeSourceSnapshotsContract } from './source-snapshots.js';

const cluster = usePostgres();

const T0 = Date.UTC(2024, 0, 1);

/** A child process holding the `documents` lease of a set: renewing it (`renew`) or not, until killed. */
function leaseHolder(url: string, set: string, ttlMs: number, renew: boolean): ChildProcess {
  const module = new URL('../../src/source/postgres-snapshots.js', import.meta.url).href;
  const leases = new URL('../../src/source/source-snapshots.js', import.meta.url).href;
  const script = `
    const { openPostgresSnapshots } = await import(${JSON.stringify(module)});
    const { holdingLease } = await import(${JSON.stringify(leases)});
    const snapshots = await openPostgresSnapshots(${JSON.stringify(url)}, { set: ${JSON.stringify(set)} });
    if (${renew}) void holdingLease(snapshots, 'documents', () => { process.stdout.write('held\\n'); return new Promise(() => {}); }, { ttlMs: ${ttlMs} });
    else { await snapshots.acquireLease('documents', { ttlMs: ${ttlMs} }); process.stdout.write('held\\n'); }
    setInterval(() => {}, 1000);
  `;
  return spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
}

async function held(child: ChildProcess): Promise<void> {
  let out = '';
  for await (const chunk of child.stdout!) {
    out += String(chunk);
    if (out.includes('held')) return;
  }
  throw new Error('the lease holder ended before holding the lease');
}

if (POSTGRES_SKIP !== false) {
  void test('PostgreSQL source snapshots', { skip: POSTGRES_SKIP }, () => undefined);
} else {
  describeSourceSnapshotsContract('PostgreSQL (openPostgresSnapshots, a fresh set per test)', async () => {
    const set = `set-${randomUUID()}`;
    const opened: SourceSnapshots[] = [];
    const open = async (): Promise<SourceSnapshots> => {
      const s = await openPostgresSnapshots(cluster().url, { source: 'https://example.org/', set });
      opened.push(s);
      return s;
    };
    return {
      impl: await open(),
      openAgain: open,
      cleanup: async () => {
        for (const s of opened) await s.close();
      },
    };
  });

  void describe('PostgreSQL source snapshots', () => {
    void test('several Sources and sets in one database are kept apart', async () => {
      const a = await openPostgresSnapshots(cluster().url, { source: 'https://a.example/', set: 'data' });
      const b = await openPostgresSnapshots(cluster().url, { source: 'https://b.example/', set: 'data' });
      const c = await openPostgresSnapshots(cluster().url, { source: 'https://a.example/', set: 'other' });
      try {
        await a.rebuild([entry('x.txt', 'a')], { now: () => T0 });
        await b.rebuild([entry('x.txt', 'bb'), entry('y.txt', 'b')], { now: () => T0 + 5 });
        await a.setMeta('k', 'a');
        assert.equal(await a.count(), 1);
        assert.equal(await b.count(), 2);
        assert.equal(await c.count(), 0);
        assert.equal(await c.snapshotAt(), undefined);
        assert.equal(await b.getMeta('k'), undefined);
        assert.equal((await a.resource('x.txt'))?.size, 1);
        assert.equal((await b.resource('x.txt'))?.size, 2);
        await b.update([{ path: 'x.txt', entry: undefined }], { now: () => T0 + 10 });
        assert.deepEqual(await collect(a.allChanges()), []);
        assert.equal((await collect(b.allChanges())).length, 1);
        // leases are per set
        const la = await a.acquireLease('documents');
        const lb = await b.acquireLease('documents');
        await la.release();
        await lb.release();
      } finally {
        await a.close();
        await b.close();
        await c.close();
      }
    });

    void test('a large rebuild streams both sides and records every change; update names a path twice', async () => {
      const set = `big-${randomUUID()}`;
      const s = await openPostgresSnapshots(cluster().url, { set });
      try {
        const now = steps(T0);
        const n = 12_000;
        const name = (i: number): string => `d/${String(i).padStart(6, '0')}.txt`;
        await s.rebuild(
          (function* () {
            for (let i = 0; i < n; i++) yield entry(name(i), `v1 ${i}`);
          })(),
          { now },
        );
        assert.equal(await s.count(), n);
        const r = await s.rebuild(
          (function* () {
            for (let i = 0; i < n + 10; i++) if (i % 3 !== 0) yield entry(name(i), i % 3 === 1 ? `v2 ${i}` : `v1 ${i}`);
          })(),
          { now, maxEntries: 3000 },
        );
        // 12,000 to 12,009 are new, but for every third
        assert.deepEqual([r.created, r.updated, r.deleted], [6, 4000, 4000]);
        const changes = await collect(s.allChanges());
        assert.equal(changes.length, 8006);
        assert.deepEqual(
          changes.map((c) => c.path),
          [...changes.map((c) => c.path)].sort(),
          'in path order',
        );
        assert.ok(changes.every((c, i) => i === 0 || c.seq > changes[i - 1]!.seq));
        assert.equal(r.closed.length, 2);
        let listed = 0;
        for await (const item of s.listing()) listed += item.path.startsWith('d/') ? 1 : 0;
        assert.equal(listed, await s.count());
        const u = await s.update(
          [
            { path: 'z.txt', entry: entry('z.txt', 'z') },
            { path: 'z.txt', entry: undefined },
            { path: 'y.txt', entry: undefined },
            { path: 'y.txt', entry: entry('y.txt', 'y') },
          ],
          { now },
        );
        assert.deepEqual([u.created, u.deleted], [2, 1]);
        assert.equal(await s.resource('z.txt'), undefined);
        assert.equal((await s.resource('y.txt'))?.size, 1);
      } finally {
        await s.close();
      }
    });

    void test('a baseline copies paths with backslashes, tabs and newlines as they are; a failed one leaves nothing', async () => {
      const s = await openPostgresSnapshots(cluster().url, { set: `odd-${randomUUID()}` });
      try {
        async function* failing(): AsyncGenerator<ReturnType<typeof entry>> {
          for (let i = 0; i < 20_000; i++) yield entry(`f${String(i).padStart(5, '0')}`, String(i));
          throw new Error('disk on fire');
        }
        await assert.rejects(s.rebuild(failing(), { now: () => T0 }), /disk on fire/);
        assert.equal(await s.count(), 0);
        assert.equal(await s.snapshotAt(), undefined);
        const paths = ['a\\b.txt', 'c\td.txt', 'e\nf.txt', 'g\rh.txt', '\\N'].sort();
        await s.rebuild(
          paths.map((p) => entry(p, p)),
          { now: () => T0 },
        );
        assert.deepEqual(
          (await collect(s.resources())).map((r) => r.path),
          paths,
        );
        assert.deepEqual((await s.resource('c\td.txt'))?.hashes, entry('c\td.txt', 'c\td.txt').hashes);
      } finally {
        await s.close();
      }
    });

    void test('the schema is versioned in its own table; a newer one is refused with RS_IO', async () => {
      const client = new pg.Client({ connectionString: cluster().url });
      await client.connect();
      try {
        await (await openPostgresSnapshots(cluster().url, { set: 'v' })).close();
        assert.deepEqual((await client.query('SELECT version FROM resourcesync_snapshot_schema_version')).rows, [
          { version: 1 },
        ]);
        await client.query('UPDATE resourcesync_snapshot_schema_version SET version = 42');
        await assert.rejects(
          openPostgresSnapshots(cluster().url, { set: 'v' }),
          (e) => isResourceSyncError(e, 'RS_IO') && /42/.test(e.message),
        );
      } finally {
        await client.query('UPDATE resourcesync_snapshot_schema_version SET version = 1');
        await client.end();
      }
    });

    void test('an unreachable database is RS_IO without its password; no set name is RS_INVALID_ARGUMENT', async () => {
      const url = new URL(cluster().url);
      url.port = '1';
      url.password = 'sekrit';
      await assert.rejects(
        openPostgresSnapshots(url.href, { set: 'x' }),
        (e) => isResourceSyncError(e, 'RS_IO') && !e.message.includes('sekrit'),
      );
      await assert.rejects(openPostgresSnapshots(cluster().url, { set: '' }), (e) =>
        isResourceSyncError(e, 'RS_INVALID_ARGUMENT'),
      );
    });

    void test('a lease held by another process is waited for while renewed, and taken once its holder is gone', async () => {
      const set = `lease-${randomUUID()}`;
      const store = await openPostgresSnapshots(cluster().url, { set });
      const children: ChildProcess[] = [];
      try {
        const alive = leaseHolder(cluster().url, set, 600, true);
        children.push(alive);
        await held(alive);
        let taken = false;
        const waiting = store.acquireLease('documents').then((lease) => {
          taken = true;
          return lease;
        });
        await new Promise((resolve) => setTimeout(resolve, 1500));
        assert.equal(taken, false, 'not taken from a holder that renews');
        alive.kill('SIGKILL');
        await exited(alive);
        const lease = await waiting;
        await lease.release();

        // a holder of this host that is gone binds no more: taken at once, long before its expiry
        const dead = leaseHolder(cluster().url, set, 120_000, false);
        children.push(dead);
        await held(dead);
        dead.kill('SIGKILL');
        await exited(dead);
        const started = Date.now();
        const next = await store.acquireLease('documents');
        assert.ok(Date.now() - started < 60_000, 'not kept until its expiry');
        await next.release();
      } finally {
        for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await store.close();
      }
    });
  });
}
