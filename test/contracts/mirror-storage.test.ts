import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalDirectory, GroupCommit, RenameOnly } from '../../src/destination/index.js';
import { describeMirrorStorageContract } from './mirror-storage.js';
import { MemoryStorage } from './memory-storage.js';

describeMirrorStorageContract('LocalDirectory (fsync each)', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-ms-'));
  return {
    impl: createLocalDirectory(dest),
    cleanup: () => rm(dest, { recursive: true, force: true }),
    reopen: () => Promise.resolve(createLocalDirectory(dest)),
  };
});

describeMirrorStorageContract('LocalDirectory (group commit)', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-ms-'));
  return {
    impl: createLocalDirectory(dest, { durability: new GroupCommit() }),
    cleanup: () => rm(dest, { recursive: true, force: true }),
    reopen: () => Promise.resolve(createLocalDirectory(dest, { durability: new RenameOnly() })),
  };
});

describeMirrorStorageContract('MemoryStorage (a test double with no local paths)', () => {
  const copies = new Map<string, { bytes: Buffer; mtimeMs: number }>();
  return Promise.resolve({
    impl: new MemoryStorage(copies),
    cleanup: () => Promise.resolve(copies.clear()),
    reopen: () => Promise.resolve(new MemoryStorage(copies)),
  });
});
