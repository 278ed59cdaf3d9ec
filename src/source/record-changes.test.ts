import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { parseDocument } from '../core/xml/read-document.js';
import { publish, storeFile, type PublishOptions, type PublishResult } from './publish.js';
import { openSqliteSnapshots } from './sqlite-snapshots.js';
import { recordChanges } from './record-changes.js';

void test('recordChanges records settled files at once and announces them; documents follow from the store without a scan', async () => {
  const { dir, cleanup } = await tempDir('rs-record-');
  try {
    const data = join(dir, 'data');
    mkdirSync(join(data, 'sub'), { recursive: true });
    writeFileSync(join(data, 'a.txt'), 'a1');
    writeFileSync(join(data, 'sub', 'b.txt'), 'b1');
    const announced: string[][] = [];
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: data }],
      baseUrl: 'http://127.0.0.1:8080/',
      outDir: join(dir, 'out'),
      stateDir: join(dir, 'state'),
      notifications: { hub: 'http://127.0.0.1:8080/hub' },
      onRecorded: (n) => announced.push(n.change.flatMap((d) => d.entries.map((e) => `${e.loc} ${e.md?.change}`))),
    };
    // before the first publication a set cannot be recorded file by file
    assert.equal((await recordChanges(opts, [join(data, 'a.txt')])).complete, false);
    await publish(opts);

    writeFileSync(join(data, 'a.txt'), 'a2');
    writeFileSync(join(data, 'c.txt'), 'c1');
    rmSync(join(data, 'sub', 'b.txt'));
    writeFileSync(join(data, 'unsaid.txt'), 'not given to recordChanges');
    const r = await recordChanges(opts, [join(data, 'a.txt'), join(data, 'c.txt'), join(data, 'sub', 'b.txt'), join(data, '.hidden'), '/elsewhere/x.txt']);
    assert.equal(r.complete, true);
    assert.deepEqual(r.changes, { created: 1, updated: 1, deleted: 1 });
    assert.deepEqual(announced, [
      ['http://127.0.0.1:8080/a.txt updated', 'http://127.0.0.1:8080/c.txt created', 'http://127.0.0.1:8080/sub/b.txt deleted'],
    ]);
    // a second recording continues the window of the first
    writeFileSync(join(data, 'a.txt'), 'a3');
    const r2 = await recordChanges(opts, [join(data, 'a.txt')]);
    assert.equal(r2.notifications![0]!.change[0]!.md?.from, r.notifications![0]!.change[0]!.md?.until);

    // the documents, written from the store: the recorded changes are listed, the unsaid file is not (no scan)
    await publish({ ...opts, scan: false });
    const changeList = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'changelist.xml')));
    assert.deepEqual(
      changeList.entries.map((e) => `${e.loc.replace('http://127.0.0.1:8080/', '')} ${e.md?.change}`),
      ['a.txt updated', 'c.txt created', 'sub/b.txt deleted', 'a.txt updated'],
    );
    const resourceList = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'resourcelist.xml')));
    assert.deepEqual(resourceList.entries.map((e) => e.loc.replace('http://127.0.0.1:8080/', '')), ['a.txt', 'c.txt']);
    // a rescan reconciles what no recording saw
    await publish(opts);
    const after = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'changelist.xml')));
    assert.equal(after.entries.at(-1)?.loc, 'http://127.0.0.1:8080/unsaid.txt');

    // a folder, or a path gone with a folder's files, needs a scan
    mkdirSync(join(data, 'newdir'));
    writeFileSync(join(data, 'newdir', 'x.txt'), 'x');
    assert.equal((await recordChanges(opts, [join(data, 'newdir')])).complete, false);
    rmSync(join(data, 'sub'), { recursive: true });
    mkdirSync(join(data, 'gone'));
    writeFileSync(join(data, 'gone', 'y.txt'), 'y');
    await publish(opts);
    rmSync(join(data, 'gone'), { recursive: true });
    assert.equal((await recordChanges(opts, [join(data, 'gone')])).complete, false);
    // published with other options: the documents must be rewritten by a publication first
    assert.equal((await recordChanges({ ...opts, hashes: ['sha-256'] }, [join(data, 'a.txt')])).complete, false);
  } finally {
    await cleanup();
  }
});

void test('documents without a scan: the Resource List waits for resourceListEveryMs, the Change Lists after its at are kept whatever the retention; a recording never waits for documents being written', async () => {
  const { dir, cleanup } = await tempDir('rs-record-rl-');
  try {
    const data = join(dir, 'data');
    mkdirSync(data);
    for (let i = 0; i < 2000; i++) writeFileSync(join(data, `f${i}.txt`), `file ${i}`);
    let t = Date.UTC(2030, 0, 1);
    const opts: PublishOptions = {
      sets: [{ name: 'data', dir: data }],
      baseUrl: 'http://127.0.0.1:8080/',
      outDir: join(dir, 'out'),
      stateDir: join(dir, 'state'),
      now: () => t,
      resourceListEveryMs: 10_000,
      retention: 1,
      changeList: { maxEntries: 1 }, // every change closes its Change List
    };
    const docs = join(dir, 'out', '.resourcesync', 'data');
    const rlAt = async (): Promise<string | undefined> => (await parseDocument(readFileSync(join(docs, 'resourcelist.xml')))).md?.at;
    await publish(opts);
    const first = await rlAt();

    t += 1000;
    writeFileSync(join(data, 'new-1.txt'), 'n1');
    await recordChanges(opts, [join(data, 'new-1.txt')]);
    t += 1000;
    writeFileSync(join(data, 'new-2.txt'), 'n2');
    await recordChanges(opts, [join(data, 'new-2.txt')]);
    t += 1000;
    await publish({ ...opts, scan: false });
    assert.equal(await rlAt(), first, 'the Resource List stays within resourceListEveryMs');
    // retention 1 would keep one closed Change List: both are after the Resource List's at, so both stay
    const index = await parseDocument(readFileSync(join(docs, 'changelist-index.xml')));
    const lists = await Promise.all(index.entries.map((e) => parseDocument(readFileSync(join(docs, e.loc.split('/').pop()!)))));
    assert.deepEqual(lists.flatMap((l) => l.entries.map((e) => e.loc.split('/').pop())), ['new-1.txt', 'new-2.txt']);

    // past the interval the next documents run writes a new Resource List, and the older Change List can go
    t += 10_000;
    await publish({ ...opts, scan: false });
    assert.notEqual(await rlAt(), first);
    assert.ok((await parseDocument(readFileSync(join(docs, 'resourcelist.xml')))).entries.some((e) => e.loc.endsWith('/new-2.txt')));

    // a recording while the documents of 2,000 resources are being written does not wait for them
    t += 1000;
    writeFileSync(join(data, 'new-3.txt'), 'n3');
    await recordChanges(opts, [join(data, 'new-3.txt')]);
    const order: string[] = [];
    const documents = publish({ ...opts, scan: false, resourceListEveryMs: 0 }).then(() => order.push('documents'));
    writeFileSync(join(data, 'new-4.txt'), 'n4');
    const recording = recordChanges(opts, [join(data, 'new-4.txt')]).then(() => order.push('recording'));
    await Promise.all([documents, recording]);
    assert.deepEqual(order, ['recording', 'documents']);
    // the next documents run lists what that run may have missed
    await publish({ ...opts, scan: false });
    const changed = async (): Promise<string[]> => {
      const idx = await parseDocument(readFileSync(join(docs, 'changelist-index.xml')));
      const docsOf = await Promise.all(idx.entries.map((e) => parseDocument(readFileSync(join(docs, e.loc.split('/').pop()!)))));
      return docsOf.flatMap((l) => l.entries.map((e) => e.loc.split('/').pop()!));
    };
    // new-3 is in the Resource List that run wrote (its Change List may go with retention 1), new-4 after it
    const rl = await parseDocument(readFileSync(join(docs, 'resourcelist.xml')));
    assert.ok(rl.entries.some((e) => e.loc.endsWith('/new-3.txt')));
    assert.equal((await changed()).at(-1), 'new-4.txt');
  } finally {
    await cleanup();
  }
});

void test("resourceListEveryMs 'auto': a Resource List that took long to write waits twenty times as long; a quick one is rewritten whenever the set changed", async () => {
  const { dir, cleanup } = await tempDir('rs-record-auto-');
  try {
    const data = join(dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'a.txt'), 'a');
    let t = Date.UTC(2030, 0, 1);
    const opts: PublishOptions = { sets: [{ name: 'data', dir: data }], baseUrl: 'http://127.0.0.1:8080/', outDir: join(dir, 'out'), stateDir: join(dir, 'state'), now: () => t, resourceListEveryMs: 'auto' };
    const rl = async (): Promise<string[]> => (await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'resourcelist.xml')))).entries.map((e) => e.loc.split('/').pop()!);
    const change = async (name: string): Promise<PublishResult> => {
      t += 1000;
      writeFileSync(join(data, name), name);
      await recordChanges(opts, [join(data, name)]);
      t += 1000;
      return publish({ ...opts, scan: false });
    };
    await publish(opts);
    await change('b.txt');
    assert.deepEqual(await rl(), ['a.txt', 'b.txt'], 'a small list: rewritten at once');

    // as if the last Resource List had taken 1 s to write: the next waits 20 s
    const store = openSqliteSnapshots(storeFile(opts.sets[0]!, opts.stateDir));
    await store.setMeta('rl_write_ms', '1000');
    await store.close();
    const putOff = await change('c.txt');
    assert.deepEqual(await rl(), ['a.txt', 'b.txt']);
    // the result says when the list put off is due, so that it is written then even if no change follows
    assert.equal(putOff.resourceListDueInMs, 18_000);
    t += 18_000;
    const due = await publish({ ...opts, scan: false });
    assert.deepEqual(await rl(), ['a.txt', 'b.txt', 'c.txt']);
    assert.equal(due.resourceListDueInMs, undefined);
  } finally {
    await cleanup();
  }
});

void test("recordChanges with order 'given' records the changes in the order of the files (a file named twice at its last place)", async () => {
  const { dir, cleanup } = await tempDir('rs-record-order-');
  try {
    const data = join(dir, 'data');
    mkdirSync(data, { recursive: true });
    writeFileSync(join(data, 'a.txt'), 'a1');
    const opts: PublishOptions = { sets: [{ name: 'data', dir: data }], baseUrl: 'http://127.0.0.1:8080/', outDir: join(dir, 'out'), stateDir: join(dir, 'state') };
    await publish(opts);
    writeFileSync(join(data, 'c.txt'), 'c1');
    writeFileSync(join(data, 'a.txt'), 'a2');
    writeFileSync(join(data, 'b.txt'), 'b1');
    const files = ['c.txt', 'a.txt', 'b.txt', 'c.txt', 'b.txt'].map((f) => join(data, f));
    const r = await recordChanges(opts, files, { order: 'given' });
    assert.deepEqual(r.changes, { created: 2, updated: 1, deleted: 0 });
    await publish(opts);
    const changeList = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'changelist.xml')));
    assert.deepEqual(
      changeList.entries.map((e) => `${e.loc.replace('http://127.0.0.1:8080/', '')} ${e.md?.change}`),
      ['a.txt updated', 'c.txt created', 'b.txt created'],
    );
    // without it: path order
    writeFileSync(join(data, 'c.txt'), 'c2');
    writeFileSync(join(data, 'a.txt'), 'a3');
    await recordChanges(opts, [join(data, 'c.txt'), join(data, 'a.txt')]);
    const again = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'changelist.xml')));
    assert.equal(again.entries.length, 3, 'documents are written by publish');
    await publish(opts);
    const last = await parseDocument(readFileSync(join(dir, 'out', '.resourcesync', 'data', 'changelist.xml')));
    assert.deepEqual(last.entries.slice(3).map((e) => e.loc.replace('http://127.0.0.1:8080/', '')), ['a.txt', 'c.txt']);
  } finally {
    await cleanup();
  }
});
