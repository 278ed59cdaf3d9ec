// `sync`, `audit` and `audit --repair` with an s3://BUCKET/PREFIX destination on Ceph RGW, as child processes against
// a Source on a test server, the state in an SQLite file (--state): every object in the bucket is compared byte for
// byte with the Source after a baseline and after changes and deletions; an object corrupted in the bucket is found
// by `audit` (exit 1) and put right by `audit --repair`; usage and bucket errors exit 2 and 3, saying why.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { CLI, withSource } from '../helpers/mirror-check.js';
import { startServe } from '../helpers/serve-child.js';
import { startCli, until } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import type { FakeSource } from '../helpers/fake-source.js';
import { RGW_SKIP, startRgw, type RgwServer } from '../helpers/rgw.js';
import { POSTGRES_SKIP, startPostgres } from '../helpers/postgres.js';
import pg from 'pg';

const BUCKET = 'mirror';

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

void describe('sync and audit into s3:// on Ceph RGW', { skip: RGW_SKIP }, () => {
  let rgw: RgwServer;
  let s3: S3Client;
  let work: string;

  before(async () => {
    rgw = await startRgw();
    await rgw.createBucket(BUCKET);
    s3 = new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } });
    work = await mkdtemp(join(tmpdir(), 'rs-s3-cli-'));
  });
  after(async () => {
    s3?.destroy();
    await rgw?.stop();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  /** The CLI in a child process with the RGW's AWS variables (and `extra`), killed after 5 minutes. */
  function cli(args: string[], extra: Record<string, string> = {}): Promise<Ran> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...rgw.env, ...extra } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 300_000);
      child.on('close', (status) => {
        clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
    });
  }

  /** Every object under `prefix/`, by key relative to it, with its bytes. */
  async function bucketCopy(prefix: string): Promise<Map<string, Buffer>> {
    const out = new Map<string, Buffer>();
    let token: string | undefined;
    for (let page = 0; page < 100; page++) {
      const answer = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${prefix}/`, ContinuationToken: token }));
      for (const o of answer.Contents ?? []) {
        const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: o.Key }));
        out.set(o.Key!.slice(prefix.length + 1), Buffer.from(await got.Body!.transformToByteArray()));
      }
      if (answer.IsTruncated !== true) break;
      token = answer.NextContinuationToken;
    }
    return out;
  }

  /** The bucket holds exactly the Source's files, byte for byte. */
  async function sameAsSource(src: FakeSource, prefix: string): Promise<void> {
    const copy = await bucketCopy(prefix);
    assert.deepEqual([...copy.keys()].sort(), [...src.files.keys()].sort(), 'the same keys');
    const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');
    for (const [key, file] of src.files) assert.equal(md5(copy.get(key)!), md5(file.body), `object ${key} is byte-identical`);
  }

  void test('a few hundred files: baseline, then changes with --delete, audit in sync; a corrupted object found and repaired', async (t) => {
    await withSource(async (src) => {
      for (let i = 0; i < 300; i++) src.put(`d${i % 7}/r${i}.txt`, `resource ${i}\n`.repeat(1 + (i % 50)));
      src.put('big/blob.bin', Buffer.alloc(3 * 1024 * 1024 + 7, 'x')); // spooled, not held in memory
      src.put('name with spaces/é.txt', 'unicode path\n');
      src.publish();
      const state = join(work, 'site.sqlite');
      const dest = `s3://${BUCKET}/site`;

      const first = await cli(['sync', src.capabilityList, dest, '--state', state, '--json']);
      assert.equal(first.status, 0, first.stderr);
      const report = JSON.parse(first.stdout) as { created: number; dest: string; failed: unknown[] };
      assert.equal(report.created, 302);
      assert.equal(report.dest, 's3://mirror/site');
      await sameAsSource(src, 'site');

      for (let i = 0; i < 40; i++) src.put(`d${i % 7}/r${i}.txt`, `changed ${i}\n`);
      for (let i = 40; i < 60; i++) src.remove(`d${i % 7}/r${i}.txt`);
      src.put('new/one.txt', 'new\n');
      src.publish();
      const before = await bucketCopy('site');
      const dry = await cli(['sync', src.capabilityList, dest, '--state', state, '--delete', '--dry-run']);
      assert.equal(dry.status, 0, dry.stderr);
      assert.match(dry.stdout, /plan: 1 to create, 40 to update, 20 to delete, \d+ unchanged/);
      assert.deepEqual(await bucketCopy('site'), before, 'a dry run changes nothing in the bucket');
      const second = await cli(['sync', src.capabilityList, dest, '--state', state, '--delete']);
      assert.equal(second.status, 0, second.stderr);
      assert.match(second.stdout, /sync of .* into s3:\/\/mirror\/site\n\s+created 1, updated 40, deleted 20,/);
      await sameAsSource(src, 'site');

      const audited = await cli(['audit', src.capabilityList, dest, '--state', state]);
      assert.equal(audited.status, 0, audited.stdout + audited.stderr);
      assert.match(audited.stdout, /Audit of s3:\/\/mirror\/site against .*: in sync/);

      await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'site/d1/r71.txt', Body: 'corrupted in the bucket\n' }));
      const found = await cli(['audit', src.capabilityList, dest, '--state', state, '--json']);
      assert.equal(found.status, 1, found.stderr);
      const audit = JSON.parse(found.stdout) as { inSync: boolean; changed: { path: string }[] };
      assert.deepEqual(audit.changed.map((c) => c.path), ['d1/r71.txt']);

      const repaired = await cli(['audit', src.capabilityList, dest, '--state', state, '--repair']);
      assert.equal(repaired.status, 0, repaired.stdout + repaired.stderr);
      await sameAsSource(src, 'site');
      t.diagnostic(`RGW resident memory after the syncs: ${rgw.memoryMB()} MB`);
    });
  });

  void test('with --state postgres:// the rows are keyed by the s3:// URL; audit in sync', { skip: POSTGRES_SKIP }, async () => {
    const cluster = await startPostgres();
    const sql = new pg.Client({ connectionString: cluster.url });
    try {
      await sql.connect();
      await withSource(async (src) => {
        for (let i = 0; i < 20; i++) src.put(`p/${i}.txt`, `pg ${i}\n`);
        src.publish();
        const synced = await cli(['sync', src.capabilityList, `s3://${BUCKET}/pg`, '--state', cluster.url]);
        assert.equal(synced.status, 0, synced.stderr);
        await sameAsSource(src, 'pg');
        const rows = await sql.query<{ n: string }>('SELECT count(*) AS n FROM resourcesync_resources WHERE destination = $1', [`s3://${BUCKET}/pg`]);
        assert.equal(Number(rows.rows[0]!.n), 20);
        const audited = await cli(['audit', src.capabilityList, `s3://${BUCKET}/pg`, '--state', cluster.url]);
        assert.equal(audited.status, 0, audited.stdout + audited.stderr);
      });
    } finally {
      await sql.end().catch(() => undefined);
      await cluster.stop();
    }
  });

  void test('--prefer-dump: the Resource Dump of `resourcesync serve --dumps` lands in the bucket byte-identical', async () => {
    const site = join(work, 'dumped-site');
    const files = new Map<string, Buffer>();
    for (let i = 0; i < 50; i++) files.set(`s${i % 4}/f${i}.txt`, Buffer.from(`dumped ${i}\n`.repeat(i + 1)));
    files.set('large.bin', Buffer.alloc(2 * 1024 * 1024, 'L'));
    for (const [path, body] of files) {
      await mkdir(join(site, ...path.split('/').slice(0, -1)), { recursive: true });
      await writeFile(join(site, ...path.split('/')), body);
    }
    const serve = await startServe([site, '--dumps', '--no-hub']);
    try {
      const synced = await cli(['sync', `${serve.url}/`, `s3://${BUCKET}/dumped`, '--state', join(work, 'dumped.sqlite'), '--prefer-dump', '--json']);
      assert.equal(synced.status, 0, synced.stderr);
      const report = JSON.parse(synced.stdout) as { created: number; sets: { documents: string[] }[] };
      assert.equal(report.created, files.size, synced.stdout);
      assert.ok(report.sets.some((set) => set.documents.some((d) => /resourcedump/.test(d))), `a Resource Dump was read: ${synced.stdout}`);
      const copy = await bucketCopy('dumped');
      assert.deepEqual([...copy.keys()].sort(), [...files.keys()].sort());
      for (const [path, body] of files) assert.ok(copy.get(path)!.equals(await readFile(join(site, ...path.split('/')))) && copy.get(path)!.equals(body), path);
    } finally {
      serve.child.kill('SIGTERM');
      await exited(serve.child);
    }
  });

  void test('sync --follow applies a change into the bucket; SIGTERM exits 0', async () => {
    await withSource(async (src) => {
      src.put('a.txt', 'a\n');
      src.publish();
      const f = startCli(['sync', src.capabilityList, `s3://${BUCKET}/followed`, '--follow', '--interval', '0.2', '--state', join(work, 'followed.sqlite')], { ...process.env, ...rgw.env });
      try {
        await until(`the polling notice; ${f.err()}`, () => /polling every 0.2 s/.test(f.err()));
        src.put('later.txt', 'later\n');
        src.publish();
        const deadline = Date.now() + 60_000;
        while (!(await bucketCopy('followed')).has('later.txt')) {
          assert.ok(Date.now() < deadline, `later.txt never arrived; ${f.err()}`);
          await new Promise((r) => setTimeout(r, 100));
        }
        f.child.kill('SIGTERM');
        assert.equal((await exited(f.child))[0], 0, f.err());
        await sameAsSource(src, 'followed');
      } finally {
        if (f.child.exitCode === null) f.child.kill('SIGKILL');
      }
    });
  });

  void test('usage errors exit 2: an s3:// destination without --state, a malformed one, --s3-endpoint with a folder', async () => {
    const noState = await cli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', `s3://${BUCKET}/x`]);
    assert.equal(noState.status, 2);
    assert.match(noState.stderr, /s3:\/\/ destination keeps its state elsewhere: add --state/);
    const auditNoState = await cli(['audit', 'http://127.0.0.1:9/capabilitylist.xml', `s3://${BUCKET}/x`]);
    assert.equal(auditNoState.status, 2);
    const noBucket = await cli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', 's3:///x', '--state', join(work, 'x.sqlite')]);
    assert.equal(noBucket.status, 2);
    assert.match(noBucket.stderr, /does not name a bucket/);
    const up = await cli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', `s3://${BUCKET}/a/../b`, '--state', join(work, 'x.sqlite')]);
    assert.equal(up.status, 2);
    const endpointWithFolder = await cli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', join(work, 'folder'), '--s3-endpoint', rgw.endpoint]);
    assert.equal(endpointWithFolder.status, 2);
    assert.match(endpointWithFolder.stderr, /--s3-endpoint goes with an s3:\/\/BUCKET\/PREFIX destination/);
  });

  void test('a missing bucket and refused credentials exit 3 naming the bucket and the endpoint, never the secret', async () => {
    await withSource(async (src) => {
      src.put('a.txt', 'a\n');
      src.publish();
      const missing = await cli(['sync', src.capabilityList, 's3://no-such-bucket/p', '--state', join(work, 'missing.sqlite')]);
      assert.equal(missing.status, 3, missing.stderr);
      assert.match(missing.stderr, new RegExp(`Bucket 'no-such-bucket' does not exist at ${rgw.endpoint.replace(/\./g, '\\.')}`));
      const wrong = await cli(['audit', src.capabilityList, `s3://${BUCKET}/p`, '--state', join(work, 'wrong.sqlite'), '--s3-endpoint', rgw.endpoint], { AWS_ENDPOINT_URL: 'http://127.0.0.1:9', AWS_SECRET_ACCESS_KEY: 'NOT-THE-SECRET' });
      assert.equal(wrong.status, 3, wrong.stderr);
      assert.match(wrong.stderr, /refused the credentials for bucket 'mirror'/);
      assert.doesNotMatch(wrong.stderr + wrong.stdout, /NOT-THE-SECRET/);
      assert.doesNotMatch(wrong.stderr, /NodeVersionSupportWarning/);
    });
  });
});
