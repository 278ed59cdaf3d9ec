/**
 * The bridge's record folder: each record of each metadata format is a file whose bytes are what the bridge serves
 * (the record's metadata as a standalone XML document), at `oai/<metadataPrefix>/<identifier>.xml` in the folder
 * of its set of resources. Files are written atomically (a hidden temporary file renamed into place, so a reader
 * never sees half a record) and only when their bytes change; their modification time is the record's datestamp,
 * which the Source publishes as `lastmod`.
 * @see Z39.99 §7 (`lastmod`), OAI-PMH 2.0 §2.7.1 (datestamp)
 */
import { closeSync, futimesSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import { dirname, join } from 'node:path';
import { safeRelativePath } from '../node/safe-path.js';

/** Longest file name of a record, in UTF-8 bytes (file systems allow 255). */
const MAX_NAME_BYTES = 240;

/** A `metadataPrefix` as OAI-PMH 2.0 allows it (§3.4: unreserved characters), usable as one path segment. */
export function isMetadataPrefix(prefix: string): boolean {
  return /^[A-Za-z0-9_!~*'()-][A-Za-z0-9._!~*'()-]{0,99}$/.test(prefix);
}

/**
 * The file name of a record: the identifier with `%`, `/`, `\` and control characters percent-encoded (and a
 * leading `.`), then `.xml`, so that any identifier is one safe, visible path segment served as `application/xml`;
 * undefined when that name is longer than 240 bytes.
 * @example recordFileName('oai:dspace.example.edu:123456789/42') // 'oai:dspace.example.edu:123456789%2F42.xml'
 */
function recordFileName(identifier: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  let name = identifier.replace(/[%/\\\u0000-\u001f\u007f]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
  if (name.startsWith('.')) name = `%2E${name.slice(1)}`;
  name += '.xml';
  return identifier === '' || Buffer.byteLength(name) > MAX_NAME_BYTES ? undefined : name;
}

/**
 * The relative path of a record in its set's folder, or undefined when its identifier cannot name a file.
 * @example recordPath('oai_dc', 'oai:repo.example:rec1') // 'oai/oai_dc/oai:repo.example:rec1.xml'
 */
export function recordPath(metadataPrefix: string, identifier: string): string | undefined {
  const name = recordFileName(identifier);
  return name === undefined ? undefined : safeRelativePath(`oai/${metadataPrefix}/${name}`);
}

/** What {@link putRecord} did. */
export type PutOutcome = 'written' | 'unchanged';

/**
 * Writes a record's bytes at `file` unless the file holds them already; its modification time becomes `time`
 * (moved 1 ms past the previous one when that is the same, so that a rescan sees the change at day granularity).
 * Synchronous: for files of a few kilobytes, a handful of system calls made at once cost a fifth of the same calls
 * through the thread pool (measured in bench/oai.bench.js's harvest), and a harvest writes one record at a time.
 */
export function putRecord(file: string, bytes: Buffer, time: number): PutOutcome {
  let before: Stats | undefined;
  try {
    before = statSync(file);
  } catch {
    before = undefined;
  }
  if (before !== undefined && before.size === bytes.length && readFileSync(file).equals(bytes)) return 'unchanged';
  let mtime = time;
  if (before !== undefined && Math.floor(before.mtimeMs) === mtime) mtime += 1;
  const tmp = join(dirname(file), `.tmp-${process.pid}-${(counter++).toString(36)}`);
  let fd: number;
  try {
    fd = openSync(tmp, 'w');
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOENT') throw error;
    mkdirSync(dirname(file), { recursive: true });
    fd = openSync(tmp, 'w');
  }
  try {
    try {
      for (let at = 0; at < bytes.length; ) at += writeSync(fd, bytes, at);
      futimesSync(fd, new Date(mtime), new Date(mtime));
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
  } catch (error) {
    rmSync(tmp, { force: true });
    throw error;
  }
  return 'written';
}

let counter = 0;

/** Removes a record's file; true when there was one. */
export function removeRecord(file: string): boolean {
  try {
    unlinkSync(file);
    return true;
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return false;
    throw error;
  }
}
