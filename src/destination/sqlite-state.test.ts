import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openSqliteDestinationState } from './sqlite-state.js';
import { holdLease } from './lease.js';
import { isResourceSyncError } from '../core/errors.js';

/** A pid no live process has: one that has just exited. */
const deadPid = (): number => Number(spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString());

void test('records, cursors and metadata persist across opens, in <dest>/.resourcesync/state.sqlite readable by the owner only', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = await openSqliteDestinationState(dest);
    await s.apply({
      put: [
        { url: 'http://e/b', path: 'b', length: 2, hashes: { md5: 'bb' }, etag: '"x"' },
        { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' }, lastmod: '2013-01-01T00:00:00Z', links: [{ rel: 'duplicate', href: 'http://m/a' }] },
      ],
    });
    await s.setCursor('cap', { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
    await s.setMeta('baseline', 'done');
    await s.close();
    const file = join(dest, '.resourcesync', 'state.sqlite');
    assert.equal(statSync(file).mode & 0o777, 0o600);
    const r = await openSqliteDestinationState(dest, { readonly: true });
    assert.equal(await r.count(), 2);
    assert.deepEqual(await r.get('http://e/a'), { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' }, lastmod: '2013-01-01T00:00:00Z', links: [{ rel: 'duplicate', href: 'http://m/a' }] });
    const urls: string[] = [];
    for await (const x of r.records()) urls.push(x.url);
    assert.deepEqual(urls, ['http://e/a', 'http://e/b']);
    assert.deepEqual(await r.getCursor('cap'), { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
    assert.equal(await r.getMeta('baseline'), 'done');
    await assert.rejects(Promise.resolve().then(() => r.setMeta('x', 'y')), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
    await assert.rejects(r.acquireLease({ ttlMs: 1000 }), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
    await r.close();
    const w = await openSqliteDestinationState(dest);
    await w.apply({ delete: ['http://e/a'] });
    assert.equal(await w.get('http://e/a'), undefined);
    await w.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('a read-only open of a missing state creates nothing', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = await openSqliteDestinationState(dest, { readonly: true });
    assert.equal(await s.count(), 0);
    await s.close();
    assert.equal(existsSync(join(dest, '.resourcesync')), false);
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('the lease excludes a second sync and is taken over at once when its process is gone', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const a = await openSqliteDestinationState(dest);
    const b = await openSqliteDestinationState(dest);
    const lease = await holdLease(a);
    await assert.rejects(holdLease(b), (e: unknown) => isResourceSyncError(e, 'RS_LOCKED') && /is already locked by this process/.test(e.message));
    await lease.release();
    // a lease left by a process killed on this host: no need to wait for its TTL
    const db = new Database(join(dest, '.resourcesync', 'state.sqlite'));
    db.prepare("INSERT OR REPLACE INTO lease (name, holder, host, pid, expires_at) VALUES ('destination', 'killed', ?, ?, ?)").run(
      (await import('node:os')).hostname(),
      deadPid(),
      Date.now() + 3_600_000,
    );
    db.close();
    const again = await holdLease(b);
    await again.release();
    await a.close();
    await b.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('the pid file older versions lock with keeps the lease while its process lives, and is removed when stale', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  const lockFile = join(dest, '.resourcesync', 'lock');
  try {
    const s = await openSqliteDestinationState(dest);
    const live = process.ppid; // alive, and not this process
    writeFileSync(lockFile, `${live}\n`);
    await assert.rejects(s.acquireLease({ ttlMs: 1000 }), (e: unknown) => isResourceSyncError(e, 'RS_LOCKED') && e.message === `Destination '${dest}' is locked by process ${live}.`);
    writeFileSync(lockFile, `${deadPid()}\n`);
    const lease = await s.acquireLease({ ttlMs: 1000 });
    assert.equal(existsSync(lockFile), false);
    await lease.release();
    await s.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('skipped deletions are kept per capability set and forgotten one by one; a state written before they were kept opens read-only', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = await openSqliteDestinationState(dest);
    assert.equal(await s.hasSkippedDeletions(), false);
    await s.apply({ skipDeletions: { setKey: 'cap-a', urls: ['http://e/2', 'http://e/1'] } });
    await s.apply({ skipDeletions: { setKey: 'cap-b', urls: ['http://e/3'] } });
    assert.equal(await s.hasSkippedDeletions(), true);
    assert.deepEqual(await s.skippedDeletions('cap-a'), ['http://e/1', 'http://e/2']);
    assert.deepEqual(await s.skippedDeletions(), ['http://e/1', 'http://e/2', 'http://e/3']);
    await s.apply({ forgetSkipped: ['http://e/1', 'http://e/3'] });
    assert.deepEqual(await s.skippedDeletions(), ['http://e/2']);
    await s.close();

    // a state without the table (as written before): read-only opens (audit, dry run) see none and write nothing
    const old = join(dest, 'old');
    await (await openSqliteDestinationState(old)).close();
    const sqlite = join(old, '.resourcesync', 'state.sqlite');
    const db = new Database(sqlite);
    db.exec('DROP TABLE skipped_deletions');
    db.exec('DROP TABLE lease');
    db.close();
    const ro = await openSqliteDestinationState(old, { readonly: true });
    assert.equal(await ro.hasSkippedDeletions(), false);
    assert.deepEqual(await ro.skippedDeletions('cap-a'), []);
    await ro.close();
    const rw = await openSqliteDestinationState(old);
    await rw.apply({ skipDeletions: { setKey: 'cap-a', urls: ['http://e/9'] } });
    assert.deepEqual(await rw.skippedDeletions('cap-a'), ['http://e/9']);
    await (await rw.acquireLease({ ttlMs: 1000 })).release();
    await rw.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('a state written before the type was kept: read-only it reads without one; opened to write it gains the column, records kept', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const { mkdirSync } = await import('node:fs');
    mkdirSync(join(dest, '.resourcesync'));
    const old = new Database(join(dest, '.resourcesync', 'state.sqlite'));
    old.exec(`CREATE TABLE resources (url TEXT PRIMARY KEY, path TEXT NOT NULL, length INTEGER NOT NULL, hashes TEXT NOT NULL,
      lastmod TEXT, etag TEXT, links TEXT);
      CREATE TABLE cursors (key TEXT PRIMARY KEY, datetime TEXT NOT NULL, change_list TEXT, position INTEGER);
      CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE pending (url TEXT PRIMARY KEY, set_key TEXT NOT NULL, entry TEXT NOT NULL, code TEXT);`);
    old.prepare('INSERT INTO resources VALUES (?, ?, ?, ?, ?, ?, ?)').run('http://e/a', 'a', 1, '{"md5":"aa"}', null, null, null);
    old.close();
    const r = await openSqliteDestinationState(dest, { readonly: true });
    assert.deepEqual(await r.get('http://e/a'), { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' } });
    await r.close();
    const w = await openSqliteDestinationState(dest);
    assert.deepEqual(await w.get('http://e/a'), { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' } });
    await w.apply({ put: [{ url: 'http://e/b', path: 'b', length: 2, hashes: { md5: 'bb' }, type: 'application/xml' }] });
    await w.close();
    const again = await openSqliteDestinationState(dest, { readonly: true });
    assert.deepEqual(await again.get('http://e/b'), { url: 'http://e/b', path: 'b', length: 2, hashes: { md5: 'bb' }, type: 'application/xml' });
    assert.equal(await again.count(), 2);
    await again.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});
