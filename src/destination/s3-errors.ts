/** The S3 errors moved to src/node/s3-errors.ts (the Source's documents in S3 use them too); kept here for the Destination's imports. */
export { s3Status, isNoSuchKey, bucketMissing, s3Failure, type S3Place } from '../node/s3-errors.js';
