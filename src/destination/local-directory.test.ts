import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isResourceSyncError } from '../core/errors.js';
import { RenameOnly } from '../node/durability.js';
import { GroupCommit } from '../node/group-commit.js';
import { createLocalDirectory, LocalDirectory } from './local-directory.js';

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

async function inTemp(body: (base: string) => Promise<void>): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), 'rs-ld-'));
  try {
    await body(base);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

void test('a staged write is a temporary file in .resourcesync/tmp until its commit renames it into place', async () => {
  await inTemp(async (dest) => {
    const storage = createLocalDirectory(dest, { durability: new RenameOnly() });
    const staged = await storage.stage('a/b.txt', { mtimeMs: Date.parse('2020-01-02T03:04:05Z') });
    await staged.write(text('x'.repeat(300 * 1024))); // larger than a small body: on disk before the commit
    assert.equal((await readdir(join(dest, '.resourcesync', 'tmp'))).length, 1);
    assert.equal(existsSync(join(dest, 'a', 'b.txt')), false);
    await staged.commit();
    assert.equal((await readFile(join(dest, 'a', 'b.txt'))).length, 300 * 1024);
    assert.deepEqual(await readdir(join(dest, '.resourcesync', 'tmp')), []);
  });
});

void test('list and isEmpty leave out the state folder and the trees beside it', async () => {
  await inTemp(async (dest) => {
    await mkdir(join(dest, '.resourcesync', 'tmp'), { recursive: true });
    await writeFile(join(dest, '.resourcesync', 'state.db'), 'state');
    await mkdir(join(dest, '.resourcesync-describedby'), { recursive: true });
    await writeFile(join(dest, '.resourcesync-describedby', 'd.xml'), 'd');
    const storage = createLocalDirectory(dest);
    assert.equal(await storage.isEmpty(), false, 'a tree beside the state is not the state (as before)');
    const keys = async (): Promise<string[]> => {
      const found: string[] = [];
      for await (const item of storage.list()) found.push(item.key);
      return found;
    };
    assert.deepEqual(await keys(), []);
    await writeFile(join(dest, 'plain.txt'), 'p');
    assert.deepEqual(await keys(), ['plain.txt']);
  });
});

void test('a commit through a folder that is a symbolic link to elsewhere is refused with RS_UNSAFE_PATH, and leaves nothing', async () => {
  await inTemp(async (base) => {
    const dest = join(base, 'mirror');
    const outside = join(base, 'outside');
    await mkdir(dest, { recursive: true });
    await mkdir(outside, { recursive: true });
    await symlink(outside, join(dest, 'escape'));
    for (const durability of [new RenameOnly(), new GroupCommit({ gatherMs: 1, idleMs: 1 })]) {
      const storage = new LocalDirectory(dest, { durability });
      for (const body of [text('evil'), text('e'.repeat(400 * 1024))]) {
        const staged = await storage.stage('escape/deeper/x.txt');
        await staged.write(body);
        await assert.rejects(() => staged.commit(), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'));
      }
    }
    assert.deepEqual(await readdir(outside), []);
    assert.deepEqual(await readdir(join(dest, '.resourcesync', 'tmp')), []);
  });
});

void test('a remove through a folder that is a symbolic link to elsewhere is refused with RS_UNSAFE_PATH, and deletes nothing there', async () => {
  await inTemp(async (base) => {
    const dest = join(base, 'mirror');
    const outside = join(base, 'outside');
    await mkdir(dest, { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, 'victim.txt'), 'keep me');
    await symlink(outside, join(dest, 'escape'));
    const storage = createLocalDirectory(dest, { durability: new RenameOnly() });
    await assert.rejects(() => storage.remove('escape/victim.txt'), (err: unknown) => isResourceSyncError(err, 'RS_UNSAFE_PATH'));
    assert.equal(await readFile(join(outside, 'victim.txt'), 'utf8'), 'keep me');
    assert.equal(await storage.remove('escape/missing/none.txt'), false);
  });
});

void test('remove prunes the folders it leaves empty, never the destination itself', async () => {
  await inTemp(async (dest) => {
    const storage = createLocalDirectory(dest, { durability: new RenameOnly() });
    for (const key of ['x/y/z/one.txt', 'x/two.txt']) {
      const staged = await storage.stage(key);
      await staged.write(text(key));
      await staged.commit();
    }
    assert.equal(await storage.remove('x/y/z/one.txt'), true);
    assert.equal(existsSync(join(dest, 'x', 'y')), false);
    assert.equal(existsSync(join(dest, 'x', 'two.txt')), true);
    assert.equal(await storage.remove('x/two.txt'), true);
    assert.equal(existsSync(join(dest, 'x')), false);
    assert.equal(existsSync(dest), true);
  });
});

void test('discardStaged removes the temporary folder; scratch files are made in it', async () => {
  await inTemp(async (dest) => {
    const storage = createLocalDirectory(dest);
    const scratch = await storage.scratchFile();
    assert.ok(scratch.startsWith(join(dest, '.resourcesync', 'tmp')));
    await writeFile(scratch, 'package');
    await storage.discardStaged();
    assert.equal(existsSync(join(dest, '.resourcesync', 'tmp')), false);
    const again = await storage.scratchFile();
    assert.notEqual(again, scratch);
  });
});
