/**
 * The Source's side of push over XMPP PubSub: notification documents published as items of one node per channel.
 * @see XEP-0060 §7.1 (publish), §8.1 (create a node); ResourceSync 2012 alpha draft §5.2.1 (XMPP)
 */
import { ResourceSyncError, isResourceSyncError, messageOf } from '../core/errors.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { XmppConnection } from './xmpp-client.js';
import { createNode, notificationPayloads, payloadMarkup, publishItem, XMPP_MAX_PAYLOAD_BYTES, type XmppAccount } from './xmpp-pubsub.js';
import type { Raw } from './xmpp-xml.js';

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
  readonly #options: XmppPublisherOptions;
  #connection: Promise<XmppConnection> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #retryDelay: number;
  /** Nodes known to exist (published to, or created). */
  readonly #nodes = new Set<string>();
  #queue: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: XmppPublisherOptions) {
    this.#options = options;
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
      const texts = payload instanceof Uint8Array ? [new TextDecoder('utf-8', { fatal: true }).decode(payload)] : notificationPayloads(payload, this.#options.maxPayloadBytes ?? XMPP_MAX_PAYLOAD_BYTES);
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
      await publishItem(c, this.#options.service, node, payload);
      this.#nodes.add(node);
    } catch (e) {
      if (isResourceSyncError(e, 'RS_XMPP') && e.data.condition === 'forbidden') {
        throw new ResourceSyncError(
          'RS_XMPP',
          `'${this.#options.account.jid}' may not publish to node '${node}' at ${this.#options.service} (forbidden): it must own the node, or be allowed to create nodes there.`,
          { data: { condition: 'forbidden', node }, cause: e, recoverable: true },
        );
      }
      if (!isResourceSyncError(e, 'RS_XMPP') || e.data.condition !== 'item-not-found') throw e;
      await this.#createNode(c, node);
      await publishItem(c, this.#options.service, node, payload);
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
      await createNode(c, this.#options.service, node);
      this.#options.onEvent?.({ type: 'node-created', node });
    } catch (e) {
      if (!isResourceSyncError(e, 'RS_XMPP') || e.data.condition !== 'conflict') throw this.#cannotCreate(node, e);
    }
    this.#nodes.add(node);
  }

  #cannotCreate(node: string, cause: unknown): ResourceSyncError {
    return new ResourceSyncError(
      'RS_XMPP',
      `Node '${node}' does not exist at ${this.#options.service} and '${this.#options.account.jid}' could not create it: ${messageOf(cause)}`,
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
      ...this.#options.account,
      onEvent: (e) => {
        if (e.type !== 'closed' || !established || this.#connection !== attempt) return;
        this.#connection = undefined;
        if (this.#closed) return;
        this.#options.onEvent?.({ type: 'disconnected', ...(e.error === undefined ? {} : { error: e.error }) });
        this.#retryLater();
      },
    });
    this.#connection = attempt;
    attempt.then(
      (c) => {
        established = true;
        this.#retryDelay = Math.max(1, this.#options.retryMs ?? 1000);
        this.#options.onEvent?.({ type: 'connected', jid: c.jid, secure: c.secure });
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
