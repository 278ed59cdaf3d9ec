/**
 * `s3://bucket/prefix` URLs and the bucket and prefix they name: the one reader of them, used by the CLI (`sync`,
 * `audit`, `build --out`), the job queue's storage descriptors and the S3 storages of the mirror and of the Source's
 * documents. Read without loading the S3 client (the CLI reads its options with it).
 *
 * The bucket follows S3's rules for bucket names: 3–63 characters, lower-case letters, digits, dots and hyphens,
 * starting and ending with a letter or digit, no two dots in a row, not shaped like an IP address. The prefix is
 * taken literally (as the AWS CLI does: no percent-decoding) and normalised: no leading or trailing `/`; an empty,
 * `.` or `..` segment, a backslash, a control character, `?` or `#` is refused.
 */
import { ResourceSyncError } from '../core/errors.js';

/** Where an `s3://bucket/prefix` points. */
export interface S3Target {
  bucket: string;
  /** Relative, no leading or trailing `/`; '' for the whole bucket. */
  prefix: string;
}

/** S3's bucket names: 3-63 of `a-z 0-9 . -`, a letter or digit at both ends. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** True for a URL of the `s3:` scheme (any case), whether or not it is well formed. */
export function isS3Url(url: string): boolean {
  return /^s3:\/\//i.test(url);
}

function invalid(where: string, why: string, data: Record<string, unknown>): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_ARGUMENT', `${where} ${why}.`, { data });
}

/** Why `bucket` is not an S3 bucket name, or undefined when it is one. */
function bucketProblem(bucket: string): string | undefined {
  if (bucket === '') return 'does not name a bucket (s3://BUCKET/PREFIX)';
  if (!BUCKET.test(bucket) || bucket.includes('..') || /^\d+\.\d+\.\d+\.\d+$/.test(bucket)) {
    return `does not name a bucket: '${bucket}' is not 3-63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit`;
  }
  return undefined;
}

/** Why `prefix` (slashes at its ends already removed) is not safe, or undefined when it is. */
function prefixProblem(prefix: string): string | undefined {
  if (prefix === '') return undefined;
  // eslint-disable-next-line no-control-regex
  if (/[?#\\\u0000-\u001f\u007f]/.test(prefix)) return `has a prefix '${prefix}' with a '?', '#', backslash or control character`;
  const segment = prefix.split('/').find((s) => s === '' || s === '.' || s === '..');
  return segment === undefined ? undefined : `has a prefix '${prefix}' with ${segment === '' ? 'an empty' : `a '${segment}'`} segment`;
}

/**
 * Checks a bucket and a prefix given apart (as a library caller gives them to `createS3Storage` or
 * `createS3Documents`) and returns them normalised: the prefix without slashes at its ends.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT (`data.bucket`, `data.prefix`) for a bad bucket name or an unsafe prefix
 * @example
 * s3Location('mirrors', '/site/a/'); // { bucket: 'mirrors', prefix: 'site/a' }
 */
export function s3Location(bucket: string, prefix = ''): S3Target {
  const trimmed = prefix.replace(/^\/+|\/+$/g, '');
  const why = bucketProblem(bucket) ?? prefixProblem(trimmed);
  if (why !== undefined) throw invalid(`'s3://${bucket}/${prefix}'`, why, { bucket, prefix });
  return { bucket, prefix: trimmed };
}

/**
 * Reads `s3://bucket/prefix`; undefined when `url` is not an `s3:` URL.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT (`data.url`) for a bad bucket name or an unsafe prefix
 * @example
 * parseS3Url('s3://mirrors/site/'); // { bucket: 'mirrors', prefix: 'site' }
 * parseS3Url('/var/mirror');        // undefined
 */
export function parseS3Url(url: string): S3Target | undefined {
  if (!isS3Url(url)) return undefined;
  const rest = url.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = (slash < 0 ? '' : rest.slice(slash + 1)).replace(/^\/+|\/+$/g, '');
  const why = bucketProblem(bucket) ?? prefixProblem(prefix);
  if (why !== undefined) throw invalid(`'${url}'`, why, { url });
  return { bucket, prefix };
}

/** The canonical URL of a bucket and prefix: `s3://bucket/prefix` (`s3://bucket/` for the bucket's top). */
export function s3Url(target: S3Target): string {
  return `s3://${target.bucket}/${target.prefix}`;
}
