// `resourcesync hub` as a child process: the `listening on` line, subscription and delivery, a subscriber
// that is down for a while, and a hub killed with SIGKILL in the middle of publishing and restarted over the
// same data directory: every notification the hub acknowledged reaches the subscriber, in order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { readFile } from 'node:fs/promises';
import { REPO_ROOT } from '../helpers/paths.js';
import { failingCallbacks } from '../helpers/failing-callbacks.js';
import { tempDir } from '../helpers/tmp.js';
import { TestSubscriber } from '../helpers/websub-subscriber.js';
import { exited } from '../helpers/exited.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

interface HubProcess {
  child: ChildProcess;
  url: string;
  stderr: () => string;
  waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void>;
}

async function startHub(data: string, extra: string[] = []): Promise<HubProcess> {
  const child = spawn(
    process.execPath,
    [MAIN, 'hub', '--port', '0', '--data', data, '--retry-ms', '20', '--verbose', ...extra],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`hub did not start: ${err}`)), 60_000);
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^listening on (\S+)\n/m.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`hub exited (${code}): ${err}`)));
  });
  return {
    child,
    url,
    stderr: () => err,
    async waitForLog(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(err)) {
        if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in the hub's log:\n${err}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    },
  };
}

function subscribe(hub: string, params: Record<string, string>): Promise<Response> {
  return fetch(hub, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ 'hub.mode': 'subscribe', ...params }).toString(),
  });
}

function fatPing(hub: string, topic: string, body: string): Promise<Response> {
  return fetch(hub, {
    method: 'POST',
    headers: { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${hub}>; rel="hub"` },
    body,
  });
}

test('hub: usage errors exit 2', async () => {
  for (const args of [
    ['--port', 'x'],
    ['--signature', 'md5'],
    ['--retry-ms', '0'],
    ['--public-url', 'ftp://x/'],
    ['--max-body', '0'],
    ['--max-queue', '1e9'],
    ['--give-up-after', 'x'],
    ['--give-up-attempts', '-1'],
    ['extra'],
  ]) {
    const child = spawn(process.execPath, [MAIN, 'hub', ...args], { stdio: 'ignore' });
    const [code] = await exited(child);
    assert.equal(code, 2, args.join(' '));
  }
});

test('hub: a subscriber down for a while and a hub killed with -9 mid-publish lose no acknowledged notification', async () => {
  const tmp = await tempDir('rs-hub-cli-');
  let sub = await TestSubscriber.start();
  const port = sub.port;
  let hub = await startHub(tmp.dir);
  try {
    assert.match(hub.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const topic = 'http://127.0.0.1:1/set/change/';
    const res = await subscribe(hub.url, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb`, 'hub.secret': 'k' });
    assert.equal(res.status, 202);
    await hub.waitForLog(/subscribed http:\/\/127\.0\.0\.1:\d+\/cb to /);
    assert.equal((await fatPing(hub.url, topic, '<n i="0"/>')).status, 200);
    await sub.waitFor(() => sub.deliveries.length === 1, 'the first delivery');

    // The subscriber goes away; the hub keeps accepting and queues.
    await sub.close();
    const acknowledged: number[] = [0];
    for (let i = 1; i <= 10; i++) {
      if ((await fatPing(hub.url, topic, `<n i="${i}"/>`)).status === 200) acknowledged.push(i);
    }
    await hub.waitForLog(/delivery of message \d+ to \S+ failed/);

    // Publishing continues while the hub is killed.
    let i = 11;
    const publishing = (async () => {
      for (; i <= 200; i++) {
        try {
          const r = await fatPing(hub.url, topic, `<n i="${i}"/>`);
          if (r.status === 200) acknowledged.push(i);
        } catch {
          return; // the hub is gone
        }
      }
    })();
    const deadline = Date.now() + 60_000; // bounded: the publisher may end (or the machine be slow) first
    while (acknowledged.length < 25 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 2));
    hub.child.kill('SIGKILL');
    await exited(hub.child);
    await publishing;
    assert.ok(acknowledged.length >= 25 && acknowledged.length < 200, `acknowledged ${acknowledged.length}`);

    // Restart both over the same data directory and port.
    hub = await startHub(tmp.dir);
    sub = await TestSubscriber.start(port);
    const last = acknowledged[acknowledged.length - 1]!;
    await sub.waitFor(
      () => sub.deliveries.some((d) => d.body.toString() === `<n i="${last}"/>`),
      `message ${last}`,
      30_000,
    );
    const received = sub.deliveries.map((d) => Number(/i="(\d+)"/.exec(d.body.toString())![1]));
    for (const n of acknowledged.slice(1))
      assert.ok(received.includes(n), `message ${n} was acknowledged but not delivered`);
    for (let k = 1; k < received.length; k++)
      assert.ok(received[k]! > received[k - 1]!, `in order: ${received.join(',')}`);
    const { verifySignature } = await import('../../src/notify/signature.js');
    assert.ok(sub.deliveries.every((d) => verifySignature(String(d.headers['x-hub-signature']), 'k', d.body)));
    // New publications after the restart go to the same subscription.
    assert.equal((await fatPing(hub.url, topic, '<n i="1000"/>')).status, 200);
    await sub.waitFor(
      () => sub.deliveries.some((d) => d.body.toString() === '<n i="1000"/>'),
      'the message after restart',
    );

    hub.child.kill('SIGTERM');
    const [code] = await exited(hub.child);
    assert.equal(code, 0);
  } finally {
    if (hub.child.exitCode === null) hub.child.kill('SIGKILL');
    await sub.close();
    await tmp.cleanup();
  }
});

/** Peak resident memory of a process, from /proc (Linux). */
async function peakRss(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^VmHWM:\s+(\d+) kB/m.exec(status)![1]) * 1024;
}

test('hub: 80 failing subscribers and an 8 MiB fat ping keep the hub small and answering', async () => {
  const tmp = await tempDir('rs-hub-cli-load-');
  const failing = await failingCallbacks();
  const hub = await startHub(tmp.dir);
  try {
    const topic = 'http://127.0.0.1:1/set/change/';
    for (let i = 0; i < 80; i++) {
      const res = await subscribe(hub.url, { 'hub.topic': topic, 'hub.callback': `${failing.url}/cb/${i}` });
      assert.equal(res.status, 202);
      await res.arrayBuffer();
    }
    const deadline = Date.now() + 60_000;
    while ((hub.stderr().match(/subscribed /g) ?? []).length < 80) {
      if (Date.now() > deadline) throw new Error(`80 subscriptions not verified:\n${hub.stderr()}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const big = 'a'.repeat(8 * 1024 * 1024);
    assert.equal((await fatPing(hub.url, topic, big)).status, 200);
    while (failing.bodies.length < 160) {
      if (Date.now() > deadline + 60_000) throw new Error(`${failing.bodies.length} deliveries attempted`);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(
      failing.bodies.every((n) => n === big.length),
      'every attempt carries the whole body',
    );
    const res = await fetch(hub.url);
    assert.equal(res.status, 200, 'the hub answers while every delivery fails');
    await res.arrayBuffer();
    const rss = await peakRss(hub.child.pid!);
    // one copy of the body per delivery was 80 x 8 MiB per round of retries (2.5 GB seen)
    assert.ok(rss < 400 * 1024 * 1024, `peak RSS ${Math.round(rss / 2 ** 20)} MiB`);
    hub.child.kill('SIGTERM');
    assert.equal((await exited(hub.child))[0], 0);
  } finally {
    if (hub.child.exitCode === null) hub.child.kill('SIGKILL');
    await failing.close();
    await tmp.cleanup();
  }
});

test('hub: --max-body answers 413; a callback failing past --give-up-after is given up', async () => {
  const tmp = await tempDir('rs-hub-cli-limits-');
  const failing = await failingCallbacks();
  const hub = await startHub(tmp.dir, ['--max-body', '1000', '--give-up-after', '1', '--give-up-attempts', '3']);
  try {
    const topic = 'http://127.0.0.1:1/set/change/';
    const res = await subscribe(hub.url, { 'hub.topic': topic, 'hub.callback': `${failing.url}/cb` });
    assert.equal(res.status, 202);
    await hub.waitForLog(/subscribed /);
    assert.equal((await fatPing(hub.url, topic, 'x'.repeat(1001))).status, 413);
    assert.equal((await fatPing(hub.url, topic, 'x'.repeat(1000))).status, 200);
    await hub.waitForLog(/gave http:\/\/127\.0\.0\.1:\d+\/cb to \S+ up: \d+ deliveries failed/, 60_000);
    hub.child.kill('SIGTERM');
    assert.equal((await exited(hub.child))[0], 0);
  } finally {
    if (hub.child.exitCode === null) hub.child.kill('SIGKILL');
    await failing.close();
    await tmp.cleanup();
  }
});
