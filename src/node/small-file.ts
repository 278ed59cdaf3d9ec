/**
 * Writing a small verified body with synchronous calls (create, write, time, close; for a few kilobytes each
 * call costs less than a round trip through libuv's thread pool), after the confinement check of its folder.
 * `writeVerified` does it on the caller's thread; `SmallFileThread` on a worker thread.
 */
import { closeSync, futimesSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { confineDir, ioError } from './destination-root.js';
import { renameIntoPlace, type SmallFile } from './durability.js';

/**
 * Checks that the folder of `file.finalPath` lies inside the destination (creating it), then writes
 * `file.tmp`; with `rename`, renames it into place too (no flush: {@link RenameOnly}'s commit).
 * @throws ResourceSyncError RS_UNSAFE_PATH, RS_IO (the temporary file may be left: the caller removes it)
 */
export function writeSmallFileSync(file: SmallFile, rename: boolean): void {
  confineDir(file.realRoot, dirname(file.finalPath), file.root);
  const { tmp, data } = file;
  let fd: number;
  try {
    fd = openSync(tmp, 'wx', 0o644);
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOENT') throw ioError(tmp, 'cannot be created', err);
    try {
      mkdirSync(dirname(tmp), { recursive: true }); // removed under us: create it again
      fd = openSync(tmp, 'wx', 0o644);
    } catch (again) {
      throw ioError(tmp, 'cannot be created', again);
    }
  }
  try {
    let off = 0;
    while (off < data.byteLength) off += writeSync(fd, data, off, data.byteLength - off);
    if (file.mtimeMs !== undefined) futimesSync(fd, file.mtimeMs / 1000, file.mtimeMs / 1000);
  } catch (err) {
    throw ioError(tmp, 'cannot be written', err);
  } finally {
    closeSync(fd);
  }
  if (!rename) return;
  try {
    renameIntoPlace(tmp, file.finalPath);
  } catch (err) {
    throw ioError(file.finalPath, 'cannot be written', err);
  }
}
