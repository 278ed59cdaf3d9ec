import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { FakeSource } from './helpers/fake-source.js';
import { MemoryStorage } from './contracts/memory-storage.js';
import { audit, sync } from '../src/destination/index.js';

void test('a sync and an audit with a storage of the caller\'s: the copies go there, the folder keeps only the state', async () => {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-storage-'));
  try {
    const src = new FakeSource(server);
    for (let i = 0; i < 8; i++) src.put(`d${i % 2}/f-${i}.txt`, `body ${i}\n`.repeat(i + 1));
    src.publish();
    const storage = new MemoryStorage();
    const first = await sync({ source: src.capabilityList, dest, storage });
    assert.deepEqual([first.mode, first.created, first.failed.length], ['baseline', 8, 0]);
    assert.deepEqual([...storage.copies.keys()].sort(), [...src.files.keys()].sort());
    for (const [path, file] of src.files) assert.deepEqual(storage.copies.get(path)?.bytes, Buffer.from(file.body));
    assert.deepEqual(await readdir(dest), ['.resourcesync'], 'nothing of the mirror in the folder');
    assert.equal((await audit({ source: src.capabilityList, dest, storage })).inSync, true);

    // a changed copy in the storage is found by the audit; a deletion at the Source is applied to the storage
    storage.copies.get('d1/f-1.txt')!.bytes = Buffer.from('tampered');
    const tampered = await audit({ source: src.capabilityList, dest, storage });
    assert.deepEqual(tampered.changed.map((c) => c.path), ['d1/f-1.txt']);
    src.remove('d0/f-0.txt');
    src.publish();
    const second = await sync({ source: src.capabilityList, dest, storage, delete: true, baseline: true });
    assert.equal(second.failed.length, 0);
    assert.equal(storage.copies.has('d0/f-0.txt'), false);
    assert.deepEqual(storage.copies.get('d1/f-1.txt')?.bytes, Buffer.from(src.files.get('d1/f-1.txt')!.body));
    assert.equal((await audit({ source: src.capabilityList, dest, storage })).inSync, true);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
});
