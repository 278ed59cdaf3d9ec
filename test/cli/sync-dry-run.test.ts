import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { CLI, runCli, withSource } from '../helpers/mirror-check.js';
import { urlPath } from '../helpers/fake-source.js';
import { note, type DestinationNote } from '../../src/destination/notes.js';
import { PLAN_ITEMS_LISTED, type PlanItem } from '../../src/destination/plan.js';
import type { SyncReport } from '../../src/destination/sync.js';

void test('sync --dry-run prints the plan as it is decided: a line per resource to create, update or delete with its reason, then the counts; --json gives JSON Lines, every item then the report', async () => {
  await withSource(async (src, dest) => {
    for (let i = 0; i < 4; i++) src.put(`d/f${i}.txt`, `file ${i}\n`);
    src.publish();
    const first = await runCli(['sync', src.capabilityList, dest, '--no-fsync']);
    assert.equal(first.status, 0, first.stderr);
    src.put('d/f0.txt', 'changed at the Source\n');
    src.put('d/new.txt', 'new\n');
    src.remove('d/f1.txt');
    src.publish();
    const url = (p: string): string => `${src.origin}${urlPath(p)}`;

    const text = await runCli(['sync', src.capabilityList, dest, '--dry-run']);
    assert.equal(text.status, 0, text.stderr);
    const lines = text.stdout.trimEnd().split('\n');
    assert.deepEqual(lines.slice(0, 3).sort(), [
      `  create ${url('d/new.txt')} (missing)`,
      `  delete ${url('d/f1.txt')} (deleted-at-source, kept: no --delete)`,
      `  update ${url('d/f0.txt')} (length)`,
    ]);
    assert.deepEqual(lines.slice(3), [
      `Dry run: incremental sync of ${src.capabilityList} into ${dest}`,
      '  plan: 1 to create, 1 to update, 1 to delete (1 kept), 0 unchanged',
      '  1 deletion(s) not applied (use --delete)',
    ]);
    assert.equal(await readFile(join(dest, 'd', 'f1.txt'), 'utf8'), 'file 1\n', 'nothing changed');

    const json = await runCli(['sync', src.capabilityList, dest, '--dry-run', '--delete', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const jsonLines = json.stdout.trimEnd().split('\n');
    const items = jsonLines.slice(0, -1).map((l) => JSON.parse(l) as PlanItem);
    const report = JSON.parse(jsonLines.at(-1)!) as SyncReport;
    assert.deepEqual(
      items.map((i) => [i.action, i.url, i.reason, i.change, i.kept ?? false]).sort(),
      [
        ['create', url('d/new.txt'), 'missing', 'created', false],
        ['delete', url('d/f1.txt'), 'deleted-at-source', 'deleted', false],
        ['update', url('d/f0.txt'), 'length', 'updated', false],
      ],
    );
    const update = items.find((i) => i.action === 'update')!;
    assert.deepEqual([update.path, update.source?.length, update.local?.length], ['d/f0.txt', 22, 7]);
    // the report comes last: the plan counted, with the items that change something in the order printed
    assert.equal(report.dryRun, true);
    assert.equal(report.deleted, 1);
    assert.deepEqual(report.plan?.counts, { create: 1, update: 1, delete: 1, unchanged: 0 });
    assert.deepEqual(report.plan?.reasons, { missing: 1, length: 1, 'deleted-at-source': 1 });
    assert.deepEqual(report.plan?.items, items);
  });
});

void test('a dry run over a Resource List of 20,000 resources prints every item, and its report stays bounded', async () => {
  await withSource(async (src, dest) => {
    const n = 20_000;
    src.withChangeList = false;
    for (let i = 0; i < n; i++) src.put(`r/${i}.txt`, `${i}\n`, false);
    src.publish();

    const json = await runCli(['sync', src.capabilityList, dest, '--dry-run', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const lines = json.stdout.trimEnd().split('\n');
    assert.equal(lines.length, n + 1, 'one line per resource, then the report');
    const items = lines.slice(0, -1).map((l) => JSON.parse(l) as PlanItem);
    assert.ok(items.every((i) => i.action === 'create' && i.reason === 'missing'));
    assert.equal(new Set(items.map((i) => i.url)).size, n, 'every resource once');
    const last = lines.at(-1)!;
    const report = JSON.parse(last) as SyncReport;
    assert.deepEqual(report.plan?.counts, { create: n, update: 0, delete: 0, unchanged: 0 });
    assert.equal(report.created, n);
    // the report lists the first PLAN_ITEMS_LISTED items, no more: its size is that of those items and its fields
    assert.equal(report.plan?.items.length, PLAN_ITEMS_LISTED);
    assert.deepEqual(report.plan?.items, items.slice(0, PLAN_ITEMS_LISTED));
    const listedBytes = lines.slice(0, PLAN_ITEMS_LISTED).reduce((sum, l) => sum + l.length + 1, 0);
    assert.ok(last.length < listedBytes + 10_000, `report of ${last.length} characters for ${listedBytes} of listed items`);
    assert.deepEqual(await readdir(dest), [], 'nothing written');

    const text = await runCli(['sync', src.capabilityList, dest, '--dry-run']);
    assert.equal(text.status, 0, text.stderr);
    const textLines = text.stdout.trimEnd().split('\n');
    assert.equal(textLines.length, n + 2, 'one line per resource to create, then the header and the counts');
    assert.equal(textLines.at(-1), `  plan: ${n} to create, 0 to update, 0 to delete, 0 unchanged`);
  });
});

void test('a dry run prints the items of a Resource List Index\'s first part before it reads the next part', async () => {
  await withSource(async (src, dest, server) => {
    src.withChangeList = false;
    for (const p of ['a.txt', 'b.txt']) src.put(p, p);
    src.publish();
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    server.set('/part-1.xml', src.resourceListXml());
    src.put('c.txt', 'c');
    server.set('/part-2.xml', src.resourceListXml().replace(/<url>.*?a\.txt.*?<\/url>|<url>.*?b\.txt.*?<\/url>/gs, ''));
    server.set('/resourcelist.xml', `<sitemapindex ${ns}><rs:md capability="resourcelist" at="2020-01-02T00:00:00Z"/>
<sitemap><loc>${src.origin}/part-1.xml</loc></sitemap><sitemap><loc>${src.origin}/part-2.xml</loc></sitemap></sitemapindex>`);
    // the second part is answered only once the first part's items are on stdout
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    server.fault = async (req) => {
      if (req.url === '/part-2.xml') await gate;
      return false;
    };
    const child = spawn(process.execPath, [CLI, 'sync', src.capabilityList, dest, '--dry-run', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    let stdout = '';
    let linesBeforePart2: string[] | undefined;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      const lines = stdout.split('\n').slice(0, -1); // the lines written in full
      if (linesBeforePart2 === undefined && lines.length >= 2) {
        linesBeforePart2 = lines;
        open();
      }
    });
    const [status] = (await once(child, 'close')) as [number | null];
    clearTimeout(killer);
    open();
    assert.equal(status, 0, 'the dry run finished (its first lines came before the second part was read)');
    assert.equal(server.requests.filter((q) => q.url === '/part-2.xml').length, 1);
    assert.deepEqual(
      linesBeforePart2?.map((l) => (JSON.parse(l) as PlanItem).path).sort(),
      ['a.txt', 'b.txt'],
    );
    const lines = stdout.trimEnd().split('\n');
    assert.deepEqual(lines.slice(0, -1).map((l) => (JSON.parse(l) as PlanItem).path).sort(), ['a.txt', 'b.txt', 'c.txt']);
    assert.deepEqual((JSON.parse(lines.at(-1)!) as SyncReport).plan?.counts, { create: 3, update: 0, delete: 0, unchanged: 0 });
  });
});

void test('a dry run whose reader goes away (a closed pipe) stops instead of waiting for ever', async () => {
  await withSource(async (src, dest) => {
    src.withChangeList = false;
    for (let i = 0; i < 20_000; i++) src.put(`r/${i}.txt`, `${i}\n`, false);
    src.publish();
    const child = spawn(process.execPath, [CLI, 'sync', src.capabilityList, dest, '--dry-run', '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.once('data', () => child.stdout.destroy()); // like `| head -1`
    const [status, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
    clearTimeout(killer);
    // it ends by itself, with the exit code it had so far (EPIPE is how a pipe's reader says it has had enough)
    assert.deepEqual([status, signal], [0, null]);
    assert.deepEqual(await readdir(dest), [], 'nothing written');
  });
});

void test('sync prints warnings by their message and --json gives their code and data', async () => {
  await withSource(async (src, dest) => {
    src.withChangeList = false;
    src.put('a.txt', 'a\n');
    src.publish();
    assert.equal((await runCli(['sync', src.capabilityList, dest, '--no-fsync'])).status, 0);
    const expected = note('no-change-list', { set: src.capabilityList });

    const json = await runCli(['sync', src.capabilityList, dest, '--no-fsync', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const warnings = (JSON.parse(json.stdout) as { warnings: DestinationNote[] }).warnings;
    assert.deepEqual(warnings, [expected]);

    const text = await runCli(['sync', src.capabilityList, dest, '--no-fsync']);
    assert.equal(text.status, 0, text.stderr);
    assert.ok(text.stdout.split('\n').includes(`  warning: ${expected.message}`), text.stdout);
  });
});
