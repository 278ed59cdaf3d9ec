// `resourcesync serve` options: several directories (sets), --state, --base-url with a path, --no-watch,
// --verbose, SIGINT, and argument errors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { REPO_ROOT } from '../helpers/paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
let tmp: string;

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-serve-opts-'));
});
after(() => rm(tmp, { recursive: true, force: true }));

function start(args: string[]): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [MAIN, 'serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`no 'listening on' line within 60 s; stderr: ${err}`));
    }, 60_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ child, url: m[1]!, stderr: () => err });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}; stderr: ${err}`));
    });
  });
}

function stop(child: ChildProcess, signal: NodeJS.Signals): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill(signal);
  return Promise.race([exited, sleep(60_000).then(() => -1)]);
}

void test('several directories, --state, --base-url with a path, --no-watch, --verbose; SIGINT exits 0', async () => {
  const one = join(tmp, 'one');
  const two = join(tmp, 'twö');
  const state = join(tmp, 'state');
  await mkdir(one, { recursive: true });
  await mkdir(two, { recursive: true });
  await writeFile(join(one, 'x.txt'), 'one');
  await writeFile(join(two, 'x.txt'), 'two');
  const { child, url, stderr } = await start([one, two, '--port', '0', '--state', state, '--base-url', 'http://example.org/mirror/', '--no-watch', '--verbose']);
  try {
    const sd = await (await fetch(`${url}/.well-known/resourcesync`)).text();
    assert.match(sd, /<loc>http:\/\/example\.org\/mirror\/\.resourcesync\/one\/capabilitylist\.xml<\/loc>/);
    assert.match(sd, /<loc>http:\/\/example\.org\/mirror\/\.resourcesync\/two\/capabilitylist\.xml<\/loc>/);
    const r1 = await fetch(`${url}/mirror/one/x.txt`);
    assert.equal(await r1.text(), 'one');
    assert.equal(r1.headers.get('link'), '<http://example.org/mirror/.resourcesync/one/capabilitylist.xml>; rel="resourcesync"');
    const r2 = await fetch(`${url}/mirror/two/x.txt`);
    assert.equal(await r2.text(), 'two');
    const cap = await fetch(`${url}/mirror/.resourcesync/two/capabilitylist.xml`);
    assert.equal(cap.status, 200);
    await cap.arrayBuffer();
    await stat(join(state, 'publish', '.well-known', 'resourcesync'));
    // --no-watch: a new file is served but not published
    await writeFile(join(one, 'late.txt'), 'late');
    await sleep(1500);
    const late = await fetch(`${url}/mirror/one/late.txt`);
    assert.equal(await late.text(), 'late');
    const rl = await (await fetch(`${url}/mirror/.resourcesync/one/resourcelist.xml`)).text();
    assert.doesNotMatch(rl, /late\.txt/);
    assert.match(stderr(), /GET \/mirror\/one\/x\.txt 200/);
  } finally {
    assert.equal(await stop(child, 'SIGINT'), 0);
  }
});

void test('the publication options of build: dumps, sha-1 and sha-256, list size limits, gzip', async () => {
  const dir = join(tmp, 'pub-opts');
  await mkdir(join(dir, 'sub'), { recursive: true });
  const files: Record<string, string> = { 'a.txt': 'alpha', 'b.txt': 'bravo', 'sub/c.txt': 'charlie' };
  for (const [p, c] of Object.entries(files)) await writeFile(join(dir, p), c);
  const { child, url } = await start([dir, '--port', '0', '--no-watch', '--dumps', '--hashes', 'md5,sha-1,sha-256', '--max-entries', '2', '--retention', '3']);
  try {
    const capUrl = `${url}/.resourcesync/pub-opts/capabilitylist.xml`;
    const cap = await (await fetch(capUrl)).text();
    const capabilities = [...cap.matchAll(/capability="([a-z-]+)"/g)].map((m) => m[1]);
    assert.deepEqual(capabilities, ['capabilitylist', 'resourcelist', 'resourcedump', 'changelist', 'changedump', 'change-notification', 'framework-notification', 'resourcelist-archive', 'resourcedump-archive']);
    // --max-entries 2: three resources make a Resource List Index of two parts
    const index = await (await fetch(`${url}/.resourcesync/pub-opts/resourcelist.xml`)).text();
    assert.match(index, /<sitemapindex /);
    const parts = [...index.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]!);
    assert.equal(parts.length, 2);
    const listed: string[] = [];
    for (const part of parts) {
      const text = await (await fetch(part)).text();
      for (const m of text.matchAll(/<loc>([^<]+)<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md hash="([^"]+)"/g)) {
        const path = m[1]!.slice(`${url}/`.length);
        const content = files[path]!;
        const hex = (algorithm: string): string => createHash(algorithm).update(content).digest('hex');
        assert.equal(m[2], `md5:${hex('md5')} sha-1:${hex('sha1')} sha-256:${hex('sha256')}`, path);
        listed.push(path);
      }
    }
    assert.deepEqual(listed, Object.keys(files));
    // --dumps: the Resource Dump's package is served, its length and md5 as listed
    const dump = await (await fetch(`${url}/.resourcesync/pub-opts/resourcedump.xml`)).text();
    const pkg = /<loc>([^<]+\.zip)<\/loc>[\s\S]*?<rs:md[^>]*hash="md5:([0-9a-f]+)"[^>]*length="(\d+)"/.exec(dump);
    assert.ok(pkg !== null, dump);
    const zip = await fetch(pkg[1]!);
    assert.equal(zip.status, 200);
    assert.equal(zip.headers.get('content-type'), 'application/zip');
    const bytes = Buffer.from(await zip.arrayBuffer());
    assert.equal(bytes.length, Number(pkg[3]));
    assert.equal(createHash('md5').update(bytes).digest('hex'), pkg[2]);
  } finally {
    assert.equal(await stop(child, 'SIGTERM'), 0);
  }
  // --gzip: the Source Description links to the gzipped Capability List, served as it was written
  const gz = await start([dir, '--port', '0', '--no-watch', '--gzip', '--state', join(tmp, 'pub-opts-gz')]);
  try {
    const sd = await (await fetch(`${gz.url}/.well-known/resourcesync`)).text();
    const capLoc = /<loc>([^<]+)<\/loc>/.exec(sd)?.[1];
    assert.equal(capLoc, `${gz.url}/.resourcesync/pub-opts/capabilitylist.xml.gz`);
    const cap = await fetch(capLoc);
    assert.equal(cap.status, 200);
    assert.match(gunzipSync(Buffer.from(await cap.arrayBuffer())).toString('utf8'), /<loc>[^<]+\/resourcelist\.xml\.gz<\/loc>/);
  } finally {
    assert.equal(await stop(gz.child, 'SIGTERM'), 0);
  }
});

void test('argument errors exit 2 with a message', () => {
  const cases: string[][] = [
    [],
    ['--port', 'abc', tmp],
    [join(tmp, 'missing')],
    ['--base-url', 'ftp://x/', tmp],
    ['--bogus', tmp],
    ['--hashes', 'crc32', tmp],
    ['--max-entries', '0', tmp],
    ['--retention', 'x', tmp],
  ];
  for (const args of cases) {
    const r = spawnSync(process.execPath, [MAIN, 'serve', ...args], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /resourcesync serve: /);
    assert.equal(r.stdout, '');
  }
  const help = spawnSync(process.execPath, [MAIN, 'serve', '--help'], { encoding: 'utf8', timeout: 60_000 });
  assert.equal(help.status, 0);
  assert.match(help.stdout, /--no-watch/);
  const buildHelp = spawnSync(process.execPath, [MAIN, 'build', '--help'], { encoding: 'utf8', timeout: 60_000 });
  // the publication options read the same in both commands
  for (const option of ['--hashes', '--max-entries', '--changelist-max', '--changelist-period', '--dumps', '--package-size', '--dump-format', '--retention', '--gzip', '--described-by']) {
    const line = (text: string): string | undefined => text.split('\n').find((l) => l.startsWith(`  ${option} `));
    assert.ok(line(help.stdout) !== undefined, option);
    assert.equal(line(help.stdout), line(buildHelp.stdout), option);
  }
});

void test('a failing first publication exits 1 with its reason', async () => {
  const dir = join(tmp, 'fails');
  await mkdir(dir, { recursive: true });
  const r = spawnSync(process.execPath, [MAIN, 'serve', dir, '--port', '0', '--base-url', 'http://example.org/?q=1'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(r.status, 1, r.stderr);
  assert.match(r.stderr, /publishing failed: .*Base URL/);
  assert.doesNotMatch(r.stdout, /listening on/);
});

void test('a busy port exits 1', async () => {
  const dir = join(tmp, 'busy');
  await mkdir(dir, { recursive: true });
  const { child, url } = await start([dir, '--port', '0', '--no-watch']);
  try {
    const port = new URL(url).port;
    const r = spawnSync(process.execPath, [MAIN, 'serve', dir, '--port', port, '--no-watch'], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /cannot listen/);
  } finally {
    assert.equal(await stop(child, 'SIGTERM'), 0);
  }
});
