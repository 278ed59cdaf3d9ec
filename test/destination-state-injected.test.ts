// A Destination state the caller passes (`state`): sync and audit use it, take its lease for the run and leave it
// open; a run while the caller holds the lease is refused as a second sync is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { FakeSource } from './helpers/fake-source.js';
import { sync } from '../src/destination/sync.js';
import { audit } from '../src/destination/audit.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';
import { RenameOnly } from '../src/node/durability.js';
import { isResourceSyncError } from '../src/core/errors.js';

void test('sync and audit work on the state they are given, take its lease and leave it open', async () => {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), 'rs-state-injected-'));
  const dest = join(dir, 'mirror');
  // the state kept apart from the mirror, as a database elsewhere would be
  const state = await openSqliteDestinationState(dest, { file: join(dir, 'elsewhere', 'state.sqlite') });
  try {
    const src = new FakeSource(server);
    src.put('a.txt', 'alpha');
    src.put('b/c.txt', 'gamma');
    src.publish();
    const first = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), state });
    assert.equal(first.created, 2);
    assert.equal(await state.count(), 2, 'the records are in the state given, which is still open');
    const local = await openSqliteDestinationState(dest, { readonly: true });
    assert.equal(await local.count(), 0, 'nothing in the default state');
    await local.close();
    const audited = await audit({ source: src.capabilityList, dest, state, trustState: true });
    assert.equal(audited.inSync, true);

    const lease = await state.acquireLease({ ttlMs: 60_000 });
    await assert.rejects(sync({ source: src.capabilityList, dest, durability: new RenameOnly(), state }), (e: unknown) => isResourceSyncError(e, 'RS_LOCKED'));
    await lease.release();
    src.put('d.txt', 'delta');
    src.publish();
    const second = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), state });
    assert.equal(second.mode, 'incremental');
    assert.equal(second.created, 1);
    assert.equal(await state.count(), 3);
  } finally {
    await state.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});
