import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { FakeSource } from './helpers/fake-source.js';
import { sync } from '../src/destination/sync.js';
import { FsyncEach, RenameOnly } from '../src/node/durability.js';

/** The threads of this process (Linux), or undefined where /proc does not tell. */
function threads(): number | undefined {
  return existsSync('/proc/self/task') ? readdirSync('/proc/self/task').length : undefined;
}

/** The child processes of this process (Linux), or undefined where /proc does not tell. */
function children(): string[] | undefined {
  if (!existsSync('/proc/self/task')) return undefined;
  try {
    return readdirSync('/proc/self/task').flatMap((t) =>
      readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim().split(' ').filter(Boolean),
    );
  } catch {
    return undefined; // a kernel without CONFIG_PROC_CHILDREN
  }
}

void test('sync() starts no thread and no child process, whatever its durability', async () => {
  const server = await startTestServer();
  const base = await mkdtemp(join(tmpdir(), 'rs-noside-'));
  try {
    const src = new FakeSource(server);
    for (let i = 0; i < 60; i++) src.put(`r/${i}.txt`, `resource ${i}`);
    src.publish();
    await readFile(join(base, '..', 'nonexistent-file')).catch(() => undefined); // libuv's thread pool is started
    const threadsBefore = threads();
    const childrenBefore = children();
    const resourcesBefore = process.getActiveResourcesInfo().filter((r) => r === 'ProcessWrap' || r === 'Worker').length;
    for (const [name, options] of [
      ['default', {}],
      ['file', { durability: new FsyncEach() }],
      ['no fsync', { durability: new RenameOnly() }],
    ] as const) {
      const dest = join(base, name);
      const report = await sync({ source: src.capabilityList, dest, ...options });
      assert.deepEqual(report.failed, [], name);
      assert.equal(report.created, 60, name);
      assert.equal(await readFile(join(dest, 'r', '59.txt'), 'utf8'), 'resource 59');
      assert.equal(threads(), threadsBefore, `${name}: no thread left behind`);
      assert.deepEqual(children(), childrenBefore, `${name}: no child process`);
      assert.equal(process.getActiveResourcesInfo().filter((r) => r === 'ProcessWrap' || r === 'Worker').length, resourcesBefore, name);
    }
  } finally {
    await server.close();
    await rm(base, { recursive: true, force: true });
  }
});
