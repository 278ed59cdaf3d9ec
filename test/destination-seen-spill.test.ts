// A baseline whose resources outnumber what the run keeps in memory (`seenInMemory`): the rest goes to a temporary
// file, and deletions are inferred and changes counted exactly as with everything in memory; the file is removed at
// the end of the run, after an error too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';
import { sync, type SyncOptions, type SyncReport } from '../src/destination/sync.js';
import { audit, listFiles } from '../src/destination/audit.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { RenameOnly } from '../src/node/durability.js';

const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const md5 = (body: string): string => createHash('md5').update(body).digest('hex');
const N = 30;

/**
 * A Capability List whose Resource List (as of `at`) offers `r/<i>.txt` for each of `offered`, and whose Change List
 * names `changes` after `at` (each `[path, change]`); every resource served with the body `body <path>`.
 */
function publish(server: TestServer, at: string, offered: number[], changes: [string, string][]): void {
  const origin = server.origin;
  const xml = (body: string): { body: string; headers: Record<string, string> } => ({ body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`, headers: { 'content-type': 'application/xml' } });
  const md = (path: string): string => `hash="md5:${md5(`body ${path}`)}" length="${`body ${path}`.length}"`;
  server.set('/capabilitylist.xml', xml(`<urlset ${NS}><rs:md capability="capabilitylist"/>
<url><loc>${origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${origin}/changelist.xml</loc><rs:md capability="changelist"/></url></urlset>`));
  const listed = offered.map((i) => `<url><loc>${origin}/r/${i}.txt</loc><rs:md ${md(`r/${i}.txt`)}/></url>`);
  server.set('/resourcelist.xml', xml(`<urlset ${NS}><rs:md capability="resourcelist" at="${at}" completed="${at}"/>\n${listed.join('\n')}</urlset>`));
  const later = new Date(Date.parse(at) + 60_000).toISOString().replace('.000', '');
  const changed = changes.map(([p, c]) => `<url><loc>${origin}/${p}</loc><rs:md change="${c}" datetime="${later}" ${md(p)}/></url>`);
  server.set('/changelist.xml', xml(`<urlset ${NS}><rs:md capability="changelist" from="${at}"/>\n${changed.join('\n')}</urlset>`));
  for (let i = 0; i < N + 5; i++) server.set(`/r/${i}.txt`, `body r/${i}.txt`);
  server.set('/late.txt', 'body late.txt');
}

const counts = (r: SyncReport): number[] => [r.created, r.updated, r.deleted, r.unchanged, r.failed.length];
const range = (from: number, to: number): number[] => Array.from({ length: to - from }, (_, i) => from + i);

void test('a baseline past the in-memory bound: deletions inferred and changes counted as with everything in memory; the temporary file removed', async () => {
  const server = await startTestServer();
  const { dir, cleanup } = await tempDir('rs-seen-spill-');
  try {
    const seenDir = join(dir, 'seen');
    mkdirSync(seenDir);
    let spilled = 0;
    const run = (dest: string, bounded: boolean, extra: Partial<SyncOptions> = {}): Promise<SyncReport> =>
      sync({
        source: `${server.origin}/capabilitylist.xml`,
        dest: join(dir, dest),
        delete: true,
        durability: new RenameOnly(),
        ...(bounded ? { seenInMemory: 4, seenDir, onProgress: () => void (spilled = Math.max(spilled, readdirSync(seenDir).length)) } : {}),
        ...extra,
      });

    // a fresh baseline, then its catch-up: r/1 (in the baseline) changed and late.txt created after the snapshot
    publish(server, '2020-01-01T00:00:00Z', range(0, N), [['r/1.txt', 'updated'], ['late.txt', 'created']]);
    const first = await run('bounded', true);
    assert.ok(spilled > 0, 'the set spilled to its temporary folder during the run');
    assert.deepEqual(readdirSync(seenDir), [], 'the temporary folder is removed at the end of the run');
    assert.deepEqual(counts(first), [N + 1, 0, 0, 0, 0], 'r/1 counted once, as created');
    assert.deepEqual(counts(await run('memory', false)), counts(first));

    // a new baseline: r/0..r/4 gone, r/30..r/34 new, late.txt no longer offered; r/7 named again by a change since
    publish(server, '2020-02-01T00:00:00Z', range(5, N + 5), [['r/7.txt', 'updated']]);
    spilled = 0;
    const second = await run('bounded', true, { baseline: true });
    assert.ok(spilled > 0);
    assert.deepEqual(readdirSync(seenDir), []);
    // 5 created; r/0..r/4 and late.txt deleted; r/7 unchanged (same bytes) and counted once
    assert.deepEqual(counts(second), [5, 0, 6, N - 5, 0]);
    assert.deepEqual(counts(await run('memory', false, { baseline: true })), counts(second));
    const files = (d: string): string[] => listFiles(join(dir, d)).sort();
    assert.deepEqual(files('bounded'), files('memory'));
    assert.deepEqual(files('bounded'), range(5, N + 5).map((i) => `r/${i}.txt`).sort());
  } finally {
    await server.close();
    await cleanup();
  }
});

void test('a run that fails after its set spilled removes the temporary file all the same', async () => {
  const server = await startTestServer();
  const { dir, cleanup } = await tempDir('rs-seen-spill-');
  try {
    const seenDir = join(dir, 'seen');
    mkdirSync(seenDir);
    publish(server, '2020-01-01T00:00:00Z', range(0, N), []);
    const ac = new AbortController();
    let spilled = false;
    await assert.rejects(
      sync({
        source: `${server.origin}/capabilitylist.xml`,
        dest: join(dir, 'mirror'),
        durability: new RenameOnly(),
        concurrency: 1,
        seenInMemory: 2,
        seenDir,
        signal: ac.signal,
        onProgress: (p) => {
          if (readdirSync(seenDir).length > 0) spilled = true;
          if (spilled && p.done >= 10) ac.abort();
        },
      }),
      (err) => isResourceSyncError(err),
    );
    assert.ok(spilled, 'the set had spilled before the run failed');
    assert.deepEqual(readdirSync(seenDir), [], 'removed after the error');
    assert.ok(existsSync(seenDir));
  } finally {
    await server.close();
    await cleanup();
  }
});

void test('an audit past the in-memory bound counts as with everything in memory (temporary file removed); a baseline removing more than a batch (1,000) removes every one', async () => {
  const server = await startTestServer();
  const { dir, cleanup } = await tempDir('rs-seen-spill-');
  try {
    const many = 2_345;
    publish(server, '2020-01-01T00:00:00Z', range(0, many), []);
    for (let i = N + 5; i < many; i++) server.set(`/r/${i}.txt`, `body r/${i}.txt`);
    const dest = join(dir, 'mirror');
    const source = `${server.origin}/capabilitylist.xml`;
    assert.deepEqual(counts(await sync({ source, dest, durability: new RenameOnly(), concurrency: 8 })), [many, 0, 0, 0, 0]);

    // one resource more on offer (missing here), one file more here (extra)
    publish(server, '2020-01-15T00:00:00Z', range(0, many + 1), []);
    for (let i = N + 5; i <= many; i++) server.set(`/r/${i}.txt`, `body r/${i}.txt`);
    writeFileSync(join(dest, 'r', 'stray.txt'), 'stray');
    const seenDir = join(dir, 'seen');
    mkdirSync(seenDir);
    for (const trustState of [false, true]) {
      let spilled = false;
      const onProgress = (): void => void (spilled ||= readdirSync(seenDir).length > 0);
      const bounded = await audit({ source, dest, trustState, seenInMemory: 100, seenDir, onProgress });
      const memory = await audit({ source, dest, trustState });
      assert.ok(spilled, `the set spilled to its temporary folder (trustState ${trustState})`);
      assert.deepEqual(readdirSync(seenDir), [], 'the temporary folder is removed at the end of the audit');
      assert.deepEqual(bounded.counts, memory.counts);
      assert.deepEqual(bounded.missing.map((m) => m.url), [`${server.origin}/r/${many}.txt`]);
      assert.equal(bounded.counts.extra, trustState ? 0 : 1, 'the stray file is extra among the copies, unknown to the state');
    }

    publish(server, '2020-02-01T00:00:00Z', [7], []);
    const totals: (number | undefined)[] = [];
    const second = await sync({ source, dest, durability: new RenameOnly(), delete: true, baseline: true, onProgress: (p) => void totals.push(p.total) });
    assert.deepEqual(counts(second), [0, 0, many - 1, 1, 0]); // the stray file is no resource of the state
    assert.deepEqual(listFiles(dest).sort(), ['r/7.txt', 'r/stray.txt'], 'the stray file, never in the state, is left alone');
    const last = totals[totals.length - 1];
    assert.ok(last !== undefined && last >= many - 1, `the deletions' total is known at the end (${last})`);
  } finally {
    await server.close();
    await cleanup();
  }
});
