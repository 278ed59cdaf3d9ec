/** `s3://bucket/prefix` URLs, read without loading the S3 client (the CLI reads its options with it). */
import { ResourceSyncError } from '../core/errors.js';

/** Where an `s3://bucket/prefix` points. */
export interface S3Target {
  bucket: string;
  /** Relative, no leading or trailing `/`; '' for the whole bucket. */
  prefix: string;
}

/**
 * Reads `s3://bucket/prefix`; undefined when `url` is not an `s3:` URL.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT for a bad bucket name, a query, a fragment or `..` in the prefix
 */
export function parseS3Url(url: string): S3Target | undefined {
  if (!/^s3:\/\//i.test(url)) return undefined;
  const rest = url.slice(5);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = (slash < 0 ? '' : rest.slice(slash + 1)).replace(/^\/+|\/+$/g, '');
  const bad = (why: string): ResourceSyncError =>
    new ResourceSyncError('RS_INVALID_ARGUMENT', `'${url}' ${why}.`, { data: { url } });
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw bad('does not name a valid bucket (3-63 lower-case letters, digits, dots, hyphens)');
  // eslint-disable-next-line no-control-regex
  const unsafe = /[?#\\\u0000-\u001f]/.test(prefix) || prefix.split('/').some((s) => s === '' || s === '.' || s === '..');
  if (prefix !== '' && unsafe) throw bad('has an unsafe prefix');
  return { bucket, prefix };
}
