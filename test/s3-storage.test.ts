/**
 * What only the S3 storage has, against Ceph RGW (which checks `Content-MD5`): bytes that do not match the MD5 taken
 * on arrival are refused by the server and nothing becomes visible; a multipart body round-trips byte-identical;
 * unfinished uploads are dropped; a missing bucket and wrong keys are clear errors; unsafe keys never reach the bucket.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, symlink, writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CreateMultipartUploadCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { isResourceSyncError, type ResourceSyncError } from '../src/core/errors.js';
import { createS3Storage, type S3Storage, type S3StorageOptions } from '../src/destination/index.js';
import { RGW_SKIP, startRgw, type RgwServer } from './helpers/rgw.js';

const BUCKET = 'own';
const MiB = 1024 * 1024;

void describe('S3 storage on Ceph RGW', { skip: RGW_SKIP }, () => {
  let rgw: RgwServer;
  let raw: S3Client;
  let temp: string;
  const opened: S3Storage[] = [];

  before(async () => {
    rgw = await startRgw();
    await rgw.createBucket(BUCKET);
    raw = new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } });
    temp = await mkdtemp(join(tmpdir(), 'rs-s3-own-'));
  });
  after(async () => {
    for (const storage of opened) storage.close();
    raw?.destroy();
    await rgw?.stop();
    if (temp !== undefined) await rm(temp, { recursive: true, force: true });
  });

  function open(prefix: string, more: Partial<S3StorageOptions> = {}): S3Storage {
    const storage = createS3Storage({
      bucket: BUCKET,
      prefix,
      endpoint: rgw.endpoint,
      region: rgw.region,
      credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey },
      tempDir: join(temp, prefix),
      ...more,
    });
    opened.push(storage);
    return storage;
  }

  async function objectKeys(prefix: string): Promise<string[]> {
    const answer = await raw.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    return (answer.Contents ?? []).map((o) => o.Key!).sort();
  }

  /** Overwrites the first bytes of the one spool file in `dir` (a disk that changed the bytes after they were hashed). */
  async function corruptSpool(dir: string): Promise<void> {
    const spools = (await readdir(dir)).filter((n) => n.endsWith('.spool'));
    assert.equal(spools.length, 1, 'one spool file');
    await writeFile(join(dir, spools[0]!), 'CORRUPT', { flag: 'r+' });
  }

  void test('a wrong Content-MD5 is refused by RGW (400 BadDigest) and nothing is under the key', async () => {
    await assert.rejects(
      () => raw.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'md5/raw.txt', Body: 'hello', ContentMD5: createHash('md5').update('other').digest('base64') })),
      (err: Error & { $metadata?: { httpStatusCode?: number } }) => err.name === 'BadDigest' && err.$metadata?.httpStatusCode === 400,
    );
    assert.deepEqual(await objectKeys('md5/'), []);
  });

  void test('bytes changed after they were hashed are refused at commit: nothing visible, the previous copy stays', async () => {
    const storage = open('spooled');
    const old = await storage.stage('a/doc.bin');
    await old.write(Buffer.from('previous copy'));
    await old.commit();
    const body = randomBytes(3 * MiB);
    const staged = await storage.stage('a/doc.bin');
    await staged.write(body);
    await corruptSpool(join(temp, 'spooled'));
    await assert.rejects(
      () => staged.commit(),
      (err: ResourceSyncError) => isResourceSyncError(err, 'RS_IO') && err.data.s3Code === 'BadDigest' && err.recoverable,
    );
    assert.equal(Buffer.from((await storage.read('a/doc.bin', { maxBytes: 100 }))!).toString(), 'previous copy');
    assert.deepEqual(await readdir(join(temp, 'spooled')), [], 'the spool is gone');
  });

  void test('a multipart body round-trips byte-identical, with Content-MD5 on each part', async () => {
    const storage = open('multipart', { multipartThreshold: 6 * MiB, partSize: 5 * MiB });
    const body = randomBytes(13 * MiB + 12345);
    const staged = await storage.stage('big/file.bin', { mtimeMs: Date.parse('2025-01-02T03:04:05Z') });
    for (let offset = 0; offset < body.length; offset += 256 * 1024) await staged.write(body.subarray(offset, offset + 256 * 1024));
    await staged.commit();
    const head = await raw.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'multipart/big/file.bin' }));
    assert.match(head.ETag ?? '', /-3"$/, 'three parts');
    assert.equal(head.ContentLength, body.length);
    const got = await raw.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'multipart/big/file.bin' }));
    assert.ok(Buffer.from(await got.Body!.transformToByteArray()).equals(body), 'byte-identical');
    const digests = await storage.hash('big/file.bin', ['md5', 'sha-256']);
    assert.equal(digests?.hashes.md5, createHash('md5').update(body).digest('hex'));
    assert.equal(digests.hashes['sha-256'], createHash('sha256').update(body).digest('hex'));
    assert.equal((await storage.stat('big/file.bin'))?.mtimeMs, Date.parse('2025-01-02T03:04:05Z'));
  });

  void test('a multipart body changed after it was hashed is never completed, and its upload is aborted', async () => {
    const storage = open('multipart-bad', { multipartThreshold: 6 * MiB, partSize: 5 * MiB });
    const staged = await storage.stage('x.bin');
    await staged.write(randomBytes(11 * MiB));
    await corruptSpool(join(temp, 'multipart-bad'));
    await assert.rejects(() => staged.commit(), (err: unknown) => isResourceSyncError(err, 'RS_IO'));
    assert.equal(await storage.stat('x.bin'), undefined);
    const uploads = await raw.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: 'multipart-bad/' }));
    assert.deepEqual(uploads.Uploads ?? [], []);
  });

  void test('discardStaged aborts the unfinished uploads under the prefix, not those of another prefix', async () => {
    const storage = open('left');
    await raw.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'left/killed.bin' }));
    await raw.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: 'elsewhere/other.bin' }));
    await storage.discardStaged();
    const left = await raw.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: 'left/' }));
    assert.deepEqual(left.Uploads ?? [], []);
    const other = await raw.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: 'elsewhere/' }));
    assert.equal(other.Uploads?.length, 1);
  });

  void test('list yields the keys under the prefix only, never a folder marker, an unsafe key or the state folder', async () => {
    const storage = open('listing');
    for (const key of ['listing/a.txt', 'listing/b/c.txt', 'listing/dir/', 'listing/.resourcesync/state.db', 'listing/x//y', 'listingx/no.txt', 'other/no.txt']) {
      await raw.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: 'x' }));
    }
    const keys: string[] = [];
    for await (const item of storage.list()) keys.push(item.key);
    assert.deepEqual(keys.sort(), ['a.txt', 'b/c.txt']);
  });

  void test("keys with '..' or an absolute path are refused with RS_UNSAFE_PATH and nothing reaches the bucket", async () => {
    const storage = open('unsafe');
    for (const key of ['../escape.txt', 'a/../../escape.txt', '/etc/passwd', '/unsafe/a.txt']) {
      await assert.rejects(() => storage.stage(key), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'), key);
      await assert.rejects(() => storage.stat(key), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'), key);
      await assert.rejects(() => storage.remove(key), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'), key);
    }
    const all = await objectKeys('');
    assert.deepEqual(all.filter((k) => k.includes('escape') || k.includes('passwd') || k.startsWith('unsafe')), []);
    assert.throws(() => createS3Storage({ bucket: BUCKET, prefix: '../up', endpoint: rgw.endpoint }), (err: unknown) => isResourceSyncError(err, 'RS_INVALID_ARGUMENT'), 'a prefix is an argument: the one s3 URL reader refuses it');
  });

  void test('a missing bucket is a clear error naming the bucket and the endpoint; so are refused credentials', async () => {
    const missing = open('p', { bucket: 'no-such-bucket' });
    for (const call of [() => missing.checkBucket(), () => missing.stat('a.txt'), () => missing.stage('a.txt'), async () => { for await (const _ of missing.list()) break; }]) {
      await assert.rejects(call, (err: ResourceSyncError) => {
        assert.ok(isResourceSyncError(err, 'RS_IO'));
        assert.equal(err.recoverable, false);
        assert.match(err.message, /Bucket 'no-such-bucket' does not exist at http:\/\/127\.0\.0\.1:\d+/);
        return true;
      });
    }
    const wrong = open('p', { credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: 'WRONGSECRET' } });
    await assert.rejects(() => wrong.stat('a.txt'), (err: ResourceSyncError) => {
      assert.ok(isResourceSyncError(err, 'RS_IO'));
      assert.equal(err.recoverable, false);
      assert.match(err.message, /refused the credentials for bucket 'own'/);
      assert.doesNotMatch(err.message, /WRONGSECRET/);
      return true;
    });
  });

  void test('a temporary folder that is a link is refused with RS_UNSAFE_PATH before anything is spooled there', async () => {
    await mkdir(join(temp, 'elsewhere'));
    await symlink(join(temp, 'elsewhere'), join(temp, 'linked'));
    const storage = open('linked');
    await assert.rejects(() => storage.scratchFile(), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'));
    const staged = await storage.stage('big.bin');
    await assert.rejects(() => staged.write(randomBytes(2 * MiB)), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'));
    await staged.abort();
    assert.deepEqual(await readdir(join(temp, 'elsewhere')), []);
  });

  void test('abort drops the spool and nothing is visible', async () => {
    const storage = open('aborted');
    const staged = await storage.stage('big.bin');
    await staged.write(randomBytes(2 * MiB));
    assert.equal((await readdir(join(temp, 'aborted'))).length, 1);
    await staged.abort();
    assert.deepEqual(await readdir(join(temp, 'aborted')), []);
    assert.equal(await storage.stat('big.bin'), undefined);
  });
});
