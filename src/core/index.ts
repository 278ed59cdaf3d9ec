/**
 * The pure core of resourcesync: the model of every ResourceSync document, streaming parse and
 * write, validation, W3C Datetime and fixity values. No file system, network or clock here.
 * @example
 * import { readDocument, validate } from 'resourcesync/core';
 * const reader = await readDocument(bytes);
 * const { issues } = await validate(reader, { spec: '1.1' });
 */
export * from './constants.js';
export * from './errors.js';
export * from './hash.js';
export * from './w3c-datetime.js';
export * from './manifest-path.js';
export * from './discovery-hints.js';
export * from './xmpp-uri.js';
export { mediaType, DEFAULT_MEDIA_TYPE } from './media-type.js';
export * from './model/types.js';
export * from './model/document-kinds.js';
export * from './model/notification.js';
export {
  readDocument,
  parseDocument,
  type ByteInput,
  type DocumentReader,
  type ReadOptions,
} from './xml/read-document.js';
export { writeDocument, writeDocumentString, type WriteDocumentOptions, type Compress } from './xml/write-document.js';
export {
  writeDocumentSet,
  type PartSink,
  type PartInfo,
  type PartSummary,
  type DocumentSetOptions,
  type DocumentSetResult,
} from './xml/write-document-set.js';
export * from './validate/index.js';
