/**
 * The contract every implementation of `SourceSnapshots` (src/source/source-snapshots.ts) passes: what each method
 * answers, ordering, atomicity of a recording, persistence across a reopen, and the leases (in
 * source-snapshot-leases.ts). Nothing here knows how an implementation stores its data.
 * @example
 * describeSourceSnapshotsContract('SQLite', async () => {
 *   const dir = await mkdtemp(join(tmpdir(), 'snap-'));
 *   const file = join(dir, 'source.sqlite');
 *   return { impl: openSqliteSnapshots(file), openAgain: async () => openSqliteSnapshots(file), cleanup: () => rm(dir, { recursive: true }) };
 * });
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { InventoryEntry } from '../../src/node/inventory.js';
import type { ChangeRecord } from '../../src/source/snapshot-rows.js';
import { collect } from '../helpers/collect.js';
import { describeSnapshotLeaseContract } from './source-snapshot-leases.js';
import { entry, steps, using, type MakeSnapshots } from './snapshots-fixture.js';

export type { MakeSnapshots, SnapshotsFixture } from './snapshots-fixture.js';

const T0 = Date.UTC(2026, 0, 1);

function pathOf(result: IteratorResult<{ path: string }>): string | undefined {
  return result.done === true ? undefined : result.value.path;
}

/** Registers the contract's tests under `describe(name)`. */
export function describeSourceSnapshotsContract(name: string, make: MakeSnapshots): void {
  void describe(`SourceSnapshots contract: ${name}`, () => {
    void test('empty snapshots answer nothing', () =>
      using(make, async ({ impl }) => {
        assert.equal(await impl.snapshotAt(), undefined);
        assert.equal(await impl.changedAt(), undefined);
        assert.equal(await impl.count(), 0);
        assert.equal(await impl.getMeta('missing'), undefined);
        assert.equal(await impl.resource('a.txt'), undefined);
        assert.equal(await impl.holdsUnder('a'), false);
        assert.equal(await impl.openPeriod(), undefined);
        assert.deepEqual(await impl.periods(), []);
        assert.deepEqual(await collect(impl.resources()), []);
        assert.deepEqual(await collect(impl.listing()), []);
        assert.deepEqual(await collect(impl.allChanges()), []);
        assert.deepEqual(await impl.dumps('resourcedump'), []);
        assert.equal(await impl.clock(() => T0), T0);
        await assert.rejects(impl.update([{ path: 'a.txt', entry: entry('a.txt', 'a') }]), (e: unknown) => (e as { code?: string }).code === 'RS_INVALID_ARGUMENT');
      }));

    void test('meta values are set, overwritten and seen by another instance', () =>
      using(make, async ({ impl, openAgain }) => {
        await impl.setMeta('k', 'one');
        await impl.setMeta('k', 'two');
        await impl.setMeta('empty', '');
        assert.equal(await impl.getMeta('k'), 'two');
        assert.equal(await impl.getMeta('empty'), '');
        const other = await openAgain();
        try {
          assert.equal(await other.getMeta('k'), 'two');
        } finally {
          await other.close();
        }
      }));

    void test('a baseline holds the inventory in UTF-8 byte order and records no change', () =>
      using(make, async ({ impl }) => {
        // given in byte order, as an inventory gives them: 'a/b' < 'a0' ('/' < '0'), 'Z' < 'a', 'é' after ASCII
        const paths = ['Z.txt', 'a/b.txt', 'a/c/d.txt', 'a0.txt', 'b.txt', 'é.txt', '\u{1F600}.txt'];
        const result = await impl.rebuild(
          paths.map((p) => entry(p, p)),
          { now: () => T0 },
        );
        assert.deepEqual([result.baseline, result.resources, result.created, result.closed.length], [true, paths.length, 0, 0]);
        assert.equal(result.at, T0);
        assert.equal(await impl.snapshotAt(), T0);
        assert.equal(await impl.changedAt(), T0);
        assert.equal(await impl.count(), paths.length);
        assert.deepEqual((await collect(impl.resources())).map((r) => r.path), paths);
        const listed = await collect(impl.listing());
        assert.deepEqual(listed.map((r) => r.path), paths);
        assert.equal(listed[0]!.hashText, `md5:${entry('Z.txt', 'Z.txt').hashes.md5}`);
        assert.deepEqual(await impl.resource('a/b.txt'), { path: 'a/b.txt', size: 7, mtimeMs: 1_700_000_000_000, type: 'text/plain', hashes: entry('a/b.txt', 'a/b.txt').hashes });
        assert.equal(await impl.holdsUnder('a'), true);
        assert.equal(await impl.holdsUnder('a/c'), true);
        assert.equal(await impl.holdsUnder('a0.txt'), false);
        assert.equal(await impl.holdsUnder('b'), false);
        assert.deepEqual(await collect(impl.allChanges()), []);
        assert.deepEqual(await impl.openPeriod(), { id: (await impl.openPeriod())!.id, from: T0, count: 0 });
      }));

    void test('a rebuild records created, updated and deleted changes at one time, in order, and keeps a new mtime of the same content', () =>
      using(make, async ({ impl }) => {
        const now = steps(T0);
        await impl.rebuild([entry('edit.txt', 'v1'), entry('gone.txt', 'bye'), entry('keep.txt', 'keep', 1)], { now });
        const heard: ChangeRecord[] = [];
        const r = await impl.rebuild(
          (async function* () {
            yield entry('edit.txt', 'version 2');
            yield entry('keep.txt', 'keep', 2);
            yield entry('new/é.txt', 'new');
          })(),
          { now, onChange: (c) => heard.push(c) },
        );
        assert.deepEqual([r.baseline, r.created, r.updated, r.deleted, r.unchanged, r.resources], [false, 1, 1, 1, 1, 3]);
        assert.equal(r.at, T0 + 1000);
        const changes = await collect(impl.allChanges());
        assert.deepEqual(changes.map((c) => [c.change, c.path, c.datetime]), [
          ['updated', 'edit.txt', T0 + 1000],
          ['deleted', 'gone.txt', T0 + 1000],
          ['created', 'new/é.txt', T0 + 1000],
        ]);
        assert.deepEqual(heard, changes);
        assert.ok(changes[0]!.seq < changes[1]!.seq && changes[1]!.seq < changes[2]!.seq);
        assert.equal(changes[0]!.size, 9);
        assert.deepEqual(changes[0]!.hashes, entry('edit.txt', 'version 2').hashes);
        assert.equal(changes[1]!.size, undefined);
        assert.equal(changes[1]!.hashes, undefined);
        assert.equal((await impl.resource('keep.txt'))?.mtimeMs, 2);
        assert.equal(await impl.resource('gone.txt'), undefined);
        assert.equal(await impl.changedAt(), T0 + 1000);
        assert.equal((await impl.openPeriod())?.count, 3);
        assert.deepEqual(await collect(impl.changes((await impl.openPeriod())!.id)), changes);
      }));

    void test('the clock goes forward: each recording that changes something has a time of its own, even when now steps back', () =>
      using(make, async ({ impl }) => {
        await impl.rebuild([entry('a.txt', 'a')], { now: () => T0 });
        const first = await impl.update([{ path: 'a.txt', entry: entry('a.txt', 'a2') }], { now: () => T0 });
        const second = await impl.update([{ path: 'b.txt', entry: entry('b.txt', 'b') }], { now: () => T0 - 60_000 });
        assert.ok(first.at > T0, 'later than the baseline');
        assert.ok(second.at > first.at, 'later than the previous change');
        assert.equal(await impl.clock(() => 0), second.at + 1);
        const quiet = await impl.update([], { now: () => 0 });
        assert.deepEqual([quiet.created, quiet.updated, quiet.deleted], [0, 0, 0]);
        assert.equal(await impl.changedAt(), second.at, 'a recording without change leaves changedAt');
      }));

    void test('update records given paths only; a path stored with the same content records nothing', () =>
      using(make, async ({ impl }) => {
        const now = steps(T0);
        await impl.rebuild([entry('a.txt', 'a'), entry('b.txt', 'b'), entry('c.txt', 'c')], { now });
        const r = await impl.update(
          [
            { path: 'a.txt', entry: entry('a.txt', 'a') },
            { path: 'b.txt', entry: undefined },
            { path: 'd.txt', entry: entry('d.txt', 'd') },
            { path: 'never.txt', entry: undefined },
          ],
          { now },
        );
        assert.deepEqual([r.created, r.updated, r.deleted, r.unchanged], [1, 0, 1, 1]);
        assert.deepEqual((await collect(impl.allChanges())).map((c) => [c.path, c.change]), [
          ['b.txt', 'deleted'],
          ['d.txt', 'created'],
        ]);
        assert.deepEqual((await collect(impl.resources())).map((x) => x.path), ['a.txt', 'c.txt', 'd.txt']);
      }));

    void test('a recording that throws records nothing', () =>
      using(make, async ({ impl }) => {
        const now = steps(T0);
        await impl.rebuild([entry('a.txt', 'a')], { now });
        const before = await impl.clock(() => 0);
        async function* broken(): AsyncGenerator<InventoryEntry> {
          yield entry('a.txt', 'changed');
          yield entry('b.txt', 'b');
          throw new Error('disk on fire');
        }
        await assert.rejects(impl.rebuild(broken(), { now }), /disk on fire/);
        const refused = impl.update([{ path: 'c.txt', entry: entry('c.txt', 'c') }], {
          now,
          onChange: () => {
            throw new Error('listener failed');
          },
        });
        await assert.rejects(refused, /listener failed/);
        assert.equal(await impl.count(), 1);
        assert.deepEqual(await collect(impl.allChanges()), []);
        assert.deepEqual(await impl.resource('a.txt'), { ...entry('a.txt', 'a') });
        assert.equal(await impl.clock(() => 0), before);
        // still usable
        const r = await impl.update([{ path: 'c.txt', entry: entry('c.txt', 'c') }], { now });
        assert.equal(r.created, 1);
      }));

    void test('an aborted rebuild throws RS_ABORTED and records nothing', () =>
      using(make, async ({ impl }) => {
        await impl.rebuild([entry('a.txt', 'a')], { now: () => T0 });
        const controller = new AbortController();
        controller.abort();
        const many = Array.from({ length: 3000 }, (_, i) => entry(`f${String(i).padStart(5, '0')}.txt`, String(i)));
        await assert.rejects(impl.rebuild(many, { now: () => T0 + 1000, signal: controller.signal }), (e: unknown) => (e as { code?: string }).code === 'RS_ABORTED');
        assert.equal(await impl.count(), 1);
      }));

    void test('the open Change List closes at maxEntries and by age; periods are in forward order and prune drops the oldest', () =>
      using(make, async ({ impl }) => {
        const now = steps(T0);
        await impl.rebuild([], { now });
        const r = await impl.update(
          ['a', 'b', 'c', 'd', 'e'].map((p) => ({ path: `${p}.txt`, entry: entry(`${p}.txt`, p) })),
          { now, maxEntries: 2 },
        );
        assert.equal(r.closed.length, 2);
        const periods = await impl.periods();
        assert.deepEqual(periods.map((p) => p.count), [2, 2, 1]);
        assert.ok(periods[0]!.id < periods[1]!.id && periods[1]!.id < periods[2]!.id);
        assert.equal(periods[0]!.until, r.at);
        assert.equal(periods[1]!.from, r.at);
        assert.deepEqual((await collect(impl.changes(periods[1]!.id))).map((c) => c.path), ['c.txt', 'd.txt']);
        // by age: the open period is closed before recording once it is periodMs old
        const aged = await impl.update([{ path: 'f.txt', entry: entry('f.txt', 'f') }], { now: () => T0 + 3_600_000, periodMs: 60_000 });
        assert.equal(aged.closed.length, 1);
        const open = (await impl.openPeriod())!;
        assert.equal(open.from, aged.at);
        assert.deepEqual((await collect(impl.changes(open.id))).map((c) => c.path), ['f.txt']);
        // prune: keep 2 closed periods, none ending after keepAfter
        assert.deepEqual(await impl.prunePeriods(2, 0), []);
        const dropped = await impl.prunePeriods(2);
        assert.deepEqual(dropped.map((p) => p.id), [periods[0]!.id]);
        assert.deepEqual((await impl.periods()).map((p) => p.id), [periods[1]!.id, periods[2]!.id, open.id]);
        assert.deepEqual(await collect(impl.changes(periods[0]!.id)), []);
        assert.deepEqual(await impl.prunePeriods(5), []);
      }));

    void test('dumps are recorded with increasing ids, listed by kind oldest first, and forgotten', () =>
      using(make, async ({ impl }) => {
        const first = await impl.addDump({ kind: 'resourcedump', at: T0, completed: T0 + 1, data: '{"doc":"a"}' });
        const change = await impl.addDump({ kind: 'changedump', from: T0, until: T0 + 5, period: 3, data: '{}' });
        const second = await impl.addDump({ kind: 'resourcedump', at: T0 + 10, data: '{"doc":"b"}' });
        assert.ok(first.id < change.id && change.id < second.id);
        assert.deepEqual(await impl.dumps('resourcedump'), [first, second]);
        assert.deepEqual(await impl.dumps('changedump'), [change]);
        await impl.removeDump(first.id);
        await impl.removeDump(99_999);
        assert.deepEqual(await impl.dumps('resourcedump'), [second]);
      }));

    void test('a cursor reads forward and keeps the snapshot it was opened on', () =>
      using(make, async ({ impl }) => {
        const now = steps(T0);
        await impl.rebuild([entry('a.txt', 'a'), entry('c.txt', 'c'), entry('e.txt', 'e')], { now });
        const cursor = await impl.lookup();
        try {
          await impl.update([{ path: 'c.txt', entry: undefined }], { now });
          assert.equal(await cursor.get('0.txt'), undefined);
          assert.equal((await cursor.get('a.txt'))?.size, 1);
          assert.equal(await cursor.get('b.txt'), undefined);
          assert.deepEqual((await cursor.get('c.txt'))?.hashes, entry('c.txt', 'c').hashes, 'deleted after the cursor opened');
          assert.equal(await cursor.get('z.txt'), undefined);
        } finally {
          await cursor.close();
          await cursor.close();
        }
      }));

    void test('a stream half read does not stop writes, leases or other streams', () =>
      using(make, async ({ impl }) => {
        await impl.rebuild(['a', 'b', 'c'].map((p) => entry(`${p}.txt`, p)), { now: () => T0 });
        const listing = impl.listing()[Symbol.asyncIterator]();
        assert.equal(pathOf(await listing.next()), 'a.txt');
        await impl.setMeta('during', 'yes');
        const lease = await impl.acquireLease('documents');
        await lease.renew();
        assert.deepEqual((await collect(impl.resources())).map((r) => r.path), ['a.txt', 'b.txt', 'c.txt']);
        assert.equal(pathOf(await listing.next()), 'b.txt');
        await listing.return?.();
        await lease.release();
        assert.equal(await impl.getMeta('during'), 'yes');
      }));

    void test('everything persists across a reopen', () =>
      using(make, async (fixture) => {
        const now = steps(T0);
        await fixture.impl.rebuild([entry('a.txt', 'a')], { now });
        await fixture.impl.update([{ path: 'b.txt', entry: entry('b.txt', 'b') }], { now, maxEntries: 1 });
        await fixture.impl.setMeta('k', 'v');
        const dump = await fixture.impl.addDump({ kind: 'resourcedump', at: T0, data: 'x' });
        const periods = await fixture.impl.periods();
        const changes = await collect(fixture.impl.allChanges());
        const clock = await fixture.impl.clock(() => 0);
        await fixture.impl.close();
        fixture.impl = await fixture.openAgain();
        const again = fixture.impl;
        assert.equal(await again.snapshotAt(), T0);
        assert.equal(await again.getMeta('k'), 'v');
        assert.deepEqual((await collect(again.resources())).map((r) => r.path), ['a.txt', 'b.txt']);
        assert.deepEqual(await again.periods(), periods);
        assert.deepEqual(await collect(again.allChanges()), changes);
        assert.deepEqual(await again.dumps('resourcedump'), [dump]);
        assert.equal(await again.clock(() => 0), clock);
      }));

    describeSnapshotLeaseContract(make);
  });
}
