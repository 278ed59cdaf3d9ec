// `resourcesync serve` recovers by itself when publishing fails: its snapshot store replaced by a folder (any
// user), or its file system full (root only: a 2 MiB tmpfs). It keeps answering meanwhile, logs the failure,
// tries again with a backoff, and once the fault is repaired publishes what changed meanwhile without a
// restart: a fresh `sync` then gets every file.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, writeFile, open, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startServe, type ServeChild } from '../helpers/serve-child.js';
import { runCli } from '../helpers/mirror-check.js';
import { exited } from '../helpers/exited.js';

const cleanups: Array<() => Promise<void>> = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

/** Visible files below `dir` with their contents, by relative path. */
async function tree(dir: string, prefix = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) Object.assign(out, await tree(join(dir, e.name), rel));
    else out[rel] = await readFile(join(dir, e.name), 'utf8');
  }
  return out;
}

/** Polls `check` every 200 ms until it is true; fails after `ms`. */
async function until(what: string, check: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (let i = 0; ; i++) {
    if (await check()) return;
    if (Date.now() > deadline || i > 10_000) assert.fail(`${what}: not within ${ms} ms`);
    await sleep(200);
  }
}

/** The resource URLs listed in the Source's Resource List (as served now). */
async function listed(serve: ServeChild): Promise<string> {
  const res = await fetch(`${serve.url}/.resourcesync/site/resourcelist.xml`);
  return res.status === 200 ? await res.text() : '';
}

/** A fresh `sync` of the Source gets every file of `site`, byte for byte, and exits 0. */
async function syncEqualsSite(serve: ServeChild, site: string, work: string): Promise<void> {
  const dest = join(work, `mirror-${Date.now()}`);
  const r = await runCli(['sync', `${serve.url}/`, dest]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(await tree(dest), await tree(site));
}

async function start(site: string): Promise<ServeChild> {
  const serve = await startServe([site]);
  cleanups.push(async () => {
    if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
    await exited(serve.child).catch(() => undefined);
  });
  return serve;
}

void test('a snapshot store that cannot be opened: serve answers, retries, and publishes the changes once it is back', async () => {
  const work = await mkdtemp(join(tmpdir(), 'rs-serve-recover-'));
  cleanups.push(() => rm(work, { recursive: true, force: true }));
  const site = join(work, 'site');
  await mkdir(site);
  for (let i = 0; i < 5; i++) await writeFile(join(site, `f${i}.txt`), `file ${i}\n`);
  const serve = await start(site);
  // the store becomes a folder: every publication fails ("cannot be opened")
  const store = join(site, '.resourcesync', 'source.sqlite');
  const aside = join(work, 'store-aside');
  await mkdir(aside);
  for (const suffix of ['', '-wal', '-shm'])
    await rename(`${store}${suffix}`, join(aside, `s${suffix}`)).catch(() => undefined);
  await mkdir(store);
  for (let i = 5; i < 12; i++) await writeFile(join(site, `f${i}.txt`), `file ${i}\n`);
  await writeFile(join(site, 'f0.txt'), 'file 0, changed\n');
  await unlink(join(site, 'f1.txt'));
  await until('a publication failed', () => /publishing failed/.test(serve.log()));
  // it still answers meanwhile
  assert.equal((await fetch(`${serve.url}/f2.txt`)).status, 200);
  // repair: the store is back; no file changes from here on
  await rmdir(store);
  for (const suffix of ['', '-wal', '-shm'])
    await rename(join(aside, `s${suffix}`), `${store}${suffix}`).catch(() => undefined);
  await until('the changes are published', async () => {
    const list = await listed(serve);
    return list.includes('/f11.txt<') && !list.includes('/f1.txt<');
  });
  await syncEqualsSite(serve, site, work);
  assert.equal(serve.child.exitCode, null, 'serve still runs');
});

const root = process.getuid?.() === 0;
void test(
  'a full file system: serve answers, retries, and publishes once space is back',
  { skip: root ? false : 'needs root to mount a 2 MiB tmpfs (mount -t tmpfs -o size=2m)' },
  async () => {
    const work = await mkdtemp(join(tmpdir(), 'rs-serve-full-'));
    const fs = join(work, 'fs');
    await mkdir(fs);
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=2m', 'tmpfs', fs], { stdio: 'ignore' });
    } catch {
      await rm(work, { recursive: true, force: true });
      assert.fail('mount -t tmpfs failed although running as root');
    }
    cleanups.push(async () => {
      try {
        execFileSync('umount', ['-l', fs], { stdio: 'ignore' });
      } catch {
        // already unmounted
      }
      await rm(work, { recursive: true, force: true });
    });
    const site = join(fs, 'site');
    await mkdir(site);
    for (let i = 0; i < 5; i++) await writeFile(join(site, `f${i}.txt`), `file ${i}\n`);
    const serve = await start(site);
    // fill the file system, then change files in place (no new space needed) and add a small one if it fits
    const filler = join(fs, 'filler');
    const handle = await open(filler, 'w');
    const chunk = Buffer.alloc(64 * 1024, 120);
    try {
      for (let i = 0; i < 100; i++) await handle.write(chunk);
      assert.fail('a 2 MiB file system took 6.4 MiB');
    } catch (error) {
      assert.equal((error as NodeJS.ErrnoException).code, 'ENOSPC');
    } finally {
      await handle.close();
    }
    for (let i = 0; i < 5; i++) await writeFile(join(site, `f${i}.txt`), `FILE ${i}\n`);
    await until('a publication failed', () => /publishing failed/.test(serve.log()));
    assert.equal((await fetch(`${serve.url}/f2.txt`)).status, 200);
    await unlink(filler);
    await until('the changes are published', async () => {
      const res = await fetch(`${serve.url}/.resourcesync/site/changelist.xml`);
      const text = res.status === 200 ? await res.text() : '';
      return [0, 1, 2, 3, 4].every((i) => text.includes(`/f${i}.txt<`));
    });
    await syncEqualsSite(serve, site, work);
  },
);
