/**
 * The steps of opening an XMPP session that stand on their own: the TCP connection, and the SASL exchange
 * (SCRAM-SHA-256, SCRAM-SHA-1 or, over TLS only, PLAIN) over the negotiation's element-by-element dialogue.
 * The stream, STARTTLS and binding that need the connection's socket stay in ./xmpp-client.ts.
 * @see RFC 6120 (XMPP Core) §6 (SASL); RFC 5802 (SCRAM)
 */
import { connect as netConnect, type Socket } from 'node:net';
import { ResourceSyncError } from '../core/errors.js';
import { Scram, b64, unb64 } from './xmpp-scram.js';
import { elements, textOf, xml, type XmppElement } from './xmpp-xml.js';

export const NS_SASL = 'urn:ietf:params:xml:ns:xmpp-sasl';

/** An `RS_ABORTED` error for a connection stopped while it was being made. */
export function aborted(cause?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_ABORTED', 'Connecting to the XMPP server was aborted.', cause === undefined ? {} : { cause });
}

/** An `RS_XMPP` error (recoverable) with its XMPP condition in `data.condition`. */
export function xmppError(message: string, condition: string, data: Record<string, unknown> = {}, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError('RS_XMPP', message, { data: { condition, ...data }, ...(cause === undefined ? {} : { cause }), recoverable: true });
}

/** A TCP connection to `host:port`, within `timeout` ms; `signal` stops it (RS_ABORTED), a failure is RS_NETWORK. */
export function connectSocket(host: string, port: number, timeout: number, signal: AbortSignal | undefined): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const s = netConnect({ host, port, timeout });
    const onAbort = (): void => {
      s.destroy();
      reject(aborted());
    };
    const fail = (cause: unknown): void => {
      signal?.removeEventListener('abort', onAbort);
      s.destroy();
      reject(new ResourceSyncError('RS_NETWORK', `XMPP server ${host}:${port} could not be reached.`, { data: { url: `xmpp://${host}:${port}` }, cause, recoverable: true }));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    s.once('connect', () => {
      signal?.removeEventListener('abort', onAbort);
      s.setTimeout(0);
      s.off('error', fail);
      resolve(s);
    });
    s.once('timeout', () => fail(new Error('connect timeout')));
    s.once('error', fail);
  });
}

/** The negotiation's dialogue: send some XML, wait for the server's next top-level element. */
export interface NegotiationDialogue {
  write(text: string): void;
  next(): Promise<XmppElement>;
}

/** Who authenticates, and over what. */
export interface SaslAccount {
  /** The bare JID (`user@domain`). */
  jid: string;
  password: string;
  /** The server's name, for messages. */
  host: string;
  /** Whether the stream is encrypted (PLAIN only then). */
  secure: boolean;
}

/**
 * Authenticates with the strongest mechanism both sides know; resolves on `<success>` (for SCRAM, once the server
 * has proved it knows the password).
 * @throws ResourceSyncError RS_XMPP with `data.condition` (`invalid-mechanism`, `not-authorized`, ...)
 * @see RFC 6120 §6.4
 */
export async function authenticate(dialogue: NegotiationDialogue, offered: string[], account: SaslAccount): Promise<void> {
  const { host, jid, password } = account;
  const mechanism = ['SCRAM-SHA-256', 'SCRAM-SHA-1', ...(account.secure ? ['PLAIN'] : [])].find((m) => offered.includes(m));
  if (mechanism === undefined) {
    throw xmppError(`XMPP server ${host} offers no SASL mechanism this client supports (offered: ${offered.join(', ') || 'none'}).`, 'invalid-mechanism');
  }
  const local = jid.slice(0, jid.indexOf('@'));
  let outcome: XmppElement;
  if (mechanism === 'PLAIN') {
    dialogue.write(xml('auth', { xmlns: NS_SASL, mechanism }, Buffer.from(`\0${local}\0${password}`).toString('base64')).xml);
    outcome = await dialogue.next();
  } else {
    outcome = await scramExchange(dialogue, mechanism, local, password, host);
  }
  if (outcome.name.local !== 'success') {
    const condition = elements(outcome).find((c) => c.name.ns === NS_SASL)?.name.local ?? 'not-authorized';
    throw xmppError(`XMPP server ${host} refused to authenticate '${jid}' (${condition}).`, condition, { jid });
  }
}

/** The SCRAM exchange; resolves with the server's last element (`<success>` verified, or a `<failure>`). @see RFC 5802 */
async function scramExchange(dialogue: NegotiationDialogue, mechanism: string, local: string, password: string, host: string): Promise<XmppElement> {
  const scram = new Scram(mechanism === 'SCRAM-SHA-256' ? 'sha256' : 'sha1', local, password);
  dialogue.write(xml('auth', { xmlns: NS_SASL, mechanism }, b64(scram.first())).xml);
  let outcome = await dialogue.next();
  if (outcome.name.local === 'challenge') {
    dialogue.write(xml('response', { xmlns: NS_SASL }, b64(await scram.final(unb64(textOf(outcome))))).xml);
    outcome = await dialogue.next();
  }
  let serverFinal = outcome.name.local === 'success' ? unb64(textOf(outcome)) : '';
  if (outcome.name.local === 'challenge') {
    // the server's final message as a challenge, answered by an empty response. @see RFC 6120 §6.4.6
    serverFinal = unb64(textOf(outcome));
    dialogue.write(xml('response', { xmlns: NS_SASL }).xml);
    outcome = await dialogue.next();
  }
  if (outcome.name.local === 'success' && !scram.verify(serverFinal)) {
    throw xmppError(`XMPP server ${host} could not prove that it knows the password (SCRAM).`, 'not-authorized');
  }
  return outcome;
}
