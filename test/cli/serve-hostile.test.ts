// `resourcesync serve` (embedded hub, explorer) against what an outsider sends: request paths that do not
// percent-decode get 400 on every route and leave no line in the log; the explorer answers only requests
// addressed to the server's own host (DNS rebinding), while documents and resources answer any Host.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from '../helpers/tmp.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startServe, type ServeChild } from '../helpers/serve-child.js';
import { exited } from '../helpers/exited.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
let serve: ServeChild;

before(async () => {
  tmp = await tempDir('rs-serve-hostile-');
  const site = join(tmp.dir, 'site');
  await mkdir(site);
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  // a base URL by another loopback name than the listening address (never fetched by these requests)
  serve = await startServe([site, '--base-url', 'http://[::1]:1']);
});

after(async () => {
  if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
  await tmp.cleanup();
});

/** Paths that do not decode: overlong UTF-8 dots, double and %u encodings, truncated and stray escapes. */
const MALFORMED = [
  '%c0%2e%c0%2e/%c0%2e%c0%2e/etc/passwd',
  '%c0%ae%c0%ae/secret',
  '%e0%80%ae%e0%80%ae/x',
  '%%32%65%%32%65/x',
  '%u002e%u002e/x',
  '%c0%af',
  '%ff',
  '%',
  'a%zz',
  '%e2%82',
  '%ed%a0%80',
  'ok.txt%',
];
/** Every route of serve: resources, documents, the well-known URI, the explorer and its API, the hub, the topics. */
const ROUTES = [
  '/',
  '/sub/',
  '/.well-known/',
  '/.resourcesync/',
  '/.resourcesync/site/',
  '/.resourcesync/ui/',
  '/.resourcesync/ui/api/',
  '/.resourcesync/site/change-notification/',
  '/hub/',
  '/hub',
];

void test('paths that do not percent-decode get 400 on every route, quietly', async () => {
  const targets = ROUTES.flatMap((r) => MALFORMED.map((m) => `${r}${m}`));
  assert.ok(targets.length >= 100);
  const statuses = new Map<number, string[]>();
  for (const t of targets) {
    for (const method of ['GET', 'HEAD', 'POST']) {
      const { status } = await rawRequest(serve.port, t, method, 15_000);
      statuses.set(status, [...(statuses.get(status) ?? []), `${method} ${t}`]);
    }
  }
  assert.deepEqual(
    [...statuses.keys()],
    [400],
    JSON.stringify(Object.fromEntries([...statuses].map(([k, v]) => [k, v.slice(0, 5)]))),
  );
  // the control: the same routes answer well-formed requests as before
  assert.equal((await rawRequest(serve.port, '/a.txt')).status, 200);
  assert.equal((await rawRequest(serve.port, '/.well-known/resourcesync')).status, 200);
  assert.equal((await rawRequest(serve.port, '/.resourcesync/ui/')).status, 200);
  assert.equal((await rawRequest(serve.port, '/a.txt?q=%zz')).status, 200);
  assert.equal(serve.log(), '', 'no log line for a bad request');
});

void test('the explorer answers only its own host; documents and resources answer any', async () => {
  const ui = '/.resourcesync/ui/';
  for (const host of [`127.0.0.1:${serve.port}`, '127.0.0.1', `localhost:${serve.port}`, '[::1]:1', '[::1]']) {
    assert.equal((await rawRequest(serve.port, ui, 'GET', 15_000, host)).status, 200, host);
    assert.equal((await rawRequest(serve.port, `${ui}api/channels`, 'GET', 15_000, host)).status, 200, host);
  }
  for (const host of [
    `rebound.example.net:${serve.port}`,
    'rebound.example.net',
    `127.0.0.1.example.net:${serve.port}`,
    '10.1.2.3',
  ]) {
    const r = await rawRequest(serve.port, ui, 'GET', 15_000, host);
    assert.equal(r.status, 421, host);
    assert.doesNotMatch(r.text, /<html/i);
    assert.equal((await rawRequest(serve.port, `${ui}api/channels`, 'GET', 15_000, host)).status, 421, host);
    assert.equal((await rawRequest(serve.port, `${ui}api/tree`, 'GET', 15_000, host)).status, 421, host);
    // the Source itself is public: its documents and resources answer whatever the Host
    assert.equal((await rawRequest(serve.port, '/a.txt', 'GET', 15_000, host)).status, 200, host);
    assert.equal((await rawRequest(serve.port, '/.well-known/resourcesync', 'GET', 15_000, host)).status, 200, host);
  }
});

void test('SIGTERM still exits 0', async () => {
  serve.child.kill('SIGTERM');
  assert.deepEqual(await exited(serve.child), [0, null]);
});
