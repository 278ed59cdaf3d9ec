/**
 * The RGW helper itself: it starts, answers S3 with the test user's keys, refuses other keys, and leaves no daemon
 * and no folder behind once stopped.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListBucketsCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { RGW_SKIP, startRgw, type RgwServer } from './helpers/rgw.js';

function clientOf(rgw: RgwServer, secretAccessKey = rgw.secretAccessKey): S3Client {
  return new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey } });
}

void test('startRgw: a bucket, a PUT and a GET with the test keys; wrong keys refused; stop leaves nothing', { skip: RGW_SKIP }, async (t) => {
  const started = Date.now();
  const rgw = await startRgw();
  after(() => rgw.stop());
  const startMs = Date.now() - started;
  assert.match(rgw.endpoint, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(rgw.env.AWS_ACCESS_KEY_ID, 'TESTKEY');
  await rgw.createBucket('helper-test');
  const s3 = clientOf(rgw);
  await s3.send(new PutObjectCommand({ Bucket: 'helper-test', Key: 'a/b.txt', Body: 'hello' }));
  const got = await s3.send(new GetObjectCommand({ Bucket: 'helper-test', Key: 'a/b.txt' }));
  assert.equal(await got.Body?.transformToString(), 'hello');
  const listed = await s3.send(new ListBucketsCommand({}));
  assert.deepEqual(listed.Buckets?.map((b) => b.Name), ['helper-test']);
  s3.destroy();
  const wrong = clientOf(rgw, 'NOTTHESECRET');
  await assert.rejects(() => wrong.send(new ListBucketsCommand({})), (err: Error) => err.name === 'SignatureDoesNotMatch');
  wrong.destroy();

  // the daemons and their memory, for the record
  const dir = readdirSync(tmpdir()).map((n) => join(tmpdir(), n)).find((d) => existsSync(join(d, 'run', 'client.rgw.a.pid')) && readFileSync(join(d, 'ceph.conf'), 'utf8').includes(rgw.endpoint.slice(7)));
  assert.ok(dir !== undefined, 'the run folder is in the temporary folder');
  const pids = readdirSync(join(dir, 'run')).filter((n) => n.endsWith('.pid')).map((n) => Number(readFileSync(join(dir, 'run', n), 'utf8')));
  const rssKb = pids.map((p) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0));
  t.diagnostic(`RGW answered after ${startMs} ms; resident memory ${Math.round(rssKb.reduce((a, b) => a + b, 0) / 1024)} MB over ${pids.length} processes`);

  await rgw.stop();
  assert.equal(existsSync(dir), false, 'the folder is removed');
  for (const pid of pids) {
    const state = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    assert.ok(state === '' || /^\d+ \(.*\) Z/.test(state), `process ${pid} is gone`);
  }
  await rgw.stop(); // twice is harmless
});
