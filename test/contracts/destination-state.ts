/**
 * The contract every {@link DestinationState} must keep, whatever stores it (SQLite, PostgreSQL, …). Run it from a
 * `*.test.ts` with a factory that makes a fresh, empty state and a way to open the same state again:
 *
 *   describeDestinationStateContract('sqlite', async () => { … return { impl, reopen, cleanup }; });
 *
 * `reopen()` opens another instance on the same stored state (another connection, another machine); `readonly`
 * opens one for reading only. Nothing here knows how a state is stored.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isResourceSyncError } from '../../src/core/errors.js';
import type { Entry } from '../../src/core/model/types.js';
import type { DestinationState, ResourceRecord } from '../../src/destination/state.js';

/** What a contract run needs of an implementation. */
export interface DestinationStateFixture {
  /** A fresh, empty, writable state. */
  impl: DestinationState;
  /** Another instance on the same stored state. */
  reopen(options?: { readonly?: boolean }): Promise<DestinationState>;
  /** Closes what the fixture opened and removes the stored state. */
  cleanup(): Promise<void>;
}

const rec = (n: number, extra: Partial<ResourceRecord> = {}): ResourceRecord => ({
  url: `http://example.org/r/${String(n).padStart(5, '0')}`,
  path: `r/${n}`,
  length: n,
  hashes: { md5: `m${n}` },
  ...extra,
});

const entry = (loc: string): Entry => ({ loc, md: { change: 'updated', hash: 'md5:1B2M2Y8AsgTpgAmY7PhCfg==' } });

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

const locked = (e: unknown): boolean => isResourceSyncError(e, 'RS_LOCKED');

/** Registers the contract's tests under `name`. */
export function describeDestinationStateContract(name: string, make: () => Promise<DestinationStateFixture>): void {
  const withState = (title: string, fn: (f: DestinationStateFixture) => Promise<void>): void => {
    void test(title, async () => {
      const f = await make();
      try {
        await fn(f);
      } finally {
        await f.cleanup();
      }
    });
  };

  void describe(`DestinationState contract: ${name}`, () => {
    withState('an empty state holds nothing', async ({ impl }) => {
      assert.equal(impl.readonly, false);
      assert.equal(await impl.count(), 0);
      assert.equal(await impl.get('http://example.org/none'), undefined);
      assert.deepEqual(await collect(impl.records()), []);
      assert.deepEqual(await collect(impl.urls()), []);
      assert.equal(await impl.getCursor('cap'), undefined);
      assert.equal(await impl.getMeta('k'), undefined);
      assert.deepEqual(await impl.pending('cap'), []);
      assert.equal(await impl.hasSkippedDeletions(), false);
      assert.deepEqual(await impl.skippedDeletions(), []);
      await impl.apply({}); // an empty batch changes nothing
      await impl.apply({ put: [], delete: [], forgetSkipped: [], removePending: [] });
      assert.equal(await impl.count(), 0);
    });

    withState('records: put replaces by URL, optional fields round-trip, delete ignores what is not held', async ({ impl }) => {
      const full = rec(1, { lastmod: '2013-01-01T00:00:00Z', etag: '"e1"', type: 'text/plain; charset=utf-8', links: [{ rel: 'duplicate', href: 'http://m/1', pri: '1' }] });
      await impl.apply({ put: [full, rec(2)] });
      assert.deepEqual(await impl.get(full.url), full);
      assert.deepEqual(await impl.get(rec(2).url), rec(2));
      await impl.apply({ put: [rec(2, { length: 20, hashes: { md5: 'x', 'sha-256': 'y' } })] });
      assert.deepEqual(await impl.get(rec(2).url), rec(2, { length: 20, hashes: { md5: 'x', 'sha-256': 'y' } }));
      // a record put again without its optional fields loses them
      await impl.apply({ put: [rec(1)] });
      assert.deepEqual(await impl.get(full.url), rec(1));
      await impl.apply({ delete: [rec(1).url, 'http://example.org/never-held'] });
      assert.equal(await impl.get(rec(1).url), undefined);
      assert.equal(await impl.count(), 1);
    });

    withState('records() is ordered by URL and urls() lists every URL, across many records', async ({ impl }) => {
      const all = Array.from({ length: 2503 }, (_, i) => rec(2502 - i));
      await impl.apply({ put: all });
      assert.equal(await impl.count(), 2503);
      const records = await collect(impl.records());
      assert.deepEqual(records.map((r) => r.url), all.map((r) => r.url).sort());
      assert.deepEqual(records[7], rec(7));
      assert.deepEqual((await collect(impl.urls())).sort(), all.map((r) => r.url).sort());
    });

    withState('a batch is applied in its documented order and atomically: a failing batch leaves nothing', async ({ impl }) => {
      await impl.apply({ put: [rec(1)], skipDeletions: { setKey: 'cap', urls: [rec(9).url] } });
      // put, delete, forgetSkipped, skipDeletions, addPending, removePending
      await impl.apply({
        put: [rec(2)],
        delete: [rec(2).url],
        forgetSkipped: [rec(9).url],
        skipDeletions: { setKey: 'cap', urls: [rec(8).url] },
        addPending: { setKey: 'cap', entries: [{ entry: entry(rec(3).url), code: 'RS_HASH_MISMATCH' }, { entry: entry(rec(4).url), code: 'RS_NETWORK' }] },
        removePending: [rec(4).url],
      });
      assert.equal(await impl.get(rec(2).url), undefined);
      assert.deepEqual(await impl.skippedDeletions('cap'), [rec(8).url]);
      assert.deepEqual(await impl.pending('cap'), [entry(rec(3).url)]);
      // a record without a path is refused, and the whole batch with it
      const bad = { url: 'http://example.org/bad', length: 1, hashes: {} } as unknown as ResourceRecord;
      await assert.rejects(
        Promise.resolve().then(() => impl.apply({ put: [rec(5), bad], delete: [rec(1).url], skipDeletions: { setKey: 'cap', urls: [rec(7).url] } })),
      );
      assert.equal(await impl.get(rec(5).url), undefined);
      assert.deepEqual(await impl.get(rec(1).url), rec(1));
      assert.deepEqual(await impl.skippedDeletions('cap'), [rec(8).url]);
      assert.equal(await impl.count(), 1);
    });

    withState('cursors and metadata: set, replace, remove', async ({ impl }) => {
      await impl.setCursor('a', { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
      await impl.setCursor('b', { datetime: '2013-01-01T00:00:00Z' });
      assert.deepEqual(await impl.getCursor('a'), { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
      assert.deepEqual(await impl.getCursor('b'), { datetime: '2013-01-01T00:00:00Z' });
      await impl.setCursor('a', { datetime: '2013-01-04T00:00:00Z' });
      assert.deepEqual(await impl.getCursor('a'), { datetime: '2013-01-04T00:00:00Z' });
      await impl.setMeta('k', 'v1');
      await impl.setMeta('k', 'v2');
      assert.equal(await impl.getMeta('k'), 'v2');
      await impl.setMeta('k', undefined);
      assert.equal(await impl.getMeta('k'), undefined);
      await impl.setMeta('absent', undefined);
    });

    withState('pending entries are kept per capability set, ordered by URL, replaced by URL and cleared per set', async ({ impl }) => {
      await impl.apply({ addPending: { setKey: 'a', entries: [{ entry: entry(rec(2).url), code: 'RS_NETWORK' }, { entry: entry(rec(1).url), code: 'RS_NETWORK' }] } });
      await impl.apply({ addPending: { setKey: 'b', entries: [{ entry: entry(rec(3).url), code: 'RS_HTTP_STATUS' }] } });
      assert.deepEqual(await impl.pending('a'), [entry(rec(1).url), entry(rec(2).url)]);
      const newer: Entry = { loc: rec(2).url, md: { change: 'deleted' } };
      await impl.apply({ addPending: { setKey: 'a', entries: [{ entry: newer, code: 'RS_NETWORK' }] } });
      assert.deepEqual(await impl.pending('a'), [entry(rec(1).url), newer]);
      await impl.apply({ removePending: [rec(1).url, 'http://example.org/none'] });
      assert.deepEqual(await impl.pending('a'), [newer]);
      await impl.clearPending('a');
      assert.deepEqual(await impl.pending('a'), []);
      assert.deepEqual(await impl.pending('b'), [entry(rec(3).url)]);
    });

    withState('skipped deletions are kept per capability set, ordered by URL, and forgotten one by one', async ({ impl }) => {
      await impl.apply({ skipDeletions: { setKey: 'a', urls: [rec(2).url, rec(1).url] } });
      await impl.apply({ skipDeletions: { setKey: 'b', urls: [rec(3).url] } });
      assert.equal(await impl.hasSkippedDeletions(), true);
      assert.deepEqual(await impl.skippedDeletions('a'), [rec(1).url, rec(2).url]);
      assert.deepEqual(await impl.skippedDeletions(), [rec(1).url, rec(2).url, rec(3).url]);
      await impl.apply({ forgetSkipped: [rec(1).url, rec(3).url] });
      assert.deepEqual(await impl.skippedDeletions(), [rec(2).url]);
      await impl.apply({ forgetSkipped: [rec(2).url] });
      assert.equal(await impl.hasSkippedDeletions(), false);
    });

    withState('what was written is there after close and reopen; a read-only instance reads it and refuses writes', async (f) => {
      await f.impl.apply({ put: [rec(1)], skipDeletions: { setKey: 'a', urls: [rec(2).url] }, addPending: { setKey: 'a', entries: [{ entry: entry(rec(3).url), code: 'RS_NETWORK' }] } });
      await f.impl.setCursor('a', { datetime: '2013-01-03T00:00:00Z' });
      await f.impl.setMeta('baseline:a', '2013-01-01T00:00:00Z');
      await f.impl.close();
      const ro = await f.reopen({ readonly: true });
      try {
        assert.equal(ro.readonly, true);
        assert.deepEqual(await ro.get(rec(1).url), rec(1));
        assert.deepEqual(await ro.getCursor('a'), { datetime: '2013-01-03T00:00:00Z' });
        assert.equal(await ro.getMeta('baseline:a'), '2013-01-01T00:00:00Z');
        assert.deepEqual(await ro.pending('a'), [entry(rec(3).url)]);
        assert.deepEqual(await ro.skippedDeletions('a'), [rec(2).url]);
        await assert.rejects(Promise.resolve().then(() => ro.apply({ put: [rec(4)] })));
        await assert.rejects(Promise.resolve().then(() => ro.setCursor('a', { datetime: '2014-01-01T00:00:00Z' })));
        await assert.rejects(ro.acquireLease({ ttlMs: 10_000 }));
        assert.equal(await ro.get(rec(4).url), undefined);
      } finally {
        await ro.close();
      }
    });

    withState('concurrent callers: batches issued together all land, and another instance sees them', async (f) => {
      const batch = async (b: number): Promise<void> => {
        await f.impl.apply({ put: Array.from({ length: 50 }, (_, i) => rec(b * 50 + i)) });
      };
      await Promise.all(Array.from({ length: 20 }, (_, b) => batch(b)));
      const writes = [
        async (): Promise<void> => await f.impl.setCursor('a', { datetime: '2013-01-01T00:00:00Z' }),
        async (): Promise<void> => await f.impl.setMeta('m', '1'),
        async (): Promise<void> => await f.impl.clearPending('a'),
      ];
      await Promise.all(writes.map((write) => write()));
      const other = await f.reopen();
      try {
        assert.equal(await other.count(), 1000);
        assert.deepEqual(await other.getCursor('a'), { datetime: '2013-01-01T00:00:00Z' });
      } finally {
        await other.close();
      }
    });

    withState('the lease is exclusive between instances and between holders, and free again once released', async (f) => {
      const other = await f.reopen();
      try {
        const lease = await f.impl.acquireLease({ holder: 'run-1', ttlMs: 60_000 });
        assert.equal(lease.holder, 'run-1');
        assert.ok(lease.expiresAt > Date.now() + 30_000);
        await assert.rejects(other.acquireLease({ holder: 'run-2', ttlMs: 60_000 }), locked);
        await assert.rejects(f.impl.acquireLease({ holder: 'run-3', ttlMs: 60_000 }), locked);
        await lease.release();
        await lease.release(); // twice: nothing
        const second = await other.acquireLease({ holder: 'run-2', ttlMs: 60_000 });
        await assert.rejects(f.impl.acquireLease({ holder: 'run-1', ttlMs: 60_000 }), locked);
        await second.release();
      } finally {
        await other.close();
      }
    });

    withState('a lease not renewed expires after its TTL and can be taken; its old holder can no longer renew it', async (f) => {
      const other = await f.reopen();
      try {
        const ttlMs = 300;
        const first = await f.impl.acquireLease({ holder: 'stopped', ttlMs });
        await assert.rejects(other.acquireLease({ holder: 'next', ttlMs: 60_000 }), locked);
        let taken;
        for (const deadline = Date.now() + 30_000; taken === undefined; ) {
          try {
            taken = await other.acquireLease({ holder: 'next', ttlMs: 60_000 });
          } catch (e) {
            assert.ok(locked(e), String(e));
            assert.ok(Date.now() < deadline, 'the lease never expired');
            await new Promise((r) => setTimeout(r, 50));
          }
        }
        assert.ok(Date.now() >= first.expiresAt - 5, 'taken before it expired');
        await assert.rejects(first.renew(), locked);
        await first.release(); // does not release the new holder's lease
        await assert.rejects(f.impl.acquireLease({ holder: 'third', ttlMs: 60_000 }), locked);
        await taken.release();
      } finally {
        await other.close();
      }
    });

    withState('renewing keeps a lease from expiring', async (f) => {
      const other = await f.reopen();
      try {
        // a TTL well above what a busy machine delays a timer, renewed ten times as often
        const ttlMs = 1500;
        const lease = await f.impl.acquireLease({ holder: 'renewing', ttlMs });
        const before = lease.expiresAt;
        const until = Date.now() + 2 * ttlMs;
        while (Date.now() < until) {
          await new Promise((r) => setTimeout(r, ttlMs / 10));
          await lease.renew();
          await assert.rejects(other.acquireLease({ holder: 'other', ttlMs: 60_000 }), locked);
        }
        assert.ok(lease.expiresAt > before);
        await lease.release();
        await (await other.acquireLease({ holder: 'other', ttlMs: 60_000 })).release();
      } finally {
        await other.close();
      }
    });

    withState('closing an instance releases the leases taken through it', async (f) => {
      await f.impl.acquireLease({ holder: 'closing', ttlMs: 60_000 });
      await f.impl.close();
      const other = await f.reopen();
      try {
        await (await other.acquireLease({ holder: 'next', ttlMs: 60_000 })).release();
      } finally {
        await other.close();
      }
    });
  });
}
