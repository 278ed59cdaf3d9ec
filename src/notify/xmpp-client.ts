/**
 * A minimal XMPP client connection (client-to-server): TCP, STARTTLS when the server offers it (required
 * unless the server is on a loopback address), SASL SCRAM-SHA-256, SCRAM-SHA-1 or, over TLS only, PLAIN,
 * resource binding, IQ requests and answers, XEP-0199 pings to notice a dead connection, and the stanzas
 * that arrive, read by ./xmpp-xml.ts with a size limit.
 * @see RFC 6120 (XMPP Core) §4 (streams), §5 (STARTTLS), §6 (SASL), §7 (binding), §8 (stanzas); RFC 5802 (SCRAM);
 *   XEP-0199 (ping)
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions, type TLSSocket } from 'node:tls';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { XMPP_CLIENT_PORT } from '../core/xmpp-uri.js';
import { isLoopbackHost } from './callback-policy.js';
import { NS_SASL, aborted, authenticate, connectSocket, xmppError } from './xmpp-negotiation.js';
import { attr, element, elements, StanzaReader, textOf, xml, type Raw, type XmppElement } from './xmpp-xml.js';

const NS_CLIENT = 'jabber:client';
const NS_STREAM = 'http://etherx.jabber.org/streams';
const NS_TLS = 'urn:ietf:params:xml:ns:xmpp-tls';
const NS_BIND = 'urn:ietf:params:xml:ns:xmpp-bind';
const NS_SESSION = 'urn:ietf:params:xml:ns:xmpp-session';
const NS_STANZAS = 'urn:ietf:params:xml:ns:xmpp-stanzas';
const NS_PING = 'urn:xmpp:ping';

/** Limits and timings of a connection (the defaults). */
export const XMPP_LIMITS = {
  /** Largest stanza kept (about, as XML); a larger one is dropped and reported. */
  maxStanzaBytes: 1024 * 1024,
  /** Connecting, each step of the negotiation, and each IQ request, ms. */
  timeoutMs: 10_000,
  /** Between two pings to the server, ms (0: none). */
  pingIntervalMs: 60_000,
} as const;

/** Options of {@link XmppConnection.connect}. */
export interface XmppConnectOptions {
  /** The bare JID to authenticate as (`user@domain`). */
  jid: string;
  password: string;
  /** Where to connect; default the JID's domain. */
  host?: string;
  /** Default {@link XMPP_CLIENT_PORT} (5222). */
  port?: number;
  /** Resource to bind; default `resourcesync-` and random characters. */
  resource?: string;
  /** TLS options for STARTTLS (e.g. `ca`); the certificate must be valid for the JID's domain. */
  tls?: Pick<ConnectionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'minVersion'>;
  /** Refuse to authenticate without TLS. Default: true, unless `host` is a loopback address or `localhost`. */
  requireTls?: boolean;
  /** Default {@link XMPP_LIMITS}.maxStanzaBytes. */
  maxStanzaBytes?: number;
  /** Default {@link XMPP_LIMITS}.timeoutMs. */
  timeoutMs?: number;
  /** Default {@link XMPP_LIMITS}.pingIntervalMs. */
  pingIntervalMs?: number;
  /** Every `<message>` stanza received once the connection is ready. */
  onMessage?: (message: XmppElement) => void;
  /** What happened to the connection. */
  onEvent?: (e: XmppConnectionEvent) => void;
  /** Stops the connection while it is being made (connect rejects with RS_ABORTED); no effect once it is made. */
  signal?: AbortSignal;
}

/** Events of a connection. */
export type XmppConnectionEvent =
  | { type: 'oversized'; element: string; bytes: number }
  | { type: 'closed'; error?: Error };

type Step = { resolve: (el: XmppElement) => void; reject: (e: Error) => void };

/** Whether two JIDs are the same: the bare part compared without case (RFC 7622 §3.2, §3.3), the resource exactly. */
function sameJid(a: string, b: string): boolean {
  const slashA = a.indexOf('/');
  const slashB = b.indexOf('/');
  const bareA = slashA < 0 ? a : a.slice(0, slashA);
  const bareB = slashB < 0 ? b : b.slice(0, slashB);
  return bareA.toLowerCase() === bareB.toLowerCase() && (slashA < 0 ? '' : a.slice(slashA)) === (slashB < 0 ? '' : b.slice(slashB));
}

function socketError(cause: Error): ResourceSyncError {
  return new ResourceSyncError('RS_NETWORK', `The connection to the XMPP server failed: ${cause.message}`, { cause, recoverable: true });
}

/** The defined condition of an error stanza or stream error, e.g. `item-not-found`. @see RFC 6120 §8.3.3, §4.9.3 */
function errorCondition(el: XmppElement): string {
  const error = el.name.local === 'error' ? el : element(el, 'error');
  const condition = error === undefined ? undefined : elements(error).find((c) => c.name.ns === NS_STANZAS || c.name.ns === 'urn:ietf:params:xml:ns:xmpp-streams');
  return condition?.name.local ?? 'undefined-condition';
}

/**
 * One authenticated XMPP session.
 * @example
 * const c = await XmppConnection.connect({ jid: 'source@example.org', password });
 * const result = await c.iq('get', 'pubsub.example.org', xml('query', { xmlns: 'http://jabber.org/protocol/disco#info' }));
 * await c.close();
 */
export class XmppConnection {
  /** The full JID bound (`user@domain/resource`). */
  jid = '';
  /** Whether the stream is encrypted (STARTTLS). */
  secure = false;
  readonly #options: XmppConnectOptions;
  readonly #domain: string;
  #socket: Socket | TLSSocket;
  #reader: StanzaReader | undefined;
  #step: Step | undefined;
  /** IQ requests sent, by id, with the JID asked (undefined: our own account). */
  #pending = new Map<string, Step & { timer: NodeJS.Timeout; to: string | undefined }>();
  #ready = false;
  #ended = false;
  /** Why the connection ended. */
  #reason: Error | undefined;
  #pingTimer: NodeJS.Timeout | undefined;
  #closeWait: (() => void) | undefined;
  readonly #ended$: Promise<void>;
  #endedResolve!: () => void;

  private constructor(options: XmppConnectOptions, socket: Socket) {
    this.#options = options;
    this.#domain = options.jid.slice(options.jid.indexOf('@') + 1);
    this.#socket = socket;
    this.#ended$ = new Promise((r) => (this.#endedResolve = r));
  }

  /**
   * Connects, secures, authenticates and binds a resource.
   * @throws ResourceSyncError RS_NETWORK (cannot connect), RS_XMPP (negotiation refused: `data.condition`, e.g.
   *   `not-authorized` for wrong credentials, `encryption-required` when TLS is needed and not offered), RS_ABORTED
   */
  static async connect(options: XmppConnectOptions): Promise<XmppConnection> {
    const at = options.jid.indexOf('@');
    if (at <= 0 || at === options.jid.length - 1 || options.jid.includes('/')) throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${options.jid}' is not a bare JID (user@domain).`);
    const host = options.host ?? options.jid.slice(at + 1);
    const port = options.port ?? XMPP_CLIENT_PORT;
    const timeout = options.timeoutMs ?? XMPP_LIMITS.timeoutMs;
    const isAborted = (): boolean => options.signal?.aborted === true;
    if (isAborted()) throw aborted();
    const socket = await connectSocket(host, port, timeout, options.signal);
    const connection = new XmppConnection(options, socket);
    const abort = (): void => connection.#destroy(aborted());
    options.signal?.addEventListener('abort', abort, { once: true });
    try {
      if (isAborted()) abort();
      await connection.#negotiate(host, timeout);
    } catch (e) {
      connection.#destroy(e instanceof Error ? e : new Error(String(e)));
      // aborted: whatever step was under way failed because of it
      if (isAborted() && !(e instanceof ResourceSyncError && e.code === 'RS_ABORTED')) throw aborted(e);
      throw e;
    } finally {
      options.signal?.removeEventListener('abort', abort);
    }
    return connection;
  }

  /** Whether the session is up. */
  get open(): boolean {
    return this.#ready && !this.#ended;
  }

  /** Resolves when the connection has ended, whatever the reason. */
  get ended(): Promise<void> {
    return this.#ended$;
  }

  /**
   * Sends an IQ request and resolves with the result stanza.
   * @throws ResourceSyncError RS_XMPP with the error's `data.condition` (e.g. `item-not-found`, `forbidden`), or
   *   `timeout`, or `disconnected`
   */
  iq(type: 'get' | 'set', to: string | undefined, payload: Raw): Promise<XmppElement> {
    // not guessable: an answer must name the id (and come from `to`) to be taken. @see RFC 6120 §8.1.3, §13.12
    const id = randomUUID();
    const timeout = this.#options.timeoutMs ?? XMPP_LIMITS.timeoutMs;
    return new Promise<XmppElement>((resolve, reject) => {
      if (this.#ended) {
        reject(xmppError('The XMPP connection is closed.', 'disconnected'));
        return;
      }
      const timer = setTimeout(() => {
        this.#pending.delete(id);
        reject(xmppError(`No answer from ${to ?? this.#domain} within ${timeout} ms.`, 'timeout'));
      }, timeout);
      this.#pending.set(id, { timer, resolve, reject, to });
      this.#write(xml('iq', { type, id, to }, payload).xml);
    });
  }

  /** Sends a stanza as it is. */
  send(stanza: Raw): void {
    if (!this.#ended) this.#write(stanza.xml);
  }

  /** Ends the stream and the connection (waits at most a second for the server's own end of stream). */
  async close(): Promise<void> {
    if (this.#ended) return;
    this.#ready = false;
    const answered = new Promise<void>((r) => {
      this.#closeWait = r;
      setTimeout(r, 1000).unref();
    });
    this.#write('</stream:stream>');
    await Promise.race([answered, this.#ended$]);
    this.#destroy();
  }

  async #negotiate(host: string, timeout: number): Promise<void> {
    this.#socket.on('data', (b: Buffer) => this.#data(b));
    this.#socket.on('error', (e: Error) => this.#destroy(socketError(e)));
    this.#socket.on('close', () => this.#lostSocket());
    let features = await this.#restart(timeout);
    // STARTTLS. @see RFC 6120 §5.3
    if (element(features, 'starttls', NS_TLS) !== undefined) {
      this.#write(xml('starttls', { xmlns: NS_TLS }).xml);
      const answer = await this.#next(timeout);
      if (answer.name.local !== 'proceed') throw xmppError(`XMPP server ${host} refused STARTTLS.`, 'tls-failure');
      await this.#startTls(timeout);
      features = await this.#restart(timeout);
    }
    const requireTls = this.#options.requireTls ?? !isLoopbackHost(host);
    if (requireTls && !this.secure) {
      throw xmppError(`XMPP server ${host} does not offer STARTTLS; the password is not sent over an unencrypted connection.`, 'encryption-required');
    }
    // SASL. @see RFC 6120 §6.4
    const offered = elements(element(features, 'mechanisms', NS_SASL) ?? features, 'mechanism', NS_SASL).map(textOf);
    const dialogue = { write: (text: string) => this.#write(text), next: () => this.#next(timeout) };
    await authenticate(dialogue, offered, { jid: this.#options.jid, password: this.#options.password, host, secure: this.secure });
    features = await this.#restart(timeout);
    // Resource binding. @see RFC 6120 §7
    if (element(features, 'bind', NS_BIND) === undefined) throw xmppError(`XMPP server ${host} offers no resource binding.`, 'unsupported-feature');
    this.#ready = true; // IQs go through #pending from here
    const resource = this.#options.resource ?? `resourcesync-${randomBytes(6).toString('hex')}`;
    const bound = await this.iq('set', undefined, xml('bind', { xmlns: NS_BIND }, xml('resource', {}, resource)));
    const jidEl = element(element(bound, 'bind', NS_BIND) ?? bound, 'jid', NS_BIND);
    this.jid = jidEl === undefined ? `${this.#options.jid}/${resource}` : textOf(jidEl);
    // A legacy session establishment, when a server still requires it. @see RFC 3921 §3
    const session = element(features, 'session', NS_SESSION);
    if (session !== undefined && element(session, 'optional', NS_SESSION) === undefined) {
      await this.iq('set', undefined, xml('session', { xmlns: NS_SESSION }));
    }
    this.#schedulePing();
  }

  /** Opens a (new) stream and resolves with the server's features. @see RFC 6120 §4.3 */
  async #restart(timeout: number): Promise<XmppElement> {
    this.#reader = new StanzaReader(
      {
        stanza: (el) => this.#stanza(el),
        oversized: (name, bytes) => this.#options.onEvent?.({ type: 'oversized', element: name.qname, bytes }),
        close: () => {
          if (this.#closeWait !== undefined) this.#closeWait(); // the answer to our own end of stream
          else this.#destroy(xmppError('The XMPP server ended the stream.', 'disconnected'));
        },
      },
      this.#options.maxStanzaBytes ?? XMPP_LIMITS.maxStanzaBytes,
    );
    const features = this.#next(timeout);
    this.#write(
      `<?xml version='1.0'?><stream:stream to="${this.#domain}" version="1.0" xml:lang="en" xmlns="${NS_CLIENT}" xmlns:stream="${NS_STREAM}">`,
    );
    const f = await features;
    if (f.name.local !== 'features' || f.name.ns !== NS_STREAM) throw xmppError(`Expected stream features, got <${f.name.qname}>.`, 'bad-format');
    return f;
  }

  #startTls(timeout: number): Promise<void> {
    if (this.#ended) return Promise.reject(this.#reason ?? xmppError('The XMPP connection is closed.', 'disconnected'));
    const plain = this.#socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    plain.removeAllListeners('error');
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(xmppError('TLS negotiation timed out.', 'tls-failure')), timeout);
      const t = tlsConnect({ ...this.#options.tls, socket: plain, servername: this.#domain });
      this.#socket = t;
      // ended meanwhile (aborted, or the socket closed)
      const closed = (): void => {
        clearTimeout(timer);
        reject(this.#reason ?? xmppError('The connection closed during TLS negotiation.', 'tls-failure'));
      };
      t.once('close', closed);
      t.once('secureConnect', () => {
        clearTimeout(timer);
        t.off('close', closed);
        this.secure = true;
        t.on('data', (b: Buffer) => this.#data(b));
        t.on('close', () => this.#lostSocket());
        t.on('error', (e: Error) => this.#destroy(socketError(e)));
        resolve();
      });
      t.once('error', (cause: Error) => {
        clearTimeout(timer);
        reject(xmppError(`TLS with the XMPP server failed: ${cause.message}`, 'tls-failure', {}, cause));
      });
    });
  }

  /** The next top-level element during negotiation. */
  #next(timeout: number): Promise<XmppElement> {
    return new Promise((resolve, reject) => {
      if (this.#ended) {
        reject(this.#reason ?? xmppError('The XMPP connection is closed.', 'disconnected'));
        return;
      }
      const timer = setTimeout(() => reject(xmppError(`The XMPP server did not answer within ${timeout} ms.`, 'timeout')), timeout);
      this.#step = {
        resolve: (el) => {
          clearTimeout(timer);
          resolve(el);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  #data(bytes: Buffer): void {
    if (this.#ended) return;
    try {
      this.#reader?.write(bytes);
    } catch (e) {
      // a stream that is not well-formed, or past a limit: a stream error ends it. @see RFC 6120 §4.9.3.13
      const condition = e instanceof ResourceSyncError && e.code.startsWith('RS_LIMIT') ? 'policy-violation' : 'not-well-formed';
      this.#write(`<stream:error><${condition} xmlns="urn:ietf:params:xml:ns:xmpp-streams"/></stream:error></stream:stream>`);
      this.#destroy(xmppError(`The XMPP stream was ended: ${messageOf(e)}`, condition, {}, e));
    }
  }

  #stanza(el: XmppElement): void {
    if (el.name.ns === NS_STREAM && el.name.local === 'error') {
      const condition = errorCondition(el);
      this.#destroy(xmppError(`The XMPP server ended the stream with an error (${condition}).`, condition));
      return;
    }
    if (!this.#ready) {
      const step = this.#step;
      this.#step = undefined;
      step?.resolve(el);
      return;
    }
    if (el.name.ns !== NS_CLIENT) return;
    if (el.name.local === 'iq') this.#iq(el);
    else if (el.name.local === 'message') {
      try {
        this.#options.onMessage?.(el);
      } catch (e) {
        setImmediate(() => {
          throw e; // the handler's error, not the stream's: it surfaces as an uncaught exception
        });
      }
    }
  }

  #iq(el: XmppElement): void {
    const type = attr(el, 'type');
    const id = attr(el, 'id') ?? '';
    if (type === 'result' || type === 'error') {
      const p = this.#pending.get(id);
      // only an answer from the entity asked counts; one from anyone else is ignored. @see RFC 6120 §8.1.2.1
      if (p === undefined || !this.#answersFrom(p.to, attr(el, 'from'))) return;
      this.#pending.delete(id);
      clearTimeout(p.timer);
      if (type === 'result') p.resolve(el);
      else {
        const condition = errorCondition(el);
        const text = element(element(el, 'error') ?? el, 'text', NS_STANZAS);
        p.reject(xmppError(`${attr(el, 'from') ?? this.#domain} answered with an error: ${condition}${text === undefined ? '' : ` (${textOf(text)})`}.`, condition, { from: attr(el, 'from') }));
      }
      return;
    }
    // requests to us: answer pings, refuse the rest. @see RFC 6120 §8.2.3, XEP-0199 §4
    const from = attr(el, 'from');
    if (type === 'get' && element(el, 'ping', NS_PING) !== undefined) this.send(xml('iq', { type: 'result', id, to: from }));
    else if (type === 'get' || type === 'set') {
      this.send(
        xml('iq', { type: 'error', id, to: from }, xml('error', { type: 'cancel' }, xml('service-unavailable', { xmlns: NS_STANZAS }))),
      );
    }
  }

  /**
   * Whether an IQ answer from `from` can answer a request sent to `to`: from that JID; for a request to our own
   * account (no `to`, our bare JID) or to our server, also one without `from` (the server's own) or from our bare
   * JID, full JID (before it is bound, when nobody else can reach us yet: any of the account) or server.
   * @see RFC 6120 §8.1.2.1, §10.3.3
   */
  #answersFrom(to: string | undefined, from: string | undefined): boolean {
    const own = (j: string): boolean =>
      sameJid(j, this.#domain) || (this.jid === '' ? sameJid(j.replace(/\/.*$/s, ''), this.#options.jid) : sameJid(j, this.#options.jid) || sameJid(j, this.jid));
    if (to === undefined || own(to)) return from === undefined || (to !== undefined && sameJid(from, to)) || own(from);
    return from !== undefined && sameJid(from, to);
  }

  #schedulePing(): void {
    const every = this.#options.pingIntervalMs ?? XMPP_LIMITS.pingIntervalMs;
    if (every <= 0) return;
    this.#pingTimer = setInterval(() => {
      this.iq('get', this.#domain, xml('ping', { xmlns: NS_PING })).catch((e: unknown) => {
        // a server that does not know pings still answers (with an error): only silence ends the connection
        if (e instanceof ResourceSyncError && e.data.condition === 'timeout') this.#destroy(xmppError('The XMPP server stopped answering.', 'timeout'));
      });
    }, every);
    this.#pingTimer.unref();
  }

  #lostSocket(): void {
    this.#destroy(this.#closeWait === undefined ? xmppError('The XMPP server closed the connection.', 'disconnected') : undefined);
  }

  #write(text: string): void {
    if (!this.#socket.destroyed) this.#socket.write(text);
  }

  #destroy(error?: Error): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#ready = false;
    clearInterval(this.#pingTimer);
    this.#socket.destroy();
    const reason = error ?? xmppError('The XMPP connection was closed.', 'disconnected');
    this.#reason = reason;
    this.#step?.reject(reason);
    this.#step = undefined;
    for (const p of this.#pending.values()) {
      clearTimeout(p.timer);
      p.reject(reason);
    }
    this.#pending.clear();
    this.#options.onEvent?.({ type: 'closed', ...(error === undefined ? {} : { error }) });
    this.#endedResolve();
  }
}
