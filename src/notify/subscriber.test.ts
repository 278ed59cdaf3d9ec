import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { tempDir } from '../../test/helpers/tmp.js';
import { createHub, type Hub, type HubEvent } from './hub.js';
import type { HubStore } from './hub-store.js';
import { openSqliteHubStore } from './sqlite-hub-store.js';
import { listen, type Listener } from './node-listener.js';
import { signBody } from './signature.js';
import { Subscriber, type SubscriberEvent } from './subscriber.js';
import { WindowTracker } from '../destination/notification-windows.js';

void describe('WindowTracker', () => {
  void it('classifies windows: first, next, gap, stale (duplicate or late), overlap, invalid', () => {
    const t = new WindowTracker();
    assert.equal(t.accept('2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z'), 'first');
    assert.equal(t.accept('2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z'), 'next');
    assert.equal(t.accept('2026-01-01T00:00:01Z', '2026-01-01T00:00:02Z'), 'stale');
    assert.equal(t.accept('2026-01-01T00:00:05Z', '2026-01-01T00:00:06Z'), 'gap');
    assert.equal(t.accept('2026-01-01T00:00:03Z', '2026-01-01T00:00:04Z'), 'stale', 'arrived after a later one');
    assert.equal(t.accept('2026-01-01T00:00:05Z', '2026-01-01T00:00:07Z'), 'overlap');
    assert.equal(t.accept('2026-01-01T00:00:07Z', '2026-01-01T00:00:07Z'), 'next', 'an empty continuation window');
    assert.equal(t.accept(undefined, '2026-01-01T00:00:08Z'), 'invalid');
    assert.equal(t.accept('2026-01-01T00:00:09Z', '2026-01-01T00:00:08Z'), 'invalid');
    assert.equal(t.until, Date.parse('2026-01-01T00:00:07Z'));
  });
});

void describe('Subscriber against a real hub', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let store: HubStore;
  let hub: Hub;
  let hubListener: Listener;
  const events: HubEvent[] = [];
  before(async () => {
    tmp = await tempDir('rs-sub-');
    store = openSqliteHubStore(join(tmp.dir, 'hub.sqlite'));
    const ref: { hub?: Hub } = {};
    hubListener = await listen((r) => ref.hub!.handle(r));
    hub = ref.hub = createHub({
      store,
      hubUrl: `${hubListener.url}/`,
      lease: { min: 4, max: 4, default: 4 },
      onEvent: (e) => events.push(e),
    });
  });
  after(async () => {
    await hubListener.close();
    await hub.close();
    await store.close();
    await tmp.cleanup();
  });

  async function withSubscriber(
    topic: string,
    fn: (s: Subscriber, got: Uint8Array[], seen: SubscriberEvent[], cb: string) => Promise<void>,
  ): Promise<void> {
    const got: Uint8Array[] = [];
    const seen: SubscriberEvent[] = [];
    const ref: { s?: Subscriber } = {};
    const l = await listen((r) => ref.s!.handle(r));
    const cb = `${l.url}/callback?who=test`;
    ref.s = new Subscriber({
      hub: `${hubListener.url}/`,
      topic,
      callbackUrl: cb,
      onNotification: (b) => got.push(b),
      onEvent: (e) => seen.push(e),
    });
    try {
      await fn(ref.s, got, seen, cb);
    } finally {
      ref.s.close();
      await l.close();
    }
  }

  void it('subscribes, gets signed deliveries, ignores forged ones, renews before the lease ends, unsubscribes', async () => {
    await withSubscriber('http://127.0.0.1:1/topic-a', async (s, got, seen, cb) => {
      await s.subscribe();
      assert.equal(s.subscribed, true);
      assert.deepEqual(seen[0], { type: 'verified', mode: 'subscribe', leaseSeconds: 4 });
      await hub.idle(); // the hub records the subscription once it has read the echoed challenge
      assert.equal((await store.getSubscription('http://127.0.0.1:1/topic-a', cb))?.secret, s.secret);

      const body = Buffer.from('<urlset/>');
      const link = `<http://127.0.0.1:1/topic-a>; rel="self", <${hubListener.url}/>; rel="hub"`;
      assert.equal(
        (
          await fetch(`${hubListener.url}/`, {
            method: 'POST',
            headers: { 'content-type': 'application/xml', link },
            body,
          })
        ).status,
        200,
      );
      await hub.idle();
      assert.deepEqual(
        got.map((b) => Buffer.from(b).toString()),
        ['<urlset/>'],
      );

      for (const sig of [signBody('sha256', 'not the secret', body), undefined]) {
        const forged = await fetch(cb, {
          method: 'POST',
          headers: { 'content-type': 'application/xml', ...(sig ? { 'x-hub-signature': sig } : {}) },
          body,
        });
        assert.equal(forged.status, 202);
      }
      assert.equal(got.length, 1, 'forged or unsigned bodies are ignored');
      assert.equal(seen.filter((e) => e.type === 'bad-signature').length, 2);

      // a verification nobody asked for is refused
      const unasked = await fetch(
        `${cb}&hub.mode=subscribe&hub.topic=${encodeURIComponent('http://127.0.0.1:1/other')}&hub.challenge=x&hub.lease_seconds=4`,
      );
      assert.equal(unasked.status, 404);

      // renewal at 80 % of a 4 s lease (3.2 s, well before the hub ends it): a second verified subscribe, same subscription row
      const id = (await store.getSubscription('http://127.0.0.1:1/topic-a', cb))!.id;
      for (let i = 0; i < 600 && seen.filter((e) => e.type === 'verified').length < 2; i++) await sleep(10);
      assert.equal(seen.filter((e) => e.type === 'verified' && e.mode === 'subscribe').length, 2);
      assert.equal((await store.getSubscription('http://127.0.0.1:1/topic-a', cb))?.id, id);

      await s.unsubscribe();
      assert.equal(s.subscribed, false);
      await hub.idle();
      assert.equal(await store.getSubscription('http://127.0.0.1:1/topic-a', cb), undefined);
    });
  });

  void it('a hub that refuses the callback rejects subscribe(); an unreachable hub is RS_NETWORK', async () => {
    await withSubscriber('http://127.0.0.1:1/topic-b', async (s) => {
      const bad = new Subscriber({
        hub: `${hubListener.url}/`,
        topic: 'http://127.0.0.1:1/b',
        callbackUrl: 'http://remote.example.net/cb',
        onNotification: () => undefined,
      });
      await assert.rejects(bad.subscribe(), (e: { code?: string }) => e.code === 'RS_HTTP_STATUS');
      const gone = new Subscriber({
        hub: 'http://127.0.0.1:9/',
        topic: 'http://127.0.0.1:1/b',
        callbackUrl: 'http://127.0.0.1:9/cb',
        onNotification: () => undefined,
      });
      await assert.rejects(gone.subscribe(), (e: { code?: string }) => e.code === 'RS_NETWORK');
      assert.equal(s.subscribed, false);
    });
  });
});

void describe('Subscriber against a hub that grants a lease longer than a timer holds', () => {
  void it('a one-year (or endless) lease is renewed once, not again and again, and no timer overflows', async () => {
    for (const granted of ['31536000', '1e20']) {
      let requests = 0;
      const warnings: string[] = [];
      const onWarning = (w: Error): void => void warnings.push(w.name);
      process.on('warning', onWarning);
      const ref: { s?: Subscriber } = {};
      const cbListener = await listen((r) => ref.s!.handle(r));
      // the hub: answers 202, then verifies the intent at the callback with its lease
      const hubListener = await listen(async (r) => {
        const form = new URLSearchParams(await r.text());
        requests++;
        const cb = new URL(form.get('hub.callback')!);
        cb.searchParams.set('hub.mode', form.get('hub.mode')!);
        cb.searchParams.set('hub.topic', form.get('hub.topic')!);
        cb.searchParams.set('hub.challenge', 'c');
        cb.searchParams.set('hub.lease_seconds', granted);
        setTimeout(() => void fetch(cb).then((x) => x.arrayBuffer()), 5);
        return new Response(null, { status: 202 });
      });
      ref.s = new Subscriber({
        hub: `${hubListener.url}/`,
        topic: 'http://127.0.0.1:1/t',
        callbackUrl: `${cbListener.url}/cb`,
        onNotification: () => undefined,
      });
      try {
        await ref.s.subscribe();
        assert.equal(ref.s.subscribed, true);
        await sleep(1500); // proving that nothing happens: no renewal fires
        assert.equal(requests, 1, `lease ${granted}: one subscription request, no renewal storm`);
        assert.deepEqual(
          warnings.filter((w) => w === 'TimeoutOverflowWarning'),
          [],
        );
      } finally {
        process.off('warning', onWarning);
        ref.s.close();
        await cbListener.close();
        await hubListener.close();
      }
    }
  });
});
