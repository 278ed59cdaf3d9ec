/**
 * The CLI's choice of durability for the commands that write files (`sync`, `worker`): `--no-fsync` and
 * `--fsync-method`, made into a `Durability` and the helpers it runs on.
 */
import { GroupCommit } from '../node/group-commit.js';
import { SyncfsFlush } from '../node/syncfs.js';
import type { Durability } from '../node/durability.js';
import { durabilityFor } from '../node/durability-for.js';
import { SmallFileThread } from '../node/small-file-thread.js';

/**
 * The CLI's durability: what `--no-fsync` and `--fsync-method` name (for `batch`, the default, a group commit
 * flushed by `syncfs`: one flush per batch, through a helper shell), with the temporary files of small bodies
 * written on a worker thread. The library uses neither the shell nor the thread unless asked; `close` ends both.
 */
export function cliDurability(fsync: boolean, method: 'batch' | 'file'): { durability: Durability; close: () => Promise<void> } {
  const thread = new SmallFileThread();
  const syncfs = fsync && method === 'batch' ? new SyncfsFlush() : undefined;
  const durability = syncfs !== undefined ? new GroupCommit({ flush: syncfs.flush, thread }) : durabilityFor({ fsync, method, thread });
  return {
    durability,
    close: async () => {
      await thread.close();
      syncfs?.close();
    },
  };
}
