// XmppConnection against a scripted server on 127.0.0.1 (no XMPP server needed): which IQ answers are taken,
// unguessable ids, and an AbortSignal that stops a connection (or a subscription) under way.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, pbkdf2Sync } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { isResourceSyncError } from '../core/errors.js';
import { XmppConnection } from './xmpp-client.js';
import { XmppSubscriber } from './xmpp-subscriber.js';
import { element, textOf, xml } from './xmpp-xml.js';

const DOMAIN = 'example.org';
const PASSWORD = 'pencil';
const SALT = Buffer.from('a salt for the test');
const STREAM = `<?xml version='1.0'?><stream:stream xmlns='jabber:client' xmlns:stream='http://etherx.jabber.org/streams' from='${DOMAIN}' id='s' version='1.0'>`;
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

/** An IQ the client sent once its session is up. */
interface SentIq {
  id: string;
  to: string | undefined;
  xml: string;
  reply: (stanza: string) => void;
}

interface Scripted {
  port: number;
  /** Connections accepted. */
  connections: number;
  close: () => Promise<void>;
}

/**
 * A server that does what the client needs, as scripted text: stream, SCRAM-SHA-1 (`iterations` asked), resource
 * binding; then hands each IQ to `onIq`. `silent`: accepts connections and never answers.
 */
async function scriptedServer(o: { onIq?: (iq: SentIq) => void; iterations?: number; onChallenge?: () => void; silent?: boolean }): Promise<Scripted> {
  const sockets = new Set<Socket>();
  const state = { connections: 0 };
  const server: Server = createServer((socket) => {
    state.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    if (o.silent === true) return;
    let buf = '';
    let step: 'open' | 'auth' | 'response' | 'reopen' | 'ready' = 'open';
    let firstBare = '';
    let serverFirst = '';
    socket.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (;;) {
        let m: RegExpExecArray | null;
        if (/^\s*<\/stream:stream>/.test(buf)) {
          socket.end('</stream:stream>');
          return;
        }
        if (step === 'open' || step === 'reopen') {
          m = /^(?:<\?xml[^>]*\?>)?<stream:stream[^>]*>/.exec(buf);
          if (m === null) return;
          socket.write(
            STREAM +
              (step === 'open'
                ? `<stream:features><mechanisms xmlns='urn:ietf:params:xml:ns:xmpp-sasl'><mechanism>SCRAM-SHA-1</mechanism></mechanisms></stream:features>`
                : `<stream:features><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'/></stream:features>`),
          );
          step = step === 'open' ? 'auth' : 'ready';
        } else if (step === 'auth') {
          m = /^<auth [^>]*>([^<]*)<\/auth>/.exec(buf);
          if (m === null) return;
          firstBare = unb64(m[1]!).slice(3);
          const nonce = /(?:^|,)r=([^,]*)/.exec(firstBare)![1]!;
          serverFirst = `r=${nonce}server,s=${b64(SALT)},i=${o.iterations ?? 4096}`;
          socket.write(`<challenge xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>${b64(serverFirst)}</challenge>`);
          o.onChallenge?.();
          step = 'response';
        } else if (step === 'response') {
          m = /^<response [^>]*>([^<]*)<\/response>/.exec(buf);
          if (m === null) return;
          const withoutProof = unb64(m[1]!).replace(/,p=[^,]*$/, '');
          const salted = pbkdf2Sync(PASSWORD, SALT, o.iterations ?? 4096, 20, 'sha1');
          const serverKey = createHmac('sha1', salted).update('Server Key').digest();
          const signature = createHmac('sha1', serverKey).update(`${firstBare},${serverFirst},${withoutProof}`).digest();
          socket.write(`<success xmlns='urn:ietf:params:xml:ns:xmpp-sasl'>${b64(`v=${signature.toString('base64')}`)}</success>`);
          step = 'reopen';
        } else {
          m = /^<iq [^>]*?(?:\/>|>[\s\S]*?<\/iq>)/.exec(buf);
          if (m === null) return;
          const stanza = m[0];
          const id = /\sid="([^"]*)"/.exec(stanza)![1]!;
          const to = /\sto="([^"]*)"/.exec(stanza)?.[1];
          const bind = /<resource>([^<]*)<\/resource>/.exec(stanza);
          if (bind !== null) socket.write(`<iq type='result' id='${id}'><bind xmlns='urn:ietf:params:xml:ns:xmpp-bind'><jid>u@${DOMAIN}/${bind[1]!}</jid></bind></iq>`);
          else o.onIq?.({ id, to, xml: stanza, reply: (s) => socket.write(s) });
        }
        buf = buf.slice(m[0].length);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    get connections() {
      return state.connections;
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const account = (port: number) => ({ jid: `u@${DOMAIN}`, password: PASSWORD, host: '127.0.0.1', port, resource: 'r', pingIntervalMs: 0 });

void test('XmppConnection: an IQ answer counts only from the JID asked (RFC 6120 §8.1.2.1); ids are not guessable', async () => {
  const ids: string[] = [];
  const server = await scriptedServer({
    onIq: (iq) => {
      ids.push(iq.id);
      const answer = (from: string | undefined, text: string): string =>
        `<iq type='result' id='${iq.id}'${from === undefined ? '' : ` from='${from}'`}><query xmlns='urn:test'>${text}</query></iq>`;
      if (iq.to === 'pubsub.example.org') {
        // the same id from others, and an error from another resource, come first: ignored
        iq.reply(answer('evil.example.org', 'spoofed'));
        iq.reply(answer(undefined, 'no from'));
        iq.reply(answer('u@example.org', 'from our account'));
        iq.reply(`<iq type='error' id='${iq.id}' from='pubsub.example.org/other'><error type='cancel'><forbidden xmlns='urn:ietf:params:xml:ns:xmpp-stanzas'/></error></iq>`);
        iq.reply(answer('PubSub.Example.org', 'genuine'));
      } else if (iq.to === undefined && iq.xml.includes('own-server')) {
        iq.reply(answer('other@example.org', 'spoofed'));
        iq.reply(answer('u@example.org/elsewhere', 'spoofed'));
        iq.reply(answer('example.org', 'from our server'));
      } else if (iq.to === undefined && iq.xml.includes('own-account')) {
        iq.reply(answer('u@example.org', 'from our account'));
      } else if (iq.to === undefined) {
        iq.reply(answer(undefined, 'no from'));
      } else if (iq.to === 'quiet.example.org') {
        iq.reply(answer(undefined, 'no from'));
        iq.reply(answer('example.org', 'from our server'));
      }
    },
  });
  const c = await XmppConnection.connect({ ...account(server.port), timeoutMs: 1000 });
  try {
    assert.equal(c.jid, `u@${DOMAIN}/r`);
    const text = async (to: string | undefined, name: string): Promise<string> => textOf(element(await c.iq('get', to, xml('query', { xmlns: 'urn:test', name })), 'query')!);
    assert.equal(await text('pubsub.example.org', 'service'), 'genuine');
    assert.equal(await text(undefined, 'own-server'), 'from our server');
    assert.equal(await text(undefined, 'own-account'), 'from our account');
    assert.equal(await text(undefined, 'plain'), 'no from');
    // a service that only our server pretends to answer for: no answer
    await assert.rejects(text('quiet.example.org', 'quiet'), (e: unknown) => isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'timeout');
  } finally {
    await c.close();
    await server.close();
  }
  assert.equal(ids.length, 5);
  assert.equal(new Set(ids).size, ids.length);
  for (const id of ids) assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

void test('XmppConnection: a signal stops a connection under way (a silent server; a key being derived); an aborted one is refused', async () => {
  const silent = await scriptedServer({ silent: true });
  try {
    const controller = new AbortController();
    const started = Date.now();
    const connecting = XmppConnection.connect({ ...account(silent.port), signal: controller.signal });
    while (silent.connections === 0) await new Promise((r) => setTimeout(r, 5));
    controller.abort();
    await assert.rejects(connecting, (e: unknown) => isResourceSyncError(e, 'RS_ABORTED'));
    assert.ok(Date.now() - started < 5000, 'well before the 10 s timeout');
    await assert.rejects(XmppConnection.connect({ ...account(silent.port), signal: AbortSignal.abort() }), (e: unknown) => isResourceSyncError(e, 'RS_ABORTED'));
  } finally {
    await silent.close();
  }
  const controller = new AbortController();
  const slow = await scriptedServer({ iterations: 1_000_000, onChallenge: () => setImmediate(() => controller.abort()) });
  try {
    await assert.rejects(XmppConnection.connect({ ...account(slow.port), signal: controller.signal }), (e: unknown) => isResourceSyncError(e, 'RS_ABORTED'));
  } finally {
    await slow.close();
  }
});

void test('XmppSubscriber: a signal stops a subscription whose request goes unanswered', async () => {
  const requests: string[] = [];
  const server = await scriptedServer({ onIq: (iq) => requests.push(iq.xml) });
  const controller = new AbortController();
  const sub = new XmppSubscriber({ account: account(server.port), service: 'pubsub.example.org', node: 'n', onNotification: () => undefined, signal: controller.signal });
  try {
    const started = Date.now();
    const subscribing = sub.subscribe();
    while (requests.length === 0) await new Promise((r) => setTimeout(r, 5));
    assert.match(requests[0]!, /<subscribe node="n" jid="u@example.org\/r"\/>/);
    controller.abort();
    await assert.rejects(subscribing, (e: unknown) => isResourceSyncError(e, 'RS_ABORTED'));
    assert.ok(Date.now() - started < 5000, 'well before the 10 s timeout');
    assert.equal(sub.subscribed, false);
  } finally {
    await sub.close();
    await server.close();
  }
});
