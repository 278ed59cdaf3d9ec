/**
 * A {@link StagedWrite} of an S3 bucket. The bytes are hashed (MD5) as they arrive and kept in memory up to
 * {@link S3_IN_MEMORY} bytes, past that spooled to a local file in the storage's own temporary folder; nothing is
 * sent before `commit`. `commit` makes the object visible in one request the server checks: a PutObject with
 * `Content-MD5` up to the multipart threshold, else a multipart upload whose every part carries the MD5 of its
 * bytes as they arrived (so the server refuses a part that the spool changed) before `CompleteMultipartUpload`; a
 * failure aborts the upload. S3 makes a PutObject or a completed upload visible whole, or not at all.
 */

import { createHash, type Hash } from 'node:crypto';
import { open, rm, type FileHandle } from 'node:fs/promises';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  PutObjectCommand,
  UploadPartCommand,
  type CompletedPart,
  type S3Client,
} from '@aws-sdk/client-s3';
import { ResourceSyncError } from '../core/errors.js';
import { ioError } from '../node/destination-root.js';
import type { StagedWrite, WriteChunkOptions } from './mirror-storage.js';
import { s3Failure, type S3Place } from './s3-errors.js';

/** Bodies up to this size stay in memory until `commit`; larger ones are spooled to a local file. */
const S3_IN_MEMORY = 1024 * 1024;
/** Smallest part S3 accepts (the last part aside). */
const S3_MIN_PART = 5 * 1024 * 1024;
/** Most parts in one upload. */
const MAX_PARTS = 10_000;

/** How a stage's object is written. */
export interface S3Upload {
  client: S3Client;
  place: S3Place;
  /** The object's key in the bucket (prefix included). */
  objectKey: string;
  /** Bodies larger than this go by multipart upload. */
  multipartThreshold: number;
  /** Size of each part but the last. */
  partSize: number;
  /** Parts sent at once. */
  partConcurrency: number;
  /** A new spool file's path (its folder exists). */
  spoolPath: () => Promise<string>;
  mtimeMs: number | undefined;
  /** The length the caller expects, if it said (a body over 10,000 parts of `partSize` takes larger parts). */
  sizeHint: number | undefined;
  /** Told of each commit under way (the storage's `settle` waits for them). */
  track: (committing: Promise<void>) => void;
}

/** The object's user metadata: `x-amz-meta-mtime`, the modification time in ms (S3 keeps its own `Last-Modified`). */
function objectMetadata(mtimeMs: number | undefined): Record<string, string> | undefined {
  return mtimeMs === undefined || !Number.isFinite(mtimeMs) ? undefined : { mtime: String(Math.round(mtimeMs)) };
}

/** Reads exactly `length` bytes at `position` of the spool. */
async function readAt(handle: FileHandle, length: number, position: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  for (let got = 0; got < length; ) {
    const { bytesRead } = await handle.read(buf, got, length - got, position + got);
    if (bytesRead === 0) throw new Error(`the spool ended after ${position + got} bytes`);
    got += bytesRead;
  }
  return buf;
}

/** The MD5 of each `partSize` slice of a body, taken as it arrives. */
class PartDigests {
  readonly partSize: number;
  readonly #digests: Buffer[] = [];
  #hash: Hash = createHash('md5');
  #fill = 0;

  constructor(partSize: number) {
    this.partSize = partSize;
  }

  update(chunk: Uint8Array): void {
    for (let offset = 0; offset < chunk.byteLength; ) {
      const take = Math.min(this.partSize - this.#fill, chunk.byteLength - offset);
      this.#hash.update(chunk.subarray(offset, offset + take));
      this.#fill += take;
      offset += take;
      if (this.#fill === this.partSize) {
        this.#digests.push(this.#hash.digest());
        this.#hash = createHash('md5');
        this.#fill = 0;
      }
    }
  }

  /** Every part's digest, the last (shorter) one included. */
  finish(): Buffer[] {
    if (this.#fill > 0) this.#digests.push(this.#hash.digest());
    this.#fill = 0;
    return this.#digests;
  }
}

/** A body on its way to a key of the bucket. */
export class S3StagedWrite implements StagedWrite {
  readonly key: string;
  readonly #upload: S3Upload;
  /** MD5 of the whole body, while it may still go as one PutObject (dropped past the multipart threshold). */
  #md5: Hash | undefined = createHash('md5');
  /** MD5 of each part, from the moment the body is spooled. */
  #parts: PartDigests | undefined;
  #chunks: Uint8Array[] = [];
  #length = 0;
  #spool: string | undefined;
  #handle: FileHandle | undefined;
  #finished = false;

  constructor(key: string, upload: S3Upload) {
    this.key = key;
    this.#upload = upload;
  }

  async write(chunk: Uint8Array, options?: WriteChunkOptions): Promise<void> {
    if (this.#finished) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Staged write of '${this.key}' is already finished.`, { data: { path: this.key } });
    if (chunk.byteLength === 0) return;
    this.#length += chunk.byteLength;
    if (this.#length > this.#upload.multipartThreshold) this.#md5 = undefined;
    this.#md5?.update(chunk);
    if (this.#handle === undefined && this.#length <= Math.min(S3_IN_MEMORY, this.#upload.multipartThreshold)) {
      this.#chunks.push(options?.reused === true ? Buffer.from(chunk) : chunk);
      return;
    }
    if (this.#handle === undefined) {
      const spool = await this.#upload.spoolPath();
      this.#spool = spool;
      this.#handle = await open(spool, 'wx+', 0o600).catch((err: unknown) => {
        throw ioError(spool, 'cannot be created', err);
      });
      const { partSize, sizeHint } = this.#upload;
      this.#parts = new PartDigests(Math.max(partSize, S3_MIN_PART, Math.ceil((sizeHint ?? 0) / MAX_PARTS)));
      const held = this.#chunks;
      this.#chunks = [];
      for (const piece of held) this.#parts.update(piece);
      if (held.length > 0) await this.#append(Buffer.concat(held));
    }
    this.#parts!.update(chunk);
    await this.#append(chunk);
  }

  commit(): Promise<void> {
    if (this.#finished) return Promise.reject(new ResourceSyncError('RS_INVALID_ARGUMENT', `Staged write of '${this.key}' is already finished.`, { data: { path: this.key } }));
    this.#finished = true;
    const committing = this.#commit();
    this.#upload.track(committing);
    return committing;
  }

  async #commit(): Promise<void> {
    const md5 = this.#md5?.digest();
    try {
      if (this.#handle === undefined) {
        const body = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
        this.#chunks = [];
        await this.#put(body, md5!);
      } else if (md5 !== undefined) {
        await this.#put(await readAt(this.#handle, this.#length, 0), md5);
      } else {
        await this.#multipart(this.#handle, this.#parts!);
      }
    } catch (err) {
      throw s3Failure(err, this.#upload.place, this.key, 'cannot be written');
    } finally {
      await this.#dropSpool();
    }
  }

  async abort(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    this.#chunks = [];
    await this.#dropSpool();
  }

  /** One PutObject with the body's MD5: the server refuses (400 BadDigest) bytes that do not match it. */
  async #put(body: Uint8Array, md5: Buffer): Promise<void> {
    const { client, place, objectKey, mtimeMs } = this.#upload;
    await client.send(
      new PutObjectCommand({
        Bucket: place.bucket,
        Key: objectKey,
        Body: body,
        ContentLength: body.byteLength,
        ContentMD5: md5.toString('base64'),
        Metadata: objectMetadata(mtimeMs),
      }),
    );
  }

  /**
   * A multipart upload of the spool, `partConcurrency` parts at once, each with the `Content-MD5` of its bytes as
   * they arrived. Any failure aborts it.
   */
  async #multipart(handle: FileHandle, parts: PartDigests): Promise<void> {
    const { client, place, objectKey, mtimeMs, partConcurrency } = this.#upload;
    const partSize = parts.partSize;
    const digests = parts.finish();
    if (digests.length > MAX_PARTS) {
      throw new ResourceSyncError('RS_LIMIT_BYTES', `Object '${this.key}' of ${this.#length} bytes needs more than ${MAX_PARTS} parts of ${partSize} bytes: give a larger partSize.`, {
        data: { path: this.key, length: this.#length, partSize },
        recoverable: true,
      });
    }
    const created = await client.send(new CreateMultipartUploadCommand({ Bucket: place.bucket, Key: objectKey, Metadata: objectMetadata(mtimeMs) }));
    const uploadId = created.UploadId;
    if (uploadId === undefined) throw new Error('CreateMultipartUpload answered no UploadId');
    const inFlight = new Set<Promise<void>>();
    try {
      const completed: CompletedPart[] = [];
      for (let offset = 0, number = 1; offset < this.#length; offset += partSize, number++) {
        const body = await readAt(handle, Math.min(partSize, this.#length - offset), offset);
        const partNumber = number;
        const md5 = digests[number - 1]!.toString('base64');
        const sent: Promise<void> = client
          .send(new UploadPartCommand({ Bucket: place.bucket, Key: objectKey, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.byteLength, ContentMD5: md5 }))
          .then((answer) => {
            completed.push({ PartNumber: partNumber, ETag: answer.ETag });
          })
          .finally(() => inFlight.delete(sent));
        sent.catch(() => undefined); // awaited below, or dropped with the upload
        inFlight.add(sent);
        if (inFlight.size >= partConcurrency) await Promise.race(inFlight);
      }
      await Promise.all(inFlight);
      completed.sort((a, b) => a.PartNumber! - b.PartNumber!);
      await client.send(new CompleteMultipartUploadCommand({ Bucket: place.bucket, Key: objectKey, UploadId: uploadId, MultipartUpload: { Parts: completed } }));
    } catch (err) {
      await Promise.allSettled(inFlight);
      await client.send(new AbortMultipartUploadCommand({ Bucket: place.bucket, Key: objectKey, UploadId: uploadId })).catch(() => undefined);
      throw err;
    }
  }

  async #append(data: Uint8Array): Promise<void> {
    const handle = this.#handle!;
    try {
      for (let offset = 0; offset < data.byteLength; ) {
        const { bytesWritten } = await handle.write(data, offset, data.byteLength - offset);
        offset += bytesWritten;
      }
    } catch (err) {
      throw ioError(this.#spool!, 'cannot be written', err);
    }
  }

  async #dropSpool(): Promise<void> {
    const handle = this.#handle;
    this.#handle = undefined;
    if (handle !== undefined) await handle.close().catch(() => undefined);
    if (this.#spool !== undefined) await rm(this.#spool, { force: true }).catch(() => undefined);
  }
}
