/**
 * The publisher side: sends a notification to a hub as the ResourceSync "fat ping", a POST of the
 * payload with `Link: <topic>; rel="self", <hub>; rel="hub"` (and the Capability List as
 * rel="resourcesync"). `send` is `fetch` for a hub elsewhere or an embedded hub's `handle`.
 * @see Change Notification §4.1, Framework Notification §4.1
 */
import { ResourceSyncError } from '../core/errors.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { writeDocumentString } from '../core/xml/write-document.js';
import { discardBody } from './body.js';

/** One notification to publish on a channel. */
export interface Notification {
  hub: string;
  topic: string;
  /** The Capability List of the set (Link rel="resourcesync"). */
  capabilityList?: string;
  payload: ResourceSyncDocument | Uint8Array;
}

/** How requests reach the hub. */
export type SendRequest = (request: Request) => Promise<Response>;

/**
 * Publishes one notification; resolves once the hub acknowledged it (2xx).
 * @throws ResourceSyncError RS_HTTP_STATUS when the hub refuses it, RS_NETWORK when it cannot be reached
 * @example await publishNotification({ hub, topic, payload: changeNotification({ ... }) });
 */
export async function publishNotification(n: Notification, send: SendRequest = (r) => fetch(r)): Promise<void> {
  const body = n.payload instanceof Uint8Array ? n.payload : Buffer.from(writeDocumentString(n.payload));
  const link = [
    `<${n.topic}>; rel="self"`,
    `<${n.hub}>; rel="hub"`,
    ...(n.capabilityList ? [`<${n.capabilityList}>; rel="resourcesync"`] : []),
  ].join(', ');
  let res: Response;
  try {
    res = await send(
      new Request(n.hub, {
        method: 'POST',
        headers: { 'content-type': 'application/xml', link },
        body,
        redirect: 'manual',
        signal: AbortSignal.timeout(10_000),
      }),
    );
  } catch (cause) {
    throw new ResourceSyncError('RS_NETWORK', `Hub '${n.hub}' could not be reached.`, {
      data: { url: n.hub },
      cause,
      recoverable: true,
    });
  }
  await discardBody(res);
  if (res.status < 200 || res.status > 299) {
    throw new ResourceSyncError(
      'RS_HTTP_STATUS',
      `Hub '${n.hub}' answered ${res.status} to a notification on '${n.topic}'.`,
      {
        data: { url: n.hub, actual: res.status },
        recoverable: true,
      },
    );
  }
}
