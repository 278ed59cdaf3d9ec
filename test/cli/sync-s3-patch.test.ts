// Patches applied in a mirror kept in a bucket (Z39.99 §14.4): a Source whose Change List carries JSON Patch links
// (rel="http://www.openarchives.org/rs/terms/patch"), synced with `sync` into s3://BUCKET/PREFIX on Ceph RGW (state
// in an SQLite file). The copy in the bucket is read, patched and put back: after the change the object is
// byte-identical to the Source's new version and only the patch was fetched, not the resource. A patch whose result does not match the entry's hash is
// not kept: the resource is fetched whole instead, and the object is right again.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { REL_PATCH } from '../../src/core/constants.js';
import { CLI, withSource } from '../helpers/mirror-check.js';
import type { FakeSource } from '../helpers/fake-source.js';
import type { TestServer } from '../helpers/test-server.js';
import { RGW_SKIP, startRgw, type RgwServer } from '../helpers/rgw.js';

const BUCKET = 'patched';
const md5 = (b: string | Buffer): string => createHash('md5').update(b).digest('hex');

interface Ran {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The Source's Change List with a JSON Patch link on the last change of `path` (the patch served at `patchPath`). */
function withPatchLink(src: FakeSource, server: TestServer, path: string, patchPath: string, patch: string): void {
  const last = src.changes.filter((c) => c.path === path).at(-1)!;
  const xml = src.changeListXml(src.changes, src.since, undefined);
  const link = `<rs:ln rel="${REL_PATCH}" href="${src.origin}${patchPath}" type="application/json-patch+json" hash="md5:${md5(patch)}" length="${Buffer.byteLength(patch)}"/>`;
  const at = `<loc>${src.origin}/${path}</loc><lastmod>${new Date(last.time).toISOString().replace('.000Z', 'Z')}</lastmod>`;
  assert.ok(xml.includes(at), 'the change is in the list');
  const start = xml.indexOf(at);
  const end = xml.indexOf('</url>', start);
  server.set('/changelist.xml', xml.slice(0, end) + link + xml.slice(end));
  server.set(patchPath, patch);
}

void describe('patches applied in an s3:// mirror on Ceph RGW', { skip: RGW_SKIP }, () => {
  let rgw: RgwServer;
  let s3: S3Client;
  let work: string;

  before(async () => {
    rgw = await startRgw();
    await rgw.createBucket(BUCKET);
    s3 = new S3Client({ endpoint: rgw.endpoint, region: rgw.region, forcePathStyle: true, credentials: { accessKeyId: rgw.accessKeyId, secretAccessKey: rgw.secretAccessKey } });
    work = await mkdtemp(join(tmpdir(), 'rs-s3-patch-'));
  });
  after(async () => {
    s3?.destroy();
    await rgw?.stop();
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  function cli(args: string[]): Promise<Ran> {
    return new Promise((resolve) => {
      const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...rgw.env } });
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

  async function object(key: string): Promise<string> {
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
    return Buffer.from(await got.Body!.transformToByteArray()).toString('utf8');
  }

  void test('the object in the bucket is the Source\'s new version, made from the patch alone', async () => {
    await withSource(async (src, _dest, server) => {
      const v1 = `${JSON.stringify({ title: 'A', tags: ['x'], n: 1 }, null, 2)}\n`;
      const v2 = `${JSON.stringify({ title: 'B', tags: ['x', 'y'], n: 1 }, null, 2)}\n`;
      const v3 = `${JSON.stringify({ title: 'C', tags: ['x', 'y'], n: 2 }, null, 2)}\n`;
      src.put('doc.json', v1);
      src.put('other.txt', 'other\n');
      src.publish();
      const dest = `s3://${BUCKET}/site`;
      const state = join(work, 'patch.sqlite');
      const baseline = await cli(['sync', src.capabilityList, dest, '--state', state, '--json']);
      assert.equal(baseline.status, 0, baseline.stderr);
      assert.equal(await object('site/doc.json'), v1);

      // the change, announced with a JSON Patch that turns v1 into v2 byte for byte (pretty-printed, as the Source writes it)
      src.put('doc.json', v2);
      src.publish();
      withPatchLink(src, server, 'doc.json', '/patches/doc-2.json', JSON.stringify([
        { op: 'test', path: '/title', value: 'A' },
        { op: 'replace', path: '/title', value: 'B' },
        { op: 'add', path: '/tags/-', value: 'y' },
      ]));
      server.requests.length = 0;
      const patched = await cli(['sync', src.capabilityList, dest, '--state', state, '--json']);
      assert.equal(patched.status, 0, patched.stderr);
      assert.equal(await object('site/doc.json'), v2, 'byte-identical to the Source\'s new version');
      const fetched = server.requests.filter((r) => r.method === 'GET' && !r.url.endsWith('.xml')).map((r) => r.url);
      assert.deepEqual(fetched, ['/patches/doc-2.json'], 'the patch was fetched, not the resource');
      assert.equal(await object('site/other.txt'), 'other\n');

      // a patch whose result does not match the entry's hash is not kept: the resource is fetched whole
      src.put('doc.json', v3);
      src.publish();
      withPatchLink(src, server, 'doc.json', '/patches/doc-3.json', JSON.stringify([{ op: 'replace', path: '/title', value: 'WRONG' }]));
      server.requests.length = 0;
      const fallback = await cli(['sync', src.capabilityList, dest, '--state', state, '--json']);
      assert.equal(fallback.status, 0, fallback.stderr);
      assert.equal(await object('site/doc.json'), v3);
      const again = server.requests.filter((r) => r.method === 'GET' && !r.url.endsWith('.xml')).map((r) => r.url);
      assert.deepEqual(again, ['/patches/doc-3.json', '/doc.json'], 'the patch, then the resource');

      const audit = await cli(['audit', src.capabilityList, dest, '--state', state]);
      assert.equal(audit.status, 0, audit.stdout + audit.stderr);
    });
  });
});
