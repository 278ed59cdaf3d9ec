import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsyncEach, RenameOnly, type Durability } from './durability.js';
import { GroupCommit } from './group-commit.js';

const implementations: [string, () => Durability][] = [
  ['RenameOnly', () => new RenameOnly()],
  ['FsyncEach', () => new FsyncEach()],
  ['GroupCommit', () => new GroupCommit({ gatherMs: 20, idleMs: 5 })],
];

for (const [name, make] of implementations) {
  void test(`${name}: committed files hold their bytes under their final names, temporary files are gone`, async () => {
    const root = await mkdtemp(join(tmpdir(), 'rs-dur-'));
    try {
      const durability = make();
      const tmpDir = join(root, 'tmp');
      await mkdir(tmpDir);
      const commits: Promise<void>[] = [];
      for (let i = 0; i < 20; i++) {
        const tmp = join(tmpDir, `${i}.tmp`);
        await writeFile(tmp, `bytes of ${i}`);
        // parents are created when missing
        commits.push(durability.commit(tmp, join(root, `d${i % 3}`, 'e', `f${i}.txt`)));
      }
      await Promise.all(commits);
      await durability.settle();
      for (let i = 0; i < 20; i++) {
        assert.equal(await readFile(join(root, `d${i % 3}`, 'e', `f${i}.txt`), 'utf8'), `bytes of ${i}`);
        assert.ok(!existsSync(join(tmpDir, `${i}.tmp`)), 'the temporary file is gone');
      }
      // a second settle with nothing new is a no-op
      await durability.settle();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  void test(`${name}: settle waits for every commit under way`, async () => {
    const root = await mkdtemp(join(tmpdir(), 'rs-dur-'));
    try {
      const durability = make();
      const finals: string[] = [];
      for (let i = 0; i < 10; i++) {
        const tmp = join(root, `${i}.tmp`);
        await writeFile(tmp, String(i));
        finals.push(join(root, `f${i}`));
        void durability.commit(tmp, finals[i]!); // not awaited
      }
      await durability.settle();
      for (const [i, f] of finals.entries()) assert.equal(await readFile(f, 'utf8'), String(i), 'in place once settled');
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  void test(`${name}: a failed commit rejects that write only`, async () => {
    const root = await mkdtemp(join(tmpdir(), 'rs-dur-'));
    try {
      const durability = make();
      await writeFile(join(root, 'blocker'), 'a file where a folder should be');
      const good = [0, 1, 2].map((i) => join(root, `ok${i}.tmp`));
      for (const g of good) await writeFile(g, 'ok');
      const blockedTmp = join(root, 'blocked.tmp');
      await writeFile(blockedTmp, 'blocked');
      const results = await Promise.allSettled([
        durability.commit(good[0]!, join(root, 'ok0.txt')),
        durability.commit(join(root, 'missing.tmp'), join(root, 'missing.txt')), // the temporary file is gone
        durability.commit(good[1]!, join(root, 'ok1.txt')),
        durability.commit(blockedTmp, join(root, 'blocker', 'x.txt')), // its parent is a file
        durability.commit(good[2]!, join(root, 'ok2.txt')),
      ]);
      assert.deepEqual(
        results.map((r) => r.status),
        ['fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
      );
      assert.match(String((results[1] as PromiseRejectedResult).reason), /ENOENT/);
      assert.match(String((results[3] as PromiseRejectedResult).reason), /ENOTDIR|EEXIST/);
      for (const i of [0, 1, 2]) assert.equal(await readFile(join(root, `ok${i}.txt`), 'utf8'), 'ok');
      assert.ok(!existsSync(join(root, 'missing.txt')));
      assert.ok(existsSync(blockedTmp), 'the temporary file of a failed commit is left to the caller');
      await durability.settle();
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
}
