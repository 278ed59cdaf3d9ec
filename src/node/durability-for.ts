import { GroupCommit } from './group-commit.js';
import { FsyncEach, RenameOnly, type Durability, type SmallFileCalls } from './durability.js';

/** How files are made durable before they are renamed into place, in the words of the CLI's flags. */
export interface DurabilityChoice {
  /** Make each file durable before its rename (`--no-fsync` is `false`). Default true. */
  fsync?: boolean;
  /**
   * With `fsync`: `'batch'` (default) the files of about 50 ms fsynced together, then renamed (`GroupCommit`),
   * `'file'` an fsync of each file before its rename (`FsyncEach`).
   */
  method?: 'batch' | 'file';
  /** Where the calls of small files are made (a worker thread); default the calling thread. */
  thread?: SmallFileCalls;
}

/**
 * The {@link Durability} a choice names: a group commit (the default, as `sync()` and the follower use when given
 * none), an fsync of each file, or a rename only.
 * @example const durability = durabilityFor({ fsync: false }); // RenameOnly
 */
export function durabilityFor(choice: DurabilityChoice = {}): Durability {
  const options = choice.thread === undefined ? {} : { thread: choice.thread };
  if (choice.fsync === false) return new RenameOnly(options);
  return choice.method === 'file' ? new FsyncEach(options) : new GroupCommit(options);
}
