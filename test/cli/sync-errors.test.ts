import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';
import { startTestServer } from '../helpers/test-server.js';

const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

/** Runs the CLI; `pipeTo` runs `sh -c "<cli> … | <pipeTo>"` instead. */
function run(args: string[], pipeTo?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = pipeTo === undefined
      ? spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('sh', ['-c', `"${process.execPath}" "${CLI}" ${args.map((a) => `'${a}'`).join(' ')} | ${pipeTo}`], { stdio: ['ignore', 'pipe', 'pipe'] });
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

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

void test('a refused connection is exit 5 with the cause, and --json carries what discovery tried', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-cli-err-'));
  try {
    const port = await freePort();
    const r = await run(['sync', `http://127.0.0.1:${port}/`, join(dir, 'm'), '--json', '--retries', '0']);
    assert.equal(r.code, 5, r.stderr);
    assert.match(r.stderr, /could not be reached: .*connection refused/);
    const out = JSON.parse(r.stdout) as { error: { code: string; data: { tried: unknown[]; notes: { code: string; data: { url?: string } }[] } } };
    assert.equal(out.error.code, 'RS_NETWORK');
    assert.ok(out.error.data.tried.length > 0);
    assert.ok(out.error.data.notes.some((n) => n.code === 'discovery-tried-well-known' && n.data.url === `http://127.0.0.1:${port}/.well-known/resourcesync`));
    assert.doesNotMatch(r.stderr, /\n\s+at /); // no stack trace
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

void test('401 names the credentials options; 503 after retries is exit 5', async () => {
  const s = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), 'rs-cli-err-'));
  try {
    s.fault = (_req, res) => {
      res.writeHead(401, { 'www-authenticate': 'Bearer' }).end();
      return true;
    };
    const denied = await run(['sync', `${s.origin}/capabilitylist.xml`, join(dir, 'a')]);
    assert.equal(denied.code, 5);
    assert.match(denied.stderr, /HTTP 401.*RESOURCESYNC_BEARER/s);
    s.fault = (_req, res) => {
      res.writeHead(503, { 'retry-after': '0' }).end();
      return true;
    };
    const down = await run(['sync', `${s.origin}/capabilitylist.xml`, join(dir, 'b'), '--retries', '1']);
    assert.equal(down.code, 5);
    assert.match(down.stderr, /could not be reached: HTTP 503/);
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});

void test('a destination that is a file is a usage error that says so, not a raw errno', async () => {
  const s = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), 'rs-cli-err-'));
  try {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const r = await run(['sync', `${s.origin}/capabilitylist.xml`, file]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /is not a folder/);
    assert.doesNotMatch(r.stderr, /EEXIST/);
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});

void test('output cut short by its reader (| head -1) ends quietly, no EPIPE trace', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'rs-cli-err-'));
  try {
    const doc = join(dir, 'rl.xml');
    const urls = Array.from({ length: 5000 }, (_, i) => `<url><loc>http://example.com/${i}</loc></url>`).join('\n');
    await writeFile(doc, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>${urls}</urlset>`);
    const r = await run(['inspect', '--json', doc], 'head -c 100 >/dev/null');
    assert.doesNotMatch(r.stderr, /EPIPE|\n\s+at /, r.stderr);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

/** Runs the CLI under a pseudo-terminal (util-linux `script`), so that stderr is a TTY; undefined without `script`. */
async function runOnTerminal(args: string[], columns: number): Promise<{ code: number | null; output: string } | undefined> {
  const { existsSync } = await import('node:fs');
  if (!existsSync('/usr/bin/script')) return undefined;
  const command = `stty cols ${columns} 2>/dev/null; "${process.execPath}" "${CLI}" ${args.map((a) => `'${a}'`).join(' ')}`;
  return new Promise((resolve) => {
    const child = spawn('/usr/bin/script', ['-qec', command, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

void test('on a terminal the progress line is drawn, even at 0 columns, and never with --json', async (t) => {
  const s = await startTestServer();
  const dir = await mkdtemp(join(tmpdir(), 'rs-cli-tty-'));
  try {
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    const urls: string[] = [];
    for (let i = 0; i < 300; i++) {
      s.set(`/r/${i}.txt`, `resource ${i}`);
      urls.push(`<url><loc>${s.origin}/r/${i}.txt</loc></url>`);
    }
    // slow enough that the bar is redrawn (it is drawn at most every 100 ms)
    s.fault = async () => {
      await new Promise((r) => setTimeout(r, 5));
      return false;
    };
    s.set('/capabilitylist.xml', `<urlset ${ns}><rs:md capability="capabilitylist"/><url><loc>${s.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`);
    s.set('/resourcelist.xml', `<urlset ${ns}><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>${urls.join('')}</urlset>`);
    const plain = await runOnTerminal(['sync', `${s.origin}/capabilitylist.xml`, join(dir, 'a'), '--no-fsync', '--concurrency', '2'], 0);
    if (plain === undefined) {
      t.skip('no util-linux script to give the CLI a terminal');
      return;
    }
    assert.equal(plain.code, 0, plain.output);
    const CLEAR_LINE = '\u001b[2K';
    assert.ok(plain.output.includes(`${CLEAR_LINE}baseline `), plain.output); // the progress line is drawn
    // done/total once the total is known, "of ?" until then; never n/0
    assert.match(plain.output, /baseline (\[[#-]+\] )?\d+(\/\d+| of \?) resources, /);
    assert.doesNotMatch(plain.output, / \d+\/0 resources/);
    const json = await runOnTerminal(['sync', `${s.origin}/capabilitylist.xml`, join(dir, 'b'), '--no-fsync', '--concurrency', '2', '--json'], 80);
    assert.equal(json?.code, 0, json?.output);
    assert.ok(json !== undefined && !json.output.includes(CLEAR_LINE), json?.output); // no progress line drawn
    assert.equal((JSON.parse(json.output.trim()) as { created: number }).created, 300);
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});
