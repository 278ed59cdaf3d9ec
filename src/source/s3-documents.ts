/**
 * The documents of a Source in an S3 bucket (`DocumentSink`, document-sink.ts): `build … --out s3://bucket/prefix`.
 * Each document is `<prefix>/<its path under the base URL>`, uploaded by one PutObject with `Content-MD5` (the
 * server refuses a body that does not match) and its Content-Type (`Content-Encoding: gzip` for `.xml.gz`), so a
 * bucket behind any web server or CDN is the Source. A document the bucket already holds with the same MD5 (its
 * ETag) is not uploaded again; a document no longer published (under `.resourcesync/`, the only folder of
 * documents that comes and goes) is deleted once the new ones are in. Resources kept in the same bucket, beside the
 * documents, are never touched. Index documents go up after what they point to, the Source Description last.
 * @see Z39.99 §6.3.2 (Source Description at the well-known URI), §8–13
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { DOCUMENTS_PREFIX } from './url-path.js';
import { ResourceSyncError } from '../core/errors.js';
import { safeRelativePath } from '../node/safe-path.js';
import { createS3Client, s3Place, type S3ClientOptions } from '../node/s3-client.js';
import { s3Location, s3Url, type S3Target } from '../node/s3-url.js';
import { bucketMissing, s3Failure, s3Status, type S3Place } from '../node/s3-errors.js';
import type { DocumentSink, SinkResult } from './document-sink.js';

/** Options of {@link createS3Documents}. */
export interface S3DocumentsOptions extends S3Target, S3ClientOptions {
  /** Uploads at once. Default 8. */
  concurrency?: number;
  /** An S3 client of the caller's (then `endpoint` only names it in messages). */
  client?: S3Client;
}

/** Largest body one PutObject takes (S3's limit). */
const MAX_PUT = 5 * 1024 ** 3;
/** Bodies up to this size are read whole; larger ones are streamed from the file. */
const IN_MEMORY = 8 * 1024 * 1024;
/** The documents that are always published (the rest live under `.resourcesync/`). */
const FIXED = ['.well-known/resourcesync', 'robots.txt'];

/** Content-Type and Content-Encoding of a document, by its name. */
function documentHeaders(path: string): { ContentType: string; ContentEncoding?: string } {
  if (path === '.well-known/resourcesync' || path.endsWith('.xml')) return { ContentType: 'application/xml' };
  if (path.endsWith('.xml.gz')) return { ContentType: 'application/xml', ContentEncoding: 'gzip' };
  if (path.endsWith('.zip')) return { ContentType: 'application/zip' };
  if (path.endsWith('.txt')) return { ContentType: 'text/plain; charset=utf-8' };
  if (path.endsWith('.html')) return { ContentType: 'text/html; charset=utf-8' };
  if (path.endsWith('.json')) return { ContentType: 'application/json' };
  return { ContentType: 'application/octet-stream' };
}

/** Upload order: what indexes point to first, then indexes, Capability Lists, and the Source Description last. */
function rank(path: string): number {
  if (path === '.well-known/resourcesync') return 4;
  if (path === 'robots.txt' || /(^|\/)capabilitylist\.xml(\.gz)?$/.test(path)) return 3;
  if (/(^|\/)(resourcelist|changelist|resourcedump|changedump)(-archive)?\.xml(\.gz)?$/.test(path)) return 2;
  return /-manifest\.xml/.test(path) || path.endsWith('.zip') ? 0 : 1;
}

/**
 * A document's path, checked: one of the fixed documents, or a safe relative path under `.resourcesync/`.
 * @throws ResourceSyncError RS_UNSAFE_PATH for anything else
 */
function documentPath(path: string): string {
  if (FIXED.includes(path)) return path;
  const top = `${DOCUMENTS_PREFIX}/`;
  if (path.startsWith(top)) return top + safeRelativePath(path.slice(top.length));
  throw new ResourceSyncError('RS_UNSAFE_PATH', `Path '${path}' is not one of a Source's documents.`, {
    data: { path },
  });
}

/** True for a key this sink could have written (another one, put there by someone else, is left alone). */
function isSafe(path: string): boolean {
  try {
    return documentPath(path) === path;
  } catch {
    return false;
  }
}

interface Remote {
  etag: string;
  size: number;
}

/** The MD5 of a file (hex) and, when small, its bytes. */
async function md5Of(file: string): Promise<{ md5: string; size: number; bytes?: Buffer }> {
  const size = (await stat(file)).size;
  if (size <= IN_MEMORY) {
    const bytes = await readFile(file);
    return { md5: createHash('md5').update(bytes).digest('hex'), size, bytes };
  }
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return { md5: hash.digest('hex'), size };
}

/** A file's MD5 as last seen, with what says it is still the same file (size, mtime, inode). */
interface Seen {
  size: number;
  mtimeMs: number;
  ino: number;
  md5: string;
}

/**
 * The MD5s of the working copy's files, kept beside it (`<dir>.md5.json`): a document unchanged since the last run
 * (same size, mtime and inode: publish replaces a document by renaming a new file over it) is not read again to
 * be compared with the bucket's ETag. A document about to be uploaded is always hashed afresh.
 */
class Md5Memo {
  readonly #file: string;
  readonly #seen: Map<string, Seen>;

  private constructor(file: string, seen: Map<string, Seen>) {
    this.#file = file;
    this.#seen = seen;
  }

  static async load(dir: string): Promise<Md5Memo> {
    const file = `${dir}.md5.json`;
    const seen = new Map<string, Seen>();
    try {
      const saved = JSON.parse(await readFile(file, 'utf8')) as Record<string, Seen>;
      for (const [path, s] of Object.entries(saved)) if (typeof s?.md5 === 'string') seen.set(path, s);
    } catch {
      // none yet, or unreadable: every file is hashed
    }
    return new Md5Memo(file, seen);
  }

  /** The MD5 and size of `dir/path`, undefined when there is no such file. */
  async digest(dir: string, path: string): Promise<{ md5: string; size: number } | undefined> {
    const file = join(dir, path);
    const st = await stat(file).catch(() => undefined);
    if (st === undefined) return undefined;
    const known = this.#seen.get(path);
    if (known !== undefined && known.size === st.size && known.mtimeMs === st.mtimeMs && known.ino === st.ino)
      return known;
    const now = await md5Of(file);
    this.#seen.set(path, { size: now.size, mtimeMs: st.mtimeMs, ino: st.ino, md5: now.md5 });
    return now;
  }

  /** Writes the memo (atomically), for the documents in `keep` only. */
  async save(keep: Iterable<string>): Promise<void> {
    const out: Record<string, Seen> = {};
    for (const path of keep) {
      const s = this.#seen.get(path);
      if (s !== undefined) out[path] = s;
    }
    const part = `${this.#file}.part-${process.pid}`;
    await writeFile(part, JSON.stringify(out));
    await rename(part, this.#file);
  }
}

/** Runs `work` over `items`, `limit` at a time; the first failure stops the rest. */
async function eachLimited<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
  signal?: AbortSignal,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      if (signal?.aborted === true)
        throw new ResourceSyncError('RS_ABORTED', 'Publication aborted.', { cause: signal.reason });
      await work(items[next++]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

class S3DocumentSink implements DocumentSink {
  readonly location: string;
  readonly #client: S3Client;
  readonly #place: S3Place;
  readonly #top: string;
  readonly #concurrency: number;

  constructor(options: S3DocumentsOptions) {
    const { bucket, prefix } = s3Location(options.bucket, options.prefix);
    const made =
      options.client === undefined ? createS3Client(options) : { client: options.client, endpoint: options.endpoint };
    this.#client = made.client;
    this.#place = s3Place(bucket, made.endpoint);
    this.#top = prefix === '' ? '' : `${prefix}/`;
    this.#concurrency = Math.max(1, options.concurrency ?? 8);
    this.location = s3Url({ bucket, prefix });
  }

  /** Checks that the bucket exists and answers: an `RS_IO` naming bucket and endpoint (`data.s3Code` `NoSuchBucket` when missing). */
  async checkBucket(): Promise<void> {
    try {
      await this.#client.send(new HeadBucketCommand({ Bucket: this.#place.bucket }));
    } catch (err) {
      throw s3Status(err) === 404
        ? bucketMissing(this.#place, err)
        : s3Failure(err, this.#place, undefined, 'cannot be reached');
    }
  }

  /** The documents the bucket holds (the fixed ones and those under `.resourcesync/`), by path, with ETag and size. */
  async #remote(): Promise<Map<string, Remote>> {
    const found = new Map<string, Remote>();
    const add = (key: string | undefined, etag: string | undefined, size: number | undefined): void => {
      if (key === undefined || !key.startsWith(this.#top) || !isSafe(key.slice(this.#top.length))) return;
      found.set(key.slice(this.#top.length), { etag: (etag ?? '').replace(/"/g, ''), size: size ?? -1 });
    };
    try {
      for (const prefix of [
        `${this.#top}${DOCUMENTS_PREFIX}/`,
        `${this.#top}.well-known/resourcesync`,
        `${this.#top}robots.txt`,
      ]) {
        let token: string | undefined;
        for (let page = 0; page < 1_000_000; page++) {
          const r = await this.#client.send(
            new ListObjectsV2Command({
              Bucket: this.#place.bucket,
              Prefix: prefix,
              ...(token ? { ContinuationToken: token } : {}),
            }),
          );
          for (const o of r.Contents ?? []) if (o.Key === prefix || prefix.endsWith('/')) add(o.Key, o.ETag, o.Size);
          if (r.IsTruncated !== true || r.NextContinuationToken === undefined) break;
          token = r.NextContinuationToken;
        }
      }
    } catch (err) {
      throw s3Failure(err, this.#place, undefined, 'cannot be listed');
    }
    return found;
  }

  async prepare(dir: string, signal?: AbortSignal): Promise<number> {
    await this.checkBucket();
    const remote = await this.#remote();
    const memo = await Md5Memo.load(dir);
    const missing: string[] = [];
    for (const [path, r] of remote) {
      const local = await memo.digest(dir, documentPath(path));
      if (local === undefined || local.size !== r.size || (!r.etag.includes('-') && local.md5 !== r.etag))
        missing.push(path);
    }
    await eachLimited(missing, this.#concurrency, (path) => this.#download(dir, path), signal);
    return missing.length;
  }

  async #download(dir: string, path: string): Promise<void> {
    const file = join(dir, documentPath(path));
    const part = `${file}.part-${process.pid}`;
    await mkdir(dirname(file), { recursive: true });
    try {
      const r = await this.#client.send(new GetObjectCommand({ Bucket: this.#place.bucket, Key: this.#top + path }));
      await pipeline(r.Body as Readable, createWriteStream(part));
      await rename(part, file);
    } catch (err) {
      await rm(part, { force: true });
      throw s3Failure(err, this.#place, path, 'cannot be read');
    }
  }

  async commit(
    dir: string,
    documents: readonly string[],
    signal?: AbortSignal,
  ): Promise<Omit<SinkResult, 'downloaded'>> {
    await this.checkBucket();
    const remote = await this.#remote();
    const memo = await Md5Memo.load(dir);
    const result = { uploaded: 0, unchanged: 0, deleted: 0, bytes: 0 };
    const published = new Set(documents.map((d) => documentPath(d)));
    const ordered = [...published].sort((a, b) => rank(a) - rank(b));
    // one rank at a time: what a document points to is in the bucket before it
    for (let r = 0; r <= 4; r++) {
      await eachLimited(
        ordered.filter((p) => rank(p) === r),
        this.#concurrency,
        async (path) => {
          const sent = await this.#upload(dir, path, remote.get(path), memo);
          if (sent === undefined) result.unchanged++;
          else {
            result.uploaded++;
            result.bytes += sent;
          }
        },
        signal,
      );
    }
    const gone = [...remote.keys()].filter((p) => !published.has(p) && !FIXED.includes(p));
    await eachLimited(
      gone,
      this.#concurrency,
      async (path) => {
        try {
          await this.#client.send(new DeleteObjectCommand({ Bucket: this.#place.bucket, Key: this.#top + path }));
          result.deleted++;
        } catch (err) {
          throw s3Failure(err, this.#place, path, 'cannot be deleted');
        }
      },
      signal,
    );
    await memo.save(published);
    return result;
  }

  /** Uploads one document unless the bucket holds it already; the bytes sent, or undefined. */
  async #upload(dir: string, path: string, remote: Remote | undefined, memo: Md5Memo): Promise<number | undefined> {
    const file = join(dir, path);
    const seen = await memo.digest(dir, path);
    if (seen === undefined)
      throw new ResourceSyncError('RS_IO', `Document '${path}' is missing from the working copy ${dir}.`, {
        data: { path },
      });
    if (remote !== undefined && remote.size === seen.size && remote.etag === seen.md5) return undefined;
    const local = await md5Of(file);
    if (local.size > MAX_PUT) {
      throw new ResourceSyncError(
        'RS_INVALID_ARGUMENT',
        `Document '${path}' is ${local.size} bytes, more than one upload takes (5 GiB): publish smaller dump packages (--package-size).`,
        {
          data: { path, size: local.size },
        },
      );
    }
    const handle = local.bytes === undefined ? await open(file) : undefined;
    try {
      await this.#client.send(
        new PutObjectCommand({
          Bucket: this.#place.bucket,
          Key: this.#top + path,
          Body: local.bytes ?? handle!.createReadStream({ autoClose: false }),
          ContentLength: local.size,
          ContentMD5: Buffer.from(local.md5, 'hex').toString('base64'),
          ...documentHeaders(path),
        }),
      );
    } catch (err) {
      throw s3Failure(err, this.#place, path, 'cannot be uploaded');
    } finally {
      await handle?.close();
    }
    return local.size;
  }
}

/** A document sink that is an S3 bucket, with `checkBucket()` to fail early. */
export type S3Documents = DocumentSink & { checkBucket(): Promise<void> };

/**
 * The sink of the documents in `s3://bucket/prefix`.
 * @example
 * const sink = createS3Documents({ bucket: 'source', prefix: 'data', endpoint: 'http://127.0.0.1:7480' });
 * await publish({ ...options, outDir: '/var/cache/rs/data', sink });
 */
export function createS3Documents(options: S3DocumentsOptions): S3Documents {
  return new S3DocumentSink(options);
}
