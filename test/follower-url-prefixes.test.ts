// The Follower with URL prefixes, fed the Change Notifications that publish() returns as a hub would deliver them:
// the entries outside the prefixes are left alone (never requested) and counted; those inside are applied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Follower, type FollowBatch } from '../src/destination/follower.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { serve } from '../src/server/node-adapter.js';
import { publish, type PublishOptions } from '../src/source/publish.js';
import { RenameOnly } from '../src/node/durability.js';
import { writeDocumentString } from '../src/core/xml/write-document.js';
import { tempDir } from './helpers/tmp.js';

void test('Follower with url prefixes: a notification applied only under the prefixes; the rest never requested', async (t) => {
  const { dir, cleanup } = await tempDir('rs-follower-prefixes-');
  const requests: string[] = [];
  const ac = new AbortController();
  const live: { core?: SourceResponder } = {};
  const front: ResponderHandler = (req) => live.core!(req);
  const running = await serve(front, { port: 0, signal: ac.signal, onResponse: (r) => requests.push(`${r.target} ${r.status}`) });
  const closing: { follower?: Follower } = {};
  t.after(async () => {
    await closing.follower?.close();
    ac.abort();
    await running.closed;
    await cleanup();
  });
  const data = join(dir, 'data');
  mkdirSync(join(data, 'keep'), { recursive: true });
  writeFileSync(join(data, 'keep', 'k1.txt'), 'k1');
  writeFileSync(join(data, 'other.txt'), 'o1');
  const opts: PublishOptions = { sets: [{ name: 'data', dir: data }], baseUrl: running.url, outDir: join(dir, 'out'), stateDir: join(dir, 'state'), notifications: { hub: `${running.url}/hub` } };
  const first = await publish(opts);
  live.core = createSourceResponder({ sets: [{ name: 'data', dir: data, capabilityList: first.capabilityLists[0]! }], outDir: opts.outDir, baseUrl: running.url });

  const dest = join(dir, 'mirror');
  const batches: FollowBatch[] = [];
  const prefix = `${running.url}/keep/`;
  const started = await Follower.start({ source: `${running.url}/`, dest, delete: true, durability: new RenameOnly(), urlPrefixes: [prefix], onBatch: (b) => batches.push(b) });
  const follower = started.follower;
  closing.follower = follower;
  assert.equal(started.first.mode, 'baseline');
  assert.equal(readFileSync(join(dest, 'keep', 'k1.txt'), 'utf8'), 'k1');
  assert.equal(existsSync(join(dest, 'other.txt')), false);

  await new Promise((r) => setTimeout(r, 5)); // a distinct run time
  writeFileSync(join(data, 'keep', 'k2.txt'), 'k2');
  writeFileSync(join(data, 'other.txt'), 'o2');
  writeFileSync(join(data, 'new.txt'), 'n1');
  const r = await publish(opts);
  live.core.invalidate();
  const change = r.notifications![0]!.change;
  requests.length = 0;
  await follower.receive(Buffer.from(writeDocumentString(change[0]!)));
  const batch = batches.at(-1)!;
  assert.deepEqual([batch.mode, batch.created, batch.updated], ['notification', 1, 0]);
  assert.equal(readFileSync(join(dest, 'keep', 'k2.txt'), 'utf8'), 'k2');
  assert.equal(existsSync(join(dest, 'other.txt')) || existsSync(join(dest, 'new.txt')), false);
  assert.deepEqual(requests, ['/keep/k2.txt 200'], 'only the resource under the prefix was requested');
  const note = batch.warnings.find((w) => w.code === 'outside-url-prefixes');
  assert.deepEqual(note?.data, { count: 2, prefixes: [prefix] });
});
