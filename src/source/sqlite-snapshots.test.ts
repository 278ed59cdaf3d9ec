import { spawn, type ChildProcess } from 'node:child_process';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { exited } from '../../test/helpers/exited.js';
import { tempDir } from '../../test/helpers/tmp.js';
import { inventory } from '../node/inventory.js';
import { collect } from '../../test/helpers/collect.js';
import type { SourceSnapshots } from './source-snapshots.js';
import { openSqliteSnapshots } from './sqlite-snapshots.js';

function clock(start: number, step = 1000): () => number {
  let t = start - step;
  return () => (t += step);
}

async function scan(store: SourceSnapshots, dir: string, now: () => number, boundary: { maxEntries?: number; periodMs?: number } = {}) {
  const cursor = await store.lookup();
  try {
    return await store.rebuild(inventory(dir, { previous: (path) => cursor.get(path) }), { now, ...boundary });
  } finally {
    await cursor.close();
  }
}

void test('rebuilds record created, updated and deleted changes with their time, in order', async () => {
  const { dir, cleanup } = await tempDir();
  const t0 = Date.UTC(2024, 0, 1);
  const now = clock(t0);
  const store = openSqliteSnapshots(join(dir, '.resourcesync', 'source.sqlite'));
  try {
    writeFileSync(join(dir, 'keep.txt'), 'keep');
    writeFileSync(join(dir, 'edit.txt'), 'v1');
    writeFileSync(join(dir, 'gone.txt'), 'bye');
    const base = await scan(store, dir, now);
    assert.equal(base.baseline, true);
    assert.equal(base.resources, 3);
    assert.deepEqual((await collect(store.allChanges())), []);
    assert.equal((await store.openPeriod())?.from, t0);

    // no change: nothing recorded
    const same = await scan(store, dir, now);
    assert.deepEqual([same.created, same.updated, same.deleted, same.unchanged], [0, 0, 0, 3]);

    writeFileSync(join(dir, 'edit.txt'), 'version 2');
    rmSync(join(dir, 'gone.txt'));
    mkdirSync(join(dir, 'new dir'));
    writeFileSync(join(dir, 'new dir', 'é #1.txt'), 'new');
    const r = await scan(store, dir, now);
    assert.deepEqual([r.created, r.updated, r.deleted, r.resources], [1, 1, 1, 3]);
    const changes = (await collect(store.allChanges()));
    assert.deepEqual(
      changes.map((c) => [c.change, c.path, c.datetime]),
      [
        ['updated', 'edit.txt', t0 + 2000],
        ['deleted', 'gone.txt', t0 + 2000],
        ['created', 'new dir/é #1.txt', t0 + 2000],
      ],
    );
    assert.equal(changes[0]!.size, 9);
    assert.equal(changes[0]!.hashes?.md5, createHash('md5').update('version 2').digest('hex'));
    assert.equal(changes[1]!.size, undefined);
    assert.equal((await store.resource('gone.txt')), undefined);
    assert.equal((await store.resource('edit.txt'))?.size, 9);

    // touched but same content: no change, new mtime stored (no re-hash next time)
    const later = new Date(t0 + 99_000);
    const { utimesSync } = await import('node:fs');
    utimesSync(join(dir, 'keep.txt'), later, later);
    const touched = await scan(store, dir, now);
    assert.equal(touched.updated, 0);
    assert.equal((await store.resource('keep.txt'))?.mtimeMs, later.getTime());
  } finally {
    await store.close();
    await cleanup();
  }
});

void test('the open Change List period closes at maxEntries and by age; periods stay in forward order', async () => {
  const { dir, cleanup } = await tempDir();
  const t0 = Date.UTC(2024, 5, 1);
  const now = clock(t0, 60_000);
  const store = openSqliteSnapshots(join(dir, '.state', 'source.sqlite'));
  try {
    await scan(store, dir, now, { maxEntries: 2 });
    for (let i = 0; i < 5; i++) writeFileSync(join(dir, `f${i}.txt`), String(i));
    const r = await scan(store, dir, now, { maxEntries: 2 });
    assert.equal(r.created, 5);
    assert.equal(r.closed.length, 2);
    const periods = (await store.periods());
    assert.equal(periods.length, 3);
    assert.deepEqual(
      periods.map((p) => [p.from, p.until, p.count]),
      [
        [t0, t0 + 60_000, 2],
        [t0 + 60_000, t0 + 60_000, 2],
        [t0 + 60_000, undefined, 1],
      ],
    );
    assert.deepEqual(
      (await collect(store.changes(periods[1]!.id))).map((c) => c.path),
      ['f2.txt', 'f3.txt'],
    );
    // by age: the open period is older than periodMs at the next rebuild, so it closes before recording
    writeFileSync(join(dir, 'f0.txt'), 'changed');
    const r2 = await scan(store, dir, now, { maxEntries: 100, periodMs: 30_000 });
    assert.equal(r2.closed.length, 1);
    const open = (await store.openPeriod())!;
    assert.equal(open.from, t0 + 120_000);
    assert.deepEqual((await collect(store.changes(open.id))).map((c) => [c.change, c.path]), [['updated', 'f0.txt']]);
    // retention drops the oldest closed periods
    const dropped = (await store.prunePeriods(1));
    assert.equal(dropped.length, 2);
    assert.equal((await store.periods()).length, 2);
  } finally {
    await store.close();
    await cleanup();
  }
});

void test('a failed rebuild leaves the snapshot untouched', async () => {
  const { dir, cleanup } = await tempDir();
  const store = openSqliteSnapshots(join(dir, '.resourcesync', 'source.sqlite'));
  try {
    writeFileSync(join(dir, 'a.txt'), 'a');
    await scan(store, dir, clock(1000));
    async function* broken() {
      await Promise.resolve();
      yield { path: 'b.txt', size: 1, mtimeMs: 1, type: 'text/plain', hashes: { md5: '0'.repeat(32) } };
      throw new Error('disk on fire');
    }
    await assert.rejects(store.rebuild(broken(), { now: () => 5000 }), /disk on fire/);
    assert.equal((await store.count()), 1);
    assert.deepEqual((await collect(store.allChanges())), []);
  } finally {
    await store.close();
    await cleanup();
  }
});

void test('update records the changes of given paths only, in the same periods and clock as rebuild; the clock never goes back', async () => {
  const { dir, cleanup } = await tempDir();
  const t0 = Date.UTC(2024, 0, 1);
  let t = t0;
  const now = (): number => t;
  const store = openSqliteSnapshots(join(dir, '.resourcesync', 'source.sqlite'));
  try {
    await assert.rejects(store.update([]), (e: unknown) => (e as { code?: string }).code === 'RS_INVALID_ARGUMENT');
    writeFileSync(join(dir, 'a.txt'), 'a1');
    writeFileSync(join(dir, 'b.txt'), 'b1');
    await scan(store, dir, now);
    const entry = (path: string, body: string) => ({ path, size: body.length, mtimeMs: t, type: 'text/plain', hashes: { md5: createHash('md5').update(body).digest('hex') } });

    t = t0 + 1000;
    const r = await store.update([
      { path: 'a.txt', entry: entry('a.txt', 'a2') }, // updated
      { path: 'b.txt', entry: undefined }, // deleted
      { path: 'c.txt', entry: entry('c.txt', 'c1') }, // created
      { path: 'never.txt', entry: undefined }, // neither listed nor there: nothing
    ], { now });
    assert.deepEqual([r.created, r.updated, r.deleted, r.at], [1, 1, 1, t0 + 1000]);
    assert.deepEqual((await collect(store.allChanges())).map((c) => [c.path, c.change, c.datetime]), [
      ['a.txt', 'updated', t0 + 1000],
      ['b.txt', 'deleted', t0 + 1000],
      ['c.txt', 'created', t0 + 1000],
    ]);
    assert.deepEqual((await collect(store.resources())).map((x) => x.path), ['a.txt', 'c.txt']);

    // the same state again records nothing
    t = t0 + 2000;
    const same = await store.update([{ path: 'a.txt', entry: entry('a.txt', 'a2') }], { now });
    assert.deepEqual([same.created, same.updated, same.deleted, same.unchanged], [0, 0, 0, 1]);

    // the system clock steps back: the next change is still not earlier than the last one
    t = t0 - 60_000;
    const back = await store.update([{ path: 'c.txt', entry: entry('c.txt', 'c2') }], { now });
    assert.equal(back.at, t0 + 1001);
    const times = (await collect(store.allChanges())).map((c) => c.datetime);
    assert.deepEqual(times, [...times].sort((x, y) => x - y), 'forward chronological');
  } finally {
    await store.close();
    await cleanup();
  }
});

/** A child process holding the `documents` lease of `file`: renewing it (`renew`) or not, until killed. */
function leaseHolder(file: string, ttlMs: number, renew: boolean): ChildProcess {
  const module = new URL('./sqlite-snapshots.js', import.meta.url).href;
  const leases = new URL('./source-snapshots.js', import.meta.url).href;
  const script = `
    const { openSqliteSnapshots } = await import(${JSON.stringify(module)});
    const { holdingLease } = await import(${JSON.stringify(leases)});
    const snapshots = openSqliteSnapshots(${JSON.stringify(file)});
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

void test('a lease held by another process is waited for while renewed, and taken once its holder is gone', async () => {
  const { dir, cleanup } = await tempDir();
  const file = join(dir, '.resourcesync', 'source.sqlite');
  const store = openSqliteSnapshots(file);
  const children: ChildProcess[] = [];
  try {
    // alive and renewing: this process waits, past the lease's time to live
    const alive = leaseHolder(file, 600, true);
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
    // killed: this process takes its lease
    const lease = await waiting;
    await lease.release();

    // a holder of this host that is gone binds no more: its lease is taken at once, long before it expires
    const dead = leaseHolder(file, 120_000, false);
    children.push(dead);
    await held(dead);
    dead.kill('SIGKILL');
    await exited(dead);
    const started = Date.now();
    const after = await store.acquireLease('documents');
    assert.ok(Date.now() - started < 60_000, 'not kept until its expiry');
    await after.release();
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await store.close();
    await cleanup();
  }
});
