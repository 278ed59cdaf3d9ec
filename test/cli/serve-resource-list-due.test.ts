// `resourcesync serve` (with its hub, so changes are recorded file by file and the Resource List is rewritten at
// most every 20 times its last write time): a Resource List put off that way is written once it is due, even when
// no more change comes, instead of waiting for the next rescan (five minutes).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openSqliteSnapshots } from '../../src/source/sqlite-snapshots.js';
import { startServe, type ServeChild } from '../helpers/serve-child.js';
import { exited } from '../helpers/exited.js';
import { tempDir } from '../helpers/tmp.js';

let tmp: { dir: string; cleanup: () => Promise<void> } | undefined;
let serve: ServeChild | undefined;
after(async () => {
  if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
  await tmp?.cleanup();
});

void test('a Resource List put off by its write time is written when due, with no further change', async () => {
  tmp = await tempDir('rs-serve-rl-due-');
  const site = join(tmp.dir, 'site');
  await mkdir(site);
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  serve = await startServe([site]);
  // as if the last Resource List had taken 400 ms to write: the next one waits 8 s after it
  const store = openSqliteSnapshots(join(site, '.resourcesync', 'source.sqlite'));
  await store.setMeta('rl_write_ms', '400');
  await store.close();
  await writeFile(join(site, 'b.txt'), 'bravo\n');
  const list = async (): Promise<string> => (await fetch(`${serve!.url}/.resourcesync/site/resourcelist.xml`)).text();
  const changes = async (): Promise<string> => (await fetch(`${serve!.url}/.resourcesync/site/changelist.xml`)).text();
  // the change is recorded (Change List) at once; the Resource List follows once due, with no other change
  const deadline = Date.now() + 60_000;
  for (let i = 0; !(await changes()).includes('/b.txt<'); i++) {
    assert.ok(Date.now() < deadline && i < 1000, 'the change reaches the Change List');
    await sleep(100);
  }
  for (let i = 0; !(await list()).includes('/b.txt<'); i++) {
    assert.ok(Date.now() < deadline && i < 1000, `the Resource List lists b.txt within 60 s: ${await list()}`);
    await sleep(200);
  }
  serve.child.kill('SIGTERM');
  assert.deepEqual(await exited(serve.child), [0, null]);
});
