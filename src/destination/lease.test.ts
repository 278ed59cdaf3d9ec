import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isResourceSyncError } from '../core/errors.js';
import { openSqliteDestinationState } from './sqlite-state.js';
import { holdLease } from './lease.js';

void test('a held lease is renewed by its timer past its TTL, and free once released', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-lease-'));
  const holder = await openSqliteDestinationState(dest);
  const other = await openSqliteDestinationState(dest);
  try {
    const ttlMs = 600;
    const lease = await holdLease(holder, { ttlMs });
    const first = lease.expiresAt;
    // well past the TTL the lease is still held: the timer renewed it
    for (const until = Date.now() + 3 * ttlMs; Date.now() < until; ) await new Promise((r) => setTimeout(r, 100));
    for (const deadline = Date.now() + 30_000; lease.expiresAt === first; await new Promise((r) => setTimeout(r, 50))) {
      assert.ok(Date.now() < deadline, 'never renewed');
    }
    assert.equal(lease.lost, undefined);
    if (Date.now() < lease.expiresAt) {
      await assert.rejects(other.acquireLease({ ttlMs: 60_000 }), (e: unknown) => isResourceSyncError(e, 'RS_LOCKED'));
    }
    await lease.release();
    await (await other.acquireLease({ ttlMs: 60_000 })).release();
  } finally {
    await holder.close();
    await other.close();
    await rm(dest, { recursive: true, force: true });
  }
});
