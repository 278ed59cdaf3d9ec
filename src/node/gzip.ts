/**
 * Gzip through node:zlib for the writers' `gzip` option, with zlib's options.
 * @example
 * import { writeDocument, gzipChunks } from 'resourcesync';
 * const chunks = writeDocument(header, entries, { gzip: (c) => gzipChunks(c, { level: 9 }) });
 */

import { pipeline, Readable, type TransformOptions } from 'node:stream';
import { createGzip, type ZlibOptions } from 'node:zlib';

/**
 * Gzips a stream of chunks through node:zlib, pulling from `source` only as fast as the output is
 * consumed. Stopping the iteration early ends the source too.
 */
export function gzipChunks(source: AsyncIterable<Uint8Array>, zlibOptions?: ZlibOptions): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      // Room for a few batches on each side of zlib, so that the next batch is serialized on the
      // main thread while zlib compresses the previous one in the thread pool (bounded: ~2 MiB).
      const streamOptions: ZlibOptions & TransformOptions = {
        chunkSize: 64 * 1024,
        writableHighWaterMark: 1024 * 1024,
      };
      const gz = createGzip({ ...streamOptions, ...zlibOptions });
      const input = Readable.from(source, { objectMode: true, highWaterMark: 4 });
      // The callback form: errors reach the iterator below through gz being destroyed with them.
      pipeline(input, gz, () => {});
      return gz[Symbol.asyncIterator]() as AsyncIterator<Uint8Array>;
    },
  };
}
