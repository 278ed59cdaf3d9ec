import { statSync } from 'node:fs';
import { ResourceSyncError } from '../core/errors.js';

/** The error for a path that should be a folder and is a file, or has a file on its path. */
export function notAFolder(what: string, path: string, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError(
    'RS_INVALID_ARGUMENT',
    `${what} '${path}' is not a folder (a file of that name, or on its path, exists).`,
    { data: { path }, cause },
  );
}

/**
 * Throws `RS_INVALID_ARGUMENT` when `path` is a file or has a file on its path (`what` names it in the message:
 * `Destination`, `--out`); a folder, or nothing at all, passes. Other failures to look are `RS_IO`.
 * @example requireFolderOrNothing('./mirror', 'Destination');
 */
export function requireFolderOrNothing(path: string, what: string): void {
  let isFolder: boolean;
  try {
    isFolder = statSync(path).isDirectory();
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ENOENT') return;
    if (code === 'ENOTDIR') throw notAFolder(what, path, err);
    throw new ResourceSyncError('RS_IO', `${what} '${path}' cannot be read: ${(err as Error).message}.`, {
      data: { path, code },
      cause: err,
    });
  }
  if (!isFolder) throw notAFolder(what, path);
}
