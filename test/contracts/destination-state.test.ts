import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSqliteDestinationState } from '../../src/destination/sqlite-state.js';
import type { DestinationState } from '../../src/destination/state.js';
import { describeDestinationStateContract } from './destination-state.js';

describeDestinationStateContract('SQLite in a destination folder', async () => {
  const dest = await mkdtemp(join(tmpdir(), 'rs-state-contract-'));
  const opened: DestinationState[] = [];
  const open = async (options: { readonly?: boolean } = {}): Promise<DestinationState> => {
    const state = await openSqliteDestinationState(dest, options);
    opened.push(state);
    return state;
  };
  return {
    impl: await open(),
    reopen: open,
    cleanup: async () => {
      for (const state of opened) await state.close();
      await rm(dest, { recursive: true, force: true });
    },
  };
});
