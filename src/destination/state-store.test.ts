import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StateStore, acquireLock } from './state-store.js';
import { isResourceSyncError } from '../core/errors.js';

void test('records, cursors and metadata persist across opens', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = StateStore.open(dest);
    s.putMany([
      { url: 'http://e/b', path: 'b', length: 2, hashes: { md5: 'bb' }, etag: '"x"' },
      { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' }, lastmod: '2013-01-01T00:00:00Z', links: [{ rel: 'duplicate', href: 'http://m/a' }] },
    ]);
    s.setCursor('cap', { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
    s.setMeta('baseline', 'done');
    s.close();
    const r = StateStore.open(dest, { readonly: true });
    assert.equal(r.count(), 2);
    assert.deepEqual(r.get('http://e/a'), { url: 'http://e/a', path: 'a', length: 1, hashes: { md5: 'aa' }, lastmod: '2013-01-01T00:00:00Z', links: [{ rel: 'duplicate', href: 'http://m/a' }] });
    assert.deepEqual([...r.records()].map((x) => x.url), ['http://e/a', 'http://e/b']);
    assert.deepEqual(r.getCursor('cap'), { datetime: '2013-01-03T00:00:00Z', changeList: 'http://e/cl.xml', position: 4 });
    assert.equal(r.getMeta('baseline'), 'done');
    r.close();
    const w = StateStore.open(dest);
    w.deleteMany(['http://e/a']);
    assert.equal(w.get('http://e/a'), undefined);
    w.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('a read-only open of a missing state creates nothing', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = StateStore.open(dest, { readonly: true });
    assert.equal(s.count(), 0);
    s.close();
    assert.equal(existsSync(join(dest, '.resourcesync')), false);
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('the lock excludes a second sync and is taken over when stale', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const lock = acquireLock(dest);
    assert.throws(() => acquireLock(dest), (e: unknown) => isResourceSyncError(e, 'RS_LOCKED'));
    lock.release();
    // a lock left by a dead process
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    writeFileSync(join(dest, '.resourcesync', 'lock'), `${dead}\n`);
    const again = acquireLock(dest);
    again.release();
    assert.equal(existsSync(again.path), false);
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});

void test('skipped deletions are kept per capability set and forgotten one by one; a state written before they were kept opens read-only', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-'));
  try {
    const s = StateStore.open(dest);
    assert.equal(s.hasSkippedDeletions(), false);
    s.skipDeletions('cap-a', ['http://e/2', 'http://e/1']);
    s.skipDeletions('cap-b', ['http://e/3']);
    assert.equal(s.hasSkippedDeletions(), true);
    assert.deepEqual(s.skippedDeletions('cap-a'), ['http://e/1', 'http://e/2']);
    assert.deepEqual(s.skippedDeletions(), ['http://e/1', 'http://e/2', 'http://e/3']);
    s.forgetSkipped(['http://e/1', 'http://e/3']);
    assert.deepEqual(s.skippedDeletions(), ['http://e/2']);
    s.close();

    // a state without the table (as written before): read-only opens (audit, dry run) see none and write nothing
    const old = join(dest, 'old');
    StateStore.open(old).close();
    const sqlite = join(old, '.resourcesync', 'state.sqlite');
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(sqlite);
    db.exec('DROP TABLE skipped_deletions');
    db.close();
    const ro = StateStore.open(old, { readonly: true });
    assert.equal(ro.hasSkippedDeletions(), false);
    assert.deepEqual(ro.skippedDeletions('cap-a'), []);
    ro.close();
    const rw = StateStore.open(old);
    rw.skipDeletions('cap-a', ['http://e/9']);
    assert.deepEqual(rw.skippedDeletions('cap-a'), ['http://e/9']);
    rw.close();
  } finally {
    await rm(dest, { recursive: true, force: true });
  }
});
