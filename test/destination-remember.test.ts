import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { join, normalize, sep } from 'node:path';
import { listFiles } from '../src/destination/audit.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';

/** A plain node:http static file server of `root` on 127.0.0.1 (a Source published by `build`). */
async function staticServer(root: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
    const file = join(root, path);
    if (!file.startsWith(root + sep)) return void res.writeHead(400).end();
    readFile(file).then(
      (body) =>
        res
          .writeHead(200, {
            'content-type': file.endsWith('.xml') ? 'application/xml' : 'text/plain',
            'content-length': body.length,
          })
          .end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const p of listFiles(dir).sort()) out[p] = await readFile(join(dir, ...p.split('/')), 'utf8');
  return out;
}

/** The files `build` publishes as resources: the collection without its documents. */
async function published(site: string): Promise<Record<string, string>> {
  return Object.fromEntries(
    Object.entries(await tree(site)).filter(
      ([p]) => !p.startsWith('.resourcesync/') && !p.startsWith('.well-known/') && p !== 'robots.txt',
    ),
  );
}

interface Report {
  mode: string;
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  failed: unknown[];
  deletionsSkippedCount: number;
}

/** A collection of 21 files published by `build` into itself and served by node:http; `rebuild()` publishes it again. */
async function withBuiltSource(
  fn: (o: {
    site: string;
    origin: string;
    dir: string;
    rebuild: (...more: string[]) => Promise<void>;
  }) => Promise<void>,
): Promise<void> {
  const tmp = await tempDir('rs-remember-');
  const site = join(tmp.dir, 'site');
  await mkdir(join(site, 'sub'), { recursive: true });
  for (let i = 0; i < 21; i++) await writeFile(join(site, i % 3 === 0 ? 'sub' : '', `f${i}.txt`), `file ${i}\n`);
  const { server, origin } = await staticServer(site);
  const rebuild = async (...more: string[]): Promise<void> => {
    const r = await runCli([
      'build',
      site,
      '--base-url',
      `${origin}/`,
      '--out',
      site,
      '--state',
      join(tmp.dir, 'state'),
      '--json',
      ...more,
    ]);
    assert.equal(r.status, 0, r.stderr);
  };
  try {
    await rebuild();
    await fn({ site, origin, dir: tmp.dir, rebuild });
  } finally {
    await new Promise((r) => server.close(r));
    await tmp.cleanup();
  }
}

const report = (stdout: string): Report => JSON.parse(stdout.trim().split('\n').pop()!) as Report;

void test('a baseline of a build tree whose Change List holds the changes since its Resource List counts each resource once', async () => {
  await withBuiltSource(async ({ site, origin, dir, rebuild }) => {
    await new Promise((r) => setTimeout(r, 20)); // the changes come after the first list's time
    for (let i = 1; i <= 5; i++) await writeFile(join(site, `f${i}.txt`), `changed ${i}\n`);
    await rm(join(site, 'f7.txt'));
    await writeFile(join(site, 'g.txt'), 'new\n');
    await rebuild();
    const dest = join(dir, 'mirror');
    const r = await runCli(['sync', origin, dest, '--json', '--no-fsync']);
    assert.equal(r.status, 0, r.stderr);
    const rep = report(r.stdout);
    assert.equal(rep.mode, 'baseline');
    const held = await tree(dest);
    assert.deepEqual(held, await published(site));
    assert.deepEqual(
      [rep.created, rep.updated, rep.deleted, rep.unchanged],
      [Object.keys(held).length, 0, 0, 0],
      r.stdout,
    );
  });
});

void test('deletions skipped without --delete are remembered: a later sync --delete applies them, then audit says in sync', async () => {
  await withBuiltSource(async ({ site, origin, dir, rebuild }) => {
    const dest = join(dir, 'mirror');
    const first = await runCli(['sync', origin, dest, '--json', '--no-fsync']);
    assert.equal(first.status, 0, first.stderr);
    await rm(join(site, 'f1.txt'));
    await rm(join(site, 'sub', 'f3.txt'));
    await writeFile(join(site, 'f2.txt'), 'changed\n');
    await rebuild();
    const skip = await runCli(['sync', origin, dest, '--json', '--no-fsync']);
    assert.equal(skip.status, 0, skip.stderr);
    const s = report(skip.stdout);
    assert.equal(s.mode, 'incremental');
    assert.equal(s.deletionsSkippedCount, 2);
    assert.equal(s.updated, 1);
    assert.equal(await readFile(join(dest, 'f1.txt'), 'utf8'), 'file 1\n', 'kept without --delete');

    // the Source does not change; the next run with --delete applies what was skipped
    const del = await runCli(['sync', origin, dest, '--json', '--no-fsync', '--delete']);
    assert.equal(del.status, 0, del.stderr);
    const d = report(del.stdout);
    assert.equal(d.deleted, 2, del.stdout);
    assert.deepEqual(await tree(dest), await published(site));
    const audit = await runCli(['audit', origin, dest, '--json']);
    assert.equal(audit.status, 0, audit.stdout);
    // nothing is left to apply: a further run deletes nothing
    const again = await runCli(['sync', origin, dest, '--json', '--no-fsync', '--delete']);
    assert.equal(report(again.stdout).deleted, 0);
  });
});

void test('a deletion skipped and then taken back by the Source (the resource is created again) is never applied', async () => {
  await withBuiltSource(async ({ site, origin, dir, rebuild }) => {
    const dest = join(dir, 'mirror');
    assert.equal((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).status, 0);
    await rm(join(site, 'f1.txt'));
    await rebuild();
    const skip = report((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).stdout);
    assert.equal(skip.deletionsSkippedCount, 1);
    await writeFile(join(site, 'f1.txt'), 'back again\n');
    await rebuild();
    const del = await runCli(['sync', origin, dest, '--json', '--no-fsync', '--delete']);
    assert.equal(del.status, 0, del.stderr);
    assert.equal(report(del.stdout).deleted, 0, del.stdout);
    assert.equal(await readFile(join(dest, 'f1.txt'), 'utf8'), 'back again\n');
  });
});

void test('sync --baseline keeps the files that verify, fetches a tampered or missing one again, and the next run goes on incrementally', async () => {
  await withBuiltSource(async ({ site, origin, dir }) => {
    const dest = join(dir, 'mirror');
    assert.equal((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).status, 0);
    await writeFile(join(dest, 'f1.txt'), 'FILE 1\n'); // same length, other bytes
    await rm(join(dest, 'sub', 'f3.txt'));
    // without --baseline nothing changed at the Source: nothing is fetched
    const plain = report((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).stdout);
    assert.equal(plain.mode, 'incremental');
    assert.equal(await readFile(join(dest, 'f1.txt'), 'utf8'), 'FILE 1\n');
    const r = await runCli(['sync', origin, dest, '--baseline', '--json', '--no-fsync']);
    assert.equal(r.status, 0, r.stderr);
    const b = report(r.stdout);
    assert.equal(b.mode, 'baseline');
    assert.deepEqual([b.created + b.updated, b.unchanged], [2, 19], r.stdout);
    assert.deepEqual(await tree(dest), await published(site));
    const next = report((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).stdout);
    assert.equal(next.mode, 'incremental');
    assert.deepEqual([next.created, next.updated], [0, 0]);
  });
});

void test('audit --repair fetches what is changed or missing; extra files go only with --delete; then the audit says in sync', async () => {
  await withBuiltSource(async ({ site, origin, dir }) => {
    const dest = join(dir, 'mirror');
    assert.equal((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).status, 0);
    await writeFile(join(dest, 'f2.txt'), 'tampered with\n');
    await rm(join(dest, 'f4.txt'));
    await writeFile(join(dest, 'extra.txt'), 'not from the Source\n');
    assert.equal((await runCli(['audit', origin, dest, '--json'])).status, 1);
    const keep = await runCli(['audit', origin, dest, '--repair', '--json']);
    assert.equal(keep.status, 1, 'the extra file is still there');
    const kept = JSON.parse(keep.stdout) as {
      before: { counts: Record<string, number> };
      after: { extra: string[]; counts: Record<string, number> };
    };
    assert.deepEqual(kept.before.counts, { missing: 1, extra: 1, changed: 1, failed: 0 });
    assert.deepEqual(kept.after.extra, ['extra.txt']);
    assert.equal(await readFile(join(dest, 'f2.txt'), 'utf8'), 'file 2\n');
    assert.equal(await readFile(join(dest, 'f4.txt'), 'utf8'), 'file 4\n');
    const del = await runCli(['audit', origin, dest, '--repair', '--delete', '--json']);
    assert.equal(del.status, 0, del.stdout);
    assert.deepEqual(await tree(dest), await published(site));
    assert.equal((await runCli(['audit', origin, dest])).status, 0);
    assert.equal(
      (await runCli(['audit', origin, dest, '--delete'])).status,
      2,
      '--delete without --repair is a usage error',
    );
  });
});

/** Keeps only the Resource Dump in the Capability List that `build --dumps` wrote: a dump-only Source. */
async function dumpOnly(site: string): Promise<void> {
  const cap = join(site, '.resourcesync', 'site', 'capabilitylist.xml');
  const xml = await readFile(cap, 'utf8');
  const kept = xml.replace(/<url>[\s\S]*?<\/url>/g, (u) => (u.includes('capability="resourcedump"') ? u : ''));
  assert.match(kept, /capability="resourcedump"/);
  assert.doesNotMatch(kept, /capability="resourcelist"|capability="changelist"/);
  await writeFile(cap, kept);
}

void test('a dump-only Source: a second sync writes no unchanged file again (the manifest hashes decide), and audit compares with the manifests', async () => {
  await withBuiltSource(async ({ site, origin, dir, rebuild }) => {
    await rebuild('--dumps');
    await dumpOnly(site);
    const dest = join(dir, 'mirror');
    const first = await runCli(['sync', origin, dest, '--json', '--no-fsync']);
    assert.equal(first.status, 0, first.stderr);
    const f = report(first.stdout);
    const held = await tree(dest);
    assert.deepEqual(held, await published(site));
    const n = Object.keys(held).length;
    assert.equal(f.created, n);
    const inodes = new Map<string, number>();
    for (const p of Object.keys(held)) inodes.set(p, (await stat(join(dest, p))).ino);

    const second = await runCli(['sync', origin, dest, '--json', '--no-fsync']);
    assert.equal(second.status, 0, second.stderr);
    const s = report(second.stdout);
    assert.deepEqual([s.created, s.updated, s.unchanged], [0, 0, n], second.stdout);
    for (const [p, ino] of inodes) assert.equal((await stat(join(dest, p))).ino, ino, `${p} not written again`);

    const a = await runCli(['audit', origin, dest, '--json']);
    const ar = JSON.parse(a.stdout) as { inSync: boolean; unchanged: number; counts: Record<string, number> };
    assert.deepEqual(
      [a.status, ar.inSync, ar.unchanged, ar.counts],
      [0, true, n, { missing: 0, extra: 0, changed: 0, failed: 0 }],
      a.stdout,
    );
    // a file changed behind the mirror's back: the audit sees it against the manifest, and the next sync repairs it
    await writeFile(join(dest, 'f5.txt'), 'other bytes\n');
    const b = JSON.parse((await runCli(['audit', origin, dest, '--json'])).stdout) as { changed: { path: string }[] };
    assert.deepEqual(
      b.changed.map((c) => c.path),
      ['f5.txt'],
    );
    assert.equal((await runCli(['sync', origin, dest, '--json', '--no-fsync'])).status, 0);
    assert.equal(await readFile(join(dest, 'f5.txt'), 'utf8'), 'file 5\n');
  });
});
