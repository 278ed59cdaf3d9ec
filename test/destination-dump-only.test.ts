import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { serveChangeDumpOnly } from './helpers/dump-fixtures.js';
import { tempDir } from './helpers/tmp.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { audit } from '../src/destination/audit.js';

void test('a Source whose only inventory is its Change Dumps: a second sync writes nothing again, and audit compares with their manifests', async () => {
  const server = await startTestServer();
  const tmp = await tempDir('rs-cd-only-');
  try {
    const cap = await serveChangeDumpOnly(server);

    const dest = join(tmp.dir, 'mirror');
    const first = await sync({ source: cap, dest, durability: new RenameOnly(), delete: true });
    assert.deepEqual(first.failed, [], JSON.stringify(first));
    assert.ok(first.created > 0, JSON.stringify(first));
    const ino = (await stat(join(dest, 'a.txt'))).ino;
    const second = await sync({ source: cap, dest, durability: new RenameOnly(), delete: true });
    assert.deepEqual([second.created, second.updated, second.failed.length], [0, 0, 0]);
    assert.equal((await stat(join(dest, 'a.txt'))).ino, ino, 'not written again');

    const a = await audit({ source: cap, dest });
    assert.deepEqual(
      [a.inSync, a.unchanged, a.counts],
      [true, 2, { missing: 0, extra: 0, changed: 0, failed: 0 }],
      JSON.stringify(a),
    );
    await writeFile(join(dest, 'b.txt'), 'BETA');
    const b = await audit({ source: cap, dest });
    assert.deepEqual(
      b.changed.map((c) => c.path),
      ['b.txt'],
    );
  } finally {
    await server.close();
    await tmp.cleanup();
  }
});
