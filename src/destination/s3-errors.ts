/**
 * What an S3 request's failure means to a run, as a `ResourceSyncError`: a missing bucket, refused credentials or
 * an endpoint that cannot be reached stop the run (they would fail every resource alike), naming the bucket and the
 * endpoint, never a key or a secret; anything else is a recoverable `RS_IO` for the key at hand.
 */

import { ResourceSyncError, messageOf } from '../core/errors.js';

/** Where a request went, for messages. */
export interface S3Place {
  bucket: string;
  /** The endpoint's URL, or `AWS S3` when the SDK chose it. */
  endpoint: string;
}

/** The fields of an SDK error that say what went wrong. */
interface SdkFailure {
  name?: string;
  Code?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

const CREDENTIALS = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken', 'ExpiredToken', 'AuthorizationHeaderMalformed']);
const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/** The S3 error code (`NoSuchKey`, `BadDigest`…) or the SDK's error name. */
function s3ErrorCode(err: unknown): string {
  const e = err as SdkFailure;
  return e.Code ?? e.name ?? '';
}

/** The HTTP status of the S3 answer, when there was one. */
export function s3Status(err: unknown): number | undefined {
  return (err as SdkFailure).$metadata?.httpStatusCode;
}

/** True for an answer that says the key holds nothing (404 of HEAD or GET). */
export function isNoSuchKey(err: unknown): boolean {
  const code = s3ErrorCode(err);
  return code === 'NoSuchKey' || (code === 'NotFound' && s3Status(err) === 404);
}

/** The run-stopping error of a bucket that does not exist. */
export function bucketMissing(place: S3Place, cause: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_IO', `Bucket '${place.bucket}' does not exist at ${place.endpoint}: create it first.`, {
    data: { bucket: place.bucket, endpoint: place.endpoint, s3Code: 'NoSuchBucket', status: 404 },
    cause,
  });
}

/** A run-stopping error of the storage as a whole (bucket, credentials, endpoint), or undefined. */
function fatal(err: unknown, place: S3Place): ResourceSyncError | undefined {
  const code = s3ErrorCode(err);
  const data = { bucket: place.bucket, endpoint: place.endpoint, s3Code: code, status: s3Status(err) };
  if (code === 'NoSuchBucket') return bucketMissing(place, err);
  if (CREDENTIALS.has(code) || s3Status(err) === 403) {
    return new ResourceSyncError(
      'RS_IO',
      `S3 at ${place.endpoint} refused the credentials for bucket '${place.bucket}' (${code || 'status 403'}): check AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.`,
      { data, cause: err },
    );
  }
  if (code === 'CredentialsProviderError') {
    return new ResourceSyncError('RS_IO', `No S3 credentials for bucket '${place.bucket}' at ${place.endpoint}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.`, { data, cause: err });
  }
  const sys = (err as SdkFailure).code ?? ((err as { cause?: SdkFailure }).cause?.code);
  if (sys !== undefined && UNREACHABLE.has(sys)) {
    return new ResourceSyncError('RS_IO', `S3 endpoint ${place.endpoint} cannot be reached (${sys}).`, { data: { ...data, s3Code: sys }, cause: err });
  }
  return undefined;
}

/**
 * `err` of a request about `key` (or the bucket, without one) as a `ResourceSyncError`: one that was already is
 * returned as it is.
 * @example throw s3Failure(err, { bucket: 'mirror', endpoint: 'http://127.0.0.1:7480' }, 'a/b.txt', 'cannot be written')
 */
export function s3Failure(err: unknown, place: S3Place, key: string | undefined, what: string): ResourceSyncError {
  if (err instanceof ResourceSyncError) return err;
  const stop = fatal(err, place);
  if (stop !== undefined) return stop;
  const code = s3ErrorCode(err);
  const where = key === undefined ? `Bucket '${place.bucket}'` : `Object '${key}' in bucket '${place.bucket}'`;
  return new ResourceSyncError('RS_IO', `${where} ${what}: ${code !== '' && code !== 'Error' ? `${code}: ` : ''}${messageOf(err)}.`, {
    data: { bucket: place.bucket, endpoint: place.endpoint, path: key, s3Code: code, status: s3Status(err) },
    cause: err,
    recoverable: true,
  });
}
