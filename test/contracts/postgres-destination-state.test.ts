import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import pg from 'pg';
import { isResourceSyncError } from '../../src/core/errors.js';
import { openPostgresDestinationState } from '../../src/destination/postgres-state.js';
import type { DestinationState, ResourceRecord } from '../../src/destination/state.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { describeDestinationStateContract } from './destination-state.js';

const cluster = usePostgres();

/** A state on the test cluster, and every instance opened on it, closed together. */
async function openFresh(destination = `dest-${randomUUID()}`): Promise<{
  impl: DestinationState;
  reopen: (options?: { readonly?: boolean }) => Promise<DestinationState>;
  cleanup: () => Promise<void>;
}> {
  const opened: DestinationState[] = [];
  const reopen = async (options: { readonly?: boolean } = {}): Promise<DestinationState> => {
    const state = await openPostgresDestinationState(cluster().url, { destination, ...options });
    opened.push(state);
    return state;
  };
  return {
    impl: await reopen(),
    reopen,
    cleanup: async () => {
      for (const state of opened) await state.close();
    },
  };
}

/** The destination whose lease `holder` holds. */
async function destinationOf(sql: pg.Client, holder: string): Promise<string> {
  return (await sql.query<{ destination: string }>('SELECT destination FROM resourcesync_leases WHERE holder = $1', [holder])).rows[0]!.destination;
}

if (POSTGRES_SKIP !== false) {
  void test('PostgreSQL destination state', { skip: POSTGRES_SKIP }, () => undefined);
} else {
  describeDestinationStateContract('PostgreSQL (a fresh destination key per test)', () => openFresh());

  const rec = (n: number): ResourceRecord => ({ url: `http://example.org/r/${n}`, path: `r/${n}`, length: n, hashes: { md5: `m${n}` } });

  void describe('PostgreSQL destination state', () => {
    void test('two destinations in one database are kept apart', async () => {
      const a = await openFresh();
      const b = await openFresh();
      try {
        await a.impl.apply({ put: [rec(1), rec(2)], skipDeletions: { setKey: 'cap', urls: [rec(3).url] }, addPending: { setKey: 'cap', entries: [{ entry: { loc: rec(4).url }, code: 'RS_NETWORK' }] } });
        await a.impl.setCursor('cap', { datetime: '2013-01-01T00:00:00Z' });
        await a.impl.setMeta('k', 'a');
        await b.impl.apply({ put: [rec(2)] });
        await b.impl.setMeta('k', 'b');
        assert.equal(await a.impl.count(), 2);
        assert.equal(await b.impl.count(), 1);
        assert.equal(await b.impl.get(rec(1).url), undefined);
        assert.equal(await b.impl.getCursor('cap'), undefined);
        assert.equal(await b.impl.hasSkippedDeletions(), false);
        assert.deepEqual(await b.impl.pending('cap'), []);
        assert.equal(await a.impl.getMeta('k'), 'a');
        assert.equal(await b.impl.getMeta('k'), 'b');
        await b.impl.apply({ delete: [rec(2).url] });
        assert.deepEqual(await a.impl.get(rec(2).url), rec(2));
        // each has its own lease
        const leaseA = await a.impl.acquireLease({ holder: 'a', ttlMs: 60_000 });
        const leaseB = await b.impl.acquireLease({ holder: 'b', ttlMs: 60_000 });
        await leaseA.release();
        await leaseB.release();
      } finally {
        await a.cleanup();
        await b.cleanup();
      }
    });

    void test('reopening with the same key finds the data; the schema version row says what the package wrote', async () => {
      const destination = `dest-${randomUUID()}`;
      const first = await openFresh(destination);
      await first.impl.apply({ put: [rec(1)] });
      await first.cleanup();
      const again = await openFresh(destination);
      try {
        assert.deepEqual(await again.impl.get(rec(1).url), rec(1));
      } finally {
        await again.cleanup();
      }
      const client = new pg.Client({ connectionString: cluster().url });
      await client.connect();
      try {
        const rows = (await client.query<{ version: number }>('SELECT version FROM resourcesync_schema_version')).rows;
        assert.deepEqual(rows, [{ version: 3 }]);
      } finally {
        await client.end();
      }
    });

    void test('a database whose schema is newer than the package is refused with RS_IO', async () => {
      const client = new pg.Client({ connectionString: cluster().url });
      await client.connect();
      try {
        await openFresh().then((f) => f.cleanup()); // the tables exist
        await client.query('UPDATE resourcesync_schema_version SET version = 99');
        await assert.rejects(openFresh(), (e) => isResourceSyncError(e, 'RS_IO') && /99/.test(e.message));
      } finally {
        await client.query('UPDATE resourcesync_schema_version SET version = 2');
        await client.end();
      }
    });

    void test('a lease held by another instance refuses with RS_LOCKED naming its holder, and is taken after its TTL', async () => {
      const f = await openFresh();
      try {
        const other = await f.reopen();
        const ttlMs = 200;
        const held = await f.impl.acquireLease({ holder: 'machine-a', ttlMs });
        await assert.rejects(other.acquireLease({ holder: 'machine-b', ttlMs: 60_000 }), (e) => isResourceSyncError(e, 'RS_LOCKED') && /machine-a/.test(e.message));
        let taken;
        for (const deadline = Date.now() + 30_000; taken === undefined; ) {
          try {
            taken = await other.acquireLease({ holder: 'machine-b', ttlMs: 60_000 });
          } catch (e) {
            assert.ok(isResourceSyncError(e, 'RS_LOCKED'), String(e));
            assert.ok(Date.now() < deadline, 'the lease never expired');
            await new Promise((r) => setTimeout(r, 25));
          }
        }
        assert.ok(Date.now() >= held.expiresAt - 5);
        assert.equal(taken.holder, 'machine-b');
        await assert.rejects(held.renew(), (e) => isResourceSyncError(e, 'RS_LOCKED'));
        await taken.release();
      } finally {
        await f.cleanup();
      }
    });

    void test('a lease whose process on this host is gone is taken at once; one held on another host waits for its TTL', async () => {
      const f = await openFresh();
      const sql = new pg.Client({ connectionString: cluster().url });
      await sql.connect();
      try {
        const dead = spawnSync(process.execPath, ['-e', '0']).pid; // a process that has exited
        const other = await f.reopen();
        await f.impl.acquireLease({ holder: 'crashed', ttlMs: 600_000 });
        await sql.query('UPDATE resourcesync_leases SET pid = $2 WHERE destination = $1', [await destinationOf(sql, 'crashed'), dead]);
        const taken = await other.acquireLease({ holder: 'next', ttlMs: 600_000 });
        assert.equal(taken.holder, 'next');
        await sql.query("UPDATE resourcesync_leases SET pid = $2, host = 'elsewhere' WHERE destination = $1", [await destinationOf(sql, 'next'), dead]);
        const third = await f.reopen();
        await assert.rejects(third.acquireLease({ holder: 'third', ttlMs: 1000 }), (e) => isResourceSyncError(e, 'RS_LOCKED') && /next/.test(e.message));
      } finally {
        await sql.end();
        await f.cleanup();
      }
    });

    void test('a batch of many records is one multi-row write, paged back in URL order', async () => {
      const f = await openFresh();
      try {
        const all = Array.from({ length: 5000 }, (_, i) => rec(i));
        await f.impl.apply({ put: [...all, { ...rec(7), length: 70 }] }); // the last of a URL wins
        assert.equal(await f.impl.count(), 5000);
        assert.equal((await f.impl.get(rec(7).url))?.length, 70);
        let previous = '';
        let n = 0;
        for await (const url of f.impl.urls()) {
          assert.ok(url > previous);
          previous = url;
          n++;
        }
        assert.equal(n, 5000);
      } finally {
        await f.cleanup();
      }
    });

    void test('read-only on a database the package never wrote to reads as empty', async () => {
      const url = new URL(cluster().url);
      const client = new pg.Client({ connectionString: cluster().url });
      await client.connect();
      const database = `empty_${randomUUID().replace(/-/g, '')}`;
      await client.query(`CREATE DATABASE ${database}`);
      url.pathname = `/${database}`;
      try {
        const state = await openPostgresDestinationState(url.href, { destination: 'd', readonly: true });
        try {
          assert.equal(await state.count(), 0);
          assert.equal(await state.getMeta('k'), undefined);
          await assert.rejects(state.acquireLease({ ttlMs: 1000 }), (e) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
        } finally {
          await state.close();
        }
      } finally {
        await client.query(`DROP DATABASE ${database}`);
        await client.end();
      }
    });
  });
}
