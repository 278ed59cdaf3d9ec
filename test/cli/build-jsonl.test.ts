/**
 * `resourcesync build --jsonl`: a JSON-lines feed as a Source's inventory. Three runs of a feed (created, updated,
 * deleted by `"change": "deleted"` and by absence) publish Change Lists that `resourcesync sync` applies to a
 * mirror, the resources served at their `loc` by a loopback server; `check` judges the output conformant; bad
 * lines fail the run naming the line and field, or are skipped with --lenient; --jsonl-changes; stdin.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';
import { startTestServer, type TestServer } from '../helpers/test-server.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** Runs the CLI without blocking this process's event loop (the test server answers meanwhile). */
function cli(args: string[], stdin?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'], timeout: 120_000 });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  if (stdin !== undefined) child.stdin!.end(stdin);
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

function filesOf(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...filesOf(p, base));
    else out.push(relative(base, p).split('\\').join('/'));
  }
  return out.sort();
}

/** Serves every file of the publish folder at its percent-encoded path. */
function serveTree(server: TestServer, dir: string): void {
  for (const p of filesOf(dir)) server.set(`/${p.split('/').map(encodeURIComponent).join('/')}`, readFileSync(join(dir, ...p.split('/'))));
}

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

/** A feed line for a resource of `server` at `path` (percent-encoded) holding `body`, served there too. */
function line(server: TestServer, path: string, body: string, lastmod: string): string {
  server.set(path, { body, headers: { 'content-type': 'text/plain' } });
  return JSON.stringify({ loc: `${server.origin}${path}`, lastmod, length: Buffer.byteLength(body), hash: `md5:${md5(body)} sha-256:${sha256(body)}`, type: 'text/plain' });
}

/** The mirror's resources and their bytes (the Destination's own state left out). */
function mirrorOf(dir: string): Record<string, string> {
  if (!existsSync(dir)) return {};
  return Object.fromEntries(filesOf(dir).filter((p) => !p.startsWith('.resourcesync/')).map((p) => [p, readFileSync(join(dir, p), 'utf8')]));
}

void test('build --jsonl: three runs of a feed publish Change Lists a Destination applies, and check judges them conformant', async () => {
  const work = await tempDir();
  const server = await startTestServer();
  try {
    const feed = join(work.dir, 'items.jsonl');
    const out = join(work.dir, 'public');
    const mirror = join(work.dir, 'mirror');
    const args = ['build', '--jsonl', feed, '--base-url', `${server.origin}/`, '--out', out, '--state', join(work.dir, 'state'), '--json', '--hashes', 'md5,sha-256'];
    const sync = async (): Promise<{ mode: string }> => {
      serveTree(server, out);
      const r = await cli(['sync', `${server.origin}/`, mirror, '--no-fsync', '--delete', '--json']);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      return JSON.parse(r.stdout) as { mode: string };
    };

    // run 1: three resources, in no particular order
    writeFileSync(feed, [line(server, '/items/d.txt', 'delta', '2024-05-01T10:00:00Z'), line(server, '/items/a.txt', 'alpha', '2024-05-01T10:00:00Z'), line(server, '/items/b%20c.txt', 'bravo', '2024-05-01T10:00:00+02:00')].join('\n') + '\n');
    const first = await cli(args);
    assert.equal(first.status, 0, first.stderr);
    const r1 = JSON.parse(first.stdout) as { resources: number; sets: string[]; resourceLists: string[] };
    assert.deepEqual([r1.resources, r1.sets], [3, ['items']]);
    const list = readFileSync(join(out, '.resourcesync', 'items', 'resourcelist.xml'), 'utf8');
    assert.ok(list.includes(`<loc>${server.origin}/items/b%20c.txt</loc>`), 'loc as given');
    assert.ok(list.includes('<lastmod>2024-05-01T08:00:00Z</lastmod>'));
    assert.ok(list.includes(`hash="md5:${md5('alpha')} sha-256:${sha256('alpha')}" length="5" type="text/plain"`));
    assert.equal((await sync()).mode, 'baseline');
    assert.deepEqual(mirrorOf(mirror), { 'items/a.txt': 'alpha', 'items/b c.txt': 'bravo', 'items/d.txt': 'delta' });

    // run 2: a updated, b deleted by its line, d as it was, e created
    writeFileSync(
      feed,
      [
        line(server, '/items/a.txt', 'alpha 2', '2024-05-02T10:00:00Z'),
        JSON.stringify({ loc: `${server.origin}/items/b%20c.txt`, change: 'deleted' }),
        line(server, '/items/d.txt', 'delta', '2024-05-01T10:00:00Z'),
        line(server, '/items/e.txt', 'echo', '2024-05-02T11:00:00Z'),
      ].join('\n'),
    );
    server.delete('/items/b%20c.txt');
    const second = await cli(args);
    assert.equal(second.status, 0, second.stderr);
    assert.deepEqual((JSON.parse(second.stdout) as { changes: unknown }).changes, { created: 1, updated: 1, deleted: 1 });
    assert.equal((await sync()).mode, 'incremental');
    assert.deepEqual(mirrorOf(mirror), { 'items/a.txt': 'alpha 2', 'items/d.txt': 'delta', 'items/e.txt': 'echo' });

    // run 3: d left out of the feed (deleted by absence), e updated
    writeFileSync(feed, line(server, '/items/e.txt', 'echo 2', '2024-05-03T10:00:00Z') + '\n' + line(server, '/items/a.txt', 'alpha 2', '2024-05-02T10:00:00Z') + '\n');
    server.delete('/items/d.txt');
    const third = await cli(args);
    assert.equal(third.status, 0, third.stderr);
    assert.deepEqual((JSON.parse(third.stdout) as { changes: unknown }).changes, { created: 0, updated: 1, deleted: 1 });
    const changes = readFileSync(join(out, '.resourcesync', 'items', 'changelist.xml'), 'utf8');
    assert.equal(changes.match(/change="deleted"/g)?.length, 2, changes);
    assert.equal((await sync()).mode, 'incremental');
    assert.deepEqual(mirrorOf(mirror), { 'items/a.txt': 'alpha 2', 'items/e.txt': 'echo 2' });

    const checked = await cli(['check', `${server.origin}/`, '--json', '--rate', '0']);
    assert.equal(checked.status, 0, checked.stdout.slice(0, 3000));
  } finally {
    await server.close();
    await work.cleanup();
  }
});

void test('build --jsonl: a bad line fails the run naming the line and the field, nothing recorded; --lenient skips and counts', async () => {
  const work = await tempDir();
  try {
    const feed = join(work.dir, 'f.jsonl');
    const out = join(work.dir, 'public');
    const args = ['build', '--jsonl', feed, '--base-url', 'http://127.0.0.1:9/', '--out', out, '--state', join(work.dir, 'state')];
    writeFileSync(feed, '{"loc":"http://127.0.0.1:9/a","length":1}\n');
    assert.equal((await cli(args)).status, 0);
    const before = readFileSync(join(out, '.resourcesync', 'f', 'resourcelist.xml'), 'utf8');
    const cases: Array<[string, RegExp]> = [
      ['{"loc":"http://127.0.0.1:9/a"}\nnot json\n', /f\.jsonl: line 2: not JSON/],
      ['{"lastmod":"2024-01-01T00:00:00Z"}\n', /line 1: loc: is missing/],
      ['\n{"loc":"/relative"}\n', /line 2: loc: "\/relative" is not an absolute http\(s\) URL/],
      ['{"loc":"http://127.0.0.1:9/a","lastmod":"May 1st"}\n', /line 1: lastmod: "May 1st" is not a W3C datetime/],
      ['{"loc":"http://127.0.0.1:9/a","hash":"md5:abc"}\n', /line 1: hash: "md5:abc" is not a md5 digest/],
      ['{"loc":"http://127.0.0.1:9/a","length":-1}\n', /line 1: length: -1 is not a non-negative integer/],
      ['{"loc":"http://127.0.0.1:9/a"}\n{"loc":"http://127.0.0.1:9/b"}\n{"loc":"http://127.0.0.1:9/a"}\n', /line 3: loc: "http:\/\/127\.0\.0\.1:9\/a" is given again \(first on line 1\)/],
    ];
    for (const [text, message] of cases) {
      writeFileSync(feed, text);
      const r = await cli([...args, '--json']);
      assert.equal(r.status, 1, text);
      assert.match(r.stderr, message);
      assert.equal((JSON.parse(r.stdout) as { error: { code: string } }).error.code, 'RS_INVALID_FEED');
    }
    assert.equal(readFileSync(join(out, '.resourcesync', 'f', 'resourcelist.xml'), 'utf8'), before, 'nothing recorded');

    writeFileSync(feed, '{"loc":"http://127.0.0.1:9/a","length":1}\nnot json\n{"loc":"ftp://x/y"}\n{"loc":"http://127.0.0.1:9/c"}\n');
    const lenient = await cli([...args, '--lenient', '--json']);
    assert.equal(lenient.status, 0, lenient.stderr);
    const result = JSON.parse(lenient.stdout) as { skipped: number; resources: number; warnings: Array<{ code: string; line: number }> };
    assert.deepEqual([result.skipped, result.resources], [2, 2]);
    assert.deepEqual(result.warnings.map((w) => [w.code, w.line]), [['RS_INVALID_FEED', 2], ['RS_INVALID_FEED', 3]]);
    assert.match(lenient.stderr, /line 3: loc: "ftp:\/\/x\/y" is not an absolute http\(s\) URL/);
  } finally {
    await work.cleanup();
  }
});

void test('build --jsonl-changes and --jsonl -: only the lines present change anything; stdin is read once', async () => {
  const work = await tempDir();
  try {
    const out = join(work.dir, 'public');
    const args = ['build', '--jsonl', '-', '--name', 'feed', '--base-url', 'http://127.0.0.1:9/', '--out', out, '--state', join(work.dir, 'state'), '--json'];
    const r1 = await cli(args, '{"loc":"http://127.0.0.1:9/a","length":1}\n{"loc":"http://127.0.0.1:9/b","length":2}\n{"loc":"http://127.0.0.1:9/c","length":3}\n');
    assert.equal(r1.status, 0, r1.stderr);
    const r2 = await cli([...args, '--jsonl-changes'], '{"loc":"http://127.0.0.1:9/b","length":20}\n{"loc":"http://127.0.0.1:9/c","change":"deleted"}\n{"loc":"http://127.0.0.1:9/d"}\n');
    assert.equal(r2.status, 0, r2.stderr);
    const j2 = JSON.parse(r2.stdout) as { changes: unknown; resources: number };
    assert.deepEqual([j2.changes, j2.resources], [{ created: 1, updated: 1, deleted: 1 }, 3]);
    const list = readFileSync(join(out, '.resourcesync', 'feed', 'resourcelist.xml'), 'utf8');
    assert.deepEqual([...list.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]), ['http://127.0.0.1:9/a', 'http://127.0.0.1:9/b', 'http://127.0.0.1:9/d']);
    const cl = readFileSync(join(out, '.resourcesync', 'feed', 'changelist.xml'), 'utf8');
    assert.ok(!cl.includes('<loc>http://127.0.0.1:9/a</loc>'), 'a, absent from a feed of changes, stays as it was');
  } finally {
    await work.cleanup();
  }
});

void test('build with a feed: usage errors exit 2', async () => {
  const work = await tempDir();
  try {
    const feed = join(work.dir, 'f.jsonl');
    writeFileSync(feed, '');
    const base = ['build', '--base-url', 'http://127.0.0.1:9/', '--out', join(work.dir, 'out')];
    const cases: Array<[string[], RegExp]> = [
      [[...base, '--jsonl', feed], /needs --state/],
      [[...base, '--jsonl', feed, '--state', work.dir, work.dir], /directories or a feed/],
      [[...base, '--jsonl', join(work.dir, 'missing.jsonl'), '--state', work.dir], /is not a file/],
      [[...base, '--jsonl', feed, '--state', work.dir, '--dumps'], /--dumps is not for a feed/],
      [[...base, '--pg-inventory', 'postgres://127.0.0.1/x', '--state', work.dir], /needs --pg-query/],
      [[...base, '--jsonl', feed, '--pg-inventory', 'postgres://127.0.0.1/x', '--state', work.dir], /exclude each other/],
      [[...base, work.dir, '--lenient'], /--lenient goes with --jsonl/],
    ];
    for (const [args, message] of cases) {
      const r = await cli(args);
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, message);
    }
  } finally {
    await work.cleanup();
  }
});

void test('build --jsonl: an empty whole-inventory feed is refused when it would delete everything; resources on other origins are counted in a warning', async () => {
  const work = await tempDir();
  try {
    const feed = join(work.dir, 'f.jsonl');
    const out = join(work.dir, 'public');
    const args = ['build', '--jsonl', feed, '--base-url', 'http://127.0.0.1:9/', '--out', out, '--state', join(work.dir, 'state'), '--json'];
    writeFileSync(feed, '{"loc":"http://127.0.0.1:9/a"}\n{"loc":"https://files.example/b"}\n{"loc":"https://files.example/c"}\n');
    const first = await cli(args);
    assert.equal(first.status, 0, first.stderr);
    const w = (JSON.parse(first.stdout) as { warnings: Array<{ code: string; message: string }> }).warnings;
    assert.deepEqual(w.map((x) => x.code), ['RS_AUTHORITY']);
    assert.match(w[0]!.message, /^2 resource\(s\) are on another origin than the base URL http:\/\/127\.0\.0\.1:9\/ \(first: https:\/\/files\.example\/b\)/);
    writeFileSync(feed, '\n');
    const empty = await cli(args);
    assert.equal(empty.status, 1);
    assert.match(empty.stderr, /f\.jsonl: lists no resource; as the whole inventory it would delete all 3/);
    assert.match(readFileSync(join(out, '.resourcesync', 'f', 'resourcelist.xml'), 'utf8'), /files\.example\/c/);
  } finally {
    await work.cleanup();
  }
});

void test('build --jsonl FILE.gz reads it gunzipped; a staging folder a dead run left is removed', async () => {
  const { gzipSync } = await import('node:zlib');
  const { mkdirSync } = await import('node:fs');
  const work = await tempDir();
  try {
    const feed = join(work.dir, 'items.jsonl.gz');
    writeFileSync(feed, gzipSync('{"loc":"http://127.0.0.1:9/a","length":1}\n{"loc":"http://127.0.0.1:9/b","length":2}\n'));
    const left = join(work.dir, 'state', 'items', 'rs-feed-dead');
    mkdirSync(left, { recursive: true });
    writeFileSync(join(left, 'feed.sqlite'), 'x');
    const r = await cli(['build', '--jsonl', feed, '--base-url', 'http://127.0.0.1:9/', '--out', join(work.dir, 'public'), '--state', join(work.dir, 'state'), '--json']);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual([(JSON.parse(r.stdout) as { resources: number; sets: string[] }).resources, (JSON.parse(r.stdout) as { sets: string[] }).sets], [2, ['items']]);
    assert.deepEqual(readdirSync(join(work.dir, 'state', 'items')).filter((n) => n.startsWith('rs-feed-')), [], 'no staging folder left');
  } finally {
    await work.cleanup();
  }
});
