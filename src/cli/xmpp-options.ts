/**
 * `--xmpp URI` of `serve` and `sync --follow`: the account (and for a Destination, optionally the node) from
 * the URI, the password from the environment, never from the command line.
 */
import { parseXmppAccountUri } from '../core/xmpp-uri.js';
import type { XmppAccount } from '../notify/xmpp-pubsub.js';
import { messageOf } from '../core/errors.js';

/** The environment variable that holds the password of the `--xmpp` account. */
export const XMPP_PASSWORD_ENV = 'RESOURCESYNC_XMPP_PASSWORD';

/** What `--xmpp` names. */
export interface XmppArgs {
  account: XmppAccount;
  /** The PubSub service (the URI's path). */
  service: string | undefined;
  /** The node (the `node` parameter). */
  node: string | undefined;
}

/**
 * Reads `--xmpp`: the account, service and node, with the password from {@link XMPP_PASSWORD_ENV}; or the
 * problem, as a sentence for a usage error. A Source must name the PubSub service and no node (the nodes are
 * the channels' topic URIs); a Destination names both, or neither (then it follows the node the Source advertises).
 */
export function xmppAccount(uri: string, side: 'source', env?: NodeJS.ProcessEnv): (XmppArgs & { service: string }) | string;
export function xmppAccount(uri: string, side: 'destination', env?: NodeJS.ProcessEnv): XmppArgs | string;
export function xmppAccount(uri: string, side: 'source' | 'destination', env: NodeJS.ProcessEnv = process.env): XmppArgs | string {
  let u;
  try {
    u = parseXmppAccountUri(uri);
  } catch (e) {
    return `--xmpp: ${messageOf(e)}`;
  }
  if (side === 'source' && u.service === undefined) return `--xmpp '${uri}' names no PubSub service: xmpp://user@domain[:port]/pubsub.domain.`;
  if (side === 'source' && u.node !== undefined) return `--xmpp: a Source names no node (each channel's node is its topic URI).`;
  if (side === 'destination' && u.service !== undefined && u.node === undefined) {
    return `--xmpp '${uri}' names a PubSub service but no node: name both (xmpp://user@domain/SERVICE?node=NODE), or neither to follow the node the Source advertises.`;
  }
  const password = env[XMPP_PASSWORD_ENV];
  if (password === undefined || password === '') return `--xmpp needs the password of '${u.jid}' in the environment variable ${XMPP_PASSWORD_ENV}.`;
  return { account: { jid: u.jid, password, host: u.host, port: u.port }, service: u.service, node: u.node };
}
