// `explore --web` as a process against a Source on a real server: it answers only requests addressed to its own
// host (a page whose DNS name is rebound to 127.0.0.1 gets 421), refuses paths that do not percent-decode (400),
// and a search through a list longer than the Sitemaps limit answers that it stopped at 50,000 entries.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { EntriesPage } from '../src/web/entries.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { rawRequest } from './helpers/raw-http.js';
import { exited } from './helpers/exited.js';
import { REPO_ROOT } from './helpers/paths.js';

const CLI = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const ENTRIES = 60_000;

let server: TestServer;
let child: ChildProcess;
let page: string;
let port: number;

before(async () => {
  server = await startTestServer();
  const O = server.origin;
  const xml = (body: string): { body: string; headers: Record<string, string> } => ({
    body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
    headers: { 'content-type': 'application/xml' },
  });
  server.set(
    '/.well-known/resourcesync',
    xml(
      `<urlset ${NS}><rs:md capability="description"/><url><loc>${O}/cl.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`,
    ),
  );
  server.set(
    '/cl.xml',
    xml(
      `<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${O}/rl.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
    ),
  );
  const urls: string[] = [];
  for (let i = 0; i < ENTRIES; i++) urls.push(`<url><loc>${O}/r${i}</loc></url>`);
  server.set(
    '/rl.xml',
    xml(`<urlset ${NS}><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>${urls.join('')}</urlset>`),
  );
  child = spawn(process.execPath, [CLI, 'explore', '--web', `${O}/`, '--port', '0', '--rate', '0'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  page = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line within 30 s: ${out}`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+\/)\n/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
  });
  port = Number(new URL(page).port);
});

after(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await server.close();
});

void test('explore --web answers only requests addressed to its own host', async () => {
  for (const host of [`127.0.0.1:${port}`, '127.0.0.1', `localhost:${port}`, 'LOCALHOST']) {
    assert.equal((await rawRequest(port, '/', 'GET', 15_000, host)).status, 200, host);
  }
  const before = server.requests.length;
  for (const host of [
    `rebound.example.net:${port}`,
    'rebound.example.net',
    `localhost.example.net:${port}`,
    '192.0.2.1',
    '',
  ]) {
    for (const path of [
      '/',
      '/app.js',
      '/api/tree',
      `/api/entries?doc=${encodeURIComponent(`${server.origin}/rl.xml`)}`,
    ]) {
      const r = await rawRequest(port, path, 'GET', 15_000, host);
      assert.equal(r.status, 421, `${host} ${path}`);
      assert.doesNotMatch(r.text, /<html|rl\.xml|resourcelist/i);
    }
  }
  assert.equal(server.requests.length, before, 'a refused request reads nothing from the Source');
});

void test('explore --web refuses paths that do not percent-decode with 400', async () => {
  for (const path of ['/%c0%2e%c0%2e/x', '/api/%e0%80%ae', '/%%32%65', '/api/%u002e', '/%ff']) {
    assert.equal((await rawRequest(port, path, 'GET', 15_000, `127.0.0.1:${port}`)).status, 400, path);
  }
});

void test('a search through more than 50,000 entries says it stopped there', async () => {
  const doc = encodeURIComponent(`${server.origin}/rl.xml`);
  const res = await fetch(`${page}api/entries?doc=${doc}&q=no-such-entry`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as EntriesPage;
  assert.equal(body.scanned, 50_000);
  assert.equal(body.scanLimitHit, true);
  assert.deepEqual(body.entries, []);
  assert.equal(body.total, undefined);
  // a match beyond the limit is not searched; one before it is found
  const found = (await (await fetch(`${page}api/entries?doc=${doc}&q=/r49999`)).json()) as EntriesPage;
  assert.deepEqual(
    found.entries.map((e) => e.loc),
    [`${server.origin}/r49999`],
  );
  // paging past the limit says so too
  const late = await fetch(`${page}api/entries?doc=${doc}&page=550`);
  assert.equal(late.status, 200);
  assert.equal(((await late.json()) as EntriesPage).scanLimitHit, true);
});

void test('SIGTERM exits 0', async () => {
  child.kill('SIGTERM');
  assert.deepEqual(await exited(child), [0, null]);
});
