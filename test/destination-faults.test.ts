import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { urlPath } from './helpers/fake-source.js';
import { CLI, nothingCorrupt, runCli, withSource } from './helpers/mirror-check.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { listFiles } from '../src/destination/audit.js';

const md5 = (b: Buffer | string): string => createHash('md5').update(b).digest('hex');

void test('500s, resets, truncated bodies, wrong content and slow answers: every resource correct or reported', async () => {
  await withSource(async (src, dest, server) => {
    for (let i = 0; i < 20; i++) src.put(`r/${i}.txt`, `resource ${i} `.repeat(50 * (i + 1)));
    src.publish();
    const p = (i: number): string => urlPath(`r/${i}.txt`);
    server.fault = async (req, res, n) => {
      const url = req.url ?? '';
      if (url === p(0)) return (res.writeHead(500).end('always broken'), true); // permanent 500
      if (url === p(1) && n <= 1) return (res.writeHead(503, { 'retry-after': '0' }).end(), true); // transient
      if (url === p(2) && n === 1) return (req.socket.destroy(), true); // reset before the answer
      if (url === p(3)) return (req.socket.destroy(), true); // always reset
      if (url === p(4) && n <= 2) {
        // truncated: announce the full length, send half, cut
        const body = src.files.get('r/4.txt')!.body;
        res.writeHead(200, { 'content-length': String(body.length) });
        res.write(body.subarray(0, body.length >> 1));
        setTimeout(() => res.destroy(), 5);
        return true;
      }
      if (url === p(5)) return (res.writeHead(200).end('not what the hash says'), true); // wrong content, always
      if (url === p(6) && n === 1) return (res.writeHead(200).end('wrong once'), true); // wrong content once
      if (url === p(7)) {
        // slower than the timeout, always: no answer until the client gives up (60 s at most)
        await new Promise((r) => {
          const t = setTimeout(r, 60_000);
          res.once('close', () => (clearTimeout(t), r(undefined)));
        });
        if (!res.destroyed) res.end('late');
        return true;
      }
      return false;
    };
    const r = await sync({ source: src.capabilityList, dest, durability: new RenameOnly(), timeoutMs: 5000, retries: 1, concurrency: 8 }); // a timeout that a busy machine's answers stay well within
    const failed = Object.fromEntries(r.failed.map((f) => [f.url.slice(src.origin.length), f.code]));
    assert.deepEqual(failed, {
      [p(0)]: 'RS_HTTP_STATUS',
      [p(3)]: 'RS_NETWORK',
      [p(5)]: 'RS_LENGTH_MISMATCH',
      [p(7)]: 'RS_HTTP_TIMEOUT',
    });
    assert.equal(r.created, 16);
    const present = await nothingCorrupt(src, dest);
    assert.equal(present.length, 16);
    for (const i of [0, 3, 5, 7]) assert.ok(!present.includes(`r/${i}.txt`));

    // the server heals: the next run completes what failed
    server.fault = undefined;
    const again = await sync({ source: src.capabilityList, dest, durability: new RenameOnly() });
    assert.deepEqual(again.failed, []);
    assert.equal((await nothingCorrupt(src, dest)).length, 20);
  });
});

void test('the CLI exit code says when resources failed', async () => {
  await withSource(async (src, dest, server) => {
    src.put('ok.txt', 'fine');
    src.put('bad.txt', 'will be wrong');
    src.publish();
    server.fault = (req, res) => (req.url === '/bad.txt' ? (res.writeHead(200).end('will be WRONG'), true) : false);
    const run = async (args: string[]) => {
      const r = await runCli(args);
      return { code: r.status, stdout: r.stdout };
    };
    const r = await run(['sync', src.capabilityList, dest, '--json', '--no-fsync']);
    assert.equal(r.code, 1);
    const report = JSON.parse(r.stdout) as { mode: string; created: number; failed: { url: string; code: string }[] };
    assert.equal(report.mode, 'baseline');
    assert.equal(report.created, 1);
    assert.deepEqual(report.failed.map((f) => f.code), ['RS_HASH_MISMATCH']);
    server.fault = undefined;
    assert.equal((await run(['sync', src.capabilityList, dest, '--fsync-method', 'sometimes'])).code, 2, 'an unknown fsync method is a usage error');
    const ok = await run(['sync', src.capabilityList, dest, '--json', '--fsync-method', 'file']);
    assert.equal(ok.code, 0);
    const audited = await run(['audit', src.capabilityList, dest, '--json']);
    assert.equal(audited.code, 0, audited.stdout);
    await writeFile(join(dest, 'ok.txt'), 'FINE');
    const tampered = await run(['audit', src.capabilityList, dest, '--json']);
    assert.equal(tampered.code, 1);
    assert.deepEqual((JSON.parse(tampered.stdout) as { changed: { path: string; reason: string }[] }).changed, [{ url: `${src.origin}/ok.txt`, path: 'ok.txt', reason: 'hash' }]);
    // a live process holds the lock: exit 4, nothing touched
    await writeFile(join(dest, '.resourcesync', 'lock'), `${process.pid}\n`);
    const locked = await run(['sync', src.capabilityList, dest]);
    assert.equal(locked.code, 4);
    assert.equal(await readFile(join(dest, 'ok.txt'), 'utf8'), 'FINE');
    await rm(join(dest, '.resourcesync', 'lock'));
    assert.equal((await run(['sync', src.capabilityList])).code, 2);
    assert.equal((await run(['audit', src.capabilityList])).code, 2);
    assert.equal((await run(['sync', 'not a url', dest])).code, 2);
  });
});

void test('kill -9 at random points of a baseline, then resume: identical tree, no temporary files', async () => {
  await withSource(async (src, dest, server) => {
    for (let i = 0; i < 150; i++) src.put(`k/${i % 7}/${i}.bin`, Buffer.alloc(2000 + i * 37, i % 251));
    src.publish();
    // slow the Source a little so that the kill lands in the middle of the baseline
    server.fault = async (req) => {
      if (!(req.url ?? '').endsWith('.xml')) await new Promise((r) => setTimeout(r, 20));
      return false;
    };
    const resourceRequests = (): number => server.requests.filter((q) => !q.url.endsWith('.xml')).length;
    for (let round = 0; round < 3; round++) {
      const child = spawn(process.execPath, [CLI, 'sync', src.capabilityList, dest, '--concurrency', '4'], { stdio: 'ignore' });
      // kill once a random number of resources has been asked for (bounded wait); the last round also waits for
      // a first file in place, so that the resume has something complete to keep (earlier rounds may kill before)
      const start = resourceRequests();
      const target = start + 5 + Math.floor(Math.random() * 30);
      const ready = (): boolean => resourceRequests() >= target && (round < 2 || listFiles(dest).some((p) => p.startsWith('k/')));
      for (let i = 0; i < 1000 && !ready() && child.exitCode === null; i++) await new Promise((r) => setTimeout(r, 10));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('close', r));
    }
    const requestsBefore = server.requests.filter((q) => !q.url.endsWith('.xml')).length;
    // (not spawnSync: the Source runs in this process)
    const final = await runCli(['sync', src.capabilityList, dest, '--json']);
    assert.equal(final.status, 0, final.stderr);
    const report = JSON.parse(final.stdout) as { created: number; unchanged: number; updated: number };
    const fetchedLast = server.requests.filter((q) => !q.url.endsWith('.xml')).length - requestsBefore;
    assert.equal(report.created + report.updated, fetchedLast, 'only what was missing is fetched');
    assert.ok(requestsBefore > 0 && fetchedLast < 150, `resumed: fetched ${fetchedLast} of 150 after ${requestsBefore}`);
    assert.equal((await nothingCorrupt(src, dest)).length, 150);
  });
});

void test('hostile documents: nothing written outside the destination, nothing fetched off-authority', async () => {
  const outside = await startTestServer();
  try {
    await withSource(async (src, dest, server) => {
      src.put('good.txt', 'good');
      src.publish();
      const hostile = [
        `${src.origin}/a/..%2F..%2F..%2Fescape.txt`,
        `${src.origin}/%2e%2e%2fescape2.txt`,
        `${src.origin}/a%5C..%5C..%5Cescape3.txt`,
        `${src.origin}/.resourcesync/state.sqlite`,
        `${outside.origin}/stolen.txt`,
        `file:///etc/passwd`,
        `${src.origin}/dir/`,
      ];
      outside.set('/stolen.txt', 'x');
      const extra = hostile.map((u) => `<url><loc>${u}</loc><rs:md hash="md5:${md5('x')}" length="1"/></url>`).join('\n');
      server.set('/resourcelist.xml', src.resourceListXml().replace('</urlset>', `${extra}\n</urlset>`));
      // the destination sits alone in a box: anything written beside it would show
      const box = join(dest, 'box');
      const inner = join(box, 'dest');
      const r = await sync({ source: src.capabilityList, dest: inner, durability: new RenameOnly() });
      assert.equal(r.created, 1);
      assert.equal(r.failed.length, hostile.length, JSON.stringify(r.failed));
      for (const f of r.failed) assert.ok(['RS_UNSAFE_PATH', 'RS_AUTHORITY'].includes(f.code), `${f.url}: ${f.code}`);
      assert.deepEqual(outside.requests, [], 'nothing fetched off-authority');
      const fetched = server.requests.map((q) => q.url).filter((u) => !u.endsWith('.xml'));
      assert.deepEqual(fetched, ['/good.txt'], 'unsafe names are refused before any request');
      assert.deepEqual(listFiles(inner), ['good.txt']);
      assert.deepEqual(listFiles(dest).filter((p) => !p.startsWith('box/dest/.resourcesync/')), ['box/dest/good.txt']);
      assert.deepEqual(await readdir(box), ['dest']);
    });
  } finally {
    await outside.close();
  }
});
