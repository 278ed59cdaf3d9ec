import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDocument } from '../../core/xml/read-document.js';
import { publish, type PublishOptions } from '../publish.js';
import { watchSources, type SourceWatcher } from './watch.js';

let tmp: string;
before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-watch-'));
});
after(() => rm(tmp, { recursive: true, force: true }));

/** Polls `cond` until it holds: 60 s at most, however busy the machine. */
async function until(cond: () => boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}

void test('a burst of changes that settles together gives one run; hidden names give none', async () => {
  const dir = join(tmp, 'burst');
  await mkdir(join(dir, '.resourcesync'), { recursive: true });
  let runs = 0;
  // settle and batch spans well above the time a busy machine may take between two writes of the burst
  const w = watchSources({ dirs: [dir], settleMs: 300, batchMs: 1000, run: () => Promise.resolve(runs++) });
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
  // the first run lasts until the test has made its changes (not a fixed time a busy machine may outlast)
  let endFirstRun!: () => void;
  const firstRun = new Promise<void>((resolve) => (endFirstRun = resolve));
  const w = watchSources({
    dirs: [dir],
    settleMs: 20,
    run: async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await (runs === 0 ? firstRun : sleep(50));
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
    // every change has settled while the first run still runs: they make one more run, not one each
    await until(() => [0, 1, 2, 3, 4].every((i) => w.hold(join(dir, `b${i}.txt`)) === false));
    endFirstRun();
    await until(() => runs === 2 && active === 0);
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
    settleMs: 20,
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
  const w = watchSources({ dirs: [dir], poll: true, pollMs: 100, settleMs: 20, run: () => Promise.resolve(runs++) });
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

void test('a steady stream of changes is published while it lasts: each file settles on its own', async () => {
  const dir = join(tmp, 'stream');
  await mkdir(dir, { recursive: true });
  let runs = 0;
  const w = watchSources({ dirs: [dir], settleMs: 30, run: () => Promise.resolve(runs++) });
  try {
    // a new file every 20 ms for 1 s: some file is always unsettled, yet every one is published
    for (let i = 0; i < 50; i++) {
      await writeFile(join(dir, `s${i}.txt`), String(i));
      await sleep(20);
    }
    assert.ok(runs >= 10, `runs during the stream: ${runs}`);
  } finally {
    await w.close();
  }
});

void test('a file being written is held until it has had no change for settleMs; other files are not held back', async () => {
  const dir = join(tmp, 'held');
  await mkdir(dir, { recursive: true });
  const slow = join(dir, 'slow.bin');
  const quick = join(dir, 'quick.txt');
  const seen: Array<{ slow: boolean; quick: boolean }> = [];
  const ref: { w?: SourceWatcher } = {};
  const w = watchSources({
    dirs: [dir],
    // well above the gaps between two chunks, even on a busy machine; the writing lasts several times as long
    settleMs: 400,
    run: () => {
      seen.push({ slow: ref.w!.hold(slow) === true, quick: ref.w!.hold(quick) === true });
      return Promise.resolve();
    },
  });
  ref.w = w;
  try {
    const h = await open(slow, 'w');
    try {
      for (let i = 0; i < 80; i++) {
        await h.write(Buffer.alloc(1024, i));
        if (i === 5) await writeFile(quick, 'quick');
        await sleep(10);
      }
    } finally {
      await h.close();
    }
    // quick.txt settled and ran while slow.bin was still being written, and was not held
    assert.ok(seen.some((s) => s.slow && !s.quick), JSON.stringify(seen));
    await until(() => seen.length > 0 && !seen[seen.length - 1]!.slow);
    assert.equal(w.hold(slow), false); // settled lately
    assert.equal(w.hold(join(dir, 'never-touched.txt')), undefined);
  } finally {
    await w.close();
  }
});

void test('publish with the watcher: a file written slowly in chunks is recorded once, with its final hash', async () => {
  const dir = join(tmp, 'chunks');
  const out = join(tmp, 'chunks-out');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'seed.txt'), 'seed');
  const ref: { w?: SourceWatcher } = {};
  const opts: PublishOptions = { sets: [{ name: 'data', dir }], baseUrl: 'http://127.0.0.1:1', outDir: out, stateDir: join(tmp, 'chunks-state') };
  let failure: unknown;
  const w = watchSources({
    dirs: [dir],
    settleMs: 500, // well above the gaps between two chunks, even on a busy machine
    // as serve does: what the watcher knows of each file, and its settling span for what it has not heard of yet
    run: () => publish({ ...opts, hold: (f) => ref.w!.hold(f), settleMs: 500 }),
    onError: (e) => (failure = e),
  });
  ref.w = w;
  try {
    await w.flush();
    const body = Buffer.alloc(64 * 1024);
    for (let i = 0; i < body.length; i++) body[i] = (i * 7) & 0xff;
    const h = await open(join(dir, 'slow.bin'), 'w');
    try {
      // 16 chunks, 15 ms apart, while another file keeps the watcher running
      for (let i = 0; i < 16; i++) {
        await h.write(body.subarray(i * 4096, (i + 1) * 4096));
        await writeFile(join(dir, `other-${i}.txt`), String(i));
        await sleep(15);
      }
    } finally {
      await h.close();
    }
    const changeList = join(out, '.resourcesync', 'data', 'changelist.xml');
    await until(() => existsSync(changeList) && readFileSync(changeList, 'utf8').includes('slow.bin'));
    await sleep(200);
    await w.flush();
    const doc = await parseDocument(readFileSync(changeList));
    const slow = doc.entries.filter((e) => e.loc.endsWith('/slow.bin'));
    assert.equal(slow.length, 1, JSON.stringify(slow));
    assert.equal(slow[0]!.md?.change, 'created');
    assert.equal(slow[0]!.md?.length, String(body.length));
    assert.equal(slow[0]!.md?.hash, `md5:${createHash('md5').update(body).digest('hex')}`);
    assert.equal(doc.entries.filter((e) => /other-\d+\.txt$/.test(e.loc)).length, 16);
    assert.equal(failure, undefined);
  } finally {
    await w.close();
  }
});

void test('with record: settled files are recorded on their own, documents runs follow without a rescan; rescans at the start, when asked, and periodically', async () => {
  const dir = join(tmp, 'record');
  await mkdir(dir, { recursive: true });
  const actions: string[] = [];
  const recorded: string[][] = [];
  let complete = true;
  const w = watchSources({
    dirs: [dir],
    settleMs: 20,
    documentsAfterMs: 100,
    documentsEveryMs: 400,
    rescanEveryMs: 60_000,
    record: (files) => {
      recorded.push(files.map((f) => f.slice(dir.length + 1)).sort());
      return Promise.resolve({ complete });
    },
    run: ({ rescan }) => Promise.resolve(rescan ? 'rescan' : 'documents'),
    onRun: (_r, action) => actions.push(action),
  });
  try {
    await w.flush();
    assert.deepEqual(actions, ['rescan'], 'the first run rescans');
    await writeFile(join(dir, 'a.txt'), 'a');
    await until(() => actions.includes('documents'));
    assert.deepEqual(actions, ['rescan', 'record', 'documents']);
    assert.deepEqual(recorded, [['a.txt']]);

    // a steady stream: each file recorded when it settles, documents at least every documentsEveryMs
    actions.length = 0;
    for (let i = 0; i < 12; i++) {
      await writeFile(join(dir, `s${i}.txt`), String(i));
      await sleep(50);
    }
    await until(() => actions.at(-1) === 'documents');
    assert.ok(actions.filter((a) => a === 'record').length >= 6, actions.join(' '));
    assert.ok(actions.slice(0, -1).includes('documents'), `a documents run during the stream: ${actions.join(' ')}`);
    assert.ok(!actions.includes('rescan'), actions.join(' '));

    // a recording that cannot judge its files asks for a rescan at once
    actions.length = 0;
    complete = false;
    await writeFile(join(dir, 'b.txt'), 'b');
    await until(() => actions.includes('rescan'));
    // on a busy machine the write may settle as two events, each recorded and followed by its rescan
    assert.deepEqual(actions.slice(0, 2), ['record', 'rescan']);
  } finally {
    await w.close();
  }
  // a rescan is due every rescanEveryMs
  const periodic: string[] = [];
  const w2 = watchSources({
    dirs: [dir],
    settleMs: 20,
    documentsAfterMs: 10,
    rescanEveryMs: 300,
    record: () => Promise.resolve({ complete: true }),
    run: ({ rescan }) => Promise.resolve(rescan),
    onRun: (_r, action) => periodic.push(action),
  });
  try {
    await w2.flush();
    await sleep(350);
    await writeFile(join(dir, 'c.txt'), 'c');
    await until(() => periodic.length >= 3);
    assert.deepEqual(periodic, ['rescan', 'record', 'rescan']);
  } finally {
    await w2.close();
  }
});

void test('with record and followUp: a documents run follows when a run asks for one, with no change on disk', async () => {
  const dir = join(tmp, 'follow-up');
  await mkdir(dir, { recursive: true });
  const actions: string[] = [];
  let documentsRuns = 0;
  const w = watchSources({
    dirs: [dir],
    settleMs: 20,
    documentsAfterMs: 10,
    rescanEveryMs: 60_000,
    record: () => Promise.resolve({ complete: true }),
    // the first documents run puts something off for 200 ms (a Resource List); the next one writes it
    run: ({ rescan }) => Promise.resolve(rescan ? {} : { dueInMs: ++documentsRuns === 1 ? 200 : undefined }),
    followUp: (r) => (r as { dueInMs?: number }).dueInMs,
    onRun: (_r, action) => actions.push(action),
  });
  try {
    await w.flush();
    await writeFile(join(dir, 'a.txt'), 'a');
    await until(() => actions.filter((a) => a === 'documents').length === 2, 30_000);
    assert.deepEqual(actions, ['rescan', 'record', 'documents', 'documents']);
    // nothing more is asked for: no more runs
    await sleep(300);
    assert.deepEqual(actions, ['rescan', 'record', 'documents', 'documents']);
  } finally {
    await w.close();
  }
});
