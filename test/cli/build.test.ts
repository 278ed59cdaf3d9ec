import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

function build(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return cli('build', args);
}

function cli(command: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [BIN, command, ...args], { encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Runs a command without blocking this process's event loop (the test server answers meanwhile). */
function cliAsync(command: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, command, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

/** Every file below `dir` (hidden ones included), as `/`-separated relative paths. */
function filesOf(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...filesOf(p, base));
    else out.push(relative(base, p).split('\\').join('/'));
  }
  return out.sort();
}

/** Serves every file of `dir` at its percent-encoded relative path, as a static web server would. */
function serveTree(server: TestServer, dir: string, skip: (path: string) => boolean = () => false): void {
  for (const p of filesOf(dir)) {
    if (!skip(p)) server.set(`/${p.split('/').map(encodeURIComponent).join('/')}`, readFileSync(join(dir, ...p.split('/'))));
  }
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

void test('resourcesync build --gzip: .xml.gz documents that validate, and sync from a static server of them mirrors byte for byte', async () => {
  const work = await tempDir();
  const server = await startTestServer();
  try {
    const src = join(work.dir, 'data');
    const out = join(work.dir, 'public');
    const files: Record<string, string> = { 'a.txt': 'alpha', 'sub/b c.html': '<p>b</p>', 'ü.json': '{}', 'd.txt': 'delta' };
    for (const [p, c] of Object.entries(files)) {
      mkdirSync(join(src, p, '..'), { recursive: true });
      writeFileSync(join(src, p), c);
    }
    const args = [src, '--base-url', `${server.origin}/`, '--out', out, '--state', join(work.dir, 'state'), '--gzip', '--max-entries', '2', '--changelist-max', '1', '--dumps'];
    assert.equal(build(args).status, 0);
    writeFileSync(join(src, 'a.txt'), 'alpha 2');
    const second = build([...args, '--json']);
    assert.equal(second.status, 0, second.stderr);
    const result = JSON.parse(second.stdout) as { capabilityLists: string[]; resourceLists: string[] };
    assert.equal(result.capabilityLists[0], `${server.origin}/.resourcesync/data/capabilitylist.xml.gz`);
    const docs = filesOf(out).filter((p) => p.startsWith('.resourcesync/'));
    assert.ok(docs.every((p) => /\.(xml\.gz|zip)$/.test(p)), docs.join(' '));
    assert.ok(docs.includes('.resourcesync/data/resourcelist.xml.gz') && docs.includes('.resourcesync/data/changelist-index.xml.gz'));
    assert.match(readFileSync(join(out, 'robots.txt'), 'utf8'), /^Sitemap: .*\/resourcelist\.xml\.gz$/m);
    const gz = docs.filter((p) => p.endsWith('.gz')).map((p) => join(out, p));
    const validated = cli('validate', ['--json', ...gz, join(out, '.well-known', 'resourcesync')]);
    assert.equal(validated.status, 0, validated.stdout);

    // the publish folder and the resources on a plain static server (no Content-Encoding): sync discovers
    // from the origin (robots.txt → Resource List Index, .gz) and verifies every resource
    serveTree(server, out);
    serveTree(server, src, (p) => p.startsWith('.'));
    const mirror = join(work.dir, 'mirror');
    const synced = await cliAsync('sync', [`${server.origin}/`, mirror, '--no-fsync', '--json']);
    assert.equal(synced.status, 0, synced.stdout + synced.stderr);
    assert.deepEqual(filesOf(mirror).filter((p) => !p.startsWith('.resourcesync/')), filesOf(src));
    for (const p of filesOf(src)) assert.deepEqual(readFileSync(join(mirror, p)), readFileSync(join(src, p)), p);
    assert.ok(server.requests.some((r) => r.url.endsWith('.xml.gz')));
    assert.ok(!server.requests.some((r) => /\.xml$/.test(r.url)), 'no request for an unzipped name');
  } finally {
    await server.close();
    await work.cleanup();
  }
});
