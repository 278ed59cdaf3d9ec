import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLocalDirectory, GroupCommit, RenameOnly } from '../../src/destination/index.js';
import { describeMirrorStorageContract } from './mirror-storage.js';

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
