import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { FakeSource } from './helpers/fake-source.js';
import { sync, type SyncOptions, type SyncReport } from '../src/destination/sync.js';
import { RunHold, openRun, type SyncRun } from '../src/destination/sync-run.js';
import { beginSet, baselineFromList, catchUpSet, changesFromCursor, discover, endSet, inferDeletions, recordBaseline, requireUsableSets, settle } from '../src/destination/sync-steps.js';
import { listFiles } from '../src/destination/audit.js';
import { RenameOnly } from '../src/node/durability.js';

/** A sync run step by step, each capability set by `steps`; what `sync()` does between them done here too. */
async function stepByStep(options: SyncOptions, steps: (run: SyncRun, setRun: Awaited<ReturnType<typeof beginSet>>) => Promise<void>): Promise<SyncReport> {
  const hold = new RunHold(options);
  try {
    const run = await openRun(hold, options, Date.now());
    for (const set of await discover(run)) {
      const setRun = await beginSet(run, set);
      await steps(run, setRun);
      endSet(run, setRun);
    }
    requireUsableSets(run);
    await inferDeletions(run);
    for (const catchUp of run.catchUps) await catchUpSet(run, catchUp);
    return await settle(run);
  } catch (err) {
    await hold.abandon();
    throw err;
  } finally {
    await hold.release();
  }
}

async function tree(dest: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of listFiles(dest).sort()) out[p] = await readFile(join(dest, ...p.split('/')), 'utf8');
  return out;
}

void test("a sync's steps called one by one: a baseline, then the changes since its cursor, as sync() does them", async () => {
  const server = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), 'rs-steps-'));
  try {
    const src = new FakeSource(server);
    for (let i = 0; i < 6; i++) src.put(`d/${i}.txt`, `body ${i}\n`);
    src.publish();
    const byStep = join(dir, 'steps');
    const whole = join(dir, 'whole');
    const options = (dest: string): SyncOptions => ({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });

    const first = await stepByStep(options(byStep), async (run, setRun) => {
      assert.equal(setRun.baselineAt, undefined, 'no baseline yet');
      await baselineFromList(run, setRun);
      assert.equal(setRun.mode, 'baseline');
      await recordBaseline(run, setRun);
    });
    const reference = await sync(options(whole));
    assert.equal(first.mode, 'baseline');
    assert.deepEqual([first.created, first.updated, first.deleted, first.failed.length], [reference.created, 0, 0, 0]);
    assert.deepEqual(first.sets.map((s) => [s.key, s.mode, s.documents]), reference.sets.map((s) => [s.key, s.mode, s.documents]));
    assert.deepEqual(await tree(byStep), await tree(whole));

    src.put('d/0.txt', 'changed\n');
    src.remove('d/1.txt');
    src.put('d/new.txt', 'new\n');
    src.publish();
    const next = await stepByStep(options(byStep), async (run, setRun) => {
      assert.notEqual(setRun.baselineAt, undefined, 'the baseline was recorded');
      await changesFromCursor(run, setRun);
      assert.equal(setRun.mode, 'incremental');
    });
    const nextReference = await sync(options(whole));
    assert.equal(next.mode, 'incremental');
    assert.deepEqual([next.created, next.updated, next.deleted, next.failed.length], [1, 1, 1, 0]);
    assert.deepEqual([nextReference.created, nextReference.updated, nextReference.deleted], [1, 1, 1]);
    assert.deepEqual(await tree(byStep), await tree(whole));
    assert.equal(await readFile(join(byStep, 'd', '0.txt'), 'utf8'), 'changed\n');
  } finally {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
});
