/** The {@link HubStore} contract, run against the embedded SQLite store. */
import { join } from 'node:path';
import type { HubStore } from '../../src/notify/hub-store.js';
import { openSqliteHubStore } from '../../src/notify/sqlite-hub-store.js';
import { tempDir } from '../helpers/tmp.js';
import { describeHubStoreContract } from './hub-store.js';

describeHubStoreContract('SQLite', async () => {
  const tmp = await tempDir('rs-hub-store-');
  const file = join(tmp.dir, 'hub.sqlite');
  let open: HubStore = openSqliteHubStore(file);
  return {
    impl: open,
    async reopen() {
      await open.close();
      open = openSqliteHubStore(file);
      return open;
    },
    async cleanup() {
      await open.close();
      await tmp.cleanup();
    },
  };
});
