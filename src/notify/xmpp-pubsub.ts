/**
 * Push over XMPP Publish-Subscribe (XEP-0060), beside WebSub: a Source publishes each notification document
 * as the payload of an item on a node (one node per channel, created with the open access model when
 * missing: ./xmpp-publisher.ts), and a Destination subscribes its full JID to the node and hands each item's
 * payload on as bytes, as the WebSub subscriber does with a delivery (./xmpp-subscriber.ts). This module holds
 * the PubSub requests and the payloads they carry.
 * @see XEP-0060 §6.1 (subscribe), §6.2 (unsubscribe), §7.1 (publish), §7.1.2 (event notifications), §8.1 (create);
 *   ResourceSync 2012 alpha draft §5.2.1 (XMPP)
 */
import { ResourceSyncError } from '../core/errors.js';
import { LIMITS } from '../core/constants.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { writeDocumentString } from '../core/xml/write-document.js';
import { XmlReader } from '../core/xml/xml-reader.js';
import type { XmppConnection, XmppConnectOptions } from './xmpp-client.js';
import { attr, element, elements, raw, xml, type Raw, type XmppElement } from './xmpp-xml.js';

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

/** Whether an event notification from `service` says that the subscription to `node` ended (the node was deleted or the subscription removed). */
export function subscriptionEnded(message: XmppElement, service: string, node: string): boolean {
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
