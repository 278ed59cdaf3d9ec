/**
 * A Source that offers a Resource Dump and no changes (no Change List, no Change Dump), synced with `skipSameDump` (as
 * the aggregator does): a sync after the baseline reads the dump's document and, when it is the very dump the
 * baseline came from, no package again; a new dump is applied as a new baseline. Requests counted at a loopback server.
 * @see Z39.99 §11.1
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { publish, type PublishOptions } from '../src/source/publish.js';
import { sync } from '../src/destination/sync.js';
import { tempDir } from './helpers/tmp.js';

/** Keeps only the Resource Dump in a Capability List. */
async function dumpOnly(capFile: string): Promise<void> {
  const cap = await readFile(capFile, 'utf8');
  await writeFile(capFile, cap.replace(/<url>(?:(?!<\/url>)[\s\S])*<\/url>/g, (u) => (/capability="resourcedump"/.test(u) ? u : '')));
}

void test('a dump-only Source polled with skipSameDump: the same dump is not downloaded again; a new one is applied', async (t) => {
  const { dir, cleanup } = await tempDir('rs-dump-poll-');
  const out = join(dir, 'out');
  const data = join(dir, 'data');
  await mkdir(data);
  await writeFile(join(data, 'a.txt'), 'a\n');
  await writeFile(join(data, 'b.txt'), 'b\n');
  const requests: string[] = [];
  let bytes = 0;
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    requests.push(path);
    if (path.includes('..')) return void res.writeHead(400).end();
    readFile(join(out, ...path.split('/'))).then(
      (b) => {
        bytes += b.length;
        res.writeHead(200, { 'content-type': path.endsWith('.zip') ? 'application/zip' : 'application/xml' }).end(b);
      },
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    await new Promise((r) => server.close(r));
    await cleanup();
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const options: PublishOptions = { sets: [{ name: 'data', dir: data }], baseUrl: `${origin}/`, outDir: out, stateDir: join(dir, 'state'), dumps: true };
  await publish(options);
  const capFile = join(out, '.resourcesync', 'data', 'capabilitylist.xml');
  await dumpOnly(capFile);
  const dest = join(dir, 'mirror');
  const run = async (): Promise<{ mode: string; created: number; updated: number; deleted: number; packages: number; requests: number }> => {
    requests.length = 0;
    bytes = 0;
    const r = await sync({ source: `${origin}/.well-known/resourcesync`, dest, delete: true, skipSameDump: true });
    return { mode: r.mode, created: r.created, updated: r.updated, deleted: r.deleted, packages: requests.filter((p) => p.endsWith('.zip')).length, requests: requests.length };
  };

  const first = await run();
  assert.deepEqual([first.mode, first.created, first.packages], ['baseline', 2, 1]);
  assert.equal(await readFile(join(dest, 'b.txt'), 'utf8'), 'b\n');
  const again = await run();
  t.diagnostic(`a poll with nothing new: ${again.requests} requests, ${bytes} bytes (the baseline: ${first.requests} requests)`);
  assert.deepEqual(again, { mode: 'incremental', created: 0, updated: 0, deleted: 0, packages: 0, requests: again.requests }, 'the same dump: no package read');
  assert.ok(again.requests <= 3, `a poll with nothing new reads the Source Description, the Capability List and the dump: ${again.requests}`);
  assert.equal(await readFile(join(dest, 'a.txt'), 'utf8'), 'a\n', 'the copies stay');

  // the Source changes: a new dump (a new `at`) is a new baseline, deletions inferred
  await writeFile(join(data, 'a.txt'), 'a, again\n');
  await writeFile(join(data, 'c.txt'), 'c\n');
  await rm(join(data, 'b.txt'));
  await publish(options);
  await dumpOnly(capFile);
  const changed = await run();
  assert.deepEqual([changed.mode, changed.created, changed.updated, changed.deleted, changed.packages], ['baseline', 1, 1, 1, 1]);
  assert.equal(await readFile(join(dest, 'a.txt'), 'utf8'), 'a, again\n');
  const still = await run();
  assert.deepEqual([still.mode, still.packages], ['incremental', 0]);

  // a forced baseline reads the packages all the same
  requests.length = 0;
  const forced = await sync({ source: `${origin}/.well-known/resourcesync`, dest, delete: true, baseline: true, skipSameDump: true });
  assert.equal(forced.mode, 'baseline');
  assert.equal(requests.filter((p) => p.endsWith('.zip')).length, 1);
  // without skipSameDump the packages are read each run (every bitstream checked against its copy)
  requests.length = 0;
  const plain = await sync({ source: `${origin}/.well-known/resourcesync`, dest, delete: true });
  assert.deepEqual([plain.mode, plain.unchanged, requests.filter((p) => p.endsWith('.zip')).length], ['baseline', 2, 1]);
});
