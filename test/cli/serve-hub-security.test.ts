// `resourcesync serve`'s embedded hub against an outsider on loopback: a forged fat ping for the Source's own
// change topic is refused and nothing is relayed; a subscription to, or a form publish of, another loopback
// service is refused without a request to it, and a closed port answers exactly as an open one; with the
// publish secret set, only a publisher that shows it is relayed; `serve --hub` shows it to its hub.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '../helpers/paths.js';
import { tempDir } from '../helpers/tmp.js';
import { TestSubscriber } from '../helpers/websub-subscriber.js';
import { exited } from '../helpers/exited.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const SECRET_ENV = 'RESOURCESYNC_HUB_PUBLISH_SECRET';

interface Child {
  child: ChildProcess;
  url: string;
  log: () => string;
}

async function start(args: string[], env: Record<string, string> = {}): Promise<Child> {
  const child = spawn(process.execPath, [MAIN, ...args, '--port', '0', '--verbose'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line; stderr: ${err}`)), 30_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)\/?\n/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code}; stderr: ${err}`)));
  });
  return { child, url, log: () => err };
}

async function stop(c: Child): Promise<void> {
  if (c.child.exitCode !== null) return;
  const done = exited(c.child);
  c.child.kill('SIGTERM');
  assert.equal((await done)[0], 0);
}

function form(hub: string, params: Record<string, string>): Promise<Response> {
  return fetch(hub, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
}

/** A fat ping saying every file was deleted, as an outsider would forge it. */
function forged(hub: string, topic: string, headers: Record<string, string> = {}): Promise<Response> {
  const body =
    '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">' +
    '<rs:md capability="change-notification" from="2000-01-01T00:00:00Z" until="9999-01-01T00:00:00Z"/>' +
    '<url><loc>http://127.0.0.1:1/a.txt</loc><rs:md change="deleted" datetime="2026-01-01T00:00:00Z"/></url></urlset>\n';
  return fetch(hub, {
    method: 'POST',
    headers: { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${hub}>; rel="hub"`, ...headers },
    body,
  });
}

async function waitFor(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (let i = 0; !condition(); i++) {
    if (Date.now() > deadline || i > 100_000) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

let tmp: { dir: string; cleanup: () => Promise<void> };
let site: string;
let secret: Server;
let secretPort: number;
let secretRequests = 0;

before(async () => {
  tmp = await tempDir('rs-serve-hub-sec-');
  site = join(tmp.dir, 'site');
  await mkdir(site);
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  secret = createServer((req, res) => {
    secretRequests++;
    res.writeHead(200, { 'content-type': 'text/plain' }).end('TOP SECRET\n');
  });
  await new Promise<void>((r) => secret.listen(0, '127.0.0.1', r));
  secretPort = (secret.address() as AddressInfo).port;
});

after(async () => {
  await new Promise<void>((r) => secret.close(() => r()));
  await tmp.cleanup();
});

test('serve: the embedded hub relays no forged fat ping, fetches nothing an outsider names, and is no port scanner', async () => {
  const serve = await start(['serve', site, '--state', join(tmp.dir, 'state-1')]);
  const sub = await TestSubscriber.start();
  const outsider = await TestSubscriber.start();
  try {
    const hub = `${serve.url}/hub`;
    const topic = `${serve.url}/.resourcesync/site/change-notification/`;
    const res = await form(hub, {
      'hub.mode': 'subscribe',
      'hub.topic': topic,
      'hub.callback': `${sub.url}/cn`,
      'hub.secret': 'shh',
    });
    assert.equal(res.status, 202);
    await waitFor(() => /hub: verified/.test(serve.log()), 'the subscription');

    // a forged notification for the Source's own topic: refused, and nothing reaches the subscriber
    const forgedAnswer = await forged(hub, topic);
    assert.equal(forgedAnswer.status, 403);
    assert.match(await forgedAnswer.text(), /relays only what its own Source publishes/);

    // subscribing the outsider to another loopback service: refused before any request to it
    const ssrf = await form(hub, {
      'hub.mode': 'subscribe',
      'hub.topic': `http://127.0.0.1:${secretPort}/secret`,
      'hub.callback': `${outsider.url}/steal`,
    });
    assert.equal(ssrf.status, 403);
    await ssrf.arrayBuffer();

    // a form publish of an open port and of a closed one: the same refusal, no request made
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const answers: Array<[number, string]> = [];
    for (const url of [`http://127.0.0.1:${secretPort}/secret`, `http://127.0.0.1:${closedPort}/secret`, topic]) {
      const r = await form(hub, { 'hub.mode': 'publish', 'hub.url': url });
      answers.push([r.status, await r.text()]);
    }
    assert.equal(answers[0]![0], 403);
    assert.deepEqual(answers[0], answers[1], 'an open and a closed port answer alike');
    assert.deepEqual(answers[0], answers[2], 'and so does its own topic: the embedded hub fetches nothing');
    assert.doesNotMatch(answers.map((a) => a[1]).join(''), /ECONNREFUSED|TOP SECRET|200|502/);

    // a real change is relayed (the subscription works), the forged one never was
    await writeFile(join(site, 'b.txt'), 'bravo\n');
    await waitFor(() => sub.deliveries.length >= 1, 'the notification of a real change');
    await sleep(300); // long enough for a relayed forgery to have arrived too
    assert.ok(
      sub.deliveries.every((d) => !d.body.includes('9999-01-01')),
      'the forged notification was not relayed',
    );
    assert.equal(outsider.verifications.length + outsider.attempts.length, 0, 'the outsider got nothing');
    assert.equal(secretRequests, 0, 'the other service was never contacted');
  } finally {
    await stop(serve);
    await sub.close();
    await outsider.close();
  }
});

test('serve with a publish secret: only a publisher that shows it is relayed; serve --hub shows it to its hub', async () => {
  const env = { [SECRET_ENV]: 'publisher-s3cret' };
  const serve = await start(['serve', site, '--state', join(tmp.dir, 'state-2')], env);
  const sub = await TestSubscriber.start();
  try {
    const hub = `${serve.url}/hub`;
    const topic = `${serve.url}/.resourcesync/site/change-notification/`;
    assert.equal(
      (await form(hub, { 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': `${sub.url}/cn` })).status,
      202,
    );
    await waitFor(() => /hub: verified/.test(serve.log()), 'the subscription');
    assert.equal((await forged(hub, topic)).status, 403);
    assert.equal((await forged(hub, topic, { authorization: 'Bearer wrong' })).status, 403);
    assert.equal((await forged(hub, topic, { authorization: 'Bearer publisher-s3cret' })).status, 200);
    await waitFor(() => sub.deliveries.some((d) => d.body.includes('9999-01-01')), 'the authorised notification');
  } finally {
    await stop(serve);
  }

  // a stand-alone hub closed to publishers without the secret, and serve --hub publishing to it
  const standalone = await start(['hub', '--data', join(tmp.dir, 'hub')], env);
  const viaHub = await start(['serve', site, '--state', join(tmp.dir, 'state-3'), '--hub', `${standalone.url}/`], env);
  try {
    const topic = `${viaHub.url}/.resourcesync/site/change-notification/`;
    sub.deliveries.length = 0;
    assert.equal(
      (
        await form(`${standalone.url}/`, {
          'hub.mode': 'subscribe',
          'hub.topic': topic,
          'hub.callback': `${sub.url}/cn2`,
        })
      ).status,
      202,
    );
    await waitFor(() => /subscribed/.test(standalone.log()), 'the subscription at the stand-alone hub');
    assert.equal((await forged(`${standalone.url}/`, topic)).status, 403, 'no secret, no publish');
    await writeFile(join(site, 'c.txt'), 'charlie\n');
    await waitFor(
      () => sub.deliveries.some((d) => d.url === '/cn2' && d.body.includes('/c.txt')),
      'the change through the stand-alone hub',
    );
  } finally {
    await stop(viaHub);
    await stop(standalone);
    await sub.close();
  }
});

test('serve --max-body: the embedded hub refuses a larger authorised publish (413); not with --hub', async () => {
  const env = { [SECRET_ENV]: 'publisher-s3cret' };
  const serve = await start(['serve', site, '--state', join(tmp.dir, 'state-4'), '--max-body', '100'], env);
  try {
    const hub = `${serve.url}/hub`;
    const topic = `${serve.url}/.resourcesync/site/change-notification/`;
    const res = await forged(hub, topic, { authorization: 'Bearer publisher-s3cret' });
    assert.equal(res.status, 413, 'a body of more than 100 bytes');
    await res.arrayBuffer();
  } finally {
    await stop(serve);
  }
  const child = spawn(process.execPath, [MAIN, 'serve', site, '--hub', 'http://127.0.0.1:1/', '--max-body', '100'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  assert.equal((await exited(child))[0], 2);
  assert.match(err, /--max-body applies to the embedded hub: not with --hub or --no-hub/);
});
