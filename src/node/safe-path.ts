import { isAbsolute, join, normalize, relative, sep } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { RESOURCESYNC_DIR } from '../core/constants.js';

/**
 * The common case decided by one linear match: ASCII segments of letters, digits, `.`, `_`, `~` and `-`,
 * none starting with `.` (so no `.`, `..` or `.resourcesync`), none empty, no leading `/`. Anything else takes
 * the full checks of {@link safeRelativePath}.
 */
const PLAIN_RELATIVE = /^(?:[A-Za-z0-9_~-][A-Za-z0-9._~-]*\/)*[A-Za-z0-9_~-][A-Za-z0-9._~-]*$/;

/** `root` normalised, with a trailing separator. */
function rootPrefix(root: string): string {
  const n = normalize(root === '' ? '.' : root);
  return n.endsWith(sep) ? n : n + sep;
}

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
  // `rel` has no empty, `.` or `..` segment and no backslash: appended to the normalised root it stays inside it
  if (sep === '/' && root !== '' && root !== '.') return rootPrefix(root) + rel;
  const full = join(root, ...rel.split('/'));
  const back = relative(root, full);
  if (back === '' || back.startsWith(`..${sep}`) || back === '..' || isAbsolute(back)) throw unsafe(untrusted, 'leaves the destination');
  return full;
}

/** Validates and returns a normalised `a/b/c` relative path (see `safeJoin`), or throws `RS_UNSAFE_PATH`. */
export function safeRelativePath(untrusted: string): string {
  if (PLAIN_RELATIVE.test(untrusted)) return untrusted;
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
    if (part.startsWith(RESOURCESYNC_DIR)) throw unsafe(untrusted, 'names the state folder');
  }
  return parts.join('/');
}

function unsafe(path: string, why: string): ResourceSyncError {
  return new ResourceSyncError('RS_UNSAFE_PATH', `Path '${path}' ${why}.`, { data: { path }, recoverable: true });
}
