/**
 * End to end through the CLI against web servers nobody here wrote: `resourcesync build` publishes a
 * collection for a static server, the server serves it on 127.0.0.1 (configuration written into a temporary
 * folder, see test/helpers/web-servers.ts), `resourcesync sync` mirrors it and `resourcesync audit` checks the
 * mirror; then files are changed, added and deleted, `build` runs again and `sync` follows incrementally.
 * A second mirror does the same with `--prefer-dump` (Resource Dump, then Change Dump).
 *
 * What the servers do differently (as configured here, close to their defaults; seen with curl):
 * - nginx: HTTP/1.1 keep-alive (100 requests a connection); gzip for text and XML (chunked, no
 *   Content-Length, weak ETag), else Content-Length and a strong ETag (mtime-length).
 * - Apache httpd: HTTP/1.1 keep-alive, but closes the connection after 20 requests (MaxKeepAliveRequests) and
 *   says so in that response; ETags are weak for a file modified within the last second; no compression.
 * - lighttpd: HTTP/1.1 keep-alive (50 requests); brotli (preferred over gzip) for text and XML through
 *   mod_deflate, compressed whole (with Content-Length, ETag suffixed `-br`).
 * - busybox httpd: an HTTP/1.1 status line but `Connection: close` on every response (one request per
 *   connection), Content-Length, ETag (mtime-length).
 * - python3 -m http.server: HTTP/1.0, closes after each response (the case that crashed undici's parser when a
 *   paused response met the peer's FIN), Content-Length, no ETag.
 * All of them percent-decode the request path into the UTF-8 file name (spaces, `%`, `+`, `;`, `&`, unicode) and
 * none takes `+` for a space in a path.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, cp, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { REPO_ROOT } from './helpers/paths.js';
import { tempDir } from './helpers/tmp.js';
import { WEB_SERVERS, startWebServer, type RunningServer } from './helpers/web-servers.js';
import { prng } from './helpers/prng.js';

const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');


/** `n` random bytes; printable lines for text (which the servers compress). */
function bytes(n: number, text: boolean): Buffer {
  const b = randomBytes(n);
  if (text) for (let i = 0; i < n; i++) b[i] = i % 80 === 79 ? 10 : 32 + (b[i]! % 95);
  return b;
}

/** Names a URL must encode, and that some servers decode differently. */
const ODD_NAMES = [
  'a b.txt',
  '100% sure.txt',
  '50%25 literal.txt',
  'plus+sign.txt',
  'semi;colon,equals=.txt',
  "apos'quote (paren) [bracket].txt",
  'amp&less.xml',
  'tilde~dollar$at@.bin',
  'ünïcödé/日本語 ファイル.txt',
  'emoji 😀/nested dir/deep é.bin',
  'empty.txt',
];

/** Writes the collection: 300 small files in nested folders, the odd names, 16 of 270–900 KB and four of 1–3 MB. */
async function makeCollection(root: string, rand: () => number): Promise<void> {
  const put = async (rel: string, body: Buffer): Promise<void> => {
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), body);
  };
  for (let i = 0; i < 300; i++) {
    const text = i % 3 !== 0;
    const depth = i % 4;
    const dirs = Array.from({ length: depth }, (_, d) => `d${(i >> d) % 5}`);
    await put([...dirs, `file-${i}.${text ? 'txt' : 'bin'}`].join('/'), bytes(1 + Math.floor(rand() * 6000), text));
  }
  for (const name of ODD_NAMES) await put(`odd/${name}`, name === 'empty.txt' ? Buffer.alloc(0) : bytes(10 + Math.floor(rand() * 3000), name.endsWith('.txt')));
  // bodies over 256 KiB are streamed by the client (smaller ones are read whole): backpressure on these
  for (let i = 0; i < 16; i++) await put(`mid/part ${i}.${i % 2 === 0 ? 'txt' : 'bin'}`, bytes(270_000 + Math.floor(rand() * 630_000), i % 2 === 0));
  await put('big/one.bin', bytes(1_048_576 + 17, false));
  await put('big/two words.bin', bytes(2_000_000, false));
  await put('big/three.txt', bytes(3_000_000, true));
  await put('big/ü.bin', bytes(1_500_000, false));
}

/** Changes, adds and deletes files (same-length rewrites included: only the hash tells); returns the counts. */
async function changeCollection(root: string, rand: () => number): Promise<{ created: number; updated: number; deleted: number }> {
  let updated = 0;
  for (const i of [1, 2, 5, 8, 13, 21, 34, 55, 89, 144]) {
    const rel = (await listTree(root)).find((p) => p.endsWith(`/file-${i}.txt`) || p === `file-${i}.txt`);
    if (rel === undefined) continue;
    const old = await readFile(join(root, rel));
    await writeFile(join(root, rel), i % 2 === 0 ? bytes(old.length, true) : bytes(old.length + 100, true));
    updated++;
  }
  await writeFile(join(root, 'big', 'one.bin'), bytes(1_048_576 + 17, false));
  updated++;
  for (let i = 0; i < 15; i++) {
    const rel = `new/${i % 3 === 0 ? 'späce and 100%/' : ''}added ${i}.${i % 2 === 0 ? 'txt' : 'bin'}`;
    await mkdir(dirname(join(root, rel)), { recursive: true });
    await writeFile(join(root, rel), bytes(1 + Math.floor(rand() * 4000), i % 2 === 0));
  }
  const all = await listTree(root);
  const gone = [/(^|\/)file-3\.bin$/, /(^|\/)file-4\.txt$/, /(^|\/)file-9\.bin$/].map((re) => all.find((p) => re.test(p))!);
  const deleted = [...gone, 'odd/plus+sign.txt', 'odd/a b.txt', 'big/two words.bin'];
  for (const rel of deleted) await rm(join(root, rel));
  return { created: 15, updated, deleted: deleted.length };
}

/** Every file under `root` (relative, `/`-separated, sorted), skipping `skip` at the top. */
async function listTree(root: string, skip: string[] = []): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (rel === '' && skip.includes(e.name)) continue;
      if (e.isDirectory()) await walk(join(dir, e.name), r);
      else out.push(r);
    }
  };
  await walk(root, '');
  return out.sort();
}

/** The mirror holds exactly the collection's files, byte for byte. */
async function assertIdentical(collection: string, mirror: string, what: string): Promise<void> {
  const want = await listTree(collection);
  const got = await listTree(mirror, ['.resourcesync']);
  assert.deepEqual(got, want, `${what}: the mirror's file names`);
  for (const rel of want) {
    const [a, b] = await Promise.all([readFile(join(collection, rel)), readFile(join(mirror, rel))]);
    assert.ok(a.equals(b), `${what}: ${rel} differs (${b.length} bytes, expected ${a.length})`);
  }
  const tmp = await readdir(join(mirror, '.resourcesync', 'tmp')).catch(() => []);
  assert.deepEqual(tmp, [], `${what}: no temporary files`);
}

/** Copies the collection into the document root beside the published documents; removes what was deleted. */
async function deploy(collection: string, docroot: string): Promise<void> {
  const keep = new Set(await listTree(collection));
  for (const rel of await listTree(docroot, ['.resourcesync', '.well-known', 'robots.txt'])) {
    if (!keep.has(rel)) await rm(join(docroot, rel));
  }
  await cp(collection, docroot, { recursive: true });
}

function cli(args: string[], timeoutMs = 180_000): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

interface SyncJson {
  mode: string;
  created: number;
  updated: number;
  deleted: number;
  failed: { url: string; code: string; message: string }[];
}

for (const kind of WEB_SERVERS) {
  void test(`${kind.name}: build, sync, audit, change, build, sync, audit; the same with --prefer-dump`, async (t) => {
    const bin = kind.find();
    if (bin === undefined) {
      t.skip(`${kind.name} not installed`);
      return;
    }
    const { dir, cleanup } = await tempDir('rs-real-');
    let server: RunningServer | undefined;
    try {
      // servers that drop root (Apache, lighttpd) read the tree as www-data
      await chmod(dir, 0o755);
      const collection = join(dir, 'collection');
      const docroot = join(dir, 'docroot');
      const state = join(dir, 'source-state');
      const conf = join(dir, 'conf');
      const mirror = join(dir, 'mirror');
      const dumpMirror = join(dir, 'mirror-dump');
      await mkdir(conf);
      await mkdir(docroot);
      const rand = prng(0xc011ec7);
      await makeCollection(collection, rand);

      // the URL goes into the documents, so the server's port is chosen first: start it on the empty root
      await writeFile(join(docroot, 'robots.txt'), 'User-agent: *\n');
      server = await startWebServer(kind, bin, conf, docroot, '/robots.txt');
      const origin = server.origin;
      const timed = async (what: string, args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> => {
        const started = Date.now();
        const r = await cli(args);
        t.diagnostic(`${what}: ${Date.now() - started} ms`);
        return r;
      };
      const build = async (): Promise<void> => {
        const b = await timed('build', ['build', collection, '--base-url', `${origin}/`, '--out', docroot, '--state', state, '--dumps', '--json']);
        assert.equal(b.status, 0, `build: ${b.stderr}${b.stdout}`);
        await deploy(collection, docroot);
      };
      const syncAndAudit = async (dest: string, extra: string[], what: string): Promise<SyncJson> => {
        const s = await timed(`sync (${what})`, ['sync', `${origin}/`, dest, '--json', '--delete', ...extra]);
        const serverOut = (): string => `\n--- ${kind.name} output:\n${server?.output() ?? ''}`;
        assert.equal(s.status, 0, `${what}: sync exit ${s.status}\n${s.stdout}\n${s.stderr}${serverOut()}`);
        const report = JSON.parse(s.stdout) as SyncJson;
        assert.deepEqual(report.failed, [], what);
        const summary = `${what} (${JSON.stringify({ ...report, failed: undefined })})`;
        await assertIdentical(collection, dest, summary);
        const a = await timed(`audit (${what})`, ['audit', `${origin}/`, dest, '--json']);
        assert.equal(a.status, 0, `${what}: audit exit ${a.status}\n${a.stdout}\n${a.stderr}`);
        return report;
      };

      await build();
      const first = await syncAndAudit(mirror, [], 'baseline');
      assert.equal(first.mode, 'baseline');
      assert.equal(first.created, (await listTree(collection)).length);
      const firstDump = await syncAndAudit(dumpMirror, ['--prefer-dump'], 'baseline from the Resource Dump');
      assert.equal(firstDump.mode, 'baseline');

      const changed = await changeCollection(collection, rand);
      await build();
      // the changes are in the open Change List, in no Change Dump package yet: --prefer-dump applies them from the list
      const second = await syncAndAudit(mirror, [], 'incremental');
      assert.deepEqual({ mode: second.mode, created: second.created, updated: second.updated, deleted: second.deleted }, { mode: 'incremental', ...changed });
      const secondDump = await syncAndAudit(dumpMirror, ['--prefer-dump'], 'incremental after the Change Dumps');
      assert.deepEqual({ mode: secondDump.mode, created: secondDump.created, updated: secondDump.updated, deleted: secondDump.deleted }, { mode: 'incremental', ...changed });
    } finally {
      await server?.stop();
      await cleanup();
    }
  });
}
