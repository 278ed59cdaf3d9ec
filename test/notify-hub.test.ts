/**
 * The hub against real subscribers on 127.0.0.1: the hub tests of websub.rocks (100–106) re-created,
 * then denial, leases, signatures, retries, 410, redirects, the callback allow-list, limits and a
 * restart over the same store.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { LEASE } from '../src/notify/hub.js';
import { verifySignature } from '../src/notify/signature.js';
import { createUrlPolicy } from '../src/notify/callback-policy.js';
import { parseLinkHeader } from '../src/core/link-header.js';
import { TestSubscriber } from './helpers/websub-subscriber.js';
import { tempDir } from './helpers/tmp.js';
import { form, startHub, type TestHub } from './helpers/test-hub.js';

const CN = Buffer.from(
  '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">' +
    '<rs:md capability="change-notification" from="2026-11-23T10:00:00Z" until="2026-11-23T10:00:01Z"/></urlset>\n',
);

function fatPing(hubUrl: string, topic: string, body: Uint8Array = CN, type = 'application/xml'): Promise<Response> {
  return fetch(hubUrl, {
    method: 'POST',
    headers: { 'content-type': type, link: `<${topic}>; rel="self", <${hubUrl}>; rel="hub"` },
    body,
  });
}

/** Subscribes and waits until the hub has verified (or refused) the intent. */
async function subscribe(h: TestHub, params: Record<string, string>): Promise<Response> {
  const res = await form(h.url, { 'hub.mode': 'subscribe', ...params });
  await h.hub.idle();
  return res;
}

let sub: TestSubscriber;
before(async () => {
  sub = await TestSubscriber.start();
});
after(async () => {
  await sub.close();
});

function reset(): void {
  sub.verifications.length = 0;
  sub.deliveries.length = 0;
  sub.attempts.length = 0;
  sub.challenge = 'echo';
  sub.deliveryStatus = 200;
}

void describe('websub.rocks hub tests, re-created', () => {
  void it('100: a typical subscription (mode, topic, callback) is verified, then gets unsigned fat pings', async () => {
    reset();
    const h = await startHub();
    try {
      const topic = 'http://127.0.0.1:1/set/change/';
      const callback = `${sub.url}/cb/100?token=a%20b&x=1`;
      const res = await subscribe(h, { 'hub.topic': topic, 'hub.callback': callback });
      assert.equal(res.status, 202);
      assert.equal(sub.verifications.length, 1);
      const v = sub.verifications[0]!;
      assert.equal(v.pathname, '/cb/100');
      assert.equal(v.searchParams.get('token'), 'a b', "the callback's own query is kept");
      assert.equal(v.searchParams.get('x'), '1');
      assert.equal(v.searchParams.get('hub.mode'), 'subscribe');
      assert.equal(v.searchParams.get('hub.topic'), topic);
      assert.equal(v.searchParams.get('hub.lease_seconds'), String(LEASE.default));
      assert.ok((v.searchParams.get('hub.challenge') ?? '').length >= 16);
      assert.equal((await h.store.subscriptions(topic)).length, 1);

      const pub = await fatPing(h.url, topic);
      assert.equal(pub.status, 200);
      await h.hub.idle();
      assert.equal(sub.deliveries.length, 1);
      const d = sub.deliveries[0]!;
      assert.ok(d.body.equals(CN), 'the bytes are relayed unchanged');
      assert.equal(d.headers['content-type'], 'application/xml');
      assert.equal(d.headers['x-hub-signature'], undefined);
      assert.equal(d.url, '/cb/100?token=a%20b&x=1');
      const links = parseLinkHeader(String(d.headers.link));
      assert.equal(links.find((l) => l.rel.includes('self'))?.target, topic);
      assert.equal(links.find((l) => l.rel.includes('hub'))?.target, h.url);
      assert.deepEqual(await h.store.counts(), { subscriptions: 1, messages: 0, deliveries: 0 });
    } finally {
      await h.stop();
    }
  });

  void it('101: a subscription with hub.secret gets deliveries signed with sha256 (sha1/sha384/sha512 configurable)', async () => {
    for (const method of ['sha256', 'sha1', 'sha384', 'sha512'] as const) {
      reset();
      const h = await startHub(method === 'sha256' ? {} : { signature: method });
      try {
        const topic = 'http://127.0.0.1:1/set/change/';
        await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/101`, 'hub.secret': 'pssst' });
        await fatPing(h.url, topic);
        await h.hub.idle();
        const sig = String(sub.deliveries[0]?.headers['x-hub-signature']);
        assert.match(sig, new RegExp(`^${method}=[0-9a-f]+$`));
        assert.equal(verifySignature(sig, 'pssst', CN), true);
        assert.equal(verifySignature(sig, 'other', CN), false);
        assert.equal(verifySignature(sig, 'pssst', Buffer.from('tampered')), false);
      } finally {
        await h.stop();
      }
    }
  });

  void it('102: parameters the hub does not know are ignored', async () => {
    reset();
    const h = await startHub();
    try {
      const topic = 'http://127.0.0.1:1/t102';
      const res = await subscribe(h, {
        'hub.topic': topic,
        'hub.callback': `${sub.url}/cb/102`,
        foo: 'bar',
        'hub.unknown': 'x',
      });
      assert.equal(res.status, 202);
      assert.equal((await h.store.subscriptions(topic)).length, 1);
    } finally {
      await h.stop();
    }
  });

  void it('103: re-subscribing before expiry renews the same subscription (topic + callback) in place', async () => {
    reset();
    let clock = 1_000_000;
    const h = await startHub({ now: () => clock });
    try {
      const topic = 'http://127.0.0.1:1/t103';
      const callback = `${sub.url}/cb/103`;
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': callback, 'hub.lease_seconds': '600' });
      const first = (await h.store.getSubscription(topic, callback))!;
      clock += 500_000;
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': callback, 'hub.lease_seconds': '900' });
      const again = await h.store.subscriptions(topic);
      assert.equal(again.length, 1);
      assert.equal(again[0]!.id, first.id);
      assert.equal(again[0]!.leaseSeconds, 900);
      assert.equal(again[0]!.expiresAt, clock + 900_000);
      await fatPing(h.url, topic);
      await h.hub.idle();
      assert.equal(sub.deliveries.length, 1, 'one delivery, not one per subscription request');
    } finally {
      await h.stop();
    }
  });

  void it('104: unsubscription is verified, then nothing more is delivered', async () => {
    reset();
    const h = await startHub();
    try {
      const topic = 'http://127.0.0.1:1/t104';
      const callback = `${sub.url}/cb/104`;
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': callback });
      const res = await form(h.url, { 'hub.mode': 'unsubscribe', 'hub.topic': topic, 'hub.callback': callback });
      assert.equal(res.status, 202);
      await h.hub.idle();
      const v = sub.verifications[1]!;
      assert.equal(v.searchParams.get('hub.mode'), 'unsubscribe');
      assert.equal(v.searchParams.get('hub.lease_seconds'), null);
      assert.equal((await h.store.subscriptions(topic)).length, 0);
      assert.equal((await fatPing(h.url, topic)).status, 200);
      await h.hub.idle();
      assert.equal(sub.attempts.length, 0);
    } finally {
      await h.stop();
    }
  });

  void describe('105/106: topics that are neither HTML nor XML, published with hub.mode=publish', () => {
    let topicServer: Server;
    let topicBase: string;
    before(async () => {
      topicServer = createServer((req, res) => {
        if (req.url === '/plain')
          res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello, plain world\n');
        else if (req.url === '/json')
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"items":[1,2,3]}');
        else if (req.url === '/moved') res.writeHead(301, { location: '/plain' }).end();
        else res.writeHead(404).end();
      });
      await new Promise<void>((r) => topicServer.listen(0, '127.0.0.1', r));
      topicBase = `http://127.0.0.1:${(topicServer.address() as AddressInfo).port}`;
    });
    after(async () => {
      await new Promise<void>((r) => topicServer.close(() => r()));
    });
    for (const [num, path, type, body] of [
      ['105', '/plain', 'text/plain; charset=utf-8', 'hello, plain world\n'],
      ['106', '/json', 'application/json', '{"items":[1,2,3]}'],
    ] as const) {
      void it(`${num}: the hub fetches ${path} and delivers its bytes with its content type`, async () => {
        reset();
        const h = await startHub();
        try {
          const topic = `${topicBase}${path}`;
          await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/${num}` });
          const res = await form(h.url, { 'hub.mode': 'publish', 'hub.url': topic });
          assert.equal(res.status, 200);
          await h.hub.idle();
          assert.equal(sub.deliveries.length, 1);
          assert.equal(sub.deliveries[0]!.headers['content-type'], type);
          assert.equal(sub.deliveries[0]!.body.toString(), body);
        } finally {
          await h.stop();
        }
      });
    }
    void it('a topic that redirects is not followed (502), and nothing is delivered', async () => {
      reset();
      const h = await startHub();
      try {
        const topic = `${topicBase}/moved`;
        await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/moved` });
        const res = await form(h.url, { 'hub.mode': 'publish', 'hub.url': topic });
        assert.equal(res.status, 502);
        await h.hub.idle();
        assert.equal(sub.attempts.length, 0);
      } finally {
        await h.stop();
      }
    });
  });
});

void describe('verification of intent', () => {
  for (const mode of ['wrong', 'not-found', 'server-error', 'redirect'] as const) {
    void it(`a callback that answers '${mode}' is not subscribed`, async () => {
      reset();
      const echo = await TestSubscriber.start();
      const h = await startHub();
      try {
        sub.challenge = mode;
        sub.redirectTo = `${echo.url}/echo`;
        const topic = 'http://127.0.0.1:1/deny';
        assert.equal((await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/deny` })).status, 202);
        assert.equal(sub.verifications.length, 1);
        assert.equal(echo.verifications.length, 0, 'no redirect followed');
        assert.equal((await h.store.subscriptions(topic)).length, 0);
        assert.equal(h.events.filter((e) => e.type === 'verification-failed').length, 1);
        await fatPing(h.url, topic);
        await h.hub.idle();
        assert.equal(sub.attempts.length, 0);
      } finally {
        await h.stop();
        await echo.close();
      }
    });
  }
  void it('a re-subscription changes nothing until verified: a failed one keeps the old secret and lease', async () => {
    reset();
    const h = await startHub();
    try {
      const topic = 'http://127.0.0.1:1/keep';
      const callback = `${sub.url}/cb/keep`;
      await subscribe(h, {
        'hub.topic': topic,
        'hub.callback': callback,
        'hub.secret': 'old',
        'hub.lease_seconds': '1000',
      });
      sub.challenge = 'wrong';
      await subscribe(h, {
        'hub.topic': topic,
        'hub.callback': callback,
        'hub.secret': 'new',
        'hub.lease_seconds': '2000',
      });
      const s = (await h.store.getSubscription(topic, callback))!;
      assert.equal(s.secret, 'old');
      assert.equal(s.leaseSeconds, 1000);
      // and a failed unsubscription leaves it active
      await form(h.url, { 'hub.mode': 'unsubscribe', 'hub.topic': topic, 'hub.callback': callback });
      await h.hub.idle();
      assert.equal((await h.store.subscriptions(topic)).length, 1);
    } finally {
      await h.stop();
    }
  });
  void it('bad requests are refused synchronously with 4xx and no callback is contacted', async () => {
    reset();
    const h = await startHub();
    try {
      const ok = { 'hub.mode': 'subscribe', 'hub.topic': 'http://127.0.0.1:1/t', 'hub.callback': `${sub.url}/cb` };
      const cases: [Record<string, string>, number][] = [
        [{ ...ok, 'hub.callback': '' }, 400],
        [{ ...ok, 'hub.topic': '' }, 400],
        [{ ...ok, 'hub.callback': 'ftp://127.0.0.1/cb' }, 400],
        [{ ...ok, 'hub.callback': 'http://destination.example.net/callback/' }, 403],
        [{ ...ok, 'hub.secret': 'x'.repeat(200) }, 400],
        [{ ...ok, 'hub.lease_seconds': 'soon' }, 400],
        [{ ...ok, 'hub.mode': 'subscribe-all' }, 400],
      ];
      for (const [params, status] of cases)
        assert.equal((await form(h.url, params)).status, status, JSON.stringify(params));
      const big = await form(h.url, { ...ok, pad: 'x'.repeat(70 * 1024) });
      assert.equal(big.status, 413);
      assert.equal(
        (await fetch(h.url, { method: 'POST', headers: { 'content-type': 'application/xml' }, body: CN })).status,
        400,
        'no Link rel=self',
      );
      assert.equal((await fetch(h.url, { method: 'PUT', body: 'x' })).status, 405);
      await h.hub.idle();
      assert.equal(sub.verifications.length, 0);
    } finally {
      await h.stop();
    }
  });
  void it('the callback allow-list: loopback always, other hosts only by pattern', () => {
    const none = createUrlPolicy();
    assert.equal(none.allowed('http://127.0.0.1:9/cb'), true);
    assert.equal(none.allowed('http://127.8.9.10/cb'), true);
    assert.equal(none.allowed('http://[::1]:9/cb'), true);
    assert.equal(none.allowed('http://localhost:9/cb'), true);
    assert.equal(none.allowed('http://destination.example.net/cb'), false);
    assert.equal(none.allowed('http://user:pw@127.0.0.1/cb'), false);
    assert.equal(none.allowed('file:///etc/passwd'), false);
    const some = createUrlPolicy(['*.example.net', 'https://hooks.example.org/rs/*']);
    assert.equal(some.allowed('http://destination.example.net/cb'), true);
    assert.equal(some.allowed('http://example.net.evil.com/cb'), false);
    assert.equal(some.allowed('https://hooks.example.org/rs/a?b=c'), true);
    assert.equal(some.allowed('http://hooks.example.org/rs/a'), false);
    assert.equal(some.allowed('https://hooks.example.org/other'), false);
  });
});

void describe('leases', () => {
  void it('hub.lease_seconds is clamped to 300 s … 31 days and sent in the verification', async () => {
    reset();
    const h = await startHub();
    try {
      await subscribe(h, {
        'hub.topic': 'http://127.0.0.1:1/a',
        'hub.callback': `${sub.url}/cb/a`,
        'hub.lease_seconds': '10',
      });
      await subscribe(h, {
        'hub.topic': 'http://127.0.0.1:1/b',
        'hub.callback': `${sub.url}/cb/b`,
        'hub.lease_seconds': '99999999',
      });
      assert.deepEqual(
        sub.verifications.map((v) => v.searchParams.get('hub.lease_seconds')),
        ['300', '2678400'],
      );
      assert.deepEqual(
        (await h.store.subscriptions()).map((s) => s.leaseSeconds),
        [300, 2678400],
      );
    } finally {
      await h.stop();
    }
  });
  void it('a lease that ends removes the subscription (with its undelivered messages); renewal before the end keeps it', async () => {
    reset();
    let clock = 5_000_000;
    const h = await startHub({ now: () => clock });
    try {
      const callback = `${sub.url}/cb/lease`;
      await subscribe(h, {
        'hub.topic': 'http://127.0.0.1:1/renewed',
        'hub.callback': callback,
        'hub.lease_seconds': '300',
      });
      await subscribe(h, {
        'hub.topic': 'http://127.0.0.1:1/lapsed',
        'hub.callback': callback,
        'hub.lease_seconds': '300',
      });
      sub.deliveryStatus = 503;
      await fatPing(h.url, 'http://127.0.0.1:1/lapsed');
      await h.hub.idle();
      clock += 299_000;
      await subscribe(h, {
        'hub.topic': 'http://127.0.0.1:1/renewed',
        'hub.callback': callback,
        'hub.lease_seconds': '300',
      });
      clock += 2_000;
      h.hub.kick();
      await h.hub.idle();
      assert.deepEqual(
        (await h.store.subscriptions()).map((s) => s.topic),
        ['http://127.0.0.1:1/renewed'],
      );
      assert.deepEqual(await h.store.counts(), { subscriptions: 1, messages: 0, deliveries: 0 });
      assert.ok(h.events.some((e) => e.type === 'expired' && e.topic === 'http://127.0.0.1:1/lapsed'));
    } finally {
      await h.stop();
    }
  });
});

void describe('delivery', () => {
  void it('failures are retried with exponential backoff, in publish order, and never drop the subscription', async () => {
    reset();
    const h = await startHub({ random: () => 1, retry: { baseMs: 5, maxMs: 20 } });
    try {
      const topic = 'http://127.0.0.1:1/retry';
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/retry` });
      sub.deliveryStatus = (n) => (n <= 4 ? 500 : 200);
      for (let i = 1; i <= 3; i++)
        assert.equal((await fatPing(h.url, topic, Buffer.from(`<m n="${i}"/>`))).status, 200);
      await sub.waitFor(() => sub.deliveries.length === 3, 'three deliveries');
      await h.hub.idle();
      assert.deepEqual(
        sub.deliveries.map((d) => d.body.toString()),
        ['<m n="1"/>', '<m n="2"/>', '<m n="3"/>'],
      );
      assert.deepEqual(
        sub.attempts.slice(0, 5).map((d) => d.body.toString()),
        Array(5).fill('<m n="1"/>'),
        'the head of the queue blocks the others',
      );
      const delays = h.events.flatMap((e) => (e.type === 'delivery-failed' ? [e.retryInMs] : []));
      assert.deepEqual(delays, [5, 10, 20, 20], 'doubling up to the cap');
      assert.equal((await h.store.subscriptions(topic)).length, 1);
    } finally {
      await h.stop();
    }
  });
  void it('jitter keeps each delay between half and all of the exponential step', async () => {
    reset();
    const h = await startHub({ random: () => 0, retry: { baseMs: 8, maxMs: 1000 } });
    try {
      const topic = 'http://127.0.0.1:1/jitter';
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/jitter` });
      sub.deliveryStatus = (n) => (n <= 3 ? 500 : 200);
      await fatPing(h.url, topic);
      await sub.waitFor(() => sub.deliveries.length === 1, 'the delivery');
      assert.deepEqual(
        h.events.flatMap((e) => (e.type === 'delivery-failed' ? [e.retryInMs] : [])),
        [4, 8, 16],
      );
    } finally {
      await h.stop();
    }
  });
  void it('410 Gone ends the subscription; a redirect is a failure and is not followed', async () => {
    reset();
    const other = await TestSubscriber.start();
    const h = await startHub({ retry: { baseMs: 5, maxMs: 5 } });
    try {
      const topic = 'http://127.0.0.1:1/gone';
      await subscribe(h, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/gone` });
      sub.redirectTo = `${other.url}/elsewhere`;
      sub.deliveryStatus = (n) => (n === 1 ? 307 : 410);
      await fatPing(h.url, topic);
      await fatPing(h.url, topic);
      await sub.waitFor(() => h.events.some((e) => e.type === 'gone'), 'the 410');
      await h.hub.idle();
      assert.equal(other.attempts.length, 0, 'no redirect followed');
      assert.equal(sub.attempts.length, 2);
      assert.deepEqual(await h.store.counts(), { subscriptions: 0, messages: 0, deliveries: 0 });
    } finally {
      await h.stop();
      await other.close();
    }
  });
  void it('every verified subscriber of a topic gets the message; subscribers of other topics do not', async () => {
    reset();
    const second = await TestSubscriber.start();
    const h = await startHub();
    try {
      await subscribe(h, { 'hub.topic': 'http://127.0.0.1:1/x', 'hub.callback': `${sub.url}/cb/x` });
      await subscribe(h, { 'hub.topic': 'http://127.0.0.1:1/x', 'hub.callback': `${second.url}/cb/x` });
      await subscribe(h, { 'hub.topic': 'http://127.0.0.1:1/y', 'hub.callback': `${second.url}/cb/y` });
      await fatPing(h.url, 'http://127.0.0.1:1/x');
      await h.hub.idle();
      assert.deepEqual(
        sub.deliveries.map((d) => d.url),
        ['/cb/x'],
      );
      assert.deepEqual(
        second.deliveries.map((d) => d.url),
        ['/cb/x'],
      );
    } finally {
      await h.stop();
      await second.close();
    }
  });
  void it('a hub reopened over the same store keeps its subscriptions and delivers what was queued', async () => {
    reset();
    const tmp = await tempDir('rs-hub-');
    const file = join(tmp.dir, 'hub.sqlite');
    try {
      const a = await startHub({}, file);
      const topic = 'http://127.0.0.1:1/restart';
      await subscribe(a, { 'hub.topic': topic, 'hub.callback': `${sub.url}/cb/restart`, 'hub.secret': 'k' });
      sub.deliveryStatus = 503;
      await fatPing(a.url, topic, Buffer.from('<one/>'));
      await fatPing(a.url, topic, Buffer.from('<two/>'));
      await a.hub.idle();
      await a.stop();
      sub.deliveryStatus = 200;
      const b = await startHub({}, file);
      try {
        b.hub.kick();
        await sub.waitFor(() => sub.deliveries.length === 2, 'the queued deliveries');
        assert.deepEqual(
          sub.deliveries.map((d) => d.body.toString()),
          ['<one/>', '<two/>'],
        );
        assert.ok(verifySignature(String(sub.deliveries[1]!.headers['x-hub-signature']), 'k', Buffer.from('<two/>')));
        const link = parseLinkHeader(String(sub.deliveries[1]!.headers.link));
        assert.equal(link.find((l) => l.rel.includes('hub'))?.target, b.url, 'the hub URL of the running hub');
      } finally {
        await b.stop();
      }
    } finally {
      await tmp.cleanup();
    }
  });
});
