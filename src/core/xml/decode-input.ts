import { TextDecoder } from 'node:util';
import { Buffer, isUtf8 } from 'node:buffer';
import { createGunzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { ResourceSyncError } from '../errors.js';

/** Bytes to read a document from: a string, bytes, or a (sync or async) stream of byte chunks. */
export type ByteInput = string | Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>;

/** Text and bytes are handed to the reader in pieces of this size: smaller pieces keep the heap (and RSS) small. */
const SLICE = 64 * 1024;
const SNIFF = 1024;

async function* bytesOf(input: Exclude<ByteInput, string>): AsyncGenerator<Uint8Array> {
  if (input instanceof Uint8Array) {
    for (let i = 0; i < input.length; i += SLICE) yield input.subarray(i, i + SLICE);
    return;
  }
  for await (const chunk of input as AsyncIterable<Uint8Array>) {
    if (!(chunk instanceof Uint8Array)) {
      throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Input chunk is a ${typeof chunk}, expected bytes (Uint8Array).`);
    }
    // Large chunks are cut: the reader's memory follows the size of the pieces it is given.
    for (let i = 0; i < chunk.length; i += SLICE) yield chunk.length <= SLICE ? chunk : chunk.subarray(i, i + SLICE);
  }
}

/** Gathers at least `n` bytes (or everything, if shorter) from the front of a byte stream. */
async function peek(it: AsyncIterator<Uint8Array>, n: number): Promise<{ head: Uint8Array; done: boolean }> {
  const parts: Uint8Array[] = [];
  let size = 0;
  while (size < n) {
    const r = await it.next();
    if (r.done) return { head: concat(parts, size), done: true };
    parts.push(r.value);
    size += r.value.length;
  }
  return { head: concat(parts, size), done: false };
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(size);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

async function* prepend(head: Uint8Array, rest: AsyncIterator<Uint8Array>, done: boolean): AsyncGenerator<Uint8Array> {
  try {
    if (head.length > 0) yield head;
    if (done) return;
    for (;;) {
      const r = await rest.next();
      if (r.done) return;
      yield r.value;
    }
  } finally {
    if (!done) await rest.return?.(undefined);
  }
}

async function* gunzip(source: AsyncGenerator<Uint8Array>, signal: AbortSignal | undefined): AsyncGenerator<Uint8Array> {
  const src = Readable.from(source, { objectMode: false });
  const z = createGunzip();
  src.on('error', (e) => z.destroy(e));
  src.pipe(z);
  try {
    for await (const chunk of z as AsyncIterable<Buffer>) {
      signal?.throwIfAborted();
      yield chunk;
    }
  } catch (e) {
    if (e instanceof ResourceSyncError) throw e;
    throw new ResourceSyncError('RS_XML_MALFORMED', `Gzip data is corrupt or truncated: ${(e as Error).message}.`, { cause: e });
  } finally {
    src.destroy();
    z.destroy();
  }
}

/** The character encoding named by a BOM or the XML declaration; UTF-8 by default. */
function sniffEncoding(head: Uint8Array): string {
  if (head[0] === 0xfe && head[1] === 0xff) return 'utf-16be';
  if (head[0] === 0xff && head[1] === 0xfe) return 'utf-16le';
  if (head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf) return 'utf-8';
  const start = new TextDecoder('latin1').decode(head.subarray(0, SNIFF));
  const m = /^<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z][A-Za-z0-9._-]*)["']/.exec(start);
  return m ? m[1]!.toLowerCase() : 'utf-8';
}

function decoderFor(label: string): TextDecoder {
  try {
    return new TextDecoder(label, { fatal: true });
  } catch (e) {
    throw new ResourceSyncError('RS_XML_ENCODING', `Encoding '${label}' declared by the document is not supported.`, { cause: e, data: { encoding: label } });
  }
}

/**
 * Decodes a byte input into text pieces: gzip is detected by its magic bytes and inflated as a
 * stream, the encoding comes from the BOM or the XML declaration (UTF-8 by default; malformed
 * bytes are an error, never replaced), and the uncompressed size is capped by `maxBytes`.
 */
export async function* decodeInput(input: ByteInput, maxBytes: number, signal?: AbortSignal): AsyncGenerator<string> {
  if (typeof input === 'string') {
    if (input.length > maxBytes) tooBig(maxBytes);
    const s = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
    for (let i = 0; i < s.length; i += SLICE) {
      signal?.throwIfAborted();
      let end = Math.min(i + SLICE, s.length);
      // Never split a surrogate pair across pieces.
      if (end < s.length && (s.charCodeAt(end - 1) & 0xfc00) === 0xd800) end++;
      yield s.slice(i, end);
      i = end - SLICE;
    }
    return;
  }
  let it: AsyncIterator<Uint8Array> = bytesOf(input);
  let { head, done } = await peek(it, 2);
  let source = prepend(head, it, done);
  if (head[0] === 0x1f && head[1] === 0x8b) {
    it = gunzip(source, signal);
    ({ head, done } = await peek(it, SNIFF));
    source = prepend(head, it, done);
  } else if (!done) {
    it = source;
    ({ head, done } = await peek(it, SNIFF));
    source = prepend(head, it, done);
  }
  const label = sniffEncoding(head);
  if (label === 'utf-8' || label === 'utf8' || label === 'us-ascii') {
    yield* decodeUtf8(source, maxBytes, signal);
    return;
  }
  const decoder = decoderFor(label);
  let total = 0;
  try {
    for await (const chunk of source) {
      signal?.throwIfAborted();
      total += chunk.length;
      if (total > maxBytes) tooBig(maxBytes);
      const text = decoder.decode(chunk, { stream: true });
      if (text.length > 0) yield text;
    }
    const rest = decoder.decode();
    if (rest.length > 0) yield rest;
  } catch (e) {
    if (e instanceof TypeError && (e as NodeJS.ErrnoException).code === 'ERR_ENCODING_INVALID_ENCODED_DATA') {
      throw new ResourceSyncError('RS_XML_ENCODING', `Near byte ${total}: the bytes are not valid ${label}.`, { cause: e, data: { encoding: label, offset: total } });
    }
    throw e;
  }
}

function tooBig(maxBytes: number): never {
  throw new ResourceSyncError('RS_LIMIT_BYTES', `Document is larger than ${maxBytes} bytes uncompressed (the Sitemaps limit adopted by Z39.99 §7; raise limits.maxBytes to read it).`, {
    data: { limit: maxBytes },
  });
}

/** Where the last complete UTF-8 sequence of `b` ends (a sequence cut by the chunk end is left over). */
function completeUtf8(b: Uint8Array): number {
  const n = b.length;
  for (let back = 1; back <= 4 && back <= n; back++) {
    const c = b[n - back]!;
    if ((c & 0xc0) === 0x80) continue; // continuation byte
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return need > back ? n - back : n;
  }
  return n;
}

/** UTF-8 decoding with validation (twice as fast here as a fatal TextDecoder): malformed bytes are an error. */
async function* decodeUtf8(source: AsyncIterable<Uint8Array>, maxBytes: number, signal: AbortSignal | undefined): AsyncGenerator<string> {
  let total = 0;
  let carry: Uint8Array | undefined;
  let first = true;
  for await (const chunk of source) {
    signal?.throwIfAborted();
    total += chunk.length;
    if (total > maxBytes) tooBig(maxBytes);
    let b = carry ? Buffer.concat([carry, chunk]) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (first) {
      if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) b = b.subarray(3);
      first = false;
    }
    const cut = completeUtf8(b);
    const whole = b.subarray(0, cut);
    if (!isUtf8(whole)) badUtf8(total);
    carry = cut < b.length ? Uint8Array.prototype.slice.call(b, cut) : undefined;
    if (whole.length > 0) yield whole.toString('utf8');
  }
  if (carry) badUtf8(total);
}

function badUtf8(offset: number): never {
  throw new ResourceSyncError('RS_XML_ENCODING', `Near byte ${offset}: the bytes are not valid UTF-8.`, { data: { encoding: 'utf-8', offset } });
}
