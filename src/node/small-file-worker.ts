/**
 * The worker thread of `SmallFileThread`: runs each batch of calls in order with synchronous calls and answers
 * the batch with one message.
 */
import { parentPort } from 'node:worker_threads';
import { isResourceSyncError } from '../core/errors.js';
import { runCall, unpackBatch, type SmallFileBatch, type SmallFileReply } from './small-file-thread.js';

parentPort?.on('message', (batch: SmallFileBatch) => {
  const reply: SmallFileReply[] = [];
  for (const c of unpackBatch(batch)) {
    try {
      runCall(c);
      reply.push({ id: c.id });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      reply.push({
        id: c.id,
        error: isResourceSyncError(err) ? { message: err.message, code: err.code, data: err.data, rs: true } : { message: e.message, ...(e.code !== undefined ? { code: e.code } : {}) },
      });
    }
  }
  parentPort!.postMessage(reply);
});
