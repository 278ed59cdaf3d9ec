/**
 * XMPP URIs as push uses them: the account URI given to `serve --xmpp` and `sync --follow --xmpp`
 * (`xmpp://user@domain[:port][/service][?server=host&node=name]`), and the URI of a PubSub node that a
 * Capability List advertises beside the WebSub hub (`xmpp:service?pubsub;action=subscribe;node=name`).
 * @see RFC 5122 §2 (XMPP URIs), XEP-0060 §16.4 (the `pubsub` query type), XEP-0147 (query components)
 */
import { ResourceSyncError } from './errors.js';

/** An XMPP account and, optionally, the PubSub service and node to use with it. */
export interface XmppAccountUri {
  /** The bare JID to authenticate as (`user@domain`). */
  jid: string;
  /** Where to connect: the `server` query parameter, or the domain. DNS SRV records are not looked up. */
  host: string;
  /** TCP port; default 5222. */
  port: number;
  /** The PubSub service (a JID such as `pubsub.example.org`), from the URI's path. */
  service?: string;
  /** The PubSub node, from the `node` query parameter. */
  node?: string;
}

/** The port of XMPP client-to-server connections. @see RFC 6120 §14.7 */
export const XMPP_CLIENT_PORT = 5222;

const JID_LOCAL = /^[^\s"&'/:<>@]{1,1023}$/;
const DOMAIN = /^(?:[A-Za-z0-9-]{1,63}\.)*[A-Za-z0-9-]{1,63}$|^\[[0-9A-Fa-f:.]+\]$/;

/**
 * A URI as it may be shown in a message: the password of its user information, and the values of query parameters
 * named like one, replaced by `***`. The user information ends at the last `@` of the authority (RFC 3986 §3.2), or,
 * in text that is not a URI, at the last `@`.
 * @example redactUri('xmpp://source:hunter2@example.org/pubsub.example.org') // 'xmpp://source:***@example.org/pubsub.example.org'
 */
function redactUri(uri: string): string {
  let out = uri;
  const m = /^([A-Za-z][A-Za-z0-9+.-]*:(?:\/\/)?)(.*)$/s.exec(uri);
  if (m !== null) {
    const rest = m[2]!;
    const end = URL.canParse(uri) ? rest.search(/[/?#]|$/) : rest.length;
    const at = end === 0 ? -1 : rest.lastIndexOf('@', end - 1);
    const colon = rest.indexOf(':');
    if (colon >= 0 && colon < at) out = `${m[1]!}${rest.slice(0, colon)}:***${rest.slice(at)}`;
  }
  return out.replace(/([?&;](?:password|passwd|pass|pwd|secret|token)=)[^&;#]*/gi, '$1***');
}

function invalid(uri: string, why: string): never {
  const shown = redactUri(uri);
  throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${shown}' is not an XMPP account URI: ${why}.`, { data: { actual: shown } });
}

/**
 * Reads an account URI: `xmpp://user@domain[:port][/service][?server=host&node=name]`. The password is never
 * part of it (a URI with one is refused, and the error shows the URI without it).
 * @throws ResourceSyncError RS_INVALID_ARGUMENT
 * @example parseXmppAccountUri('xmpp://source@example.org/pubsub.example.org')
 * // { jid: 'source@example.org', host: 'example.org', port: 5222, service: 'pubsub.example.org' }
 */
export function parseXmppAccountUri(uri: string): XmppAccountUri {
  if (!URL.canParse(uri)) invalid(uri, 'expected xmpp://user@domain[:port][/service]');
  const u = new URL(uri);
  if (u.protocol !== 'xmpp:' || !uri.startsWith('xmpp://')) invalid(uri, 'expected xmpp://user@domain[:port][/service]');
  if (u.password !== '') invalid(uri, 'a password does not belong in it (use the environment variable RESOURCESYNC_XMPP_PASSWORD)');
  const local = decodeURIComponent(u.username);
  if (!JID_LOCAL.test(local)) invalid(uri, 'the user (before @) is missing or not a JID localpart');
  const domain = u.hostname.toLowerCase();
  if (!DOMAIN.test(domain)) invalid(uri, `'${u.hostname}' is not a domain`);
  const port = u.port === '' ? XMPP_CLIENT_PORT : Number(u.port);
  const path = decodeURIComponent(u.pathname.replace(/^\/+/, '').replace(/\/+$/, ''));
  if (path !== '' && !DOMAIN.test(path)) invalid(uri, `the path '${path}' is not the JID of a PubSub service`);
  const server = u.searchParams.get('server') ?? undefined;
  if (server !== undefined && !DOMAIN.test(server)) invalid(uri, `server '${server}' is not a host name or address`);
  for (const key of u.searchParams.keys()) if (key !== 'server' && key !== 'node') invalid(uri, `unknown parameter '${key}' (server and node are known)`);
  const node = u.searchParams.get('node') ?? undefined;
  if (node === '') invalid(uri, 'the node is empty');
  if (node !== undefined && path === '') invalid(uri, 'a node needs the PubSub service as the path (xmpp://user@domain/service?node=name)');
  return {
    jid: `${local}@${domain}`,
    host: (server ?? domain).replace(/^\[|\]$/g, ''),
    port,
    ...(path === '' ? {} : { service: path.toLowerCase() }),
    ...(node === undefined ? {} : { node }),
  };
}

/** Percent-encodes a query value, keeping the characters RFC 3986 allows in a query as they are, except `;`, `=`, `&` and `#`. */
function encodeQueryValue(v: string): string {
  return encodeURIComponent(v).replace(/%(2F|3A|40)/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
}

/**
 * The URI of a PubSub node, as a Capability List advertises it for subscription.
 * @see XEP-0060 §16.4, RFC 5122 §2.2
 * @example xmppPubsubUri('pubsub.example.org', 'http://example.org/.resourcesync/data/change-notification/')
 * // 'xmpp:pubsub.example.org?pubsub;action=subscribe;node=http://example.org/.resourcesync/data/change-notification/'
 */
export function xmppPubsubUri(service: string, node: string): string {
  return `xmpp:${service}?pubsub;action=subscribe;node=${encodeQueryValue(node)}`;
}

/**
 * The service and node of a PubSub node URI (`xmpp:service?pubsub;…;node=name`), or undefined when `href` is
 * not one.
 * @example parseXmppPubsubUri('xmpp:pubsub.example.org?pubsub;action=subscribe;node=updates')
 * // { service: 'pubsub.example.org', node: 'updates' }
 */
export function parseXmppPubsubUri(href: string): { service: string; node: string } | undefined {
  const m = /^xmpp:(?:\/\/[^/?#]*\/)?([^/?#]+)\?pubsub((?:;[^;#=]+=[^;#]*)*)$/i.exec(href);
  if (m === null) return undefined;
  let service: string;
  let node: string | undefined;
  try {
    service = decodeURIComponent(m[1]!).toLowerCase();
    for (const pair of m[2]!.split(';').slice(1)) {
      const eq = pair.indexOf('=');
      if (pair.slice(0, eq) === 'node') node = decodeURIComponent(pair.slice(eq + 1));
    }
  } catch {
    return undefined;
  }
  if (!DOMAIN.test(service) || node === undefined || node === '') return undefined;
  return { service, node };
}
