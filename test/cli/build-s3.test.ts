/**
 * `build … --out s3://bucket/prefix` against Ceph RGW: every document in the bucket with its Content-Type, a
 * Destination synced from the bucket (served by RGW itself, anonymous reads allowed by a bucket policy)
 * byte-identical, a second build uploading only what changed (PUTs counted by a proxy in front of RGW) and
 * deleting what went; a missing bucket (exit 3) and the usage errors.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative } from 'node:path';
import { HeadObjectCommand, PutBucketPolicyCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { REPO_ROOT } from '../helpers/paths.js';
import { POSTGRES_SKIP, startPostgres, type PostgresCluster } from '../helpers/postgres.js';
import { RGW_SKIP, startRgw, type RgwServer } from '../helpers/rgw.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const BUCKET = 'source';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 180_000,
    env: { ...process.env, ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

/** Every file below `dir` but the state folder, as `/`-separated relative paths. */
function filesOf(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (d.name === '.resourcesync') continue;
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...filesOf(p, base));
    else out.push(relative(base, p).split('\\').join('/'));
  }
  return out.sort();
}

/** A proxy in front of RGW that counts the requests by method (the signature holds: the Host header is passed on). */
async function countingProxy(
  target: string,
): Promise<{ url: string; counts: Map<string, number>; keys: string[]; close: () => Promise<void> }> {
  const counts = new Map<string, number>();
  const keys: string[] = [];
  const to = new URL(target);
  const server: Server = createServer((req, res) => {
    counts.set(req.method!, (counts.get(req.method!) ?? 0) + 1);
    if (req.method === 'PUT' || req.method === 'DELETE')
      keys.push(`${req.method} ${decodeURIComponent(req.url!.split('?')[0]!)}`);
    const forward = request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { url, counts, keys, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

void test('build --out s3://… is a usage error without --snapshots, with a bad bucket name or --s3-endpoint alone', async () => {
  const tmp = await tempDir();
  try {
    mkdirSync(join(tmp.dir, 'data'));
    writeFileSync(join(tmp.dir, 'data', 'a.txt'), 'a');
    const base = ['build', join(tmp.dir, 'data'), '--base-url', 'http://example.org/'];
    const noHistory = await cli([...base, '--out', 's3://bucket/site']);
    assert.equal(noHistory.status, 2);
    assert.match(noHistory.stderr, /--snapshots/);
    const badName = await cli([...base, '--out', 's3://No_Such/site', '--snapshots', join(tmp.dir, 'h.sqlite')]);
    assert.equal(badName.status, 2);
    const endpointAlone = await cli([...base, '--out', join(tmp.dir, 'out'), '--s3-endpoint', 'http://127.0.0.1:1']);
    assert.equal(endpointAlone.status, 2);
  } finally {
    await tmp.cleanup();
  }
});

let rgw: RgwServer | undefined;
/** The history of the two-machine test: PostgreSQL where installed, else an SQLite file. */
let cluster: PostgresCluster | undefined;
if (RGW_SKIP === false) {
  before(async () => {
    if (POSTGRES_SKIP === false) cluster = await startPostgres();
    rgw = await startRgw();
    await rgw.createBucket(BUCKET);
    // anyone may read the objects, as a bucket that is a Source is read
    const client = s3();
    await client.send(
      new PutBucketPolicyCommand({
        Bucket: BUCKET,
        Policy: JSON.stringify({
          Version: '2012-10-17',
          Statement: [
            { Effect: 'Allow', Principal: '*', Action: ['s3:GetObject'], Resource: [`arn:aws:s3:::${BUCKET}/*`] },
          ],
        }),
      }),
    );
    client.destroy();
  });
  after(async () => {
    await rgw?.stop();
    await cluster?.stop();
  });
}

function s3(): S3Client {
  return new S3Client({
    endpoint: rgw!.endpoint,
    region: rgw!.region,
    forcePathStyle: true,
    credentials: { accessKeyId: rgw!.accessKeyId, secretAccessKey: rgw!.secretAccessKey },
  });
}

void test(
  'build --out s3://bucket/prefix: a working Source in the bucket; the next build uploads only what changed and deletes what went',
  { skip: RGW_SKIP },
  async () => {
    const tmp = await tempDir('rs-build-s3-');
    const proxy = await countingProxy(rgw!.endpoint);
    const client = s3();
    try {
      const data = join(tmp.dir, 'data');
      mkdirSync(join(data, 'sub'), { recursive: true });
      const files: Record<string, string | Buffer> = {
        'a.txt': 'alpha',
        'sub/b.txt': 'bravo',
        'c d.txt': 'charlie',
        'bin.dat': Buffer.from([0, 1, 2, 255, 254]),
      };
      // the resources are in the bucket too, beside the documents: the bucket is the whole Source
      const put = async (path: string, body: string | Buffer | undefined): Promise<void> => {
        if (body === undefined) rmSync(join(data, path));
        else {
          writeFileSync(join(data, path), body);
          await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `site/${path}`, Body: body }));
        }
      };
      for (const [path, body] of Object.entries(files)) await put(path, body);
      const baseUrl = `${rgw!.endpoint}/${BUCKET}/site/`;
      const build = (): Promise<Run> =>
        cli(
          [
            'build',
            data,
            '--base-url',
            baseUrl,
            '--out',
            `s3://${BUCKET}/site`,
            '--s3-endpoint',
            proxy.url,
            '--snapshots',
            join(tmp.dir, 'history.sqlite'),
            '--dumps',
            '--retention',
            '1',
            '--json',
          ],
          rgw!.env,
        );

      const first = await build();
      assert.equal(first.status, 0, first.stderr);
      assert.doesNotMatch(first.stderr, /Warning/, 'no SDK warning on stderr');
      const r1 = JSON.parse(first.stdout) as {
        documents: string[];
        sink: { uploaded: number; unchanged: number; deleted: number };
      };
      assert.equal(r1.sink.uploaded, r1.documents.length);
      assert.equal(proxy.counts.get('PUT'), r1.documents.length, 'one PUT a document');
      for (const doc of r1.documents) {
        const answer = await fetch(`${rgw!.endpoint}${doc}`);
        assert.equal(answer.status, 200, doc);
        assert.equal(
          answer.headers.get('content-type'),
          doc.endsWith('.zip')
            ? 'application/zip'
            : doc.endsWith('robots.txt')
              ? 'text/plain; charset=utf-8'
              : 'application/xml',
          doc,
        );
        await answer.arrayBuffer();
      }

      // a Destination synced from the bucket holds every resource byte for byte
      const dest = join(tmp.dir, 'dest');
      const sync = await cli(['sync', `${baseUrl}.well-known/resourcesync`, dest, '--base', baseUrl, '--json']);
      assert.equal(sync.status, 0, sync.stderr + sync.stdout);
      assert.deepEqual(filesOf(dest), filesOf(data));
      for (const path of filesOf(data))
        assert.deepEqual(readFileSync(join(dest, path)), readFileSync(join(data, path)), path);

      // changes: the next build uploads the documents that changed, deletes those that went, leaves the rest
      await put('a.txt', 'alpha, edited');
      await put('sub/b.txt', undefined);
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'site/e.txt', Body: 'echo' }));
      writeFileSync(join(data, 'e.txt'), 'echo');
      proxy.counts.clear();
      proxy.keys.length = 0;
      const sdBefore = await client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: 'site/.well-known/resourcesync' }),
      );
      const second = await build();
      assert.equal(second.status, 0, second.stderr);
      const r2 = JSON.parse(second.stdout) as {
        documents: string[];
        changes: { created: number; updated: number; deleted: number };
        sink: { uploaded: number; unchanged: number; deleted: number };
      };
      assert.deepEqual(r2.changes, { created: 1, updated: 1, deleted: 1 });
      assert.equal(proxy.counts.get('PUT') ?? 0, r2.sink.uploaded, proxy.keys.join('\n'));
      assert.ok(r2.sink.uploaded < r2.documents.length, 'not every document again');
      assert.ok(r2.sink.unchanged > 0);
      assert.ok(
        !proxy.keys.includes(`PUT /${BUCKET}/site/.well-known/resourcesync`),
        'the unchanged Source Description is not uploaded',
      );
      assert.ok(!proxy.keys.includes(`PUT /${BUCKET}/site/robots.txt`));
      assert.ok(proxy.keys.includes(`PUT /${BUCKET}/site/.resourcesync/data/changelist.xml`));
      assert.ok(r2.sink.deleted > 0, 'the archived generation past --retention 1 went');
      assert.equal(proxy.counts.get('DELETE') ?? 0, r2.sink.deleted);
      assert.ok(
        proxy.keys.includes(`DELETE /${BUCKET}/site/.resourcesync/data/resourcelist-1.xml`),
        proxy.keys.join('\n'),
      );
      // gone: RGW answers 403 to an anonymous read of a key that is not there (no list permission)
      assert.ok([403, 404].includes((await fetch(`${baseUrl}.resourcesync/data/resourcelist-1.xml`)).status));
      const sdAfter = await client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: 'site/.well-known/resourcesync' }),
      );
      assert.equal(sdAfter.ETag, sdBefore.ETag);
      // the resources beside the documents are left alone
      assert.equal((await fetch(`${baseUrl}c%20d.txt`)).status, 200);

      // the Destination follows: the change list brings the edit, the creation and (with --delete) the deletion
      const again = await cli([
        'sync',
        `${baseUrl}.well-known/resourcesync`,
        dest,
        '--base',
        baseUrl,
        '--delete',
        '--json',
      ]);
      assert.equal(again.status, 0, again.stderr + again.stdout);
      assert.deepEqual(filesOf(dest), filesOf(data));
      for (const path of filesOf(data))
        assert.deepEqual(readFileSync(join(dest, path)), readFileSync(join(data, path)), path);
    } finally {
      client.destroy();
      await proxy.close();
      await tmp.cleanup();
    }
  },
);

void test(
  'build --out s3://… --gzip: gzipped documents carry Content-Encoding: gzip; a missing bucket exits 3 naming bucket and endpoint',
  { skip: RGW_SKIP },
  async () => {
    const tmp = await tempDir('rs-build-s3-gzip-');
    const client = s3();
    try {
      const data = join(tmp.dir, 'data');
      mkdirSync(data);
      writeFileSync(join(data, 'a.txt'), 'alpha');
      const args = (out: string): string[] => [
        'build',
        data,
        '--base-url',
        'http://example.org/',
        '--out',
        out,
        '--snapshots',
        join(tmp.dir, `${out.length}.sqlite`),
        '--gzip',
      ];
      const gz = await cli(args(`s3://${BUCKET}/gz`), rgw!.env);
      assert.equal(gz.status, 0, gz.stderr);
      const head = await client.send(
        new HeadObjectCommand({ Bucket: BUCKET, Key: 'gz/.resourcesync/data/resourcelist.xml.gz' }),
      );
      assert.equal(head.ContentType, 'application/xml');
      assert.equal(head.ContentEncoding, 'gzip');
      const missing = await cli(args('s3://no-such-bucket/x'), rgw!.env);
      assert.equal(missing.status, 3, missing.stderr);
      assert.match(missing.stderr, /no-such-bucket/);
      assert.ok(missing.stderr.includes(rgw!.endpoint), missing.stderr);
      assert.doesNotMatch(missing.stderr, /TESTSECRET/);
    } finally {
      client.destroy();
      await tmp.cleanup();
    }
  },
);

void test(
  'build --out s3://… from two folders (two machines) sharing one history: the second brings its working copy up to the bucket first',
  { skip: RGW_SKIP },
  async () => {
    const tmp = await tempDir('rs-build-s3-two-');
    try {
      const dirs = ['a', 'b'].map((m) => join(tmp.dir, m, 'data'));
      for (const d of dirs) mkdirSync(d, { recursive: true });
      const write = (path: string, content: string): void => {
        for (const d of dirs) writeFileSync(join(d, path), content);
      };
      const build = async (
        dir: string,
      ): Promise<{ documents: string[]; changes: Record<string, number>; sink: Record<string, number> }> => {
        const r = await cli(
          [
            'build',
            dir,
            '--base-url',
            'http://example.org/two/',
            '--out',
            `s3://${BUCKET}/two`,
            '--snapshots',
            join(tmp.dir, 'history.sqlite'),
            '--json',
          ],
          rgw!.env,
        );
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout) as {
          documents: string[];
          changes: Record<string, number>;
          sink: Record<string, number>;
        };
      };
      write('a.txt', 'one');
      write('b.txt', 'two');
      const first = await build(dirs[0]!);
      assert.equal(first.sink.uploaded, first.documents.length);
      write('a.txt', 'one, edited');
      const second = await build(dirs[1]!);
      assert.deepEqual(second.changes, { created: 0, updated: 1, deleted: 0 });
      assert.ok(second.sink.downloaded! > 0, 'the empty working copy was brought up to the bucket');
      assert.ok(second.sink.uploaded! < second.documents.length, 'only what changed went up');
      const changeList = await (await fetch(`${rgw!.endpoint}/${BUCKET}/two/.resourcesync/data/changelist.xml`)).text();
      assert.equal([...changeList.matchAll(/<url>/g)].length, 1);
      assert.match(changeList, /<loc>http:\/\/example\.org\/two\/a\.txt<\/loc>[\s\S]*?change="updated"/);
      // both at once: they take turns (the first set's documents lease), and the bucket ends with the change
      write('c.txt', 'three');
      const both = await Promise.all(dirs.map((d) => build(d)));
      assert.deepEqual(both.map((r) => r.changes.created).sort(), [0, 1]);
      const after = await (await fetch(`${rgw!.endpoint}/${BUCKET}/two/.resourcesync/data/changelist.xml`)).text();
      assert.match(after, /<loc>http:\/\/example\.org\/two\/c\.txt<\/loc>[\s\S]*?change="created"/);
    } finally {
      await tmp.cleanup();
    }
  },
);
