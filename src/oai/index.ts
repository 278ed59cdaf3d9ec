/**
 * An OAI-PMH 2.0 repository as a ResourceSync Source: a streaming OAI-PMH client (the six verbs, resumption
 * tokens, `503 Retry-After`), a bridge that harvests each record in each chosen metadata format into a file the
 * Source serves, and the Source over it, once (like `build`) or as a service (like `serve`).
 * @example
 * import { startOaiSource } from 'resourcesync/oai';
 * const source = await startOaiSource({ repository: 'https://repo.example/oai', folder: './oai', port: 8080 });
 * @see Z39.99 §10 (Resource List), §12 (Change List); OAI-PMH 2.0 §3 (requests and responses)
 */
export { createOaiClient, type OaiClient, type OaiClientOptions } from './client.js';
export { openOaiBridge, type HarvestReport, type OaiBridge, type OaiBridgeEvent, type OaiBridgeOptions } from './bridge.js';
export type { BridgeSet, HarvestCounts } from './harvester.js';
export {
  publishOaiRepository,
  startOaiSource,
  type OaiSource,
  type OaiSourceEvent,
  type OaiSourceOptions,
  type PublishOaiOptions,
} from './oai-source.js';
export type {
  DeletedRecordSupport,
  Granularity,
  ListArguments,
  OaiHeader,
  OaiIdentify,
  OaiMetadataFormat,
  OaiRecord,
  OaiSet,
  ResumptionToken,
} from './types.js';
