import { isAbsolute, join, relative, sep } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';

/**
 * Turns an untrusted relative path (from a URL, a manifest `path`, a ZIP entry name) into a path
 * inside `root`, or throws `RS_UNSAFE_PATH`. Refused: empty paths, absolute paths, drive letters,
 * backslashes, NUL and control characters, `.` and `..` segments, empty segments, and any segment
 * starting with `.resourcesync` (the tool's own state).
 * The input uses `/` as separator and is already percent-decoded.
 * @see Z39.99 §11.2 (`path`: "the relative file system path where the bitstream would reside")
 */
export function safeJoin(root: string, untrusted: string): string {
  const rel = safeRelativePath(untrusted);
  const full = join(root, ...rel.split('/'));
  const back = relative(root, full);
  if (back === '' || back.startsWith(`..${sep}`) || back === '..' || isAbsolute(back)) {
    throw unsafe(untrusted, 'leaves the destination');
  }
  return full;
}

/** Validates and returns a normalised `a/b/c` relative path (see `safeJoin`), or throws `RS_UNSAFE_PATH`. */
export function safeRelativePath(untrusted: string): string {
  let p = untrusted;
  if (p.startsWith('/')) p = p.replace(/^\/+/, ''); // manifest paths start with a slash (Z39.99 §11.2)
  if (p === '') throw unsafe(untrusted, 'is empty');
  if (p.includes('\\')) throw unsafe(untrusted, 'contains a backslash');
  if (/^[A-Za-z]:/.test(p)) throw unsafe(untrusted, 'has a drive letter');
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p)) throw unsafe(untrusted, 'contains a control character');
  const parts = p.split('/');
  for (const part of parts) {
    if (part === '' || part === '.' || part === '..') throw unsafe(untrusted, `has a '${part}' segment`);
    if (part.startsWith('.resourcesync')) throw unsafe(untrusted, 'names the state folder');
  }
  return parts.join('/');
}

function unsafe(path: string, why: string): ResourceSyncError {
  return new ResourceSyncError('RS_UNSAFE_PATH', `Path '${path}' ${why}.`, { data: { path }, recoverable: true });
}
