// The library's Follower against a real Source (publish + the node:http server on 127.0.0.1), fed the Change
// Notifications that publish() returns, as a hub would deliver them: applied from their own entries (the Source
// sees no document request), a stale redelivery skipped, a gap and a resource that failed verification caught up
// from the Change List, and the state left as a plain sync expects it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Follower, type FollowBatch } from '../src/destination/follower.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { serve } from '../src/server/node-adapter.js';
import { publish, type PublishOptions } from '../src/source/publish.js';
import { recordChanges } from '../src/source/record-changes.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { writeDocumentString } from '../src/core/xml/write-document.js';
import { tempDir } from './helpers/tmp.js';

/** A Source on 127.0.0.1: a folder with a.txt, published with push on, served by the node:http adapter. */
async function startSource(dir: string, requests?: string[]) {
  const ac = new AbortController();
  const live: { core?: SourceResponder } = {};
  const front: ResponderHandler = (req) => live.core!(req);
  const running = await serve(front, { port: 0, signal: ac.signal, ...(requests ? { onResponse: (r) => requests.push(`${r.target} ${r.status}`) } : {}) });
  const data = join(dir, 'data');
  mkdirSync(data);
  writeFileSync(join(data, 'a.txt'), 'a1');
  const outDir = join(dir, 'out');
  const opts: PublishOptions = {
    sets: [{ name: 'data', dir: data }],
    baseUrl: running.url,
    outDir,
    stateDir: join(dir, 'state'),
    notifications: { hub: `${running.url}/hub` },
  };
  const first = await publish(opts);
  live.core = createSourceResponder({ sets: [{ name: 'data', dir: data, capabilityList: first.capabilityLists[0]! }], outDir, baseUrl: running.url });
  return {
    url: running.url,
    data,
    opts,
    capabilityList: first.capabilityLists[0]!,
    /** The server answers from the documents as they are now. */
    invalidate: () => live.core!.invalidate(),
    stop: async () => {
      ac.abort();
      await running.closed;
    },
  };
}

test('Follower: notifications applied from their entries; stale skipped; a gap and a failed resource caught up from the Change List', async () => {
  const { dir, cleanup } = await tempDir('rs-follower-');
  const requests: string[] = [];
  const source = await startSource(dir, requests);
  const { data, opts } = source;
  let follower: Follower | undefined;
  try {
    /** Publishes and returns the run's Change Notification as delivered bytes. */
    const next = async (): Promise<Uint8Array> => {
      await new Promise((r) => setTimeout(r, 5)); // distinct run times
      const r = await publish(opts);
      source.invalidate();
      const change = r.notifications![0]!.change;
      assert.equal(change.length, 1);
      return Buffer.from(writeDocumentString(change[0]!));
    };

    const dest = join(dir, 'mirror');
    const batches: FollowBatch[] = [];
    const started = await Follower.start({ source: `${source.url}/`, dest, delete: true, durability: new RenameOnly(), onBatch: (b) => batches.push(b) });
    follower = started.follower;
    assert.equal(started.first.mode, 'baseline');
    assert.equal(readFileSync(join(dest, 'a.txt'), 'utf8'), 'a1');

    // 1. a creation and an update, applied from the notification's entries
    writeFileSync(join(data, 'b.txt'), 'b1');
    writeFileSync(join(data, 'a.txt'), 'a2');
    const n1 = await next();
    requests.length = 0;
    await follower.receive(n1);
    assert.deepEqual(
      [batches.at(-1)!.mode, batches.at(-1)!.created, batches.at(-1)!.updated, batches.at(-1)!.gaps],
      ['notification', 1, 1, 0],
    );
    assert.equal(readFileSync(join(dest, 'a.txt'), 'utf8'), 'a2');
    assert.equal(readFileSync(join(dest, 'b.txt'), 'utf8'), 'b1');
    assert.deepEqual(requests.sort(), ['/a.txt 200', '/b.txt 200'], 'only the two resources were requested');

    // 2. the same notification again (at-least-once delivery): stale, nothing done
    requests.length = 0;
    await follower.receive(n1);
    assert.deepEqual([batches.at(-1)!.mode, batches.at(-1)!.created + batches.at(-1)!.updated], ['notification', 0]);
    assert.deepEqual(requests, []);

    // 3. a notification lost on the way: the next one shows the gap, the Change List fills it
    writeFileSync(join(data, 'c.txt'), 'c1');
    await next(); // never delivered
    writeFileSync(join(data, 'd.txt'), 'd1');
    const n3 = await next();
    await follower.receive(n3);
    assert.deepEqual([batches.at(-1)!.mode, batches.at(-1)!.reason, batches.at(-1)!.gaps], ['incremental', 'gap', 1]);
    assert.equal(readFileSync(join(dest, 'c.txt'), 'utf8'), 'c1');
    assert.equal(readFileSync(join(dest, 'd.txt'), 'utf8'), 'd1');

    // 4. the resource changed again before it was fetched: its hash does not match the notification's, the
    //    Change List is read (it still has the old hash: the failure stays pending), then the next notification
    //    brings the new content and resolves it
    writeFileSync(join(data, 'b.txt'), 'b2');
    const n4 = await next();
    writeFileSync(join(data, 'b.txt'), 'b3, longer');
    await follower.receive(n4);
    assert.equal(batches.at(-1)!.reason, 'failed');
    assert.equal(readFileSync(join(dest, 'b.txt'), 'utf8'), 'b1', 'the unverified bytes were not written');
    const n5 = await next();
    await follower.receive(n5);
    assert.deepEqual([batches.at(-1)!.mode, batches.at(-1)!.failed.length], ['notification', 0]);
    assert.equal(readFileSync(join(dest, 'b.txt'), 'utf8'), 'b3, longer');

    await follower.close();
    follower = undefined;
    // the state is what a plain sync expects: nothing new, nothing pending
    const plain = await sync({ source: `${source.url}/`, dest, delete: true, durability: new RenameOnly() });
    assert.deepEqual([plain.mode, plain.created, plain.updated, plain.deleted, plain.failed.length], ['incremental', 0, 0, 0, 0]);
  } finally {
    await follower?.close();
    await source.stop();
    await cleanup();
  }
});

test('Follower: a Change List that lags its notifications: entries after a gap wait for it, then apply; the cursor never passes a gap it does not hold', async () => {
  const { dir, cleanup } = await tempDir('rs-follower-lag-');
  const source = await startSource(dir);
  const { data, opts } = source;
  let follower: Follower | undefined;
  try {
    /** Writes a file and records it the way `serve` does: announced at once, the documents not written yet. */
    const change = async (name: string, body: string): Promise<Uint8Array> => {
      await new Promise((r) => setTimeout(r, 5)); // distinct recording times
      writeFileSync(join(data, name), body);
      const r = await recordChanges(opts, [join(data, name)]);
      assert.equal(r.complete, true);
      const cn = r.notifications![0]!.change;
      assert.equal(cn.length, 1);
      return Buffer.from(writeDocumentString(cn[0]!));
    };
    const documents = async (): Promise<void> => {
      await publish(opts);
      source.invalidate();
    };
    const cursorOf = async (): Promise<string | undefined> => {
      const store = await openSqliteDestinationState(dest);
      try {
        return (await store.getCursor(source.capabilityList))?.datetime;
      } finally {
        await store.close();
      }
    };
    const until = async (what: string, predicate: () => boolean | Promise<boolean>): Promise<void> => {
      for (const deadline = Date.now() + 60_000; !(await predicate()); await new Promise((r) => setTimeout(r, 10))) {
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      }
    };

    const dest = join(dir, 'mirror');
    const batches: FollowBatch[] = [];
    const started = await Follower.start({ source: `${source.url}/`, dest, durability: new RenameOnly(), holdMs: 800, onBatch: (b) => batches.push(b) });
    follower = started.follower;

    // 1. a lost notification, then the next one: the Change List holds neither change yet, so the newer entry
    //    waits; once the documents are written the Change List brings both
    await change('b.txt', 'b1'); // never delivered
    const n2 = await change('c.txt', 'c1');
    await follower.receive(n2);
    assert.deepEqual([batches.at(-1)!.reason, batches.at(-1)!.gaps, batches.at(-1)!.created], ['gap', 1, 0]);
    assert.equal(existsSync(join(dest, 'c.txt')), false, 'the newer entry waits for the Change List');
    await documents();
    await until('the Change List read again', () => existsSync(join(dest, 'b.txt')) && existsSync(join(dest, 'c.txt')));
    assert.equal(readFileSync(join(dest, 'b.txt'), 'utf8'), 'b1');
    assert.equal(readFileSync(join(dest, 'c.txt'), 'utf8'), 'c1');

    // 2. in step again: the next notification is applied from its entries
    const n3 = await change('d.txt', 'd1');
    await follower.receive(n3);
    assert.deepEqual([batches.at(-1)!.mode, batches.at(-1)!.created], ['notification', 1]);
    await documents();

    // 3. a Change List that stays behind longer than holdMs: the waiting entry is applied with a warning, the
    //    stored cursor stays before the gap until the Change List holds it
    const before = await cursorOf();
    await change('e.txt', 'e1'); // never delivered
    const n5 = await change('f.txt', 'f1');
    await follower.receive(n5);
    await until('the held entry applied after holdMs', () => existsSync(join(dest, 'f.txt')));
    await until('the warning', () => batches.some((b) => b.warnings.some((w) => w.code === 'change-list-behind')));
    assert.equal(existsSync(join(dest, 'e.txt')), false);
    assert.equal(await cursorOf(), before, 'the cursor does not pass the gap');
    await documents();
    await until('the gap filled from the Change List', () => existsSync(join(dest, 'e.txt')));
    await until('the cursor past the gap', async () => (await cursorOf()) !== before);

    await follower.close();
    follower = undefined;
    const plain = await sync({ source: `${source.url}/`, dest, durability: new RenameOnly() });
    assert.deepEqual([plain.mode, plain.created, plain.updated, plain.deleted, plain.failed.length], ['incremental', 0, 0, 0, 0]);
  } finally {
    await follower?.close();
    await source.stop();
    await cleanup();
  }
});
