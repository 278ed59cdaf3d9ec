/**
 * The worker thread of `SmallFileThread`: runs each batch of calls in order with synchronous calls and answers
 * the batch with one message.
 */
import { parentPort } from 'node:worker_threads';
import { replyOf, runCall, unpackBatch, type SmallFileBatch, type SmallFileReply } from './small-file-thread.js';

parentPort?.on('message', (batch: SmallFileBatch) => {
  const reply: SmallFileReply = [];
  for (const c of unpackBatch(batch)) {
    try {
      const errors = runCall(c);
      reply.push(errors === undefined ? c.id : { id: c.id, errors: errors.map((e) => (e === undefined ? null : replyOf(e))) });
    } catch (err) {
      reply.push({ id: c.id, error: replyOf(err) });
    }
  }
  parentPort!.postMessage(reply);
});
