import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

function build(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, 'build', ...args], { encoding: 'utf8', timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

void test('resourcesync build publishes a directory and records changes on the next run (--json)', async () => {
  const src = await tempDir();
  const out = await tempDir();
  try {
    writeFileSync(join(src.dir, 'a b.txt'), 'one');
    const first = build([src.dir, '--base-url', 'http://example.net/data', '--out', out.dir, '--json', '--hashes', 'md5,sha-256', '--name', 'ds1']);
    assert.equal(first.status, 0, first.stderr);
    const j1 = JSON.parse(first.stdout) as { ok: boolean; resources: number; sourceDescription: string; sets: string[] };
    assert.deepEqual([j1.ok, j1.resources, j1.sourceDescription, j1.sets], [true, 1, 'http://example.net/data/.well-known/resourcesync', ['ds1']]);
    assert.ok(existsSync(join(out.dir, '.resourcesync', 'ds1', 'resourcelist.xml')));
    assert.match(readFileSync(join(out.dir, '.resourcesync', 'ds1', 'resourcelist.xml'), 'utf8'), /http:\/\/example\.net\/data\/a%20b\.txt/);
    writeFileSync(join(src.dir, 'a b.txt'), 'two');
    writeFileSync(join(src.dir, 'c.txt'), 'new');
    const second = build([src.dir, '--base-url', 'http://example.net/data', '--out', out.dir, '--json', '--hashes', 'md5,sha-256', '--name', 'ds1']);
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual((JSON.parse(second.stdout) as { changes: unknown }).changes, { created: 1, updated: 1, deleted: 0 });
    const human = build([src.dir, '--base-url', 'http://example.net/data', '--out', out.dir, '--hashes', 'md5,sha-256', '--name', 'ds1']);
    assert.equal(human.status, 0);
    assert.match(human.stdout, /Published 2 resources/);
    assert.match(human.stdout, /0 created, 0 updated, 0 deleted/);
  } finally {
    await src.cleanup();
    await out.cleanup();
  }
});

void test('resourcesync build: usage errors exit 2, failures exit 1', async () => {
  const out = await tempDir();
  try {
    assert.equal(build([]).status, 2);
    assert.equal(build([out.dir, '--out', out.dir]).status, 2);
    assert.equal(build([out.dir, '--base-url', 'ftp://x/', '--out', out.dir]).status, 2);
    assert.equal(build([out.dir, '--base-url', 'http://x/', '--out', out.dir, '--hashes', 'crc32']).status, 2);
    assert.equal(build([out.dir, '--base-url', 'http://x/', '--out', out.dir, '--max-entries', '0']).status, 2);
    assert.equal(build([out.dir, '--bogus']).status, 2);
    const missing = build([join(out.dir, 'missing'), '--base-url', 'http://x/', '--out', join(out.dir, 'pub'), '--json']);
    assert.equal(missing.status, 1);
    assert.equal((JSON.parse(missing.stdout) as { error: { code: string } }).error.code, 'RS_IO');
    assert.match(missing.stderr, /does not exist/);
    assert.equal(build(['--help']).status, 0);
  } finally {
    await out.cleanup();
  }
});
