import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli, withSource } from '../helpers/mirror-check.js';
import { urlPath } from '../helpers/fake-source.js';
import { note, type DestinationNote } from '../../src/destination/notes.js';
import type { PlanItem } from '../../src/destination/plan.js';

void test('sync --dry-run prints the plan: a line per resource to create, update or delete with its reason, and the counts; --json lists every item', async () => {
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
    assert.equal(lines[0], `Dry run: incremental sync of ${src.capabilityList} into ${dest}`);
    assert.deepEqual(lines.slice(1, 4).sort(), [
      `  create ${url('d/new.txt')} (missing)`,
      `  delete ${url('d/f1.txt')} (deleted-at-source, kept: no --delete)`,
      `  update ${url('d/f0.txt')} (length)`,
    ]);
    assert.equal(lines[4], '  plan: 1 to create, 1 to update, 1 to delete (1 kept), 0 unchanged');
    assert.equal(await readFile(join(dest, 'd', 'f1.txt'), 'utf8'), 'file 1\n', 'nothing changed');

    const json = await runCli(['sync', src.capabilityList, dest, '--dry-run', '--delete', '--json']);
    assert.equal(json.status, 0, json.stderr);
    const report = JSON.parse(json.stdout) as { dryRun: boolean; plan: PlanItem[]; deleted: number };
    assert.equal(report.dryRun, true);
    assert.deepEqual(
      report.plan.map((i) => [i.action, i.url, i.reason, i.change, i.kept ?? false]).sort(),
      [
        ['create', url('d/new.txt'), 'missing', 'created', false],
        ['delete', url('d/f1.txt'), 'deleted-at-source', 'deleted', false],
        ['update', url('d/f0.txt'), 'length', 'updated', false],
      ],
    );
    assert.equal(report.deleted, 1);
    const update = report.plan.find((i) => i.action === 'update')!;
    assert.deepEqual([update.path, update.source?.length, update.local?.length], ['d/f0.txt', 22, 7]);
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
