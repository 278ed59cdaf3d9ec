/**
 * The RGW helper itself: it starts, answers S3 with the test user's keys, refuses other keys, and leaves no daemon
 * and no folder behind once stopped, nor when the test process is killed with SIGKILL (the script's watchdog).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { until } from './helpers/cli-child.js';
import { exited } from './helpers/exited.js';
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
  const dir = rgw.dir;
  assert.ok(existsSync(join(dir, 'run', 'client.rgw.a.pid')), 'the pids are in the run folder');
  const pids = readdirSync(join(dir, 'run')).filter((n) => n.endsWith('.pid')).map((n) => Number(readFileSync(join(dir, 'run', n), 'utf8')));
  t.diagnostic(`RGW answered after ${startMs} ms; resident memory ${rgw.memoryMB()} MB over ${pids.length} processes`);

  await rgw.stop();
  assert.equal(existsSync(dir), false, 'the folder is removed');
  for (const pid of pids) {
    const state = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
    assert.ok(state === '' || /^\d+ \(.*\) Z/.test(state), `process ${pid} is gone`);
  }
  await rgw.stop(); // twice is harmless
});

/** True while `pid` runs (a zombie has exited). */
function running(pid: number): boolean {
  const stat = existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8') : '';
  return stat !== '' && !/^\d+ \(.*\) Z/.test(stat);
}

void test('a test process killed with SIGKILL leaves no daemon and no folder behind', { skip: RGW_SKIP }, async () => {
  const helper = new URL('./helpers/rgw.js', import.meta.url).href;
  const code = `const { startRgw } = await import(${JSON.stringify(helper)}); const r = await startRgw(); console.log('dir ' + r.dir); setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await until(`RGW in the child; ${err}`, () => /^dir /m.test(out) || child.exitCode !== null, 240_000);
    const dir = /^dir (.+)$/m.exec(out)?.[1];
    assert.ok(dir !== undefined, `the child started RGW: ${err}`);
    const pids = readdirSync(join(dir, 'run')).filter((n) => n.endsWith('.pid')).map((n) => Number(readFileSync(join(dir, 'run', n), 'utf8')));
    assert.ok(pids.length >= 4 && pids.every(running), 'mon, osd, radosgw and the watchdog run');
    child.kill('SIGKILL');
    await exited(child);
    const deadline = Date.now() + 30_000;
    while (pids.some(running) || existsSync(dir)) {
      assert.ok(Date.now() < deadline, `still running after 30 s: ${pids.filter(running).join(', ')}`);
      await sleep(100);
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
});
