/**
 * The ResourceSync Source server: a web-standard handler over a fast core, and a `node:http` adapter.
 * @example
 * import { createSourceResponder, serve } from 'resourcesync/server';
 * const core = createSourceResponder({ sets: [{ name: 'data', dir: 'data' }], outDir: 'data/.resourcesync/publish' });
 * const running = await serve(core, { port: 8080 });
 * @see Z39.99 §6.3 (discovery)
 */
export { createSourceResponder, type SourceResponder, type SourceServerOptions, type SourceSet } from './source-responder.js';
export type { ResponderBody, ResponderHandler, ResponderRequest, ResponderResponse } from './request-response.js';
export { createSourceHandler, toWebHandler, toWebResponse, type SourceHandler } from './handler.js';
export { serve, type RunningServer, type ServeOptions } from './node-adapter.js';
