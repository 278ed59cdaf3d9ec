/**
 * The command line's part of push (`serve`, `build`, `hub`): the environment variable that holds the secret a
 * publisher shows a hub. Push itself (the embedded hub, the topics, the sending) is ../live/push.ts.
 */

/** The environment variable holding the secret a publisher shows the hub (`Authorization: Bearer`). */
export const PUBLISH_SECRET_ENV = 'RESOURCESYNC_HUB_PUBLISH_SECRET';
