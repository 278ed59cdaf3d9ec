import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { parseDocument } from '../core/xml/read-document.js';
import { writeDocumentString } from '../core/xml/write-document.js';
import { validateDocument } from '../core/validate/index.js';
import { frameworkChangeAllowed } from '../core/model/notification.js';
import { publish, type PublishOptions, type PublishResult } from './publish.js';
import { changeNotifications, channelEntries, documentDigests, MAX_NOTIFICATION_ENTRIES, type DigestMemo } from './notifications.js';
import type { ChangeRecord } from './snapshot-rows.js';

void test('publish with notifications: channels in the Capability List, contiguous windows, framework changes', async () => {
  const { dir, cleanup } = await tempDir('rs-pub-notify-');
  try {
    const data = join(dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'a.txt'), 'a');
    let clock = Date.parse('2026-11-23T10:00:00Z');
    const opts = {
      sets: [{ name: 'data', dir: data }],
      baseUrl: 'http://127.0.0.1:9/',
      outDir: join(dir, 'out'),
      stateDir: join(dir, 'state'),
      now: () => clock,
      notifications: { hub: 'http://127.0.0.1:9/hub' },
    };
    const first = await publish(opts);
    const n0 = first.notifications![0]!;
    assert.deepEqual(n0.change, [], 'a baseline records no change');
    assert.deepEqual(
      n0.framework!.entries.map((e) => [e.md?.capability, e.md?.change]),
      [
        ['capabilitylist', 'created'],
        ['changelist', 'created'],
        ['resourcelist-archive', 'created'],
        ['resourcelist', 'created'],
        ['description', 'created'],
      ],
    );
    const caps = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'capabilitylist.xml')));
    assert.deepEqual(
      validateDocument(caps).filter((i) => i.severity === 'error'),
      [],
    );
    assert.deepEqual(
      caps.entries.filter((e) => e.ln?.[0]?.rel === 'hub').map((e) => [e.loc, e.md?.capability]),
      [
        ['http://127.0.0.1:9/.resourcesync/data/change-notification/', 'change-notification'],
        ['http://127.0.0.1:9/.resourcesync/data/framework-notification/', 'framework-notification'],
      ],
    );

    clock += 1000;
    const quiet = await publish(opts);
    assert.deepEqual(quiet.notifications![0]!.change, []);
    assert.equal(quiet.notifications![0]!.framework, undefined, 'a run without changes writes no capability document');

    const windows: Array<[string, string]> = [];
    for (const step of [() => writeFileSync(join(data, 'b.txt'), 'b'), () => rmSync(join(data, 'a.txt'))]) {
      clock += 1000;
      step();
      const r = await publish(opts);
      const cn = r.notifications![0]!.change;
      assert.equal(cn.length, 1);
      const back = await parseDocument(Buffer.from(writeDocumentString(cn[0]!)));
      assert.deepEqual(validateDocument(back), []);
      windows.push([back.md!.from!, back.md!.until!]);
    }
    assert.deepEqual(windows, [
      ['2026-11-23T10:00:00Z', '2026-11-23T10:00:02Z'],
      ['2026-11-23T10:00:02Z', '2026-11-23T10:00:03Z'],
    ]);
  } finally {
    await cleanup();
  }
});

void test('changeNotifications splits large batches without overlapping windows', () => {
  const n = MAX_NOTIFICATION_ENTRIES + 2;
  const changes: ChangeRecord[] = Array.from({ length: n }, (_, i) => ({
    seq: i + 1,
    period: 1,
    path: `f${i}`,
    change: 'deleted',
    datetime: 2000,
  }));
  const docs = changeNotifications('http://h/', 'http://h/cap.xml', 1000, 2000, changes);
  assert.deepEqual(
    docs.map((d) => [d.md?.from, d.md?.until, d.entries.length]),
    [
      ['1970-01-01T00:00:01Z', '1970-01-01T00:00:02Z', MAX_NOTIFICATION_ENTRIES],
      ['1970-01-01T00:00:02Z', '1970-01-01T00:00:02Z', 2],
    ],
  );
});

void test('the framework channel announces every capability document a publication writes: dumps, archives, closed Change Lists under their index, the Source Description', async () => {
  const { dir, cleanup } = await tempDir('rs-pub-framework-');
  try {
    const data = join(dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'a.txt'), 'a');
    let clock = Date.parse('2026-11-23T10:00:00Z');
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: data }],
      baseUrl: 'http://127.0.0.1:9/',
      outDir: join(dir, 'out'),
      stateDir: join(dir, 'state'),
      now: () => clock,
      dumps: true,
      changeList: { maxEntries: 2 },
      notifications: { hub: 'http://127.0.0.1:9/hub' },
    };
    const doc = 'http://127.0.0.1:9/.resourcesync/data/';
    const announced = async (r: PublishResult): Promise<Array<[string, string, string, string?]>> => {
      const fn = r.notifications![0]!.framework!;
      // what goes out is a valid Framework Notification whose pairs Table 2 allows
      const back = await parseDocument(Buffer.from(writeDocumentString(fn)));
      assert.deepEqual(validateDocument(back), []);
      for (const e of back.entries) assert.ok(frameworkChangeAllowed(e.md!.capability!, e.md!.change!), e.loc);
      return back.entries.map((e) => {
        const row: [string, string, string, string?] = [e.loc.replace(doc, ''), e.md!.capability!, e.md!.change!];
        const index = e.ln?.find((l) => l.rel === 'index')?.href;
        if (index !== undefined) row.push(index.replace(doc, ''));
        return row;
      });
    };

    assert.deepEqual(await announced(await publish(opts)), [
      ['capabilitylist.xml', 'capabilitylist', 'created'],
      ['changedump.xml', 'changedump', 'created'],
      ['changelist.xml', 'changelist', 'created'],
      ['resourcedump-archive.xml', 'resourcedump-archive', 'created'],
      ['resourcedump.xml', 'resourcedump', 'created'],
      ['resourcelist-archive.xml', 'resourcelist-archive', 'created'],
      ['resourcelist.xml', 'resourcelist', 'created'],
      ['http://127.0.0.1:9/.well-known/resourcesync', 'description', 'created'],
    ]);

    // three changes close a Change List of two: a closed Change List under the new index, its Change Dump
    // package, the archives; a new Resource Dump (Table 2: a Resource Dump is only ever created)
    clock += 1000;
    for (const n of ['b', 'c', 'd']) writeFileSync(join(data, `${n}.txt`), n);
    assert.deepEqual(await announced(await publish(opts)), [
      ['capabilitylist.xml', 'capabilitylist', 'updated'],
      ['changedump-00001.xml', 'changedump', 'created'],
      ['changedump-archive.xml', 'changedump-archive', 'created'],
      ['changedump.xml', 'changedump', 'updated'],
      ['changelist-00001.xml', 'changelist', 'created', 'changelist-index.xml'],
      ['changelist-archive.xml', 'changelist-archive', 'created'],
      ['changelist.xml', 'changelist', 'updated', 'changelist-index.xml'],
      ['resourcedump-archive.xml', 'resourcedump-archive', 'updated'],
      ['resourcedump.xml', 'resourcedump', 'created'],
      ['resourcelist-archive.xml', 'resourcelist-archive', 'updated'],
      ['resourcelist.xml', 'resourcelist', 'updated'],
    ]);

    // a second set: the Source Description changes, and goes out on the framework channels of both sets
    const more = join(dir, 'more');
    mkdirSync(more);
    writeFileSync(join(more, 'm.txt'), 'm');
    clock += 1000;
    const two = await publish({ ...opts, sets: [...opts.sets, { name: 'more', dir: more }] });
    for (const n of two.notifications!) {
      const sd = n.framework!.entries.filter((e) => e.md?.capability === 'description');
      assert.deepEqual(sd.map((e) => [e.loc, e.md?.change]), [['http://127.0.0.1:9/.well-known/resourcesync', 'updated']], n.set);
    }
  } finally {
    await cleanup();
  }
});

void test('channelEntries: with an XMPP PubSub service, each channel names its node (its topic URI) after the hub', () => {
  const docUrl = 'http://example.org/.resourcesync/data/';
  assert.deepEqual(channelEntries(docUrl, 'http://example.org/hub', 'pubsub.example.org'), [
    {
      loc: `${docUrl}change-notification/`,
      md: { capability: 'change-notification' },
      ln: [
        { rel: 'hub', href: 'http://example.org/hub' },
        { rel: 'alternate', href: `xmpp:pubsub.example.org?pubsub;action=subscribe;node=${docUrl}change-notification/` },
      ],
    },
    {
      loc: `${docUrl}framework-notification/`,
      md: { capability: 'framework-notification' },
      ln: [
        { rel: 'hub', href: 'http://example.org/hub' },
        { rel: 'alternate', href: `xmpp:pubsub.example.org?pubsub;action=subscribe;node=${docUrl}framework-notification/` },
      ],
    },
  ]);
  assert.deepEqual(channelEntries(docUrl, 'http://example.org/hub')[0]!.ln, [{ rel: 'hub', href: 'http://example.org/hub' }]);
});

void test('documentDigests reads a document again only when its inode, size or mtime changed, and forgets removed ones', async () => {
  const { dir, cleanup } = await tempDir('rs-digests-');
  writeFileSync(join(dir, 'resourcelist.xml'), '<urlset/>');
  writeFileSync(join(dir, 'changelist.xml'), '<urlset>a</urlset>');
  const memo: DigestMemo = new Map();
  const first = documentDigests(dir, '.xml', memo);
  assert.deepEqual([...memo.keys()].sort(), ['changelist.xml', 'resourcelist.xml']);
  // a digest taken at the same file identity is reused (here a planted one, to show the file is not read)
  memo.get('resourcelist.xml')!.digest = 'remembered';
  assert.equal(documentDigests(dir, '.xml', memo).get('resourcelist.xml'), 'remembered');
  // a rewritten document (other size) is read again
  writeFileSync(join(dir, 'resourcelist.xml'), '<urlset></urlset>');
  const again = documentDigests(dir, '.xml', memo);
  assert.notEqual(again.get('resourcelist.xml'), 'remembered');
  assert.notEqual(again.get('resourcelist.xml'), first.get('resourcelist.xml'));
  assert.equal(again.get('changelist.xml'), first.get('changelist.xml'));
  rmSync(join(dir, 'changelist.xml'));
  assert.deepEqual([...documentDigests(dir, '.xml', memo).keys()], ['resourcelist.xml']);
  assert.deepEqual([...memo.keys()], ['resourcelist.xml']);
  await cleanup();
});
