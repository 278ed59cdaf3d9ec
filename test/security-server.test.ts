// Confinement of the Source server over real sockets: raw request-targets that try to leave the served
// directories, symlinks out of the tree, hidden files and the tool's own state never reach a file outside.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSourceResponder } from '../src/server/source-responder.js';
import { serve, type RunningServer } from '../src/server/node-adapter.js';
import { rawRequest } from './helpers/raw-http.js';

const SECRET = 'TOP-SECRET-CONTENT';
let tmp: string;
let running: RunningServer;

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-traversal-'));
  const dir = join(tmp, 'site', 'data');
  const outDir = join(dir, '.resourcesync', 'publish');
  await mkdir(join(outDir, '.well-known'), { recursive: true });
  await mkdir(join(dir, 'sub'), { recursive: true });
  await writeFile(join(dir, 'ok.txt'), 'fine');
  await writeFile(join(dir, 'sub', 'ok.txt'), 'fine too');
  await writeFile(join(tmp, 'secret.txt'), SECRET);
  await writeFile(join(tmp, 'site', 'secret.txt'), SECRET);
  await writeFile(join(dir, '.resourcesync', 'source.sqlite'), SECRET);
  await writeFile(join(dir, '.env'), SECRET);
  await writeFile(join(outDir, '.well-known', 'resourcesync'), '<sitemapindex/>');
  await symlink(join(tmp, 'secret.txt'), join(dir, 'escape.txt'));
  await symlink(tmp, join(dir, 'escape-dir'));
  await symlink('../secret.txt', join(dir, 'sub', 'relative-escape.txt'));
  await symlink(join(dir, '.env'), join(dir, 'env-link.txt'));
  const core = createSourceResponder({ sets: [{ name: 'data', dir }], outDir, baseUrl: 'http://127.0.0.1' });
  running = await serve(core, { port: 0, host: '127.0.0.1' });
});

after(async () => {
  await running.close();
  await rm(tmp, { recursive: true, force: true });
});

void test('the control requests succeed', async () => {
  assert.equal((await rawRequest(running.port, '/ok.txt')).status, 200);
  assert.equal((await rawRequest(running.port, '/sub/ok.txt')).status, 200);
  assert.equal((await rawRequest(running.port, '/.well-known/resourcesync')).status, 200);
});

void test('traversal in the request-target → 4xx, never the secret', async () => {
  const targets = [
    '/../secret.txt',
    '/../../secret.txt',
    '/../../../../../../etc/passwd',
    '/sub/../../secret.txt',
    '/%2e%2e/secret.txt',
    '/%2E%2E/%2E%2E/secret.txt',
    '/.%2e/secret.txt',
    '/%2e./secret.txt',
    '/sub/%2e%2e/%2e%2e/secret.txt',
    '/a%2f..%2f..%2fsecret.txt',
    '/sub%2f..%2f..%2fsecret.txt',
    '/..%2fsecret.txt',
    '/..%5csecret.txt',
    '/sub%5c..%5c..%5csecret.txt',
    '/sub\\..\\..\\secret.txt',
    '/..\\secret.txt',
    '/ok.txt%00',
    '/ok.txt%00.html',
    '/%00/secret.txt',
    '/%252e%252e/secret.txt',
    '//etc/passwd',
    '/./secret.txt',
    '/%c0%ae%c0%ae/secret.txt',
    'http://127.0.0.1/../secret.txt',
    '/.well-known/../../secret.txt',
    '/.resourcesync/../../secret.txt',
  ];
  for (const target of targets) {
    const { status, text } = await rawRequest(running.port, target);
    assert.ok(status >= 400 && status < 500, `${target} → ${status}`);
    assert.ok(!text.includes(SECRET), `${target} leaked the secret`);
  }
});

void test('a raw NUL or control character in the target is refused', async () => {
  for (const target of ['/ok.txt\u0000', '/o\u0001k.txt']) {
    const { status, text } = await rawRequest(running.port, target).catch(() => ({ status: 400, text: '' }));
    assert.ok(status >= 400 && status < 500, `${JSON.stringify(target)} → ${status}`);
    assert.ok(!text.includes(SECRET));
  }
});

void test('symlinks out of the tree and into hidden state → 404', async () => {
  for (const target of ['/escape.txt', '/escape-dir/secret.txt', '/sub/relative-escape.txt', '/env-link.txt']) {
    const { status, text } = await rawRequest(running.port, target);
    assert.equal(status, 404, target);
    assert.ok(!text.includes(SECRET));
  }
});

void test('hidden files and the state folder → 404', async () => {
  for (const target of ['/.env', '/.resourcesync/source.sqlite', '/.resourcesync/publish/.well-known/resourcesync', '/.well-known/../.env']) {
    const { status, text } = await rawRequest(running.port, target);
    assert.ok(status === 404 || status === 400, `${target} → ${status}`);
    assert.ok(!text.includes(SECRET));
  }
});
