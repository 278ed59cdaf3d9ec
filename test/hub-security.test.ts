/**
 * The hub against what an outsider can send it, on 127.0.0.1: allow-list patterns anchored to the host,
 * publishes only for allowed topics and one answer whatever a topic's port did, one stored copy of a
 * body shared by 80 failing deliveries, quotas (413/429/503), a bounded number of verifications in
 * flight, a secret that a re-subscription cannot swap, and callbacks given up after failing for long.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HubStore } from '../src/notify/hub-store.js';
import { openSqliteHubStore } from '../src/notify/sqlite-hub-store.js';
import { listen } from '../src/notify/node-listener.js';
import { createUrlPolicy } from '../src/notify/callback-policy.js';
import { Subscriber } from '../src/notify/subscriber.js';
import { TestSubscriber } from './helpers/websub-subscriber.js';
import { failingCallbacks } from './helpers/failing-callbacks.js';
import { tempDir } from './helpers/tmp.js';
import { form, startHub, type TestHub } from './helpers/test-hub.js';
import Database from 'better-sqlite3';

/** The store's schema before subscriptions had a state and messages a size. */
const FIRST_SCHEMA = `
CREATE TABLE IF NOT EXISTS subscription (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  callback TEXT NOT NULL,
  secret TEXT,
  lease_seconds INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  verified_at INTEGER NOT NULL,
  UNIQUE (topic, callback)
);
CREATE TABLE IF NOT EXISTS message (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  topic TEXT NOT NULL,
  content_type TEXT NOT NULL,
  body BLOB NOT NULL,
  received_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS delivery (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  subscription_id INTEGER NOT NULL REFERENCES subscription(id) ON DELETE CASCADE,
  message_id INTEGER NOT NULL REFERENCES message(id),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_at INTEGER NOT NULL,
  last_error TEXT
);
CREATE INDEX IF NOT EXISTS delivery_by_subscription ON delivery (subscription_id, id);
`;

const CN = Buffer.from('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>\n');
const TOPIC = 'http://127.0.0.1:1/set/change-notification/';

function fatPing(hubUrl: string, topic: string, body: Uint8Array = CN): Promise<Response> {
  return fetch(hubUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${hubUrl}>; rel="hub"` },
    body,
  });
}

/** Polls `condition` (every 10 ms, 30 s at most). */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (let i = 0; !condition(); i++) {
    if (Date.now() > deadline || i > 100_000) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function subscribeVerified(h: TestHub, topic: string, callback: string, secret?: string): Promise<void> {
  const res = await form(h.url, {
    'hub.mode': 'subscribe',
    'hub.topic': topic,
    'hub.callback': callback,
    ...(secret === undefined ? {} : { 'hub.secret': secret }),
  });
  assert.equal(res.status, 202, await res.text());
  await h.hub.idle();
  assert.ok(await h.store.getSubscription(topic, callback), `${callback} is subscribed`);
}

void describe('what the hub may contact', () => {
  void it('allow patterns are anchored to the host: http://*.example.org/* refuses http://192.0.2.1:1/x.example.org/', async () => {
    const p = createUrlPolicy(['http://*.example.org/*', 'hooks.example.net', 'https://*.example.com:8443/rs/*']);
    assert.equal(p.allowed('http://192.0.2.1:1/x.example.org/'), false);
    assert.equal(p.allowed('http://a.example.org/cb'), true);
    assert.equal(p.allowed('http://a.b.example.org/cb?x=1'), true);
    assert.equal(p.allowed('http://a.example.org:8080/cb'), false, 'no port in the pattern: the default port only');
    assert.equal(p.allowed('http://evil.com/.example.org/'), false);
    assert.equal(p.allowed('http://evil.com#.example.org/'), false);
    assert.equal(p.allowed('http://a.example.org@192.0.2.1/'), false);
    assert.equal(p.allowed('https://a.example.org/cb'), false, 'the scheme is compared');
    assert.equal(p.allowed('http://hooks.example.net:9/cb'), true, 'a host pattern takes any port');
    assert.equal(p.allowed('http://hooks.example.net.evil/cb'), false);
    assert.equal(p.allowed('https://x.example.com:8443/rs/a'), true);
    assert.equal(p.allowed('https://x.example.com/rs/a'), false);
    const h = await startHub({ allowCallback: ['http://*.example.org/*'] });
    try {
      const res = await form(h.url, {
        'hub.mode': 'subscribe',
        'hub.topic': TOPIC,
        'hub.callback': 'http://192.0.2.1:1/x.example.org/',
      });
      assert.equal(res.status, 403);
      await h.hub.idle();
      assert.deepEqual(h.fetched, [], 'nothing was contacted');
    } finally {
      await h.stop();
    }
  });

  void it('a stand-alone hub takes publishes only for allowed topics and answers alike whatever a port did', async () => {
    const sub = await TestSubscriber.start();
    const h = await startHub({ allowTopic: ['feeds.example.org'] });
    try {
      // a topic on a host that is not allowed: refused before anything is fetched
      for (const r of [
        await form(h.url, { 'hub.mode': 'publish', 'hub.url': 'http://192.0.2.1:1/feed' }),
        await fatPing(h.url, 'http://192.0.2.1:1/feed'),
      ])
        assert.equal(r.status, 403);
      assert.deepEqual(h.fetched, []);
      // an open port that answers 404 and a closed port (1, privileged, where nothing listens): the same
      // answer, no detail of what answered
      const closedUrl = 'http://127.0.0.1:1/x';
      const missing = await listen(() => Promise.resolve(new Response('not here', { status: 404 })));
      const open = await form(h.url, { 'hub.mode': 'publish', 'hub.url': `${missing.url}/x` });
      await missing.close();
      const shut = await form(h.url, { 'hub.mode': 'publish', 'hub.url': closedUrl });
      const [a, b] = [await open.text(), await shut.text()];
      assert.equal(open.status, 502, a);
      assert.equal(shut.status, 502, b);
      assert.equal(a.replace(/'[^']*'/, "'T'"), b.replace(/'[^']*'/, "'T'"));
      assert.doesNotMatch(b, /ECONNREFUSED|refused|status|404/i);
      assert.ok(
        h.events.some((e) => e.type === 'publish-refused' && /ECONNREFUSED|fetch failed/.test(e.reason)),
        'the detail goes to the log',
      );
    } finally {
      await h.stop();
      await sub.close();
    }
  });
});

void describe('bounded under load', () => {
  void it('80 failing subscribers and one 8 MiB fat ping: the body is stored once, GET / answers', async () => {
    const failing = await failingCallbacks();
    const h = await startHub({ retry: { baseMs: 5, maxMs: 20 }, limits: { bodyBytes: 9 * 1024 * 1024 } });
    try {
      for (let i = 0; i < 80; i++) {
        const res = await form(h.url, {
          'hub.mode': 'subscribe',
          'hub.topic': TOPIC,
          'hub.callback': `${failing.url}/cb/${i}`,
        });
        assert.equal(res.status, 202);
        await res.arrayBuffer();
      }
      await h.hub.idle();
      assert.equal((await h.store.subscriptions(TOPIC)).length, 80);
      const big = Buffer.alloc(8 * 1024 * 1024, 0x61);
      assert.equal((await fatPing(h.url, TOPIC, big)).status, 200);
      assert.deepEqual(await h.store.counts(), { subscriptions: 80, messages: 1, deliveries: 80 });
      assert.equal(await h.store.queuedBytes(), big.byteLength, 'one stored copy, whatever the number of deliveries');
      await until(() => failing.bodies.length >= 160, 'two rounds of failed deliveries');
      const res = await fetch(h.url);
      assert.equal(res.status, 200, 'the hub answers while deliveries fail');
      await res.arrayBuffer();
      assert.ok(
        failing.bodies.every((n) => n === big.byteLength),
        'each attempt sends the whole body',
      );
      assert.deepEqual(await h.store.counts(), { subscriptions: 80, messages: 1, deliveries: 80 });
    } finally {
      await h.stop();
      await failing.close();
    }
  });

  void it('limits per body (413), per topic (429), in total (503) and per subscriber (given up)', async () => {
    const slow = await TestSubscriber.start();
    slow.deliveryStatus = 503;
    const h = await startHub({
      retry: { baseMs: 60_000, maxMs: 60_000 },
      limits: { bodyBytes: 1000, topicBytes: 2500, totalBytes: 3500, subscriberBytes: 10_000, subscriberDeliveries: 3 },
    });
    const other = 'http://127.0.0.1:1/other/change-notification/';
    try {
      await subscribeVerified(h, TOPIC, `${slow.url}/a`);
      await subscribeVerified(h, other, `${slow.url}/b`);
      const kib = Buffer.alloc(1000, 0x62);
      assert.equal((await fatPing(h.url, TOPIC, Buffer.alloc(1001))).status, 413);
      assert.equal((await fatPing(h.url, TOPIC, kib)).status, 200);
      assert.equal((await fatPing(h.url, TOPIC, kib)).status, 200);
      const full = await fatPing(h.url, TOPIC, kib);
      assert.equal(full.status, 429);
      assert.ok(Number(full.headers.get('retry-after')) > 0);
      assert.equal((await fatPing(h.url, other, kib)).status, 200);
      const total = await fatPing(h.url, other, kib);
      assert.equal(total.status, 503, 'the whole queue is full');
      assert.ok(Number(total.headers.get('retry-after')) > 0);
      assert.equal(await h.store.queuedBytes(), 3000);
      // a subscriber with three deliveries queued is given up at the fourth: its queue is dropped
      const small = Buffer.alloc(10, 0x63);
      assert.equal((await fatPing(h.url, other, small)).status, 200);
      assert.equal((await fatPing(h.url, other, small)).status, 200);
      assert.equal((await h.store.getSubscription(other, `${slow.url}/b`))!.state, 'verified');
      assert.equal((await fatPing(h.url, other, small)).status, 200);
      const b = (await h.store.getSubscription(other, `${slow.url}/b`))!;
      assert.equal(b.state, 'given-up');
      assert.ok(h.events.some((e) => e.type === 'given-up' && e.callback === `${slow.url}/b`));
      assert.equal(await h.store.queuedBytes(), 2000, "its queue is dropped; the other topic's stays");
    } finally {
      await h.stop();
      await slow.close();
    }
  });

  void it('a publisher that drips its body is cut at the deadline (408) and frees its place', async () => {
    const h = await startHub({ readTimeoutMs: 300, limits: { publishes: 1 } });
    const { port } = new URL(h.url);
    const socket = connect(Number(port), '127.0.0.1');
    try {
      let answer = '';
      socket.on('data', (d: Buffer) => (answer += d.toString()));
      socket.write(
        `POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/xml\r\ncontent-length: 1000\r\n` +
          `link: <${TOPIC}>; rel="self", <${h.url}>; rel="hub"\r\n\r\n<urlset`,
      );
      await until(() => /^HTTP\/1\.1 \d+/.test(answer), 'an answer to the dripping publisher');
      assert.match(answer, /^HTTP\/1\.1 408 /);
      assert.equal((await fatPing(h.url, TOPIC)).status, 200, 'its place is free again');
    } finally {
      socket.destroy();
      await h.stop();
    }
  });

  void it('form publishes fetching at once are bounded (503), and so are the topics of one (400)', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    let asked = 0;
    const topics = await listen(async () => {
      asked++;
      await held;
      return new Response('<urlset/>', { headers: { 'content-type': 'application/xml' } });
    });
    const h = await startHub({ limits: { publishes: 1 } });
    try {
      const first = form(h.url, { 'hub.mode': 'publish', 'hub.url': `${topics.url}/a` });
      await until(() => asked === 1, 'the first fetch');
      const second = await form(h.url, { 'hub.mode': 'publish', 'hub.url': `${topics.url}/b` });
      assert.equal(second.status, 503);
      assert.ok(Number(second.headers.get('retry-after')) > 0);
      release();
      assert.equal((await first).status, 200);
      assert.equal(asked, 1, 'the refused one fetched nothing');
      const many = new URLSearchParams({ 'hub.mode': 'publish' });
      for (let i = 0; i < 17; i++) many.append('hub.url', `${topics.url}/${i}`);
      const tooMany = await fetch(h.url, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: many.toString(),
      });
      assert.equal(tooMany.status, 400);
      assert.equal(asked, 1);
    } finally {
      release();
      await h.stop();
      await topics.close();
    }
  });

  void it('verifications in flight are bounded, each ends at its timeout', async () => {
    const sockets = new Set<Socket>();
    let requests = 0; // requests received (the client may also open idle connections after an abort)
    const silent: NetServer = createNetServer((s) => {
      s.once('data', () => requests++);
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const port = (silent.address() as AddressInfo).port;
    const h = await startHub({ limits: { verifications: 4 }, requestTimeoutMs: 300 });
    try {
      const answers: number[] = [];
      for (let i = 0; i < 12; i++) {
        const res = await form(h.url, {
          'hub.mode': 'subscribe',
          'hub.topic': TOPIC,
          'hub.callback': `http://127.0.0.1:${port}/cb/${i}`,
        });
        answers.push(res.status);
        await res.arrayBuffer();
      }
      assert.deepEqual(answers, [202, 202, 202, 202, 503, 503, 503, 503, 503, 503, 503, 503]);
      assert.ok(h.hub.pending().length <= 4);
      await until(() => h.hub.pending().length === 0, 'the verifications to time out');
      assert.equal(requests, 4, 'four verification requests');
      assert.equal(h.events.filter((e) => e.type === 'verification-failed').length, 4);
      const again = await form(h.url, {
        'hub.mode': 'subscribe',
        'hub.topic': TOPIC,
        'hub.callback': `http://127.0.0.1:${port}/cb/x`,
      });
      assert.equal(again.status, 202, 'room again once they ended');
    } finally {
      await h.stop();
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});

void describe('subscriptions', () => {
  void it("an outsider cannot swap the secret of a subscriber's callback, before or after it is verified", async () => {
    const h = await startHub();
    const received: Buffer[] = [];
    const bad: string[] = [];
    const ref: { s?: Subscriber } = {};
    // the subscriber's callback answers the first verification only once the outsider has tried
    let release: () => void = () => undefined;
    let gate: Promise<void> | undefined = new Promise<void>((r) => (release = r));
    const cb = await listen(async (r) => {
      if (r.method === 'GET' && gate !== undefined) await gate;
      return ref.s!.handle(r);
    });
    const callback = `${cb.url}/callback?token=abc`;
    const s = (ref.s = new Subscriber({
      hub: h.url,
      topic: TOPIC,
      callbackUrl: callback,
      onNotification: (b) => received.push(Buffer.from(b)),
      onEvent: (e) => e.type === 'bad-signature' && bad.push(e.type),
    }));
    const outsider = (): Promise<Response> =>
      form(h.url, { 'hub.mode': 'subscribe', 'hub.topic': TOPIC, 'hub.callback': callback, 'hub.secret': 'outsider' });
    try {
      // while the subscriber's own request is being verified
      const subscribing = s.subscribe();
      await until(() => h.hub.pending().length === 1, 'the verification in flight');
      const during = await outsider();
      assert.equal(during.status, 409, await during.text());
      gate = undefined;
      release();
      await subscribing;
      // and once it is verified
      const later = await outsider();
      assert.equal(later.status, 409);
      await h.hub.idle();
      assert.equal((await h.store.getSubscription(TOPIC, callback))!.secret, s.secret);
      assert.equal((await fatPing(h.url, TOPIC)).status, 200);
      await h.hub.idle();
      assert.equal(received.length, 1, "the delivery is signed with the subscriber's own secret");
      assert.deepEqual(bad, []);
      // the subscriber itself renews with its secret
      await s.subscribe();
      assert.equal((await h.store.getSubscription(TOPIC, callback))!.secret, s.secret);
    } finally {
      s.close();
      await cb.close();
      await h.stop();
    }
  });

  void it('a callback failing for long is given up: its queue dropped, the subscriber told, nothing queued after', async () => {
    const dead = await TestSubscriber.start();
    const h = await startHub({ retry: { baseMs: 5, maxMs: 10 }, giveUp: { attempts: 4, afterMs: 30 } });
    const callback = `${dead.url}/cb`;
    try {
      await subscribeVerified(h, TOPIC, callback, 'shh');
      dead.deliveryStatus = 500;
      assert.equal((await fatPing(h.url, TOPIC)).status, 200);
      assert.equal((await fatPing(h.url, TOPIC)).status, 200);
      await until(() => h.events.some((e) => e.type === 'given-up'), 'the hub to give up');
      await h.hub.idle();
      const s = (await h.store.getSubscription(TOPIC, callback))!;
      assert.equal(s.state, 'given-up');
      assert.ok(s.failures >= 4);
      assert.deepEqual(await h.store.counts(), { subscriptions: 1, messages: 0, deliveries: 0 });
      assert.ok(
        dead.verifications.some((v) => v.searchParams.get('hub.mode') === 'denied'),
        'hub.mode=denied sent',
      );
      const attempts = dead.attempts.length;
      assert.equal((await fatPing(h.url, TOPIC)).status, 200);
      await h.hub.idle();
      assert.equal((await h.store.counts()).deliveries, 0, 'nothing queued for it');
      assert.equal(dead.attempts.length, attempts);
      // the subscriber comes back and renews with its secret: deliveries resume
      dead.deliveryStatus = 200;
      await subscribeVerified(h, TOPIC, callback, 'shh');
      const renewed = (await h.store.getSubscription(TOPIC, callback))!;
      assert.deepEqual(
        [renewed.state, renewed.failures, renewed.failingSince],
        ['verified', 0, undefined],
        'a fresh start',
      );
      assert.equal((await fatPing(h.url, TOPIC)).status, 200);
      await h.hub.idle();
      assert.equal(dead.deliveries.length, 1);
      assert.equal((await h.store.getSubscription(TOPIC, callback))!.failures, 0);
    } finally {
      await h.stop();
      await dead.close();
    }
  });

  void it('a store written before subscription states and message sizes opens with them added', async () => {
    const tmp = await tempDir('rs-hub-migrate-');
    const file = join(tmp.dir, 'hub.sqlite');
    const db = new Database(file);
    db.exec(FIRST_SCHEMA);
    db.prepare(
      'INSERT INTO subscription (topic, callback, secret, lease_seconds, expires_at, verified_at) VALUES (?, ?, ?, ?, ?, ?)',
    ).run(TOPIC, 'http://127.0.0.1:9/cb', 'k', 300, Date.now() + 300_000, Date.now());
    db.prepare('INSERT INTO message (topic, content_type, body, received_at) VALUES (?, ?, ?, ?)').run(
      TOPIC,
      'application/xml',
      Buffer.from('12345'),
      Date.now(),
    );
    db.prepare('INSERT INTO delivery (subscription_id, message_id, next_at) VALUES (1, 1, 0)').run();
    db.close();
    const store: HubStore = openSqliteHubStore(file);
    try {
      const s = (await store.getSubscription(TOPIC, 'http://127.0.0.1:9/cb'))!;
      assert.deepEqual([s.state, s.failures, s.secret], ['verified', 0, 'k']);
      assert.equal(await store.queuedBytes(), 5);
      assert.equal((await store.heads())[0]!.size, 5);
    } finally {
      await store.close();
      await tmp.cleanup();
    }
  });
});
