/**
 * `sync({ urlPrefixes })` and `sync --url-prefix`: only the resources under the prefixes are mirrored, in the
 * baseline and from the Change List; changes outside are left alone and counted; a resource held from before that
 * falls outside a new filter is removed by the baseline the new filter takes (with `delete`); bad prefixes refused.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { FakeSource } from './helpers/fake-source.js';
import { serveChangeDumpOnly } from './helpers/dump-fixtures.js';
import { REPO_ROOT } from './helpers/paths.js';
import { sync, type SyncReport } from '../src/destination/sync.js';
import { audit, listFiles } from '../src/destination/audit.js';
import { RenameOnly } from '../src/node/durability.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';

async function withSource(fn: (src: FakeSource, dest: string, server: TestServer) => Promise<void>): Promise<void> {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-url-prefixes-'));
  try {
    await fn(new FakeSource(server), dest, server);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
}

const files = (dest: string): string[] => listFiles(dest).sort();
const outside = (r: SyncReport): number | undefined => (r.warnings.find((w) => w.code === 'outside-url-prefixes')?.data as { count?: number } | undefined)?.count;

async function heldUrls(dest: string): Promise<string[]> {
  const state = await openSqliteDestinationState(dest, { readonly: true });
  try {
    const out: string[] = [];
    for await (const u of state.urls()) out.push(u);
    return out.sort();
  } finally {
    await state.close();
  }
}

void test('only the resources under the prefixes are fetched, in the baseline and from the Change List; the rest is counted', async () => {
  await withSource(async (src, dest, server) => {
    src.put('a/1.txt', 'a1');
    src.put('a/2.txt', 'a2');
    src.put('b/1.txt', 'b1');
    src.put('ab.txt', 'ab'); // starts with '/a' but not with '/a/'
    src.publish();
    const options = { source: src.capabilityList, dest, delete: true, durability: new RenameOnly(), urlPrefixes: [`${src.origin}/a/`] };
    const first = await sync(options);
    assert.equal(first.mode, 'baseline');
    assert.deepEqual(files(dest), ['a/1.txt', 'a/2.txt']);
    assert.equal(first.created, 2);
    assert.equal(outside(first), 2);
    assert.ok(!server.requests.some((r) => r.url === '/b/1.txt' || r.url === '/ab.txt'), 'nothing outside the prefixes is requested');
    assert.deepEqual(await heldUrls(dest), [`${src.origin}/a/1.txt`, `${src.origin}/a/2.txt`]);

    // changes inside and outside; a deletion outside is left alone too
    src.put('a/1.txt', 'a1 v2');
    src.put('b/2.txt', 'b2');
    src.remove('b/1.txt');
    src.remove('a/2.txt');
    src.publish();
    const before = server.requests.length;
    const second = await sync(options);
    assert.equal(second.mode, 'incremental');
    assert.deepEqual(files(dest), ['a/1.txt']);
    assert.equal(await readFile(join(dest, 'a', '1.txt'), 'utf8'), 'a1 v2');
    assert.deepEqual([second.created, second.updated, second.deleted], [0, 1, 1]);
    assert.equal(outside(second), 2);
    assert.ok(!server.requests.slice(before).some((r) => r.url.startsWith('/b/')));
  });
});

void test('a new filter takes a new baseline: what falls outside is removed (with delete), what comes inside is fetched', async () => {
  await withSource(async (src, dest) => {
    src.put('a/1.txt', 'a1');
    src.put('b/1.txt', 'b1');
    src.put('c/1.txt', 'c1');
    src.publish();
    const base = { source: src.capabilityList, dest, delete: true, durability: new RenameOnly() };
    const all = await sync(base);
    assert.equal(all.created, 3);

    const narrowed = await sync({ ...base, urlPrefixes: [`${src.origin}/a/`, `${src.origin}/c/`] });
    assert.equal(narrowed.mode, 'baseline', 'a filter other than the last baseline one takes a baseline');
    assert.deepEqual(files(dest), ['a/1.txt', 'c/1.txt']);
    assert.equal(narrowed.deleted, 1);
    assert.equal(narrowed.created, 0);

    // the same filter again: incremental
    const again = await sync({ ...base, urlPrefixes: [`${src.origin}/c/`, `${src.origin}/a/`] });
    assert.equal(again.mode, 'incremental');

    // without delete, a narrower filter only reports what it would remove
    const kept = await sync({ ...base, delete: false, urlPrefixes: [`${src.origin}/a/`] });
    assert.equal(kept.mode, 'baseline');
    assert.deepEqual(kept.deletionsSkipped, [`${src.origin}/c/1.txt`]);
    assert.deepEqual(files(dest), ['a/1.txt', 'c/1.txt']);

    // no filter any more: everything comes back
    const widened = await sync(base);
    assert.equal(widened.mode, 'baseline');
    assert.deepEqual(files(dest), ['a/1.txt', 'b/1.txt', 'c/1.txt']);
    assert.equal(outside(widened), undefined);
  });
});

void test('prefixes that are not absolute http(s) URLs are refused before anything is written', async () => {
  await withSource(async (src, dest) => {
    src.put('a/1.txt', 'a1');
    src.publish();
    for (const bad of ['/a/', 'a/', 'ftp://x.example/', 'https://user:pw@x.example/', `${src.origin}/a/#x`]) {
      await assert.rejects(
        () => sync({ source: src.capabilityList, dest, urlPrefixes: [bad] }),
        (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT') && e.message.includes(bad),
        bad,
      );
    }
    assert.deepEqual(files(dest), []);
  });
});

/** Runs the built CLI. */
function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

void test('sync --url-prefix: repeatable; the count left alone is in the JSON report; a relative prefix is exit 2', async () => {
  await withSource(async (src, dest) => {
    src.put('a/1.txt', 'a1');
    src.put('b/1.txt', 'b1');
    src.put('c/1.txt', 'c1');
    src.publish();
    const bad = await run(['sync', src.capabilityList, dest, '--url-prefix', '/a/']);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--url-prefix '\/a\/' is not an absolute http\(s\) URL/);
    const r = await run(['sync', src.capabilityList, dest, '--json', '--no-fsync', '--url-prefix', `${src.origin}/a/`, '--url-prefix', `${src.origin}/c/`]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as SyncReport;
    assert.equal(report.created, 2);
    assert.equal(outside(report), 1);
    assert.deepEqual(files(dest), ['a/1.txt', 'c/1.txt']);
  });
});

void test('audit --url-prefix: a mirror synced with the prefixes is in sync with them; a copy held outside them is extra', async () => {
  await withSource(async (src, dest) => {
    src.put('a/1.txt', 'a1');
    src.put('b/1.txt', 'b1');
    src.publish();
    const prefix = `${src.origin}/a/`;
    await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly(), urlPrefixes: [prefix] });
    const whole = await audit({ source: src.capabilityList, dest });
    assert.equal(whole.inSync, false, 'without the prefixes, b/1.txt is missing');
    assert.deepEqual(whole.missing.map((m) => m.path), ['b/1.txt']);
    const filtered = await audit({ source: src.capabilityList, dest, urlPrefixes: [prefix] });
    assert.equal(filtered.inSync, true);
    assert.equal(filtered.total, 1);
    assert.equal(outside(filtered as unknown as SyncReport), 1);
    // a copy held from before, outside the prefixes: extra
    await sync({ source: src.capabilityList, dest, delete: true, durability: new RenameOnly() });
    const narrowed = await audit({ source: src.capabilityList, dest, urlPrefixes: [prefix] });
    assert.equal(narrowed.inSync, false);
    assert.equal(narrowed.counts.extra, 1);
    const cli = await run(['audit', src.capabilityList, dest, '--url-prefix', 'nope']);
    assert.equal(cli.code, 2, cli.stderr);
    const ok = await run(['audit', src.capabilityList, dest, '--json', '--url-prefix', prefix, '--url-prefix', `${src.origin}/b/`]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal((JSON.parse(ok.stdout) as { inSync: boolean }).inSync, true);
  });
});

void test('a Change Dump: only the bitstreams under the prefixes are written, the rest of its manifest left alone', async () => {
  const server = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-url-prefixes-dump-'));
  try {
    const origin = server.origin;
    const cap = await serveChangeDumpOnly(server);
    const report = await sync({ source: cap, dest, durability: new RenameOnly(), delete: true, urlPrefixes: [`${origin}/a`] });
    assert.deepEqual(report.failed, []);
    assert.deepEqual(files(dest), ['a.txt']);
    assert.equal(await readFile(join(dest, 'a.txt'), 'utf8'), 'alpha, later');
    assert.equal(outside(report), 3);
    assert.deepEqual(await heldUrls(dest), [`${origin}/a.txt`]);
  } finally {
    await server.close();
    await rm(dest, { recursive: true, force: true });
  }
});
