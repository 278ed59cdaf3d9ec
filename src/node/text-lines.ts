/**
 * The lines of a byte stream (a file, stdin), numbered from 1, decoded as UTF-8, read chunk by chunk: memory holds
 * one chunk and one line at most, whatever the length of the stream. `\n` ends a line; a `\r` before it is
 * dropped; a last line without `\n` counts. A line longer than `maxLineBytes` is an error naming its number.
 */
import { ResourceSyncError } from '../core/errors.js';

/** One line of the stream. */
export interface TextLine {
  /** 1 for the first line. */
  line: number;
  text: string;
}

/** Longest line accepted by default: 1 MiB. */
const MAX_LINE_BYTES = 1024 * 1024;

const NL = 10;

function lineText(buf: Buffer, start: number, end: number): string {
  if (end > start && buf[end - 1] === 13) end--;
  return buf.toString('utf8', start, end);
}

/**
 * The lines of `chunks`, in order.
 * @throws ResourceSyncError RS_LIMIT_BYTES for a line longer than `maxLineBytes` (`data.line`)
 * @example for await (const { line, text } of textLines(createReadStream('feed.jsonl'))) console.log(line, text);
 */
export async function* textLines(chunks: AsyncIterable<Uint8Array | string>, options: { maxLineBytes?: number } = {}): AsyncGenerator<TextLine> {
  const max = options.maxLineBytes ?? MAX_LINE_BYTES;
  let pending: Buffer | undefined;
  let line = 0;
  const tooLong = (): ResourceSyncError =>
    new ResourceSyncError('RS_LIMIT_BYTES', `line ${line + 1}: longer than ${max} bytes`, { data: { line: line + 1, limit: max } });
  for await (const c of chunks) {
    const buf = typeof c === 'string' ? Buffer.from(c) : Buffer.isBuffer(c) ? c : Buffer.from(c.buffer, c.byteOffset, c.byteLength);
    let start = 0;
    let nl = buf.indexOf(NL);
    if (pending !== undefined) {
      if (nl < 0) {
        if (pending.length + buf.length > max) throw tooLong();
        pending = Buffer.concat([pending, buf]);
        continue;
      }
      const head = Buffer.concat([pending, buf.subarray(0, nl)]);
      pending = undefined;
      if (head.length > max) throw tooLong();
      yield { line: ++line, text: lineText(head, 0, head.length) };
      start = nl + 1;
      nl = buf.indexOf(NL, start);
    }
    while (nl >= 0) {
      if (nl - start > max) throw tooLong();
      yield { line: ++line, text: lineText(buf, start, nl) };
      start = nl + 1;
      nl = buf.indexOf(NL, start);
    }
    if (start < buf.length) {
      if (buf.length - start > max) throw tooLong();
      // copied: the stream may reuse its buffer
      pending = Buffer.from(buf.subarray(start));
    }
  }
  if (pending !== undefined && pending.length > 0) yield { line: ++line, text: lineText(pending, 0, pending.length) };
}
