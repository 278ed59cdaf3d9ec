/**
 * resourcesync: ResourceSync (ANSI/NISO Z39.99) for Node.js.
 * The core (documents, parse, write, validate) plus the Node adapters.
 * @example
 * import { readDocument, openInput } from 'resourcesync';
 * const doc = await readDocument(openInput('https://example.com/resourcelist.xml'));
 */
export * from './core/index.js';
export { openInput, type OpenInputOptions } from './node/open-input.js';
export { gzipChunks } from './node/gzip.js';
export { fileSink, writeFileAtomic, type FileSinkOptions, type FileSink } from './node/file-sink.js';
export { WarcWriter, type WarcRecordInit, type WarcBlock, type WrittenWarcRecord } from './node/warc-write.js';
export { scanWarc, readWarcPayload, type ScannedWarcRecord, type WarcReadLimits } from './node/warc-read.js';
