/**
 * The Destination's side of push over XMPP PubSub: one subscription to a channel's node, each item's payload handed
 * on as the bytes of a notification.
 * @see XEP-0060 §6.1 (subscribe), §6.2 (unsubscribe), §7.1.2 (event notifications)
 */
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { XmppConnection } from './xmpp-client.js';
import { eventPayloads, subscribeNode, subscriptionEnded, unsubscribeNode, type XmppAccount } from './xmpp-pubsub.js';
import { elementDocument } from './xmpp-xml.js';

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
  readonly #options: XmppSubscriberOptions;
  #connection: XmppConnection | undefined;
  #subid: string | undefined;
  #active = false;

  constructor(options: XmppSubscriberOptions) {
    this.#options = options;
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
    const o = this.#options;
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
      await unsubscribeNode(c, this.#options.service, this.#options.node, this.#subid);
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
    if (was) this.#options.onEvent?.({ type: 'lost', ...(error === undefined ? {} : { error }) });
  }
}
