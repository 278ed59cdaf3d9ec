// What a hostile party can make a follower do through the notifications it delivers (a hub relays them signed, so
// the follower cannot tell who wrote them): a window from 2000 to 9999 deleting every file, entries on another
// origin, an encoded `..`, a path under `.resourcesync` and a resource that answers 404. The follower applies none of
// it, reports each as a coded note, keeps its window and cursor where the Source put them, and a later plain
// `sync --delete` is clean.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Follower, type FollowBatch } from '../src/destination/follower.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';
import { sync } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';
import { FakeSource } from './helpers/fake-source.js';
import { startTestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';

const iso = (t: number): string => new Date(t).toISOString();

function notification(capabilityList: string, from: string, until: string, urls: string[]): Uint8Array {
  return Buffer.from(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="${capabilityList}"/><rs:md capability="change-notification" from="${from}" until="${until}"/>
${urls.join('\n')}
</urlset>`);
}

const entry = (loc: string, change: string, datetime: string, body?: string): string =>
  `<url><loc>${loc}</loc><rs:md change="${change}" datetime="${datetime}"${body === undefined ? '' : ` hash="md5:${createHash('md5').update(body).digest('hex')}" length="${Buffer.byteLength(body)}"`}/></url>`;

test('Follower: forged notifications change nothing, leave their entries as notes, never as failures that stick', async () => {
  const server = await startTestServer();
  const { dir, cleanup } = await tempDir('rs-follower-hostile-');
  let follower: Follower | undefined;
  try {
    const src = new FakeSource(server);
    for (let i = 0; i < 5; i++) src.put(`f${i}.txt`, `file ${i}\n`);
    src.publish();
    const dest = join(dir, 'mirror');
    const batches: FollowBatch[] = [];
    const started = await Follower.start({
      source: src.capabilityList,
      dest,
      delete: true,
      durability: new RenameOnly(),
      onBatch: (b) => batches.push(b),
    });
    follower = started.follower;
    assert.equal(started.first.created, 5);
    const cursorOf = async (): Promise<string | undefined> => {
      const s = await openSqliteDestinationState(dest, { readonly: true });
      try {
        return (await s.getCursor(src.capabilityList))?.datetime;
      } finally {
        await s.close();
      }
    };
    const cursor = await cursorOf();
    const until = follower.until;
    const codes = (): string[] => batches.flatMap((b) => b.warnings.map((w) => w.code));

    // 1. a window 2000 … 9999 saying every file was deleted
    const deleteAll = [...src.files.keys()].map((p) => entry(`${src.origin}/${p}`, 'deleted', '2026-01-01T00:00:00Z'));
    await follower.receive(notification(src.capabilityList, '2000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', deleteAll));
    for (let i = 0; i < 5; i++)
      assert.equal(readFileSync(join(dest, `f${i}.txt`), 'utf8'), `file ${i}\n`, 'nothing deleted');
    assert.ok(codes().includes('notification-window-future'), JSON.stringify(codes()));
    assert.equal(follower.until, until, 'the window did not move');
    assert.equal(await cursorOf(), cursor, 'the cursor did not move');

    // 2. entries on another origin, escaping the mirror, in the state folder, and one that answers 404
    const before = server.requests.length;
    const now = iso(Date.now() - 1000);
    const forged = [
      entry('http://127.0.0.1:1/elsewhere.txt', 'created', now, 'x'),
      entry(`${src.origin}/a/..%2F..%2Fescape.txt`, 'created', now, 'x'),
      entry(`${src.origin}/.resourcesync/state.sqlite`, 'updated', now, 'x'),
      entry(`${src.origin}/missing.txt`, 'created', now, 'x'),
    ];
    await follower.receive(notification(src.capabilityList, iso(follower.until!), now, forged));
    const ignored = batches.flatMap((b) => b.warnings).filter((w) => w.code === 'notification-entry-ignored');
    assert.deepEqual(
      ignored.map((w) => [w.data['loc'], w.data['reason']]),
      [
        ['http://127.0.0.1:1/elsewhere.txt', 'authority'],
        [`${src.origin}/a/..%2F..%2Fescape.txt`, 'path'],
        [`${src.origin}/.resourcesync/state.sqlite`, 'path'],
      ],
    );
    const asked = server.requests.slice(before).map((r) => r.url);
    assert.ok(!asked.some((u) => /escape|resourcesync/.test(u)), asked.join(' '));
    const store = await openSqliteDestinationState(dest, { readonly: true });
    assert.deepEqual(
      await store.pending(src.capabilityList),
      [],
      'the 404 a notification alone named is not kept as pending',
    );
    await store.close();

    // 3. a genuine change afterwards is still applied
    src.put('later.txt', 'later\n');
    src.publish();
    const t = iso(Date.now());
    await follower.receive(
      notification(src.capabilityList, iso(follower.until!), t, [
        entry(`${src.origin}/later.txt`, 'created', t, 'later\n'),
      ]),
    );
    assert.equal(readFileSync(join(dest, 'later.txt'), 'utf8'), 'later\n');
    await follower.close();
    follower = undefined;

    // 4. a plain sync --delete afterwards: nothing failed, nothing to fix
    const plain = await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });
    assert.deepEqual(plain.failed, []);
    assert.equal(plain.deleted, 0);
  } finally {
    await follower?.close();
    await server.close();
    await cleanup();
  }
});
