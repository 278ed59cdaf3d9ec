/**
 * An S3 client as every S3-compatible use of the package wants it: endpoint (`--s3-endpoint` or
 * `AWS_ENDPOINT_URL`), credentials and region from the standard AWS variables, path-style addressing whenever an
 * endpoint is given, checksums only where an operation requires them (servers other than AWS refuse the SDK's
 * default trailers), and keep-alive agents of our own (the SDK's default one opens a connection per PUT).
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { S3Client } from '@aws-sdk/client-s3';
import type { S3Place } from './s3-errors.js';

/** How {@link createS3Client} connects. */
export interface S3ClientOptions {
  /** The server's URL; default `AWS_ENDPOINT_URL`, else AWS S3. */
  endpoint?: string;
  /** Default `AWS_REGION`, else `us-east-1` with an endpoint. */
  region?: string;
  /** Connections kept per host. Default 16. */
  sockets?: number;
  /** Default: the SDK's chain (the AWS variables, profiles…). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Default: path-style whenever an endpoint is given. */
  forcePathStyle?: boolean;
  /** Attempts per request. Default 3. */
  maxAttempts?: number;
}

/** A client, and the endpoint it talks to (undefined: AWS S3). */
export function createS3Client(options: S3ClientOptions = {}): { client: S3Client; endpoint: string | undefined } {
  const endpoint = options.endpoint ?? (process.env.AWS_ENDPOINT_URL || undefined);
  const sockets = options.sockets ?? 16;
  const region =
    options.region ??
    (process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || (endpoint !== undefined ? 'us-east-1' : undefined));
  const client = new S3Client({
    ...(endpoint !== undefined ? { endpoint } : {}),
    forcePathStyle: options.forcePathStyle ?? endpoint !== undefined,
    ...(region !== undefined ? { region } : {}),
    ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
    maxAttempts: options.maxAttempts ?? 3,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    requestHandler: {
      httpAgent: new HttpAgent({ keepAlive: true, maxSockets: sockets }),
      httpsAgent: new HttpsAgent({ keepAlive: true, maxSockets: sockets }),
      connectionTimeout: 30_000,
      requestTimeout: 300_000,
    },
  });
  return { client, endpoint };
}

/** The place of `bucket` at `endpoint`, for messages. */
export function s3Place(bucket: string, endpoint: string | undefined): S3Place {
  return { bucket, endpoint: endpoint ?? 'AWS S3' };
}
