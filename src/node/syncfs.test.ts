import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GroupCommit } from './group-commit.js';
import { SyncfsFlush } from './syncfs.js';

/** The child processes of this process (Linux), or undefined where /proc does not tell. */
function children(): string[] | undefined {
  if (!existsSync('/proc/self/task')) return undefined;
  try {
    return readdirSync('/proc/self/task').flatMap((t) => readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim().split(' ').filter(Boolean));
  } catch {
    return undefined;
  }
}

void test('SyncfsFlush: a group commit flushed by syncfs puts every file in place; its helper starts on first use and ends with close', async () => {
  const root = await mkdtemp(join(tmpdir(), 'rs-syncfs-'));
  const before = children();
  const syncfs = new SyncfsFlush();
  try {
    assert.deepEqual(children(), before, 'nothing is started by the constructor');
    const group = new GroupCommit({ flush: syncfs.flush, gatherMs: 20, idleMs: 5 });
    const commits: Promise<void>[] = [];
    for (let i = 0; i < 12; i++) {
      const tmp = join(root, `${i}.tmp`);
      await writeFile(tmp, `file ${i}`);
      commits.push(group.commit(tmp, join(root, 'out', `f${i}.txt`)));
    }
    await Promise.all(commits);
    await group.settle();
    for (let i = 0; i < 12; i++) assert.equal(await readFile(join(root, 'out', `f${i}.txt`), 'utf8'), `file ${i}`);
    // a missing file among few: fsynced one by one, and the error says so
    await assert.rejects(syncfs.flush([join(root, 'missing.tmp')]), /ENOENT/);
    // the helper serves again after a failure
    await syncfs.flush([join(root, 'out', 'f0.txt'), join(root, 'out', 'f1.txt'), join(root, 'out', 'f2.txt'), join(root, 'out', 'f3.txt')]);
  } finally {
    syncfs.close();
    await rm(root, { recursive: true, force: true });
  }
  for (let i = 0; i < 50 && JSON.stringify(children()) !== JSON.stringify(before); i++) await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(children(), before, 'close ends the helper');
});
