/**
 * A live ResourceSync Source in one call: publish directories, watch them, serve them with discovery, and push
 * Change and Framework Notifications (WebSub, XMPP); what `resourcesync serve` runs.
 * @example
 * import { createLiveSource } from 'resourcesync/live';
 * const source = await createLiveSource({ sets: [{ name: 'data', dir: 'data' }], port: 8080, push: {}, explorer: true });
 * await source.ready();
 * @see Z39.99 §6.3 (discovery), §12 (Change List); Change Notification §4
 */
export {
  createLiveSource,
  type LivePublishOptions,
  type LivePushOptions,
  type LiveSource,
  type LiveSourceEvent,
  type LiveSourceOptions,
  type LiveSet,
  type LiveFeedSet,
} from './live-source.js';
export type { PushEvent } from './push.js';
