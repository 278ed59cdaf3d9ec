import { join } from 'node:path';
import { openSqliteSnapshots } from '../../src/source/sqlite-snapshots.js';
import { tempDir } from '../helpers/tmp.js';
import { describeSourceSnapshotsContract } from './source-snapshots.js';

describeSourceSnapshotsContract('SQLite (openSqliteSnapshots)', async () => {
  const { dir, cleanup } = await tempDir('rs-snapshots-contract-');
  const file = join(dir, 'state', 'source.sqlite');
  return { impl: openSqliteSnapshots(file), openAgain: () => Promise.resolve(openSqliteSnapshots(file)), cleanup };
});
