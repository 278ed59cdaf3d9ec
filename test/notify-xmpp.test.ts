// The XMPP PubSub transport against a real Prosody on 127.0.0.1 (skipped where `prosody` is not installed):
// SCRAM authentication, STARTTLS, node creation on first publish, subscription of a full JID, event
// notifications handed on as documents, payloads split to fit a stanza, the size limit on stanzas received,
// unsubscription, and a lost connection noticed.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { changeNotification } from '../src/core/model/notification.js';
import type { ResourceSyncDocument } from '../src/core/model/types.js';
import { parseDocument } from '../src/core/xml/read-document.js';
import { writeDocumentString } from '../src/core/xml/write-document.js';
import { isResourceSyncError } from '../src/core/errors.js';
import { XmppConnection } from '../src/notify/xmpp-client.js';
import { nodeSubscriptions } from '../src/notify/xmpp-pubsub.js';
import { XmppPublisher } from '../src/notify/xmpp-publisher.js';
import { XmppSubscriber, type XmppSubscriberEvent } from '../src/notify/xmpp-subscriber.js';
import { DOMAIN, Prosody, PROSODY_SKIP, SERVICE, selfSignedCertificate } from './helpers/prosody.js';
import { tempDir } from './helpers/tmp.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
let server: Prosody;
let tlsServer: Prosody | undefined;
let cert: { certificate: string; key: string } | undefined;
const USERS = { source: 'source-secret', dest: 'dest-secret', other: 'other-secret' };

const account = (user: keyof typeof USERS, s: Prosody = server) => ({ jid: `${user}@${DOMAIN}`, password: USERS[user], host: '127.0.0.1', port: s.port });

async function until(what: string, predicate: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The header and entries of a document, as parsed. */
function content(d: ResourceSyncDocument): unknown {
  return { root: d.root, md: d.md, ln: d.ln, entries: d.entries.map((e) => ({ loc: e.loc, md: e.md, ln: e.ln })) };
}

const strip = (d: ResourceSyncDocument): unknown => JSON.parse(JSON.stringify(content(d), (k, v: unknown) => (k === 'line' || k === 'mdLine' ? undefined : v)));

let nodes = 0;
const newNode = (): string => `http://127.0.0.1:8080/.resourcesync/set${++nodes}/change-notification/`;

before(async () => {
  if (PROSODY_SKIP !== false) return;
  tmp = await tempDir('rs-xmpp-');
  server = await Prosody.start(`${tmp.dir}/plain`, { users: USERS, admins: [`source@${DOMAIN}`], stanzaSizeLimit: 4 * 1024 * 1024 });
  cert = selfSignedCertificate(tmp.dir);
  if (cert !== undefined) tlsServer = await Prosody.start(`${tmp.dir}/tls`, { users: USERS, admins: [`source@${DOMAIN}`], tls: cert });
});

after(async () => {
  await server?.stop();
  await tlsServer?.stop();
  await tmp?.cleanup();
});

void test('xmpp: a published Change Notification reaches the subscriber as the same document; the node is created on first use', { skip: PROSODY_SKIP }, async () => {
  const node = newNode();
  const received: Uint8Array[] = [];
  const events: XmppSubscriberEvent[] = [];
  const publisherEvents: string[] = [];
  // one item for the whole document (about 100 KB: read in many chunks)
  const pub = new XmppPublisher({ account: account('source'), service: SERVICE, maxPayloadBytes: 1024 * 1024, onEvent: (e) => publisherEvents.push(e.type) });
  const first = changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:01Z', entries: [{ loc: 'http://127.0.0.1:8080/before.txt', md: { change: 'created', datetime: '2024-05-01T10:00:00.5Z' } }] });
  await pub.publish(node, first); // nobody subscribed yet: creates the node
  assert.deepEqual(publisherEvents, ['connected', 'node-created']);

  const sub = new XmppSubscriber({ account: account('dest'), service: SERVICE, node, onNotification: (b) => received.push(b), onEvent: (e) => events.push(e) });
  await sub.subscribe();
  assert.equal(sub.subscribed, true);
  assert.equal(events[0]?.type, 'subscribed');

  // characters to escape, and multi-byte ones (a stanza spans many reads: chunks split characters)
  const doc = changeNotification({
    from: '2024-05-01T10:00:01Z',
    until: '2024-05-01T10:00:02Z',
    up: 'http://127.0.0.1:8080/.resourcesync/set/capabilitylist.xml',
    entries: Array.from({ length: 600 }, (_, i) => ({
      loc: `http://127.0.0.1:8080/d%C3%A9j%C3%A0/${i}-<&>"'-日本語-😀.txt`,
      md: { change: i % 3 === 0 ? 'deleted' : 'updated', datetime: '2024-05-01T10:00:01.5Z', ...(i % 3 === 0 ? {} : { hash: 'md5:1B2M2Y8AsgTpgAmY7PhCfg==', length: String(i) }) },
    })),
  });
  assert.ok(Buffer.byteLength(writeDocumentString(doc)) > 64 * 1024);
  await pub.publish(node, doc);
  await until('the notification', () => received.length === 1);
  const got = await parseDocument(received[0]!);
  assert.deepEqual(strip(got), strip(doc));
  assert.ok(Buffer.from(received[0]!).toString().startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<urlset'));

  // bytes given as they are: the same document arrives
  const bytes = Buffer.from(writeDocumentString(first));
  await pub.publish(node, bytes);
  await until('the second notification', () => received.length === 2);
  assert.deepEqual(strip(await parseDocument(received[1]!)), strip(first));

  await sub.unsubscribe();
  await pub.close();
});

void test('xmpp: a notification larger than an item is split into several with contiguous windows', { skip: PROSODY_SKIP }, async () => {
  const node = newNode();
  const received: Uint8Array[] = [];
  const pub = new XmppPublisher({ account: account('source'), service: SERVICE, maxPayloadBytes: 16 * 1024 });
  await pub.publish(node, changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:00Z', entries: [] }));
  const sub = new XmppSubscriber({ account: account('dest'), service: SERVICE, node, onNotification: (b) => received.push(b) });
  await sub.subscribe();
  const entries = Array.from({ length: 500 }, (_, i) => ({ loc: `http://127.0.0.1:8080/f${i}.txt`, md: { change: 'created', datetime: '2024-05-01T10:00:01Z' } }));
  const doc = changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:02Z', entries });
  await pub.publish(node, doc);
  assert.ok(Buffer.byteLength(writeDocumentString(doc)) > 3 * 16 * 1024);
  const locs = (): number => received.reduce((n, b) => n + (Buffer.from(b).toString().match(/<loc>/g) ?? []).length, 0);
  await until('every part', () => locs() === 500);
  const parts = await Promise.all(received.map((b) => parseDocument(b)));
  assert.ok(parts.every((p, i) => received[i]!.byteLength < 24 * 1024 && p.entries.length > 0));
  assert.deepEqual(parts.flatMap((p) => p.entries.map((e) => e.loc)), entries.map((e) => e.loc));
  assert.equal(parts[0]!.md?.from, '2024-05-01T10:00:00Z');
  for (const p of parts.slice(1)) assert.equal(p.md?.from, '2024-05-01T10:00:02Z');
  assert.ok(parts.every((p) => p.md?.until === '2024-05-01T10:00:02Z'));
  await sub.unsubscribe();
  await pub.close();
});

void test('xmpp: a stanza over the size limit is dropped and reported; the stream goes on', { skip: PROSODY_SKIP }, async () => {
  const node = newNode();
  const received: Uint8Array[] = [];
  const oversized: number[] = [];
  const pub = new XmppPublisher({ account: account('source'), service: SERVICE, maxPayloadBytes: 1024 * 1024 });
  await pub.publish(node, changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:00Z', entries: [] }));
  const sub = new XmppSubscriber({
    account: { ...account('dest'), maxStanzaBytes: 32 * 1024 },
    service: SERVICE,
    node,
    onNotification: (b) => received.push(b),
    onEvent: (e) => e.type === 'oversized' && oversized.push(e.bytes),
  });
  await sub.subscribe();
  const big = changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:01Z', entries: Array.from({ length: 1000 }, (_, i) => ({ loc: `http://127.0.0.1:8080/big-${i}.txt`, md: { change: 'created' } })) });
  await pub.publish(node, big);
  const small = changeNotification({ from: '2024-05-01T10:00:01Z', until: '2024-05-01T10:00:02Z', entries: [{ loc: 'http://127.0.0.1:8080/small.txt', md: { change: 'created' } }] });
  await pub.publish(node, small);
  await until('the small notification', () => received.length === 1);
  assert.equal(oversized.length, 1);
  assert.ok(oversized[0]! > 32 * 1024);
  assert.deepEqual(strip(await parseDocument(received[0]!)), strip(small));
  assert.equal(sub.subscribed, true);
  await sub.unsubscribe();
  await pub.close();
});

void test('xmpp: unsubscribe ends the subscription at the service', { skip: PROSODY_SKIP }, async () => {
  const node = newNode();
  const pub = new XmppPublisher({ account: account('source'), service: SERVICE });
  await pub.publish(node, changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:00Z', entries: [] }));
  const sub = new XmppSubscriber({ account: account('dest'), service: SERVICE, node, onNotification: () => undefined });
  await sub.subscribe();
  const owner = await XmppConnection.connect(account('source'));
  try {
    const before = await nodeSubscriptions(owner, SERVICE, node);
    assert.equal(before.length, 1);
    assert.match(before[0]!.jid, /^dest@localhost\/resourcesync-/);
    assert.equal(before[0]!.subscription, 'subscribed');
    await sub.unsubscribe();
    assert.deepEqual(await nodeSubscriptions(owner, SERVICE, node), []);
  } finally {
    await owner.close();
    await pub.close();
  }
});

void test('xmpp: wrong credentials, a user who may not create nodes, a node that does not exist', { skip: PROSODY_SKIP }, async () => {
  await assert.rejects(XmppConnection.connect({ ...account('dest'), password: 'wrong' }), (e: unknown) => isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'not-authorized');
  const other = new XmppPublisher({ account: account('other'), service: SERVICE });
  await assert.rejects(other.publish(newNode(), changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:00Z', entries: [] })), (e: unknown) => {
    assert.ok(isResourceSyncError(e, 'RS_XMPP'));
    assert.equal(e.data.condition, 'forbidden');
    assert.match(e.message, /may not publish to node .* \(forbidden\)/);
    return true;
  });
  await other.close();
  const sub = new XmppSubscriber({ account: account('dest'), service: SERVICE, node: 'no-such-node', onNotification: () => undefined });
  await assert.rejects(sub.subscribe(), (e: unknown) => isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'item-not-found');
  assert.equal(sub.subscribed, false);
  await assert.rejects(XmppConnection.connect({ ...account('dest'), port: 1 }), (e: unknown) => isResourceSyncError(e, 'RS_NETWORK'));
});

void test('xmpp: STARTTLS when the server offers it, the certificate checked; no password without TLS when TLS is required', { skip: PROSODY_SKIP }, async (t) => {
  if (tlsServer === undefined || cert === undefined) {
    t.skip('openssl is not installed: no certificate for the TLS server');
    return;
  }
  const ca = readFileSync(cert.certificate);
  const secure = await XmppConnection.connect({ ...account('dest', tlsServer), tls: { ca } });
  assert.equal(secure.secure, true);
  await secure.close();
  // the self-signed certificate is not trusted without `ca`
  await assert.rejects(XmppConnection.connect(account('dest', tlsServer)), (e: unknown) => isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'tls-failure');
  // a server without TLS: refused when TLS is required (the default off loopback)
  await assert.rejects(XmppConnection.connect({ ...account('dest'), requireTls: true }), (e: unknown) => isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'encryption-required');
});

void test('xmpp: a lost connection is reported; subscribing again works once the server is back', { skip: PROSODY_SKIP }, async () => {
  const node = newNode();
  const publisherEvents: string[] = [];
  const pub = new XmppPublisher({ account: account('source'), service: SERVICE, retryMs: 50, onEvent: (e) => publisherEvents.push(e.type) });
  await pub.publish(node, changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:00Z', entries: [] }));
  const received: Uint8Array[] = [];
  const events: string[] = [];
  const sub = new XmppSubscriber({ account: account('dest'), service: SERVICE, node, onNotification: (b) => received.push(b), onEvent: (e) => events.push(e.type) });
  await sub.subscribe();
  await server.stop();
  await until('the loss', () => events.includes('lost'));
  assert.equal(sub.subscribed, false);
  await assert.rejects(pub.publish(node, changeNotification({ from: '2024-05-01T10:00:00Z', until: '2024-05-01T10:00:01Z', entries: [] })));
  await until('the publisher to notice', () => publisherEvents.includes('disconnected'));
  await server.resume();
  await until('the publisher to connect again by itself', () => publisherEvents.filter((e) => e === 'connected').length === 2);
  await sub.subscribe();
  const doc = changeNotification({ from: '2024-05-01T10:00:01Z', until: '2024-05-01T10:00:02Z', entries: [{ loc: 'http://127.0.0.1:8080/after.txt', md: { change: 'created' } }] });
  await pub.publish(node, doc);
  await until('the notification after the restart', () => received.length === 1);
  assert.deepEqual(strip(await parseDocument(received[0]!)), strip(doc));
  await sub.unsubscribe();
  await pub.close();
});
