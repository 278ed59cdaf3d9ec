/**
 * `resourcesync aggregate` with `out: s3://…` over a real Ceph RGW and a throwaway PostgreSQL: the copies of a live
 * `serve` child and of a static Source are in the bucket byte for byte, the aggregate's documents are in the bucket
 * too, and a Destination synced from the bucket (served by a small static proxy on loopback: the "web server in
 * front of the bucket") gets every copy with `via` links naming the origin and the original's type; `check` judges
 * it conformant. The aggregator's own port serves no document (404), its /metrics does.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { readAggregateStatus } from '../src/aggregate/status.js';
import { exited } from './helpers/exited.js';
import { startCli, until, type CliChild } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { POSTGRES_SKIP, startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { RGW_SKIP, startRgw, type RgwServer } from './helpers/rgw.js';
import { startServe } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';
import { typedSource } from './helpers/typed-source.js';

const BUCKET = 'aggregate';
const PREFIX = 'pub';

let rgw: RgwServer | undefined;
let cluster: PostgresCluster | undefined;
let client: S3Client | undefined;
const skip = RGW_SKIP || POSTGRES_SKIP;

before(async () => {
  if (skip !== false) return;
  [rgw, cluster] = await Promise.all([startRgw(), startPostgres()]);
  await rgw.createBucket(BUCKET);
  client = new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } });
});
after(async () => {
  client?.destroy();
  await rgw?.stop();
  await cluster?.stop();
});

/** The object at `key`, or undefined when there is none. */
async function object(key: string): Promise<{ body: Buffer; type: string | undefined } | undefined> {
  try {
    const got = await client!.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return { body: Buffer.from(await got.Body!.transformToByteArray()), type: got.ContentType };
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return undefined;
    throw error;
  }
}

/** A static web server in front of the bucket: GET and HEAD of `/<path>` answer the object `<prefix>/<path>`. */
async function bucketProxy(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1);
    if (path.split('/').includes('..') || (req.method !== 'GET' && req.method !== 'HEAD')) return void res.writeHead(400).end();
    object(`${PREFIX}/${path}`).then(
      (o) => {
        if (o === undefined) return void res.writeHead(404).end();
        res.writeHead(200, { 'content-type': o.type ?? 'application/octet-stream', 'content-length': String(o.body.length) });
        res.end(req.method === 'HEAD' ? undefined : o.body);
      },
      () => void res.writeHead(502).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

void test('aggregate out: s3://: copies and documents in the bucket; a Destination of the bucket has the via links', { skip, timeout: 600_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-s3-');
  const children: CliChild['child'][] = [];
  const servers: Server[] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    for (const s of servers) await new Promise((r) => s.close(r));
    await cleanup();
  });
  const liveDir = join(dir, 'live');
  await mkdir(join(liveDir, 'sub'), { recursive: true });
  const past = new Date(Date.now() - 60_000);
  const liveFiles = { 'a.txt': 'alpha\n', 'sub/b.xml': '<b/>\n', 'caf\u00e9 menu.txt': 'menu\n' };
  for (const [p, c] of Object.entries(liveFiles)) {
    await writeFile(join(liveDir, p), c);
    await utimes(join(liveDir, p), past, past);
  }
  const live = await startServe([liveDir]);
  children.push(live.child);
  const typed = await typedSource({ 'doc.txt': { body: 'a document\n', type: 'text/x-special' } });
  servers.push(typed.server);
  const proxy = await bucketProxy();
  servers.push(proxy.server);

  const work = join(dir, 'work');
  const config = join(dir, 'aggregate.yaml');
  await writeFile(
    config,
    `base-url: ${proxy.url}/\nout: s3://${BUCKET}/${PREFIX}\nwork: ${work}\nstate: ${cluster!.url}\nmax-backoff: 2\nsources:\n` +
      `  - url: ${live.url}/\n    id: live\n    interval: 1\n    mode: poll\n  - url: ${typed.origin}/\n    id: typed\n    interval: 1\n`,
  );
  const agg = startCli(['aggregate', config, '--port', '0', '--verbose'], { ...process.env, ...rgw!.env });
  children.push(agg.child);
  await until('the aggregator listening', () => /^listening on /m.test(agg.out()) || agg.child.exitCode !== null);
  assert.equal(agg.child.exitCode, null, `aggregate exited: ${agg.err()}`);
  const own = /^listening on (\S+)/m.exec(agg.out())![1]!;
  const synced = (id: string): boolean => {
    try {
      return readAggregateStatus(work).find((s) => s.id === id)?.lastSync !== undefined;
    } catch {
      return false;
    }
  };
  await until('both Sources in step', () => synced('live') && synced('typed'), 120_000);

  // the copies in the bucket, byte for byte
  for (const [p, c] of Object.entries(liveFiles)) assert.equal((await object(`${PREFIX}/live/${p}`))?.body.toString(), c, p);
  assert.equal((await object(`${PREFIX}/typed/doc.txt`))?.body.toString(), 'a document\n');

  // the documents in the bucket, both Sources listed
  let sd = '';
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    sd = (await object(`${PREFIX}/.well-known/resourcesync`))?.body.toString() ?? '';
    if (sd.includes('/.resourcesync/live/capabilitylist.xml') && sd.includes('/.resourcesync/typed/capabilitylist.xml')) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(sd.includes(`${proxy.url}/.resourcesync/live/capabilitylist.xml`) && sd.includes(`${proxy.url}/.resourcesync/typed/capabilitylist.xml`), sd);
  const rl = (await object(`${PREFIX}/.resourcesync/typed/resourcelist.xml`))?.body.toString() ?? '';
  assert.match(rl, /<loc>[^<]*\/typed\/doc\.txt<\/loc>/);

  // the aggregator's port: no document, its metrics
  assert.equal((await fetch(`${own}/.well-known/resourcesync`)).status, 404);
  assert.match(await (await fetch(`${own}/metrics`)).text(), /^resourcesync_aggregate_source_up\{source="typed"\} 1$/m);

  // the bucket behind a web server is a conformant Source; a Destination of it has the via links
  const check = await runCli(['check', `${proxy.url}/`]);
  assert.equal(check.status, 0, `check: ${check.stdout}${check.stderr}`);
  const fresh = join(dir, 'fresh');
  const s1 = await runCli(['sync', `${proxy.url}/`, fresh, '--delete']);
  assert.equal(s1.status, 0, s1.stderr);
  for (const [p, c] of Object.entries(liveFiles)) assert.equal(await readFile(join(fresh, 'live', ...p.split('/')), 'utf8'), c, p);
  const links = await runCli(['links', fresh, '--json', '--rel', 'via']);
  assert.equal(links.status, 0, links.stderr);
  const vias = links.stdout.trim().split('\n').map((l) => JSON.parse(l) as { path: string; links: { via?: { href: string; type?: string; length?: string }[] } });
  const viaOf = (path: string): { href: string; type?: string; length?: string } | undefined => vias.find((v) => v.path === path)?.links.via?.[0];
  assert.equal(viaOf('typed/doc.txt')?.href, `${typed.origin}/doc.txt`);
  assert.equal(viaOf('typed/doc.txt')?.type, 'text/x-special');
  assert.equal(viaOf('live/a.txt')?.href, `${live.url}/a.txt`);
  assert.equal(viaOf('live/a.txt')?.length, '6');

  agg.child.kill('SIGTERM');
  assert.equal((await exited(agg.child))[0], 0, agg.err());
});
