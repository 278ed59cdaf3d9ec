// `sync s3://… --queue` with three `worker` child processes writing into a bucket of a throwaway Ceph RGW, the queue
// and the state in a throwaway PostgreSQL, against a Source of a few thousand small files on a test server. One
// worker is killed with -9 in the middle of its second chunk: the sync exits 0, `audit` finds the bucket in sync,
// every object in the bucket is byte-identical to the Source, no row is committed twice, and the bucket received at
// most one chunk's PUTs more than there are resources (counted by loopback proxies in front of RGW: one for the worker
// to be killed, so that it is killed once some objects of its second chunk are written, one for the others). The run's
// progress is asked of the queue (`worker --status --json`) while the killed worker's job waits, and at the end.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Agent, createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import pg from 'pg';
import { withSource } from '../helpers/mirror-check.js';
import { startCli, until, type CliChild } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, startPostgres, type PostgresCluster } from '../helpers/postgres.js';
import { RGW_SKIP, startRgw, type RgwServer } from '../helpers/rgw.js';
import type { FakeSource } from '../helpers/fake-source.js';
import type { QueueStatus } from '../../src/destination/queue-status.js';

const N = 2500;
const CHUNK = 100;
const BUCKET = 'mirror';
const PREFIX = 'site';
const DEST = `s3://${BUCKET}/${PREFIX}`;
const SKIP = RGW_SKIP !== false ? RGW_SKIP : POSTGRES_SKIP;
// the SDK line the package pins warns that later lines will need Node 22
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** A loopback proxy in front of RGW that counts the requests by method (the Host header passes as signed). */
interface CountingProxy {
  endpoint: string;
  puts: Map<string, number>;
  close(): Promise<void>;
}

async function countingProxy(target: string): Promise<CountingProxy> {
  const to = new URL(target);
  const agent = new Agent({ keepAlive: true, maxSockets: 128 });
  const puts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    if (req.method === 'PUT') puts.set(req.url ?? '', (puts.get(req.url ?? '') ?? 0) + 1);
    const out = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers, agent }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    out.on('error', () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    puts,
    close: () => {
      agent.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

void describe('sync --queue into s3:// with three workers, one killed with -9', { skip: SKIP }, () => {
  let rgw: RgwServer;
  let cluster: PostgresCluster;
  let sql: pg.Client;
  let proxy: CountingProxy;
  let killedProxy: CountingProxy;
  let s3: S3Client;
  const children: CliChild[] = [];

  before(async () => {
    [rgw, cluster] = await Promise.all([startRgw(), startPostgres()]);
    await rgw.createBucket(BUCKET);
    sql = new pg.Client({ connectionString: cluster.url });
    await sql.connect();
    proxy = await countingProxy(rgw.endpoint);
    killedProxy = await countingProxy(rgw.endpoint);
    s3 = new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } });
  });
  after(async () => {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    s3?.destroy();
    await proxy?.close();
    await killedProxy?.close();
    await sql?.end();
    await cluster?.stop();
    await rgw?.stop();
  });

  /** The CLI with the RGW's credentials, its endpoint a counting proxy (or none: `--s3-endpoint` names it). */
  function cli(args: string[], endpoint: string | undefined = proxy.endpoint): CliChild {
    const env: NodeJS.ProcessEnv = { ...process.env, ...rgw.env, AWS_ENDPOINT_URL: endpoint };
    if (endpoint === undefined) delete env.AWS_ENDPOINT_URL;
    const c = startCli(args, env);
    children.push(c);
    return c;
  }

  /** A worker whose endpoint is in its environment, or given as `--s3-endpoint` (`option`). */
  function worker(endpoint: string, option = false): CliChild {
    return cli(['worker', '--queue', cluster.url, '--json', '--poll', '50', ...(option ? ['--s3-endpoint', endpoint] : [])], option ? undefined : endpoint);
  }

  /** `worker --status --json`. */
  async function status(): Promise<QueueStatus> {
    const c = cli(['worker', '--queue', cluster.url, '--status', '--json']);
    const [code] = await exited(c.child, 60_000);
    assert.equal(code, 0, c.err());
    return JSON.parse(c.out()) as QueueStatus;
  }

  const sum = (m: Map<string, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

  /** The chunk lines a worker printed. */
  function chunks(c: CliChild): { id: string; retry: number; outcome?: { created: number } }[] {
    return c
      .out()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { id: string; retry: number; outcome?: { created: number } });
  }

  /** Every object in the bucket, by key, with the MD5 of its bytes (16 GETs at a time). */
  async function bucketDigests(): Promise<Map<string, string>> {
    const keys: string[] = [];
    let token: string | undefined;
    for (let page = 0; page < 100; page++) {
      const answer = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
      for (const o of answer.Contents ?? []) keys.push(o.Key!);
      if (answer.IsTruncated !== true) break;
      token = answer.NextContinuationToken;
    }
    const out = new Map<string, string>();
    let next = 0;
    const one = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++]!;
        const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        out.set(key, createHash('md5').update(await got.Body!.transformToByteArray()).digest('hex'));
      }
    };
    await Promise.all(Array.from({ length: 16 }, one));
    return out;
  }

  function files(src: FakeSource): void {
    for (let i = 0; i < N; i++) src.put(`d${i % 10}/f${i}.txt`, `file ${i}\n`.repeat(1 + (i % 4)));
  }

  void test(`${N} resources, 3 workers, one killed mid-chunk: exit 0, audit in sync, the bucket byte-identical, nothing committed twice`, { timeout: 600_000 }, (t) =>
    withSource(async (src, _dir, server) => {
      files(src);
      src.publish();
      // every resource GET a little slower, so that a chunk lasts long enough to be interrupted
      server.fault = async (req) => {
        if (req.url?.endsWith('.txt') === true) await sleep(20);
        return false;
      };
      const started = Date.now();
      const workers = [worker(killedProxy.endpoint), worker(proxy.endpoint), worker(proxy.endpoint, true)];
      const sync = cli(['sync', src.capabilityList, DEST, '--queue', cluster.url, '--state', cluster.url, '--json', '--chunk-size', String(CHUNK), '--job-expiry', '10']);
      await until('a first chunk done by the first worker', () => chunks(workers[0]!).length >= 1, 240_000);
      // killed once it has written some objects of a chunk it has not completed
      await until('the first worker writing its next chunk', () => sum(killedProxy.puts) >= CHUNK * chunks(workers[0]!).length + 10, 120_000);
      workers[0]!.child.kill('SIGKILL');
      const doneByKilled = chunks(workers[0]!).length;
      // the run's progress, asked of the queue while the killed worker's job waits to expire
      const during = await status();
      assert.equal(during.runs.length, 1);
      const r = during.runs[0]!;
      assert.equal(r.storage, DEST);
      assert.ok(r.active >= 1 && r.completed < r.chunks, JSON.stringify(r));
      assert.equal(r.waiting + r.active + r.completed + r.failed, r.chunks);
      const [code] = await exited(sync.child, 400_000);
      const seconds = (Date.now() - started) / 1000;
      assert.equal(code, 0, sync.out() + sync.err());
      const report = JSON.parse(sync.out()) as { mode: string; dest: string; created: number; failed: unknown[] };
      assert.deepEqual([report.mode, report.dest, report.created, report.failed], ['baseline', DEST, N, []]);
      for (const w of workers.slice(1)) w.child.kill('SIGTERM');
      for (const w of workers.slice(1)) assert.equal((await exited(w.child, 60_000))[0], 0, w.err());
      const done = [...chunks(workers[1]!), ...chunks(workers[2]!)];
      assert.ok(chunks(workers[2]!).length >= 1, 'the worker given --s3-endpoint did chunks too');
      const retried = done.filter((c) => c.retry > 0);
      assert.ok(retried.length >= 1, "the killed worker's chunk, done by another after it expired");

      // no row committed twice: one row per resource
      const rows = await sql.query<{ n: string; keys: string }>('SELECT count(*) AS n, count(DISTINCT path) AS keys FROM resourcesync_resources WHERE destination = $1', [DEST]);
      assert.deepEqual([Number(rows.rows[0]!.n), Number(rows.rows[0]!.keys)], [N, N]);
      // at most one chunk written again (the killed worker's), each object at least once
      const puts = sum(proxy.puts) + sum(killedProxy.puts);
      assert.equal(new Set([...proxy.puts.keys(), ...killedProxy.puts.keys()]).size, N);
      assert.ok(sum(killedProxy.puts) > CHUNK * doneByKilled, 'the killed worker had written part of a chunk it did not complete');
      assert.ok(puts <= N + CHUNK, `${puts} PUTs for ${N} resources`);
      const gets = server.requests.filter((r) => r.method === 'GET' && r.url.endsWith('.txt')).length;
      assert.ok(gets <= N + CHUNK, `${gets} GETs of the Source for ${N} resources`);

      const end = (await status()).runs[0]!;
      assert.deepEqual([end.chunks, end.completed, end.resources, end.done, end.failed], [N / CHUNK, N / CHUNK, N, N, 0]);
      assert.ok(end.retried >= 1, JSON.stringify(end));

      const audit = cli(['audit', src.capabilityList, DEST, '--state', cluster.url]);
      const [auditCode] = await exited(audit.child, 300_000);
      assert.equal(auditCode, 0, audit.out() + audit.err());
      assert.match(audit.out(), /: in sync/);

      // the bucket holds exactly the Source's files, byte for byte
      const inBucket = await bucketDigests();
      assert.equal(inBucket.size, N);
      for (const [path, f] of src.files) assert.equal(inBucket.get(`${PREFIX}/${path}`), createHash('md5').update(f.body).digest('hex'), path);
      t.diagnostic(`${N} resources in ${seconds.toFixed(1)} s (sync and workers); ${puts} PUTs (${sum(killedProxy.puts)} by the killed worker), ${gets} Source GETs, ${retried.length} chunk(s) retried`);
    }),
  );

  void test('sync --queue into a bucket that does not exist: exit 3 before any job, naming the bucket', async () => {
    const missing = cli(['sync', 'http://127.0.0.1:9/capabilitylist.xml', 's3://no-such-bucket/x', '--queue', cluster.url, '--state', cluster.url]);
    const [code] = await exited(missing.child, 120_000);
    assert.equal(code, 3, missing.out() + missing.err());
    assert.match(missing.err(), /no-such-bucket/);
    assert.doesNotMatch(missing.err(), /TESTSECRET/);
  });

  void test('worker --s3-endpoint that is not an http(s) URL: usage error, exit 2', async () => {
    const bad = cli(['worker', '--queue', cluster.url, '--s3-endpoint', 'ftp://127.0.0.1/']);
    const [code] = await exited(bad.child, 60_000);
    assert.equal(code, 2, bad.err());
    assert.match(bad.err(), /--s3-endpoint/);
  });
});
