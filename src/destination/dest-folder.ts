/**
 * The destination folder itself: made when it is missing, refused plainly when it is a file, and left as it was
 * found by a first run that fails.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { notAFolder } from '../node/folder.js';
import { STATE_DIR } from './sqlite-state.js';

/** Creates the destination folder, or says plainly why it cannot be one (`RS_INVALID_ARGUMENT`, `RS_IO`). */
export function makeDestination(dest: string): void {
  try {
    mkdirSync(dest, { recursive: true });
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'EEXIST' || code === 'ENOTDIR') throw notAFolder('Destination', dest, err);
    throw new ResourceSyncError('RS_IO', `Destination '${dest}' cannot be created: ${(err as Error).message}.`, {
      data: { dest, code },
      cause: err,
    });
  }
}

/**
 * What `dest` held before a run made anything there, as the undoing of what the run made: the folder itself when it
 * did not exist, else its state folder when that did not exist. A run that fails before it holds any resource calls
 * it, so that a failed first run leaves nothing behind.
 */
export function undoFirstRun(dest: string): () => Promise<void> {
  const state = join(dest, STATE_DIR);
  const made = !existsSync(dest) ? dest : !existsSync(state) ? state : undefined;
  return async () => {
    if (made !== undefined) await rm(made, { recursive: true, force: true });
  };
}
