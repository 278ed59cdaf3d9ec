// `serve --hub-store postgres://… --hub-store-key K`: the embedded hub keeps its subscriptions and outbox in
// PostgreSQL, not in <state>/hub/hub.sqlite. A subscriber verified through <base-url>/hub gets a Change
// Notification after a file changes; the subscription row (with its last delivery) is in PostgreSQL under the key;
// the explorer's Channels tab reads it from there. Bad combinations exit 2, an unreachable database exits 3, and
// neither prints the password.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { runCli } from '../helpers/mirror-check.js';
import { startServe, type ServeChild } from '../helpers/serve-child.js';
import { POSTGRES_SKIP, usePostgresClient } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';
import { TestSubscriber } from '../helpers/websub-subscriber.js';
import { exited } from '../helpers/exited.js';

const WAIT_MS = 60_000;

let tmp: { dir: string; cleanup: () => Promise<void> };
let site: string;
before(async () => {
  tmp = await tempDir('rs-serve-hub-store-');
  site = join(tmp.dir, 'site');
  await mkdir(site);
  await writeFile(join(site, 'a.txt'), 'alpha\n');
});
after(async () => {
  await tmp.cleanup();
});

void test('serve --hub-store: usage errors exit 2 without the password; an unreachable database exits 3', async () => {
  const pgUrl = 'postgres://rs:hubsecret@127.0.0.1:9/hubs';
  const cases: [string[], RegExp][] = [
    [['--hub-store', pgUrl, '--hub-store-key', 'k', '--no-hub'], /--hub-store is the embedded hub's store: not with --hub or --no-hub/],
    [['--hub-store', pgUrl, '--hub-store-key', 'k', '--hub', 'http://127.0.0.1:9/hub'], /not with --hub or --no-hub/],
    [['--hub-store-key', 'k'], /--hub-store-key goes with --hub-store postgres:\/\//],
    [['--hub-store', join(tmp.dir, 'hub.sqlite'), '--hub-store-key', 'k'], /--hub-store-key goes with --hub-store postgres:\/\//],
    [['--hub-store', 'mysql://rs:hubsecret@127.0.0.1/db'], /--hub-store 'mysql:\/\/rs@127\.0\.0\.1\/db' is neither a postgres:\/\/ URL nor a file path/],
    [['--hub-store', pgUrl, '--port', '0'], /--hub-store-key is needed with --hub-store postgres:\/\/… here/],
    [['--hub-store', ''], /--hub-store is empty/],
  ];
  for (const [args, why] of cases) {
    const ran = await runCli(['serve', site, ...args]);
    assert.equal(ran.status, 2, `${args.join(' ')}: ${ran.stderr}`);
    assert.match(ran.stderr, why);
    assert.doesNotMatch(ran.stderr + ran.stdout, /hubsecret/);
  }
  const unreachable = await runCli(['serve', site, '--port', '0', '--hub-store', pgUrl, '--hub-store-key', 'k']);
  assert.equal(unreachable.status, 3, unreachable.stderr);
  assert.match(unreachable.stderr, /--hub-store: The store at postgres:\/\/rs@127\.0\.0\.1:9\/hubs cannot be opened/);
  assert.doesNotMatch(unreachable.stderr + unreachable.stdout, /hubsecret/);
});

describe('serve with its embedded hub on PostgreSQL', { skip: POSTGRES_SKIP }, () => {
  let sub: TestSubscriber;
  let serve: ServeChild | undefined;
  const db = usePostgresClient({
    beforeStop: () => {
      if (serve !== undefined && serve.child.exitCode === null) serve.child.kill('SIGKILL');
    },
  });
  before(async () => {
    sub = await TestSubscriber.start();
  });
  after(async () => {
    await sub?.close();
  });

  void test('a subscriber gets a Change Notification; the subscription and its delivery are rows in PostgreSQL', async () => {
    serve = await startServe([site, '--hub-store', db.cluster().url, '--hub-store-key', 'source-a', '--verbose']);
    const topic = `${serve.url}/.resourcesync/site/change-notification/`;
    const res = await fetch(`${serve.url}/hub`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': `${sub.url}/cn` }).toString(),
    });
    assert.equal(res.status, 202);
    await res.arrayBuffer();
    await sub.waitFor(() => /hub: verified/.test(serve!.log()), `a verified subscription; log: ${serve.log()}`, WAIT_MS);
    const rows = await db.sql().query<{ hub: string; topic: string; callback: string; state: string }>('SELECT hub, topic, callback, state FROM resourcesync_hub_subscriptions');
    assert.deepEqual(rows.rows, [{ hub: 'source-a', topic, callback: `${sub.url}/cn`, state: 'verified' }]);

    await writeFile(join(site, 'b.txt'), 'bravo\n');
    await sub.waitFor(() => sub.deliveries.some((d) => d.url === '/cn' && d.body.includes('/b.txt')), `the change notification; log: ${serve.log()}`, WAIT_MS);
    // the hub records the delivery once the subscriber has answered: polled against a deadline
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      const delivered = await db.sql().query<{ last_delivery_at: string | null }>('SELECT last_delivery_at FROM resourcesync_hub_subscriptions WHERE hub = $1', ['source-a']);
      if (delivered.rows[0]?.last_delivery_at != null) break;
      assert.ok(Date.now() < deadline, 'the delivery was recorded in PostgreSQL');
      await sleep(100);
    }
    assert.equal(existsSync(join(site, '.resourcesync', 'hub', 'hub.sqlite')), false, 'no SQLite hub store beside the set');

    const channels = (await (await fetch(`${serve.url}/.resourcesync/ui/api/channels`)).json()) as { channels: { topic: string; subscribers: number }[]; subscriptions: { topic: string; state: string }[] };
    assert.deepEqual(channels.channels.find((c) => c.topic === topic), { topic, subscribers: 1 });
    assert.equal(channels.subscriptions.find((s) => s.topic === topic)?.state, 'verified');

    serve.child.kill('SIGTERM');
    assert.equal((await exited(serve.child, WAIT_MS))[0], 0, serve.log());
  });
});
