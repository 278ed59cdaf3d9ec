/**
 * The ResourceSync Source server: a web-standard handler over a fast core, a `node:http` adapter and a
 * directory watcher that re-publishes on change.
 * @example
 * import { createSourceCore, serve, watchSources } from 'resourcesync/server';
 * const core = createSourceCore({ sets: [{ name: 'data', dir: 'data' }], outDir: 'data/.resourcesync/publish' });
 * const running = await serve(core, { port: 8080 });
 * @see Z39.99 §6.3 (discovery)
 */
export { createSourceCore, type SourceCore, type SourceServerOptions, type SourceSet } from './source-responder.js';
export type { CoreBody, CoreHandler, CoreRequest, CoreResponse } from './request-response.js';
export { createSourceHandler, toWebHandler, toWebResponse, type SourceHandler } from './handler.js';
export { serve, type RunningServer, type ServeOptions } from './node-adapter.js';
export { watchSources, type SourceWatcher, type WatchOptions, type WatchAction } from './watch.js';
export { parseTarget, type ParsedTarget } from './target.js';
export {
  acceptsEncoding,
  evaluatePreconditions,
  ifRangeHolds,
  isCompressible,
  parseRange,
  type ByteRange,
  type ConditionalHeaders,
  type Precondition,
} from './http-semantics.js';
