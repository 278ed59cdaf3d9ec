// `resourcesync hub --store postgres://…` as child processes over a throwaway cluster: two hub processes share one
// store, a subscription taken by one gets what is published through the other, the outbox is rows in PostgreSQL
// while the subscriber fails, and what one hub queued is delivered by the other after it was killed with -9.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startCli, until, type CliChild } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { POSTGRES_SKIP, usePostgresClient } from '../helpers/postgres.js';
import { TestSubscriber } from '../helpers/websub-subscriber.js';
import { verifySignature } from '../../src/notify/signature.js';

const db = usePostgresClient();
const skip = POSTGRES_SKIP === false ? {} : { skip: POSTGRES_SKIP };

async function startHub(extra: string[]): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['hub', '--port', '0', '--retry-ms', '20', '--verbose', ...extra]);
  await until(`the hub to listen; ${p.err()}`, () => /^listening on /m.test(p.out()));
  return { p, url: /^listening on (\S+)$/m.exec(p.out())![1]! };
}

function post(hub: string, body: string, headers: Record<string, string>): Promise<Response> {
  return fetch(hub, { method: 'POST', headers, body });
}

const subscribe = (hub: string, params: Record<string, string>): Promise<Response> =>
  post(hub, new URLSearchParams({ 'hub.mode': 'subscribe', ...params }).toString(), { 'content-type': 'application/x-www-form-urlencoded' });

const fatPing = (hub: string, topic: string, body: string): Promise<Response> =>
  post(hub, body, { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${hub}>; rel="hub"` });

/** Rows of the hub key `key` in each of the store's tables. */
async function rowCounts(key: string): Promise<{ subscriptions: number; messages: number; deliveries: number }> {
  const n = async (table: string): Promise<number> =>
    Number((await db.sql().query<{ n: string }>(`SELECT COUNT(*) AS n FROM resourcesync_hub_${table} WHERE hub = $1`, [key])).rows[0]!.n);
  return { subscriptions: await n('subscriptions'), messages: await n('messages'), deliveries: await n('deliveries') };
}

void test('hub --store postgres://: two hub processes share subscriptions and outbox; a killed one leaves its queue to the other', skip, async () => {
  const store = ['--store', db.cluster().url, '--store-key', 'shared'];
  const sub = await TestSubscriber.start();
  const a = await startHub(store);
  const b = await startHub(store);
  const topic = 'http://127.0.0.1:1/set/change/';
  try {
    const res = await subscribe(a.url, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb`, 'hub.secret': 'k' });
    assert.equal(res.status, 202);
    await until(`the verified subscription; ${a.p.err()}`, () => /subscribed http:\/\/127\.0\.0\.1:\d+\/cb to /.test(a.p.err()));
    assert.equal((await rowCounts('shared')).subscriptions, 1);

    // published through the other hub process: it finds the subscription in the shared store
    assert.equal((await fatPing(b.url, topic, '<n i="1"/>')).status, 200);
    await sub.waitFor(() => sub.deliveries.length === 1, 'the delivery of message 1');
    assert.equal(sub.deliveries[0]!.body.toString(), '<n i="1"/>');
    assert.ok(verifySignature(String(sub.deliveries[0]!.headers['x-hub-signature']), 'k', sub.deliveries[0]!.body));

    // the subscriber fails: the queue is rows in PostgreSQL
    sub.deliveryStatus = 503;
    for (const i of [2, 3, 4]) assert.equal((await fatPing(b.url, topic, `<n i="${i}"/>`)).status, 200);
    await until(`failed attempts; ${b.p.err()}`, () => (b.p.err().match(/delivery of message \d+ to \S+ failed/g) ?? []).length >= 2);
    assert.deepEqual(await rowCounts('shared'), { subscriptions: 1, messages: 3, deliveries: 3 });

    // the hub that queued them is killed; the other delivers them, in order
    b.p.child.kill('SIGKILL');
    await exited(b.p.child);
    sub.deliveryStatus = 200;
    await sub.waitFor(() => sub.deliveries.length === 4, 'messages 2 to 4 from the remaining hub', 150_000);
    assert.deepEqual(sub.deliveries.map((d) => d.body.toString()), ['<n i="1"/>', '<n i="2"/>', '<n i="3"/>', '<n i="4"/>']);
    const deadline = Date.now() + 30_000;
    while ((await rowCounts('shared')).messages > 0) {
      assert.ok(Date.now() < deadline, 'the messages stayed in the outbox');
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.match(a.p.err(), /delivered message \d+ of \S+ to \S+\/cb/);

    a.p.child.kill('SIGTERM');
    assert.equal((await exited(a.p.child))[0], 0);
    assert.equal((await rowCounts('shared')).subscriptions, 1, 'the subscription outlives the hub processes');
  } finally {
    for (const h of [a, b]) if (h.p.child.exitCode === null && h.p.child.signalCode === null) h.p.child.kill('SIGKILL');
    await sub.close();
  }
});

void test('hub --store: usage errors exit 2; a database that cannot be reached exits 3 without the password', skip, async () => {
  for (const args of [
    ['--store', db.cluster().url, '--data', '/tmp/x'],
    ['--store', 'postgres://u:hunter2@/db'],
    ['--store-key', 'k'],
    ['--store', ''],
  ]) {
    const p = startCli(['hub', '--port', '0', ...args]);
    assert.equal((await exited(p.child))[0], 2, args.join(' '));
    assert.doesNotMatch(p.err(), /hunter2/);
  }
  const url = new URL(db.cluster().url);
  url.password = 'hunter2';
  url.pathname = '/no_such_db';
  const p = startCli(['hub', '--port', '0', '--store', url.href]);
  assert.equal((await exited(p.child))[0], 3);
  assert.match(p.err(), /^resourcesync hub: The store at postgres:\/\/postgres@127\.0\.0\.1:\d+\/no_such_db cannot be opened: database "no_such_db" does not exist\.\n$/);
  assert.doesNotMatch(p.err(), /hunter2/);
});
