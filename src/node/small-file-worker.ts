/**
 * The worker thread of `SmallFileThread`: runs each batch of small-file writes in order with synchronous
 * calls and answers the batch with one message.
 */
import { parentPort } from 'node:worker_threads';
import { isResourceSyncError } from '../core/errors.js';
import { writeSmallFileSync } from './small-file.js';
import { unpackBatch, type SmallFileBatch, type SmallFileReply } from './small-file-thread.js';

parentPort?.on('message', (batch: SmallFileBatch) => {
  const reply: SmallFileReply[] = [];
  for (const f of unpackBatch(batch)) {
    try {
      writeSmallFileSync(f, batch.rename);
      reply.push({ id: f.id });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      reply.push({
        id: f.id,
        error: isResourceSyncError(err) ? { message: err.message, code: err.code, data: err.data, rs: true } : { message: e.message, ...(e.code !== undefined ? { code: e.code } : {}) },
      });
    }
  }
  parentPort!.postMessage(reply);
});
