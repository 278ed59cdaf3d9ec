import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResourceSyncError } from './errors.js';
import { parseXmppAccountUri, parseXmppPubsubUri, xmppPubsubUri } from './xmpp-uri.js';

void test('parseXmppAccountUri: account, port, service, server and node', () => {
  assert.deepEqual(parseXmppAccountUri('xmpp://source@example.org/pubsub.example.org'), {
    jid: 'source@example.org',
    host: 'example.org',
    port: 5222,
    service: 'pubsub.example.org',
  });
  assert.deepEqual(parseXmppAccountUri('xmpp://dest@Example.ORG:5223'), { jid: 'dest@example.org', host: 'example.org', port: 5223 });
  assert.equal(parseXmppAccountUri('xmpp://dest@example.org?server=[::1]').host, '::1');
  assert.throws(() => parseXmppAccountUri('xmpp://dest@example.org?server=a/b'), /is not a host name or address/);
  assert.deepEqual(parseXmppAccountUri('xmpp://d%C3%A9st@localhost:15222/pubsub.localhost?server=127.0.0.1&node=a%2Fb%3Bc'), {
    jid: 'dést@localhost',
    host: '127.0.0.1',
    port: 15222,
    service: 'pubsub.localhost',
    node: 'a/b;c',
  });
});

void test('parseXmppAccountUri: refuses a password, a missing user, other schemes, unknown parameters, a node without service', () => {
  for (const bad of [
    'xmpp://source:secret@example.org',
    'xmpp://example.org',
    'http://source@example.org',
    'xmpp:source@example.org',
    'xmpp://source@example.org/pubsub.example.org?password=x',
    'xmpp://source@example.org?node=n',
    'xmpp://source@example.org/a/b',
  ]) {
    assert.throws(() => parseXmppAccountUri(bad), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'), bad);
  }
  assert.throws(() => parseXmppAccountUri('xmpp://source:secret@example.org'), /RESOURCESYNC_XMPP_PASSWORD/);
});

void test('parseXmppAccountUri: a password in the URI does not appear in the error, neither its message nor its data', () => {
  for (const [uri, shown] of [
    ['xmpp://source:hunter2@example.org/pubsub.example.org', 'xmpp://source:***@example.org/pubsub.example.org'],
    ['xmpp://source:hun%40ter2@example.org:5222', 'xmpp://source:***@example.org:5222'],
    ['xmpp://source:hunter2@@example.org', 'xmpp://source:***@example.org'],
    ['xmpp://source:hun/ter2@example.org', 'xmpp://source:***@example.org'],
    ['xmpp:source:hunter2@example.org', 'xmpp:source:***@example.org'],
    ['xmpp://source@example.org/pubsub.example.org?password=hunter2&node=n', 'xmpp://source@example.org/pubsub.example.org?password=***&node=n'],
  ] as const) {
    assert.throws(
      () => parseXmppAccountUri(uri),
      (e: unknown) => {
        assert.ok(isResourceSyncError(e, 'RS_INVALID_ARGUMENT'), uri);
        assert.doesNotMatch(e.message, /hunter2|hun%40ter2|ter2/, uri);
        assert.doesNotMatch(JSON.stringify(e.data), /hunter2|hun%40ter2|ter2/, uri);
        assert.ok(e.message.startsWith(`'${shown}' is not an XMPP account URI: `), e.message);
        assert.equal(e.data.actual, shown);
        return true;
      },
    );
  }
  // without a password, the URI is shown as it is
  assert.throws(() => parseXmppAccountUri('xmpp://source@example.org?node=n'), (e: unknown) => isResourceSyncError(e) && e.data.actual === 'xmpp://source@example.org?node=n');
});

void test('xmppPubsubUri and parseXmppPubsubUri round-trip a node that is a URL', () => {
  const node = 'http://example.org:8080/.resourcesync/my set/change-notification/?a=1;b&c#d';
  const uri = xmppPubsubUri('pubsub.example.org', node);
  assert.equal(uri, 'xmpp:pubsub.example.org?pubsub;action=subscribe;node=http://example.org:8080/.resourcesync/my%20set/change-notification/%3Fa%3D1%3Bb%26c%23d');
  assert.deepEqual(parseXmppPubsubUri(uri), { service: 'pubsub.example.org', node });
  assert.deepEqual(parseXmppPubsubUri('xmpp:pubsub.shakespeare.lit?pubsub;action=subscribe;node=princely_musings'), { service: 'pubsub.shakespeare.lit', node: 'princely_musings' });
  assert.deepEqual(parseXmppPubsubUri('xmpp://me@shakespeare.lit/pubsub.shakespeare.lit?pubsub;node=n'), { service: 'pubsub.shakespeare.lit', node: 'n' });
  for (const bad of ['http://example.org/hub', 'xmpp:pubsub.example.org', 'xmpp:pubsub.example.org?message;body=hi', 'xmpp:pubsub.example.org?pubsub;action=subscribe', 'xmpp:pubsub.example.org?pubsub;node=%E0']) {
    assert.equal(parseXmppPubsubUri(bad), undefined, bad);
  }
});
