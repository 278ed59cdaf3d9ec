/**
 * Push over XMPP Publish-Subscribe (XEP-0060), beside WebSub: a Source publishes each notification document
 * as the payload of an item on a node (one node per channel, created with the open access model when
 * missing), and a Destination subscribes its full JID to the node and hands each item's payload on as bytes,
 * as the WebSub subscriber does with a delivery.
 * @see XEP-0060 §6.1 (subscribe), §6.2 (unsubscribe), §7.1 (publish), §7.1.2 (event notifications), §8.1 (create);
 *   ResourceSync 2012 alpha draft §5.2.1 (XMPP)
 */
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { LIMITS } from '../core/constants.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { writeDocumentString } from '../core/xml/write-document.js';
import { XmlReader } from '../core/xml/xml-reader.js';
import { XmppConnection, type XmppConnectOptions } from './xmpp-client.js';
import { attr, element, elementDocument, elements, raw, xml, type Raw, type XmppElement } from './xmpp-xml.js';

const NS_PUBSUB = 'http://jabber.org/protocol/pubsub';
const NS_PUBSUB_EVENT = 'http://jabber.org/protocol/pubsub#event';
const NS_PUBSUB_OWNER = 'http://jabber.org/protocol/pubsub#owner';
const NS_DATA = 'jabber:x:data';

/**
 * Largest payload a Source publishes in one item by default (bytes, as written): XMPP servers limit the stanzas
 * they accept (Prosody to 256 KiB by default, some servers to 64 KiB), and the item must fit with its wrapping.
 */
export const XMPP_MAX_PAYLOAD_BYTES = 60 * 1024;

/** The account and server of an XMPP client: see {@link XmppConnectOptions}. */
export type XmppAccount = Omit<XmppConnectOptions, 'onMessage' | 'onEvent' | 'signal'>;

/**
 * Publishes an item with `payload` (one element, as well-formed XML text) to a node; resolves with the item's id.
 * @throws ResourceSyncError RS_XMPP (`item-not-found` when the node does not exist, `forbidden`…)
 * @see XEP-0060 §7.1.1
 */
export async function publishItem(c: XmppConnection, service: string, node: string, payload: Raw): Promise<string | undefined> {
  const result = await c.iq('set', service, xml('pubsub', { xmlns: NS_PUBSUB }, xml('publish', { node }, xml('item', {}, payload))));
  const item = element(element(element(result, 'pubsub', NS_PUBSUB) ?? result, 'publish', NS_PUBSUB) ?? result, 'item', NS_PUBSUB);
  return item === undefined ? undefined : attr(item, 'id');
}

/**
 * Creates a node with the open access model (anyone may subscribe).
 * @see XEP-0060 §8.1.3 (create and configure), §4.5 (access models)
 */
export async function createNode(c: XmppConnection, service: string, node: string): Promise<void> {
  const field = (v: string, value: string, type?: string): Raw => xml('field', { var: v, type }, xml('value', {}, value));
  await c.iq(
    'set',
    service,
    xml(
      'pubsub',
      { xmlns: NS_PUBSUB },
      xml('create', { node }),
      xml(
        'configure',
        {},
        xml(
          'x',
          { xmlns: NS_DATA, type: 'submit' },
          field('FORM_TYPE', 'http://jabber.org/protocol/pubsub#node_config', 'hidden'),
          field('pubsub#access_model', 'open'),
        ),
      ),
    ),
  );
}

/**
 * Subscribes the connection's full JID to a node; resolves with the subscription id, when the service gives one.
 * @throws ResourceSyncError RS_XMPP (`item-not-found`, `not-authorized`…, or `pending` when the owner must approve)
 * @see XEP-0060 §6.1
 */
export async function subscribeNode(c: XmppConnection, service: string, node: string): Promise<string | undefined> {
  const result = await c.iq('set', service, xml('pubsub', { xmlns: NS_PUBSUB }, xml('subscribe', { node, jid: c.jid })));
  const sub = element(element(result, 'pubsub', NS_PUBSUB) ?? result, 'subscription', NS_PUBSUB);
  const state = sub === undefined ? 'subscribed' : (attr(sub, 'subscription') ?? 'subscribed');
  if (state !== 'subscribed') {
    throw new ResourceSyncError('RS_XMPP', `The subscription to node '${node}' at ${service} is ${state}, not active.`, { data: { condition: state }, recoverable: true });
  }
  return sub === undefined ? undefined : attr(sub, 'subid');
}

/** Ends the connection's subscription to a node. @see XEP-0060 §6.2 */
export async function unsubscribeNode(c: XmppConnection, service: string, node: string, subid?: string): Promise<void> {
  await c.iq('set', service, xml('pubsub', { xmlns: NS_PUBSUB }, xml('unsubscribe', { node, jid: c.jid, subid })));
}

/**
 * The subscriptions to a node, as its owner sees them.
 * @see XEP-0060 §8.8.1
 */
export async function nodeSubscriptions(c: XmppConnection, service: string, node: string): Promise<{ jid: string; subscription: string }[]> {
  const result = await c.iq('get', service, xml('pubsub', { xmlns: NS_PUBSUB_OWNER }, xml('subscriptions', { node })));
  const subs = element(element(result, 'pubsub', NS_PUBSUB_OWNER) ?? result, 'subscriptions', NS_PUBSUB_OWNER);
  return (subs === undefined ? [] : elements(subs, 'subscription', NS_PUBSUB_OWNER)).map((s) => ({
    jid: attr(s, 'jid') ?? '',
    subscription: attr(s, 'subscription') ?? '',
  }));
}

/**
 * The payloads of the items an event notification from `service` about `node` carries (the first element
 * of each item); none for any other message.
 * @see XEP-0060 §7.1.2.1
 */
export function eventPayloads(message: XmppElement, service: string, node: string): XmppElement[] {
  if ((attr(message, 'from') ?? '').toLowerCase() !== service.toLowerCase()) return [];
  const out: XmppElement[] = [];
  for (const event of elements(message, 'event', NS_PUBSUB_EVENT)) {
    for (const items of elements(event, 'items', NS_PUBSUB_EVENT)) {
      if (attr(items, 'node') !== node) continue;
      for (const item of elements(items, 'item', NS_PUBSUB_EVENT)) {
        const payload = elements(item)[0];
        if (payload !== undefined) out.push(payload);
      }
    }
  }
  return out;
}

/** Whether an event notification says that the subscription ended (the node was deleted or the subscription removed). */
function subscriptionEnded(message: XmppElement, service: string, node: string): boolean {
  if ((attr(message, 'from') ?? '').toLowerCase() !== service.toLowerCase()) return false;
  return elements(message, 'event', NS_PUBSUB_EVENT).some(
    (event) =>
      elements(event, 'delete', NS_PUBSUB_EVENT).some((d) => attr(d, 'node') === node) ||
      elements(event, 'subscription', NS_PUBSUB_EVENT).some((s) => attr(s, 'node') === node && attr(s, 'subscription') === 'none'),
  );
}

/**
 * The markup of one payload element from a whole XML document: the XML declaration goes, the document is checked
 * to be well-formed with the project's reader (no DTD, one root).
 * @throws ResourceSyncError RS_XML_* when it is not well-formed XML
 */
export function payloadMarkup(document: string): Raw {
  const text = document.replace(/^\uFEFF/, '').replace(/^<\?xml\s[^?]*\?>/, '');
  const reader = new XmlReader(
    { wantsWhitespace: false, start: () => undefined, end: () => undefined, text: () => undefined },
    { maxDepth: LIMITS.maxDepth, maxValueLength: LIMITS.maxValueLength, maxAttributes: LIMITS.maxAttributes },
  );
  reader.feed(text);
  reader.end();
  return raw(text.trim());
}

/**
 * A notification document as payloads of at most `maxBytes` each. A Change Notification too large for one is
 * split into several with contiguous windows (`[from, until]`, then `[until, until]`), as a Source splits one of
 * more than 50,000 changes; any other document by its entries, the header repeated.
 * @see Change Notification §3
 */
export function notificationPayloads(doc: ResourceSyncDocument, maxBytes: number): string[] {
  const whole = writeDocumentString(doc);
  if (Buffer.byteLength(whole) <= maxBytes || doc.entries.length <= 1) return [whole];
  const half = Math.ceil(doc.entries.length / 2);
  const until = doc.md?.from === undefined ? undefined : doc.md.until;
  const first: ResourceSyncDocument = { ...doc, entries: doc.entries.slice(0, half) };
  const rest: ResourceSyncDocument = { ...doc, ...(until === undefined ? {} : { md: { ...doc.md, from: until } }), entries: doc.entries.slice(half) };
  return [...notificationPayloads(first, maxBytes), ...notificationPayloads(rest, maxBytes)];
}

/** Options of {@link XmppPublisher}. */
export interface XmppPublisherOptions {
  account: XmppAccount;
  /** The PubSub service (e.g. `pubsub.example.org`). */
  service: string;
  /** Largest payload of one item (bytes). Default {@link XMPP_MAX_PAYLOAD_BYTES}. */
  maxPayloadBytes?: number;
  /**
   * A lost or failed connection is made again in the background after this long (ms), then after twice as long…
   * (at most a minute); meanwhile publications fail at once (the notifications are lost: Destinations find the
   * gap and read the Change List). Default 1,000.
   */
  retryMs?: number;
  /** What happened: connections, nodes created. */
  onEvent?: (e: XmppPublisherEvent) => void;
}

/** Events of an {@link XmppPublisher}. */
export type XmppPublisherEvent =
  | { type: 'connected'; jid: string; secure: boolean }
  | { type: 'disconnected'; error?: Error }
  | { type: 'node-created'; node: string };

/**
 * The Source's side: publishes notification documents to nodes of one PubSub service, in the order asked,
 * over one connection made at the first publication (or {@link XmppPublisher.connect}) and again, in the
 * background, after it was lost. A node that does not exist is
 * created (open access model) and the item published again.
 * @example
 * const p = new XmppPublisher({ account: { jid: 'source@example.org', password }, service: 'pubsub.example.org' });
 * await p.publish(changeTopic, changeNotification({ from, until, entries }));
 * await p.close();
 */
export class XmppPublisher {
  readonly #o: XmppPublisherOptions;
  #connection: Promise<XmppConnection> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelay: number;
  /** Nodes known to exist (published to, or created). */
  readonly #nodes = new Set<string>();
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: XmppPublisherOptions) {
    this.#o = options;
    this.#retryDelay = Math.max(1, options.retryMs ?? 1000);
  }

  /**
   * Publishes a notification (a document, or its XML bytes) to `node`, after those asked before; resolves once the
   * service has stored every item (a document too large for one item is split).
   * @throws ResourceSyncError RS_XMPP, RS_NETWORK (the publication is not retried)
   */
  publish(node: string, payload: ResourceSyncDocument | Uint8Array): Promise<void> {
    let markups: Raw[];
    try {
      const texts = payload instanceof Uint8Array ? [new TextDecoder('utf-8', { fatal: true }).decode(payload)] : notificationPayloads(payload, this.#o.maxPayloadBytes ?? XMPP_MAX_PAYLOAD_BYTES);
      markups = texts.map(payloadMarkup);
    } catch (e) {
      return Promise.reject(isResourceSyncError(e) ? e : new ResourceSyncError('RS_XML_ENCODING', 'A notification to publish is not UTF-8.', { cause: e }));
    }
    const run = this.#queue.then(async () => {
      for (const m of markups) await this.#publishOne(node, m);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Makes sure a node exists (creating it, open to subscribers, when it does not), after the publications asked
   * before, so that Destinations can subscribe before the first notification; once per node.
   * @throws ResourceSyncError RS_XMPP, RS_NETWORK
   */
  ensureNode(node: string): Promise<void> {
    if (this.#nodes.has(node)) return Promise.resolve();
    const run = this.#queue.then(async () => {
      if (this.#nodes.has(node)) return;
      await this.#createNode(await this.#connect(), node);
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Connects now (publications connect when needed anyway), to learn early whether the account and server work.
   * @throws ResourceSyncError RS_NETWORK, RS_XMPP (e.g. `not-authorized`)
   */
  async connect(): Promise<void> {
    await this.#connect();
  }

  /** Waits for the publications asked, then ends the connection. */
  async close(): Promise<void> {
    await this.#queue;
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    const c = await this.#connection?.catch(() => undefined);
    await c?.close();
  }

  async #publishOne(node: string, payload: Raw): Promise<void> {
    const c = await this.#connect();
    try {
      await publishItem(c, this.#o.service, node, payload);
      this.#nodes.add(node);
    } catch (e) {
      if (isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'forbidden') {
        throw new ResourceSyncError(
          'RS_XMPP',
          `'${this.#o.account.jid}' may not publish to node '${node}' at ${this.#o.service} (forbidden): it must own the node, or be allowed to create nodes there.`,
          { data: { condition: 'forbidden', node }, cause: e, recoverable: true },
        );
      }
      if (!isResourceSyncError(e, 'RS_XMPP') || e.data.condition !== 'item-not-found') throw e;
      await this.#createNode(c, node);
      await publishItem(c, this.#o.service, node, payload);
    }
  }

  /**
   * Creates a node (open access model) and remembers it; one that exists already (`conflict`: created meanwhile, by
   * another publisher or an earlier attempt whose answer was lost) counts as created.
   * @throws ResourceSyncError RS_XMPP (`data.node`, and the condition of the refusal), RS_NETWORK
   * @see XEP-0060 §8.1 (create a node; `conflict` when the NodeID exists)
   */
  async #createNode(c: XmppConnection, node: string): Promise<void> {
    try {
      await createNode(c, this.#o.service, node);
      this.#o.onEvent?.({ type: 'node-created', node });
    } catch (e) {
      if (!isResourceSyncError(e, 'RS_XMPP') || e.data.condition !== 'conflict') throw this.#cannotCreate(node, e);
    }
    this.#nodes.add(node);
  }

  #cannotCreate(node: string, cause: unknown): ResourceSyncError {
    return new ResourceSyncError(
      'RS_XMPP',
      `Node '${node}' does not exist at ${this.#o.service} and '${this.#o.account.jid}' could not create it: ${cause instanceof Error ? cause.message : String(cause)}`,
      { data: { condition: isResourceSyncError(cause) ? cause.data.condition : 'undefined-condition', node }, cause, recoverable: true },
    );
  }

  #connect(): Promise<XmppConnection> {
    if (this.#closed) return Promise.reject(new ResourceSyncError('RS_ABORTED', 'The XMPP publisher is closed.'));
    if (this.#connection !== undefined) return this.#connection;
    if (this.#retryTimer !== undefined) {
      return Promise.reject(new ResourceSyncError('RS_XMPP', 'Not connected to the XMPP server (connecting again in the background).', { data: { condition: 'disconnected' }, recoverable: true }));
    }
    return this.#attempt();
  }

  #attempt(): Promise<XmppConnection> {
    let established = false;
    const attempt = XmppConnection.connect({
      ...this.#o.account,
      onEvent: (e) => {
        if (e.type !== 'closed' || !established || this.#connection !== attempt) return;
        this.#connection = undefined;
        if (this.#closed) return;
        this.#o.onEvent?.({ type: 'disconnected', ...(e.error === undefined ? {} : { error: e.error }) });
        this.#retryLater();
      },
    });
    this.#connection = attempt;
    attempt.then(
      (c) => {
        established = true;
        this.#retryDelay = Math.max(1, this.#o.retryMs ?? 1000);
        this.#o.onEvent?.({ type: 'connected', jid: c.jid, secure: c.secure });
      },
      () => {
        if (this.#connection === attempt) this.#connection = undefined;
        this.#retryLater();
      },
    );
    return attempt;
  }

  /** Connects again in the background, after 1 s, 2 s, 4 s… (at most a minute). */
  #retryLater(): void {
    if (this.#closed || this.#retryTimer !== undefined) return;
    const delay = this.#retryDelay;
    this.#retryDelay = Math.min(60_000, delay * 2);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      if (!this.#closed && this.#connection === undefined) this.#attempt().catch(() => undefined);
    }, delay);
    this.#retryTimer.unref();
  }

}

/** Options of {@link XmppSubscriber}. */
export interface XmppSubscriberOptions {
  account: XmppAccount;
  service: string;
  node: string;
  /** Each item's payload as an XML document (UTF-8 bytes). */
  onNotification: (bytes: Uint8Array) => void;
  onEvent?: (e: XmppSubscriberEvent) => void;
  /** Stops {@link XmppSubscriber.subscribe} while it is under way, connecting or subscribing (it rejects with RS_ABORTED). */
  signal?: AbortSignal;
}

/** Events of an {@link XmppSubscriber}. */
export type XmppSubscriberEvent =
  | { type: 'subscribed'; jid: string; secure: boolean }
  /** The connection was lost or the subscription ended: nothing arrives until {@link XmppSubscriber.subscribe} again. */
  | { type: 'lost'; error?: Error }
  /** A stanza larger than the limit was dropped (a notification may have been lost with it). */
  | { type: 'oversized'; bytes: number };

/**
 * The Destination's side: one subscription of a full JID to one node, over a connection of its own.
 * @example
 * const s = new XmppSubscriber({ account, service: 'pubsub.example.org', node, onNotification: (b) => void follower.receive(b) });
 * await s.subscribe();
 * // …
 * await s.unsubscribe();
 */
export class XmppSubscriber {
  readonly #o: XmppSubscriberOptions;
  #connection: XmppConnection | undefined;
  #subid: string | undefined;
  #active = false;

  constructor(options: XmppSubscriberOptions) {
    this.#o = options;
  }

  /** Whether notifications are arriving: connected and subscribed. */
  get subscribed(): boolean {
    return this.#active;
  }

  /**
   * Connects (unless connected) and subscribes. Call again after a `lost` event.
   * @throws ResourceSyncError RS_NETWORK, RS_XMPP, RS_ABORTED (`signal` aborted)
   */
  async subscribe(): Promise<void> {
    const o = this.#o;
    if (this.#connection?.open !== true) {
      const ref: { c?: XmppConnection } = {};
      ref.c = await XmppConnection.connect({
        ...o.account,
        ...(o.signal === undefined ? {} : { signal: o.signal }),
        onMessage: (m) => {
          if (ref.c === undefined || this.#connection !== ref.c) return;
          for (const p of eventPayloads(m, o.service, o.node)) o.onNotification(Buffer.from(elementDocument(p)));
          if (subscriptionEnded(m, o.service, o.node)) this.#lost(ref.c);
        },
        onEvent: (e) => {
          if (e.type === 'oversized') o.onEvent?.({ type: 'oversized', bytes: e.bytes });
          else if (ref.c !== undefined) this.#lost(ref.c, e.error);
        },
      });
      this.#connection = ref.c;
    }
    const c = this.#connection;
    const stop = (): void => void c.close(); // the request in flight fails with the connection
    o.signal?.addEventListener('abort', stop, { once: true });
    try {
      if (o.signal?.aborted === true) throw new ResourceSyncError('RS_ABORTED', 'Subscribing was aborted.');
      this.#subid = await subscribeNode(c, o.service, o.node);
    } catch (e) {
      await c.close();
      throw o.signal?.aborted === true && !isResourceSyncError(e, 'RS_ABORTED') ? new ResourceSyncError('RS_ABORTED', 'Subscribing was aborted.', { cause: e }) : e;
    } finally {
      o.signal?.removeEventListener('abort', stop);
    }
    this.#active = true;
    o.onEvent?.({ type: 'subscribed', jid: c.jid, secure: c.secure });
  }

  /** Ends the subscription and the connection. */
  async unsubscribe(): Promise<void> {
    const c = this.#connection;
    this.#active = false;
    this.#connection = undefined;
    if (c === undefined || !c.open) return;
    try {
      await unsubscribeNode(c, this.#o.service, this.#o.node, this.#subid);
    } finally {
      await c.close();
    }
  }

  /** Ends the connection without unsubscribing. */
  async close(): Promise<void> {
    const c = this.#connection;
    this.#active = false;
    this.#connection = undefined;
    await c?.close();
  }

  #lost(c: XmppConnection, error?: Error): void {
    if (this.#connection !== c) return;
    this.#connection = undefined;
    const was = this.#active;
    this.#active = false;
    void c.close();
    if (was) this.#o.onEvent?.({ type: 'lost', ...(error === undefined ? {} : { error }) });
  }
}
