/**
 * The mirror in an S3-compatible bucket: a {@link MirrorStorage} over `@aws-sdk/client-s3`. A key `a/b.txt` is the
 * object `<prefix>/a/b.txt`; `stat` is HeadObject, `read`/`openRead`/`hash` GetObject (the bytes are read and
 * hashed here, never taken from the server's word), `remove` HeadObject + DeleteObject, `list` ListObjectsV2 under
 * the prefix; `stage`/`commit` put an object only once its bytes were verified, with `Content-MD5` the server
 * checks (src/destination/s3-staged-write.ts). The modification time given at `stage` is kept as the object's
 * `x-amz-meta-mtime`. Staged bodies over 1 MiB and scratch files go to this storage's own local temporary folder.
 */

import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  S3Client,
  type GetObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { ResourceSyncError } from '../core/errors.js';
import type { HashAlgorithm } from '../core/constants.js';
import { BodyDigests } from '../node/body-digests.js';
import { ioError } from '../node/destination-root.js';
import { safeRelativePath } from '../node/safe-path.js';
import { createS3Client, s3Place } from '../node/s3-client.js';
import { s3Location, s3Url } from '../node/s3-url.js';
import type { MirrorStorage, ReadOptions, StageOptions, StagedWrite, StoredDigests, StoredFacts, StoredItem } from './mirror-storage.js';
import { bucketMissing, isNoSuchKey, s3Failure, s3Status, type S3Place } from './s3-errors.js';
import { S3StagedWrite } from './s3-staged-write.js';

/** Options of {@link createS3Storage}. */
export interface S3StorageOptions {
  /** The bucket; it must exist. */
  bucket: string;
  /** Folder of the mirror in the bucket (`mirrors/site`), no leading or trailing `/`; default the bucket's top. */
  prefix?: string;
  /** The server's URL (`http://127.0.0.1:7480`); default AWS S3 in `region`. Path-style addressing unless `forcePathStyle: false`. */
  endpoint?: string;
  /** Default: the SDK's (`AWS_REGION`, the AWS config files), else `us-east-1` with an `endpoint`. */
  region?: string;
  /** Default: the SDK's provider chain (`AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`, profiles, instance roles). */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /** Bucket in the path rather than in the host name. Default: true with an `endpoint`, false without. */
  forcePathStyle?: boolean;
  /** Attempts per request (the SDK's retries). Default 3. */
  maxAttempts?: number;
  /** Bodies larger than this go by multipart upload. Default 16 MiB. */
  multipartThreshold?: number;
  /** Size of a multipart upload's parts (at least 5 MiB). Default 8 MiB. */
  partSize?: number;
  /** Parts of one upload sent at once. Default 2. */
  partConcurrency?: number;
  /**
   * Local folder for staged bodies over 1 MiB and scratch files. Default: a folder of the system's temporary
   * folder named after the endpoint, bucket and prefix (so a later run's `discardStaged` finds what a killed run left).
   */
  tempDir?: string;
}

/** A mirror in a bucket: a {@link MirrorStorage} plus what only a bucket has. */
export interface S3Storage extends MirrorStorage {
  readonly bucket: string;
  /** The prefix, without slashes at either end ('' for the bucket's top). */
  readonly prefix: string;
  /**
   * Checks that the bucket exists and the credentials are accepted (HeadBucket); every other method does it once
   * before its first request. Rejects with a non-recoverable `RS_IO` naming the bucket and the endpoint.
   */
  checkBucket(): Promise<void>;
  /** Closes the client's connections; the storage is not used after. */
  close(): void;
}

const MiB = 1024 * 1024;
const LIST_PAGE = 1000;
/** Connections kept to the server. */
const SOCKETS = 64;

/** The object's modification time: `x-amz-meta-mtime` when the mirror set it, else `Last-Modified`. */
function mtimeOf(answer: { Metadata?: Record<string, string> | undefined; LastModified?: Date | undefined }): number {
  const kept = Number(answer.Metadata?.mtime);
  return Number.isFinite(kept) && answer.Metadata?.mtime !== undefined ? kept : (answer.LastModified?.getTime() ?? 0);
}

/** `key` when it is a safe relative path (no `..`, no leading `/`, nothing under `.resourcesync`), else `RS_UNSAFE_PATH`. */
function checkedKey(key: string): string {
  if (key.startsWith('/') || safeRelativePath(key) !== key) {
    throw new ResourceSyncError('RS_UNSAFE_PATH', `Path '${key}' is not a safe relative path.`, { data: { path: key }, recoverable: true });
  }
  return key;
}

/** A mirror key of an object key listed under `top`, or undefined for one the mirror cannot have written. */
function mirrorKey(objectKey: string, top: string): string | undefined {
  if (!objectKey.startsWith(top)) return undefined;
  const rel = objectKey.slice(top.length);
  try {
    return rel !== '' && !rel.startsWith('/') && safeRelativePath(rel) === rel ? rel : undefined;
  } catch {
    return undefined;
  }
}

function destroyBody(answer: GetObjectCommandOutput): void {
  (answer.Body as { destroy?: () => void } | undefined)?.destroy?.();
}

class S3MirrorStorage implements S3Storage {
  readonly location: string;
  readonly bucket: string;
  readonly prefix: string;
  readonly #client: S3Client;
  readonly #place: S3Place;
  /** `<prefix>/`, or '' for the bucket's top. */
  readonly #top: string;
  readonly #tempDir: string;
  readonly #tag = `${process.pid}-${randomBytes(4).toString('hex')}`;
  readonly #multipartThreshold: number;
  readonly #partSize: number;
  readonly #partConcurrency: number;
  readonly #committing = new Set<Promise<void>>();
  #counter = 0;
  #checked: Promise<void> | undefined;
  #tempReady = false;

  constructor(options: S3StorageOptions) {
    const { bucket, prefix } = s3Location(options.bucket, options.prefix);
    this.prefix = prefix;
    this.bucket = bucket;
    this.#top = this.prefix === '' ? '' : `${this.prefix}/`;
    this.location = s3Url({ bucket, prefix });
    const { client, endpoint } = createS3Client({
      ...(options.endpoint !== undefined ? { endpoint: options.endpoint } : {}),
      ...(options.region !== undefined ? { region: options.region } : {}),
      ...(options.credentials !== undefined ? { credentials: options.credentials } : {}),
      ...(options.forcePathStyle !== undefined ? { forcePathStyle: options.forcePathStyle } : {}),
      ...(options.maxAttempts !== undefined ? { maxAttempts: options.maxAttempts } : {}),
      sockets: SOCKETS,
    });
    this.#client = client;
    this.#place = s3Place(this.bucket, endpoint);
    this.#multipartThreshold = options.multipartThreshold ?? 16 * MiB;
    this.#partSize = options.partSize ?? 8 * MiB;
    this.#partConcurrency = Math.max(1, options.partConcurrency ?? 2);
    const id = createHash('sha256').update(`${this.#place.endpoint}\n${this.bucket}\n${this.prefix}`).digest('hex').slice(0, 16);
    this.#tempDir = options.tempDir ?? join(tmpdir(), 'resourcesync-s3', id);
  }

  checkBucket(): Promise<void> {
    this.#checked ??= this.#client.send(new HeadBucketCommand({ Bucket: this.bucket })).then(
      () => undefined,
      (err: unknown) => {
        this.#checked = undefined; // asked again next time
        throw s3Status(err) === 404 ? bucketMissing(this.#place, err) : s3Failure(err, this.#place, undefined, 'cannot be reached');
      },
    );
    return this.#checked;
  }

  async stat(key: string): Promise<StoredFacts | undefined> {
    const objectKey = this.#objectKey(key);
    await this.checkBucket();
    try {
      const head = await this.#client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: objectKey }));
      return { size: head.ContentLength ?? 0, mtimeMs: mtimeOf(head) };
    } catch (err) {
      if (isNoSuchKey(err)) return undefined;
      throw s3Failure(err, this.#place, key, 'cannot be looked at');
    }
  }

  async read(key: string, options: ReadOptions): Promise<Uint8Array | undefined> {
    const answer = await this.#get(key);
    if (answer === undefined) return undefined;
    const tooLarge = (): ResourceSyncError =>
      new ResourceSyncError('RS_LIMIT_BYTES', `Copy '${key}' in ${this.location} is larger than ${options.maxBytes} bytes.`, { data: { path: key, max: options.maxBytes }, recoverable: true });
    if ((answer.ContentLength ?? 0) > options.maxBytes) {
      destroyBody(answer);
      throw tooLarge();
    }
    const chunks: Uint8Array[] = [];
    let length = 0;
    try {
      for await (const chunk of answer.Body as AsyncIterable<Uint8Array>) {
        length += chunk.byteLength;
        if (length > options.maxBytes) throw tooLarge();
        chunks.push(chunk);
      }
    } catch (err) {
      destroyBody(answer);
      throw s3Failure(err, this.#place, key, 'cannot be read');
    }
    return Buffer.concat(chunks, length);
  }

  async openRead(key: string): Promise<AsyncIterable<Uint8Array> | undefined> {
    const answer = await this.#get(key);
    return answer === undefined ? undefined : (answer.Body as AsyncIterable<Uint8Array>);
  }

  async hash(key: string, algorithms: readonly HashAlgorithm[]): Promise<StoredDigests | undefined> {
    const answer = await this.#get(key);
    if (answer === undefined) return undefined;
    const digests = new BodyDigests(new Set(algorithms));
    let length = 0;
    try {
      for await (const chunk of answer.Body as AsyncIterable<Uint8Array>) {
        length += chunk.byteLength;
        digests.update(chunk);
      }
    } catch (err) {
      destroyBody(answer);
      throw s3Failure(err, this.#place, key, 'cannot be read');
    }
    return { length, hashes: digests.digest(), mtimeMs: mtimeOf(answer) };
  }

  async stage(key: string, options: StageOptions = {}): Promise<StagedWrite> {
    const objectKey = this.#objectKey(key);
    await this.checkBucket();
    return new S3StagedWrite(key, {
      client: this.#client,
      place: this.#place,
      objectKey,
      multipartThreshold: this.#multipartThreshold,
      partSize: this.#partSize,
      partConcurrency: this.#partConcurrency,
      spoolPath: () => this.#tempPath('spool'),
      mtimeMs: options.mtimeMs,
      sizeHint: options.sizeHint,
      track: (committing) => {
        this.#committing.add(committing);
        const done = (): void => void this.#committing.delete(committing);
        committing.then(done, done);
      },
    });
  }

  async remove(key: string): Promise<boolean> {
    if ((await this.stat(key)) === undefined) return false;
    try {
      await this.#client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.#objectKey(key) }));
      return true;
    } catch (err) {
      throw s3Failure(err, this.#place, key, 'cannot be removed');
    }
  }

  async *list(): AsyncIterable<StoredItem> {
    await this.checkBucket();
    let token: string | undefined;
    for (let page = 0; ; page++) {
      let answer;
      try {
        answer = await this.#client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.#top, MaxKeys: LIST_PAGE, ContinuationToken: token }));
      } catch (err) {
        throw s3Failure(err, this.#place, undefined, 'cannot be listed');
      }
      for (const object of answer.Contents ?? []) {
        const key = object.Key === undefined ? undefined : mirrorKey(object.Key, this.#top);
        if (key !== undefined) yield { key, size: object.Size ?? 0, mtimeMs: object.LastModified?.getTime() ?? 0 };
      }
      const next = answer.IsTruncated === true ? answer.NextContinuationToken : undefined;
      if (next === undefined || next === token) return; // the last page (or a server that does not move on)
      token = next;
    }
  }

  async isEmpty(): Promise<boolean> {
    for await (const _ of this.list()) return false;
    return true;
  }

  async settle(): Promise<void> {
    // commits started while waiting are waited for too; each pass takes what was under way when it began
    for (let pass = 0; this.#committing.size > 0 && pass < 1000; pass++) await Promise.allSettled([...this.#committing]);
  }

  async discardStaged(): Promise<void> {
    await rm(this.#tempDir, { recursive: true, force: true });
    this.#tempReady = false;
    await this.checkBucket();
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (let page = 0; page < 100_000; page++) {
      let answer;
      try {
        answer = await this.#client.send(new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.#top, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }));
      } catch (err) {
        throw s3Failure(err, this.#place, undefined, 'cannot list its unfinished uploads');
      }
      for (const upload of answer.Uploads ?? []) {
        await this.#client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.Key, UploadId: upload.UploadId })).catch(() => undefined);
      }
      if (answer.IsTruncated !== true || (answer.NextKeyMarker === keyMarker && answer.NextUploadIdMarker === uploadIdMarker)) return;
      keyMarker = answer.NextKeyMarker;
      uploadIdMarker = answer.NextUploadIdMarker;
    }
  }

  scratchFile(): Promise<string> {
    return this.#tempPath('scratch');
  }

  close(): void {
    this.#client.destroy();
  }

  #objectKey(key: string): string {
    return this.#top + checkedKey(key);
  }

  /** GetObject of `key`, or undefined when it holds nothing. */
  async #get(key: string): Promise<GetObjectCommandOutput | undefined> {
    const objectKey = this.#objectKey(key);
    await this.checkBucket();
    try {
      return await this.#client.send(new GetObjectCommand({ Bucket: this.bucket, Key: objectKey }));
    } catch (err) {
      if (isNoSuchKey(err)) return undefined;
      throw s3Failure(err, this.#place, key, 'cannot be read');
    }
  }

  async #tempPath(kind: string): Promise<string> {
    if (!this.#tempReady) {
      let st;
      try {
        await mkdir(this.#tempDir, { recursive: true, mode: 0o700 });
        st = await lstat(this.#tempDir);
      } catch (err) {
        throw ioError(this.#tempDir, 'cannot be created', err);
      }
      // a folder of the shared temporary folder that someone else made (or a link) would see or steer the spools
      if (!st.isDirectory() || (process.getuid !== undefined && st.uid !== process.getuid())) {
        throw new ResourceSyncError('RS_UNSAFE_PATH', `Temporary folder '${this.#tempDir}' is not a folder of this user's.`, { data: { path: this.#tempDir } });
      }
      this.#tempReady = true;
    }
    return join(this.#tempDir, `${this.#tag}-${(this.#counter++).toString(36)}.${kind}`);
  }
}

/**
 * A bucket of an S3-compatible server as the mirror's storage: pass it as `storage` to `sync`, `audit`, `repair`
 * or `Follower.start`, with a `state` of its own (the bucket holds only the copies).
 * @example
 * const storage = createS3Storage({ bucket: 'mirror', prefix: 'example.org', endpoint: 'http://127.0.0.1:7480' });
 * const state = await openPostgresDestinationState('postgres://…', { destination: storage.location });
 * await sync({ source: 'https://example.org/', dest: '/var/tmp/rs-work', storage, state });
 */
export function createS3Storage(options: S3StorageOptions): S3Storage {
  return new S3MirrorStorage(options);
}
