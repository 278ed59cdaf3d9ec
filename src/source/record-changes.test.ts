import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { parseDocument } from '../core/xml/read-document.js';
import { publish, type PublishOptions } from './publish.js';
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
