import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { watchSources } from './watch.js';

let tmp: string;
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-watch-'));
});
after(() => rm(tmp, { recursive: true, force: true }));

async function until(cond: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}

void test('a burst of changes gives one debounced run; hidden names give none', async () => {
  const dir = join(tmp, 'burst');
  await mkdir(join(dir, '.resourcesync'), { recursive: true });
  let runs = 0;
  const w = watchSources({ dirs: [dir], debounceMs: 100, run: () => Promise.resolve(runs++) });
  try {
    assert.equal(w.mode, 'watch');
    for (let i = 0; i < 10; i++) await writeFile(join(dir, `f${i}.txt`), String(i));
    await until(() => runs === 1);
    await sleep(300);
    assert.equal(runs, 1);
    await writeFile(join(dir, '.resourcesync', 'state'), 'x');
    await writeFile(join(dir, '.hidden'), 'x');
    await sleep(300);
    assert.equal(runs, 1);
    await mkdir(join(dir, 'deep', 'er'), { recursive: true });
    await sleep(150);
    await writeFile(join(dir, 'deep', 'er', 'new é.txt'), 'n');
    await until(() => runs >= 2);
  } finally {
    await w.close();
  }
});

void test('runs are serialized and changes during a run coalesce into one more run', async () => {
  const dir = join(tmp, 'serial');
  await mkdir(dir, { recursive: true });
  let active = 0;
  let maxActive = 0;
  let runs = 0;
  const w = watchSources({
    dirs: [dir],
    debounceMs: 20,
    run: async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await sleep(300);
      runs++;
      active--;
    },
  });
  try {
    await writeFile(join(dir, 'a.txt'), 'a');
    await until(() => active === 1);
    for (let i = 0; i < 5; i++) {
      await writeFile(join(dir, `b${i}.txt`), 'b');
      await sleep(40);
    }
    await until(() => runs === 2 && active === 0, 4000);
    await sleep(200);
    assert.equal(runs, 2);
    assert.equal(maxActive, 1);
  } finally {
    await w.close();
  }
});

void test('errors of run go to onError and the watcher keeps going', async () => {
  const dir = join(tmp, 'errors');
  await mkdir(dir, { recursive: true });
  const errors: unknown[] = [];
  let calls = 0;
  const w = watchSources({
    dirs: [dir],
    debounceMs: 20,
    onError: (e) => errors.push(e),
    run: () => {
      calls++;
      return calls === 1 ? Promise.reject(new Error('publish failed')) : Promise.resolve();
    },
  });
  try {
    await writeFile(join(dir, 'a.txt'), 'a');
    await until(() => errors.length === 1);
    assert.equal((errors[0] as Error).message, 'publish failed');
    await writeFile(join(dir, 'b.txt'), 'b');
    await until(() => calls === 2);
    assert.equal(errors.length, 1);
  } finally {
    await w.close();
  }
});

void test('flush runs now and waits; close waits for an in-flight run', async () => {
  const dir = join(tmp, 'flush');
  await mkdir(dir, { recursive: true });
  let done = 0;
  const w = watchSources({
    dirs: [dir],
    run: async () => {
      await sleep(100);
      done++;
    },
  });
  await w.flush();
  assert.equal(done, 1);
  const f = w.flush();
  await sleep(10);
  await w.close();
  assert.equal(done, 2);
  await f;
});

void test('poll mode detects creations, edits and deletions by rescanning', async () => {
  const dir = join(tmp, 'poll');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'a.txt'), 'a');
  let runs = 0;
  const w = watchSources({ dirs: [dir], poll: true, pollMs: 100, debounceMs: 20, run: () => Promise.resolve(runs++) });
  try {
    assert.equal(w.mode, 'poll');
    await sleep(250);
    assert.equal(runs, 0);
    await writeFile(join(dir, 'b.txt'), 'b');
    await until(() => runs === 1);
    await writeFile(join(dir, 'a.txt'), 'a longer');
    await until(() => runs === 2);
    await rm(join(dir, 'b.txt'));
    await until(() => runs === 3);
    await writeFile(join(dir, '.hidden'), 'h');
    await sleep(350);
    assert.equal(runs, 3);
  } finally {
    await w.close();
  }
});

void test('maxWaitMs: a steady stream of changes is published while it lasts, not only when it stops', async () => {
  const dir = join(tmp, 'stream');
  await mkdir(dir, { recursive: true });
  let runs = 0;
  const w = watchSources({ dirs: [dir], debounceMs: 150, maxWaitMs: 100, run: () => Promise.resolve(runs++) });
  try {
    // a change every 20 ms for 1 s: the quiet period alone would never pass
    for (let i = 0; i < 50; i++) {
      await writeFile(join(dir, `s${i}.txt`), String(i));
      await sleep(20);
    }
    assert.ok(runs >= 2, `runs during the stream: ${runs}`);
  } finally {
    await w.close();
  }
});
