/**
 * What a sync does to the mirror's folder itself, in one place: made ready before a run that writes, looked at for
 * whether it holds anything, and its temporary files removed at the end.
 */
import { readdir, rm } from 'node:fs/promises';
import type { DestinationRoot } from '../node/destination-root.js';
import { makeDestination } from './dest-folder.js';
import { acquireLock, STATE_DIR, type SyncLock } from './state-store.js';

/**
 * Makes the folder ready for a run that writes: created when missing, locked against a second run, the temporary
 * files an interrupted run left removed. Sets `hold.lock` as soon as it is taken, so a caller that sees a later
 * step throw can let it go.
 */
export async function prepareMirrorFolder(hold: { dest: string; root: DestinationRoot; lock: SyncLock | undefined }): Promise<void> {
  makeDestination(hold.dest);
  hold.lock = acquireLock(hold.dest);
  await hold.root.cleanTemp();
}

/** True when the folder holds nothing but the state folder (or cannot be read). */
export async function holdsNothing(dest: string): Promise<boolean> {
  try {
    const names = await readdir(dest);
    return names.every((n) => n === STATE_DIR);
  } catch {
    return true;
  }
}

/** Removes the run's temporary folder (`.resourcesync/tmp`). */
export async function removeTemporaryFiles(dest: string): Promise<void> {
  await rm(`${dest}/${STATE_DIR}/tmp`, { recursive: true, force: true });
}
