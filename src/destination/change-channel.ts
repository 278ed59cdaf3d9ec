/**
 * The change channel a Capability List advertises (its `change-notification` entry: the topic, a WebSub hub and/or an
 * XMPP PubSub node), read through the Destination's HTTP client like every other document of the Source: its
 * authority check, credentials and pace, a size limit, and a deadline for the whole read.
 * @see Change Notification §4 (Example 7: the channel in a Capability List); Z39.99 §5.2 (the Destination's authority)
 */
import { ResourceSyncError, isResourceSyncError } from '../core/errors.js';
import { readDocument } from '../core/xml/read-document.js';
import { parseXmppPubsubUri } from '../core/xmpp-uri.js';
import type { Authority } from '../client/authority.js';
import type { HttpGet } from '../client/http.js';

/** A Source's change channel. */
export interface ChangeChannel {
  /** The topic (the channel entry's `loc`). */
  topic: string;
  /** The WebSub hub: the first http(s) `rel="hub"` that the authority allows. */
  hub?: string;
  /** A `rel="hub"` that the authority does not allow (another origin not named by `--allow-origin`): not contacted. */
  refusedHub?: string;
  /** The XMPP PubSub node (an `rs:ln` whose href is an `xmpp:…?pubsub;…;node=…` URI). */
  xmpp?: { service: string; node: string };
}

/** What {@link readChangeChannel} reads with. */
export interface ChangeChannelContext {
  http: HttpGet;
  authority: Authority;
  signal?: AbortSignal;
  /** Deadline for the whole read (headers and body), ms. Default 30,000. */
  deadlineMs?: number;
}

/** A Capability List is small: its size and entry limits. */
const CHANNEL_LIMITS = { maxBytes: 1024 * 1024, maxEntries: 1000 };

/**
 * Reads the change channel of a Capability List; undefined when it advertises none or does not answer 200.
 * @throws ResourceSyncError RS_AUTHORITY (the Capability List itself is off the authority), RS_LIMIT_* (too large),
 *   RS_HTTP_TIMEOUT (the whole read took longer than `deadlineMs`), RS_ABORTED (`signal`), RS_NETWORK, RS_XML_*
 * @example
 * const ch = await readChangeChannel({ http, authority }, 'http://127.0.0.1:8080/capabilitylist.xml');
 * if (ch?.hub !== undefined) await new Subscriber({ hub: ch.hub, topic: ch.topic, callbackUrl, onNotification }).subscribe();
 */
export async function readChangeChannel(
  ctx: ChangeChannelContext,
  capabilityList: string,
): Promise<ChangeChannel | undefined> {
  ctx.authority.check(capabilityList);
  const deadlineMs = ctx.deadlineMs ?? 30_000;
  const stop = new AbortController(); // ends the read: the deadline, the caller's signal, or an early return
  const timer = setTimeout(() => stop.abort(new ResourceSyncError('RS_HTTP_TIMEOUT', 'deadline')), deadlineMs);
  const onAbort = (): void => stop.abort();
  ctx.signal?.addEventListener('abort', onAbort, { once: true });
  if (ctx.signal?.aborted === true) stop.abort();
  try {
    const res = await ctx.http(capabilityList, { signal: stop.signal });
    if (res.status !== 200) {
      await res.discard();
      return undefined;
    }
    const reader = await readDocument(res.body, { limits: CHANNEL_LIMITS, signal: stop.signal });
    for await (const e of reader.entries) {
      const cap = e.md?.capability;
      if (cap !== 'change-notification' && cap !== 'changelist-notification') continue;
      const hubs = (e.ln ?? []).filter((l) => l.rel === 'hub' && /^https?:/i.test(l.href ?? '')).map((l) => l.href!);
      const hub = hubs.find((h) => ctx.authority.allows(h));
      const refused = hub === undefined ? hubs[0] : undefined;
      const xmpp = e.ln?.map((l) => parseXmppPubsubUri(l.href ?? '')).find((x) => x !== undefined);
      if (hubs.length > 0 || xmpp !== undefined) {
        return {
          topic: e.loc,
          ...(hub === undefined ? {} : { hub }),
          ...(refused === undefined ? {} : { refusedHub: refused }),
          ...(xmpp === undefined ? {} : { xmpp }),
        };
      }
    }
    return undefined;
  } catch (e) {
    if (
      stop.signal.reason instanceof ResourceSyncError &&
      ctx.signal?.aborted !== true &&
      (isResourceSyncError(e, 'RS_ABORTED') || stop.signal.aborted)
    ) {
      throw new ResourceSyncError(
        'RS_HTTP_TIMEOUT',
        `Capability List '${capabilityList}' was not read within ${deadlineMs} ms.`,
        {
          data: { url: capabilityList, deadlineMs },
          cause: e,
          recoverable: true,
        },
      );
    }
    throw e;
  } finally {
    clearTimeout(timer);
    ctx.signal?.removeEventListener('abort', onAbort);
    stop.abort(); // an unread rest of the body: the connection is dropped
  }
}
