/**
 * Reading WARC files (ISO 28500, WARC/1.0 and WARC/1.1), plain or gzipped record by record (`.warc.gz`, as
 * GNU wget, warcio and this package write them), with bounds: a record's header at most `maxHeaderBytes`, its
 * block at most `maxRecordBytes`, at most `maxRecords` records, nothing held in memory but one chunk. Each gzip
 * member is inflated on its own (its CRC-32 and size checked) and must hold exactly one record, so that a
 * record can be read again at its offset; output past the record (a gzip bomb behind a small record) stops the
 * read. {@link scanWarc} verifies every record's framing and its `WARC-Block-Digest` and `WARC-Payload-Digest`;
 * {@link readWarcPayload} reads one record's payload again at its offset. Failures are `RS_WARC` (malformed,
 * truncated), `RS_HASH_MISMATCH` (a digest), `RS_LIMIT_*` (a bound).
 * @see ISO 28500:2017 §4–§6, Annex D
 */
import { createHash, type Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import zlib from 'node:zlib';
import { ResourceSyncError, isResourceSyncError, messageOf, type ErrorCode } from '../core/errors.js';
import { base32, parseWarcDigest, parseWarcHeader, type WarcDigest, type WarcHeader } from '../core/warc.js';

/** Bounds of a read. */
export interface WarcReadLimits {
  /** Records read at most. Default 1,000,000. */
  maxRecords?: number;
  /** Bytes of one record header (and of an HTTP header in a block). Default 64 KiB. */
  maxHeaderBytes?: number;
  /** Bytes of one record's block. Default 16 GiB. */
  maxRecordBytes?: number;
  /** Bytes of all the blocks of a scan together (checked before a block is read). Default no cap. */
  maxTotalBytes?: number;
}

/** A record as {@link scanWarc} found it, its digests verified. */
export interface ScannedWarcRecord {
  /** Where the record (its gzip member) starts in the file. */
  offset: number;
  /** Bytes of the record (its gzip member) in the file. */
  length: number;
  header: WarcHeader;
  /** `WARC-Type`. */
  type: string;
  /** `WARC-Record-ID` without its angle brackets. */
  id: string;
  targetUri?: string;
  contentType?: string;
  date?: string;
  /** `Content-Length`: bytes of the block. */
  contentLength: number;
  /** Where the payload starts in the block: after the HTTP header of an `application/http` block, else 0. */
  payloadStart: number;
  /** `sha1:` + base32 of the block, as computed. */
  blockDigest: string;
  /** `sha1:` + base32 of the payload, as computed. */
  payloadDigest: string;
}

const DEFAULTS = { maxRecords: 1_000_000, maxHeaderBytes: 64 * 1024, maxRecordBytes: 16 * 2 ** 30, maxTotalBytes: Number.POSITIVE_INFINITY };
const CHUNK = 64 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');

function warcError(code: ErrorCode, message: string, data: Record<string, unknown>, cause?: unknown): ResourceSyncError {
  return new ResourceSyncError(code, message, { data, recoverable: true, ...(cause === undefined ? {} : { cause }) });
}

/** Pulls bytes from an iterator of chunks: a header up to its empty line, then exact counts. */
class Pull {
  private buf: Buffer = Buffer.alloc(0);
  /** Bytes handed out so far. */
  consumed = 0;
  constructor(
    private readonly it: AsyncIterator<Uint8Array>,
    private readonly where: () => string,
  ) {}

  private async more(): Promise<boolean> {
    const r = await this.it.next();
    if (r.done === true) return false;
    this.buf = this.buf.length === 0 ? Buffer.from(r.value) : Buffer.concat([this.buf, r.value]);
    return true;
  }

  /** The text before the next empty line (CRLF CRLF), or undefined at the end of the input. */
  async header(max: number): Promise<string | undefined> {
    for (let guard = 0; ; guard++) {
      const at = this.buf.indexOf(CRLF2);
      if (at >= 0) {
        const text = this.buf.subarray(0, at).toString('utf8');
        this.drop(at + 4);
        return text;
      }
      if (this.buf.length > max) throw warcError('RS_LIMIT_BYTES', `WARC record header at ${this.where()} is longer than ${max} bytes.`, { limit: max });
      if (!(await this.more())) {
        if (this.buf.length === 0 && guard === 0) return undefined;
        throw warcError('RS_WARC', `WARC record header at ${this.where()} is cut short.`, {});
      }
    }
  }

  /** Exactly `n` bytes, chunk by chunk. */
  async *take(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.buf.length === 0 && !(await this.more())) {
        throw warcError('RS_WARC', `WARC record at ${this.where()} is cut short: ${left} of its ${n} bytes are missing.`, { expected: n });
      }
      const part = this.buf.subarray(0, Math.min(left, this.buf.length));
      this.drop(part.length);
      left -= part.length;
      yield part;
    }
  }

  /** The record's closing CRLF CRLF. */
  async closing(): Promise<void> {
    const got: Buffer[] = [];
    for await (const c of this.take(4)) got.push(c);
    if (!Buffer.concat(got).equals(CRLF2)) throw warcError('RS_WARC', `WARC record at ${this.where()} does not end with CRLF CRLF: its Content-Length is wrong.`, {});
  }

  /** True when no byte is left. */
  async atEnd(): Promise<boolean> {
    return this.buf.length === 0 && !(await this.more());
  }

  private drop(n: number): void {
    this.buf = this.buf.subarray(n);
    this.consumed += n;
  }
}

/** The bytes of the file from `offset` on. */
async function* fileBytes(fh: FileHandle, offset: number): AsyncGenerator<Buffer> {
  let pos = offset;
  for (;;) {
    const b = Buffer.allocUnsafe(CHUNK);
    const { bytesRead } = await fh.read(b, 0, CHUNK, pos);
    if (bytesRead === 0) return;
    pos += bytesRead;
    yield b.subarray(0, bytesRead);
  }
}

/** The length of a gzip member's header (RFC 1952 §2.3) at the start of `b`. */
function gzipHeaderLength(b: Buffer, where: string): number {
  if (b.length < 10 || b[0] !== 0x1f || b[1] !== 0x8b || b[2] !== 8) throw warcError('RS_WARC', `No gzip member starts at ${where}.`, {});
  const flags = b[3]!;
  let at = 10;
  if (flags & 4) at += 2 + b.readUInt16LE(at);
  for (const bit of [8, 16]) {
    if (flags & bit) {
      const zero = b.indexOf(0, at);
      if (zero < 0) throw warcError('RS_WARC', `Gzip header at ${where} is too long.`, {});
      at = zero + 1;
    }
  }
  if (flags & 2) at += 2;
  if (at > b.length) throw warcError('RS_WARC', `Gzip header at ${where} is cut short.`, {});
  return at;
}

/**
 * The inflated bytes of the gzip member at `offset`; once they are all read, `out.end` is where the member
 * ends (its trailer checked: CRC-32 and size).
 */
async function* memberBytes(fh: FileHandle, offset: number, out: { end?: number }, window = new FileWindow(fh, FIRST_READ)): AsyncGenerator<Buffer> {
  const where = `offset ${offset}`;
  const head = await window.view(offset, FIRST_READ);
  const headerLength = gzipHeaderLength(head, where);
  const small = inflateSmall(head, headerLength, offset);
  if (small !== undefined) {
    out.end = small.end;
    if (small.bytes.length > 0) yield small.bytes;
    return;
  }
  const dataStart = offset + headerLength;
  const inflater = zlib.createInflateRaw({ chunkSize: CHUNK });
  let fed = 0;
  let stop = false;
  const feeding = (async () => {
    let pos = dataStart;
    while (!stop) {
      const b = Buffer.allocUnsafe(CHUNK);
      const r = await fh.read(b, 0, CHUNK, pos);
      if (r.bytesRead === 0) {
        inflater.end();
        return;
      }
      pos += r.bytesRead;
      fed += r.bytesRead;
      await new Promise<void>((resolve, reject) => inflater.write(b.subarray(0, r.bytesRead), (err) => (err ? reject(err) : resolve())));
      if (inflater.bytesWritten < fed) {
        inflater.end();
        return;
      }
    }
  })();
  feeding.catch((err: unknown) => inflater.destroy(err as Error));
  let crc = 0;
  let size = 0;
  try {
    for await (const chunk of inflater as AsyncIterable<Buffer>) {
      crc = zlib.crc32(chunk, crc);
      size += chunk.length;
      yield chunk;
    }
  } catch (err) {
    if (isResourceSyncError(err)) throw err;
    throw warcError('RS_WARC', `Gzip member at ${where} cannot be inflated: ${messageOf(err)}.`, { offset }, err);
  } finally {
    stop = true;
    if (!inflater.readableEnded) inflater.destroy();
    await feeding.catch(() => undefined);
  }
  const end = dataStart + inflater.bytesWritten;
  const trailer = Buffer.alloc(8);
  const t = await fh.read(trailer, 0, 8, end);
  if (t.bytesRead < 8) throw warcError('RS_WARC', `Gzip member at ${where} is cut short (no trailer).`, { offset });
  if (trailer.readUInt32LE(0) !== crc >>> 0 || trailer.readUInt32LE(4) !== size % 2 ** 32) {
    throw warcError('RS_WARC', `Gzip member at ${where} fails its CRC-32 or size check.`, { offset });
  }
  out.end = end + 8;
}

/** Reads a file ahead in 1 MiB pieces, so that the small members read one after the other cost no read each. */
class FileWindow {
  private buf = Buffer.alloc(0);
  private start = 0;
  /** `readSize`: bytes read at a time (1 MiB for a scan; one member's first bytes for a record read at its offset). */
  constructor(
    private readonly fh: FileHandle,
    private readonly readSize = 1 << 20,
  ) {}

  /** Up to `n` bytes at `offset` (fewer at the end of the file). */
  async view(offset: number, n: number): Promise<Buffer> {
    if (offset < this.start || offset + n > this.start + this.buf.length) {
      const size = Math.max(n, this.readSize);
      const b = Buffer.allocUnsafe(size);
      const { bytesRead } = await this.fh.read(b, 0, size, offset);
      this.buf = b.subarray(0, bytesRead);
      this.start = offset;
    }
    return this.buf.subarray(offset - this.start, offset - this.start + n);
  }
}

/** Bytes read at a member's offset: a small record's whole member is inflated from them at once. */
const FIRST_READ = 16 * 1024;

/**
 * A member that lies whole in `window` (read at `offset`), inflated in one call (most records are small: one
 * read, no stream); undefined when it does not fit or inflates past 1 MiB, which the streamed path then reads.
 */
function inflateSmall(window: Buffer, headerLength: number, offset: number): { bytes: Buffer; end: number } | undefined {
  let result: { buffer: Buffer; engine: { bytesWritten: number } };
  try {
    result = zlib.inflateRawSync(window.subarray(headerLength), { info: true, maxOutputLength: 1 << 20 }) as unknown as typeof result;
  } catch {
    return undefined;
  }
  const trailerAt = headerLength + result.engine.bytesWritten;
  if (trailerAt + 8 > window.length) return undefined;
  const bytes = result.buffer;
  if (window.readUInt32LE(trailerAt) !== zlib.crc32(bytes) >>> 0 || window.readUInt32LE(trailerAt + 4) !== bytes.length % 2 ** 32) {
    throw warcError('RS_WARC', `Gzip member at offset ${offset} fails its CRC-32 or size check.`, { offset });
  }
  return { bytes, end: offset + trailerAt + 8 };
}

/** Whether the file is gzipped (its first two bytes). */
async function isGzip(fh: FileHandle): Promise<boolean> {
  const b = Buffer.alloc(2);
  const { bytesRead } = await fh.read(b, 0, 2, 0);
  return bytesRead === 2 && b[0] === 0x1f && b[1] === 0x8b;
}

/** The head of a record: its fields, checked. */
function recordHead(text: string, offset: number, maxRecordBytes: number): Omit<ScannedWarcRecord, 'length' | 'payloadStart' | 'blockDigest' | 'payloadDigest'> {
  const header = parseWarcHeader(text);
  const f = header.fields;
  const cl = f.get('content-length');
  if (cl === undefined || !/^\d+$/.test(cl) || !Number.isSafeInteger(Number(cl))) {
    throw warcError('RS_WARC', `WARC record at offset ${offset} has no valid Content-Length.`, { offset });
  }
  const contentLength = Number(cl);
  if (contentLength > maxRecordBytes) {
    throw warcError('RS_LIMIT_BYTES', `WARC record at offset ${offset} is larger than ${maxRecordBytes} bytes.`, { offset, limit: maxRecordBytes });
  }
  const type = f.get('warc-type');
  const rawId = f.get('warc-record-id');
  if (type === undefined || rawId === undefined) throw warcError('RS_WARC', `WARC record at offset ${offset} lacks WARC-Type or WARC-Record-ID.`, { offset });
  const id = rawId.replace(/^<(.*)>$/, '$1');
  const targetUri = f.get('warc-target-uri')?.replace(/^<(.*)>$/, '$1');
  const contentType = f.get('content-type');
  const date = f.get('warc-date');
  return {
    offset,
    header,
    type,
    id,
    contentLength,
    ...(targetUri === undefined ? {} : { targetUri }),
    ...(contentType === undefined ? {} : { contentType }),
    ...(date === undefined ? {} : { date }),
  };
}

/** Whether a block is an HTTP message whose payload follows its header (ISO 28500 §6.3, §6.4). */
function isHttpBlock(type: string, contentType: string | undefined): boolean {
  return (type === 'response' || type === 'request' || type === 'revisit') && (contentType ?? '').toLowerCase().startsWith('application/http');
}

/** Digests a block as it streams by: the block, and the payload after an HTTP header when there is one. */
class BlockDigests {
  /** sha1 of the block, and the declared block digest's algorithm when it is another one. */
  private readonly block: Map<string, Hash>;
  /** The same for the payload, once an HTTP header is passed; undefined while the payload is the block. */
  private payload: Map<string, Hash> | undefined;
  private head: Buffer | undefined;
  payloadStart = 0;

  constructor(
    private readonly algorithms: { block: string; payload: string },
    http: boolean,
    private readonly maxHead: number,
  ) {
    // without an HTTP header the payload is the block: its algorithm is computed over the block too
    const names = new Set(['sha1', algorithms.block, ...(http ? [] : [algorithms.payload])]);
    this.block = new Map([...names].map((a) => [a, createHash(a)]));
    if (http) this.head = Buffer.alloc(0);
  }

  update(chunk: Buffer, where: string): void {
    for (const h of this.block.values()) h.update(chunk);
    if (this.head !== undefined) {
      const joined = Buffer.concat([this.head, chunk]);
      const at = joined.indexOf(CRLF2);
      if (at < 0) {
        if (joined.length > this.maxHead) throw warcError('RS_LIMIT_BYTES', `HTTP header in the WARC record at ${where} is longer than ${this.maxHead} bytes.`, {});
        this.head = joined;
        return;
      }
      this.payloadStart = at + 4;
      this.head = undefined;
      this.payload = new Map([...new Set(['sha1', this.algorithms.payload])].map((a) => [a, createHash(a)]));
      chunk = joined.subarray(at + 4);
    }
    if (this.payload !== undefined) for (const h of this.payload.values()) h.update(chunk);
  }

  /** Digests as hex (of the declared algorithms) and as `sha1:` base32. */
  finish(): { block: string; payload: string; sha1Block: string; sha1Payload: string } {
    // an HTTP block without the end of its header: the whole block is the payload
    if (this.head !== undefined) this.payloadStart = 0;
    const block = new Map([...this.block].map(([a, h]) => [a, h.digest()]));
    const payload = this.payload === undefined ? block : new Map([...this.payload].map(([a, h]) => [a, h.digest()]));
    const hashOf = (m: Map<string, Buffer>, a: string): Buffer => m.get(a) ?? m.get('sha1')!;
    return {
      block: hashOf(block, this.algorithms.block).toString('hex'),
      payload: hashOf(payload, this.algorithms.payload).toString('hex'),
      sha1Block: `sha1:${base32(block.get('sha1')!)}`,
      sha1Payload: `sha1:${base32(payload.get('sha1')!)}`,
    };
  }
}

/** Checks a digest field against the computed digest. */
function checkDigest(field: string, declared: string | undefined, parsed: WarcDigest | undefined, hex: string, offset: number): void {
  if (parsed === undefined || parsed.hex === hex) return;
  throw warcError('RS_HASH_MISMATCH', `WARC record at offset ${offset}: its ${field} does not match its bytes.`, { offset, field, expected: declared });
}

/**
 * Reads every record of a WARC file in order, checking its framing, its gzip member, and its block and
 * payload digests when it declares them (`sha1`, `sha256` or `md5`, base32 or hex); yields each record once
 * read (the block itself is not kept).
 * @example for await (const r of scanWarc(fh)) console.log(r.type, r.targetUri, r.payloadDigest);
 */
export async function* scanWarc(fh: FileHandle, limits: WarcReadLimits = {}): AsyncGenerator<ScannedWarcRecord> {
  const max = { ...DEFAULTS, ...limits };
  const { size } = await fh.stat();
  const gz = await isGzip(fh);
  let offset = 0;
  let count = 0;
  let total = 0;
  const plain = gz ? undefined : new Pull(fileBytes(fh, 0)[Symbol.asyncIterator](), () => `offset ${offset}`);
  const window = new FileWindow(fh);
  while (offset < size) {
    const out: { end?: number } = {};
    const pull = plain ?? new Pull(memberBytes(fh, offset, out, window)[Symbol.asyncIterator](), () => `offset ${offset}`);
    const start = plain?.consumed ?? 0;
    const text = await pull.header(max.maxHeaderBytes);
    if (text === undefined) {
      if (plain !== undefined) break;
      offset = out.end!; // an empty gzip member
      continue;
    }
    if (++count > max.maxRecords) throw warcError('RS_LIMIT_ENTRIES', `WARC file has more than ${max.maxRecords} records.`, { limit: max.maxRecords });
    const head = recordHead(text, offset, max.maxRecordBytes);
    total += head.contentLength;
    if (total > max.maxTotalBytes) throw warcError('RS_LIMIT_BYTES', `WARC file holds more than ${max.maxTotalBytes} bytes of records.`, { offset, limit: max.maxTotalBytes });
    const f = head.header.fields;
    const blockField = f.get('warc-block-digest');
    const payloadField = f.get('warc-payload-digest');
    const declared = { block: parseWarcDigest(blockField), payload: parseWarcDigest(payloadField) };
    const algorithms = { block: declared.block?.algorithm ?? 'sha1', payload: declared.payload?.algorithm ?? 'sha1' };
    const digests = new BlockDigests(algorithms, isHttpBlock(head.type, head.contentType), max.maxHeaderBytes);
    for await (const chunk of pull.take(head.contentLength)) digests.update(chunk, `offset ${offset}`);
    await pull.closing();
    if (plain === undefined && !(await pull.atEnd())) {
      throw warcError('RS_WARC', `Gzip member at offset ${offset} holds more than one record (or more bytes than its Content-Length).`, { offset });
    }
    const d = digests.finish();
    checkDigest('WARC-Block-Digest', blockField, declared.block, d.block, offset);
    checkDigest('WARC-Payload-Digest', payloadField, declared.payload, d.payload, offset);
    const end = plain !== undefined ? plain.consumed : out.end!;
    const length = plain !== undefined ? end - start : end - offset;
    yield { ...head, length, payloadStart: digests.payloadStart, blockDigest: d.sha1Block, payloadDigest: d.sha1Payload };
    offset = end;
  }
}

/**
 * The payload of the record at `offset` (found by {@link scanWarc}): the block from `payloadStart` on. Read
 * again from the file, bounded by the record's Content-Length.
 * @example for await (const chunk of readWarcPayload(fh, r.offset, r.payloadStart)) hash.update(chunk);
 */
export async function* readWarcPayload(fh: FileHandle, offset: number, payloadStart = 0, limits: WarcReadLimits = {}): AsyncGenerator<Buffer> {
  const max = { ...DEFAULTS, ...limits };
  const gz = await isGzip(fh);
  const source = gz ? memberBytes(fh, offset, {}) : fileBytes(fh, offset);
  const it = source[Symbol.asyncIterator]();
  try {
    const pull = new Pull(it, () => `offset ${offset}`);
    const text = await pull.header(max.maxHeaderBytes);
    if (text === undefined) throw warcError('RS_WARC', `No WARC record at offset ${offset}.`, { offset });
    const head = recordHead(text, offset, max.maxRecordBytes);
    if (payloadStart > head.contentLength) throw warcError('RS_WARC', `WARC record at offset ${offset} is shorter than its HTTP header.`, { offset });
    let skip = payloadStart;
    for await (const chunk of pull.take(head.contentLength)) {
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      yield skip > 0 ? chunk.subarray(skip) : chunk;
      skip = 0;
    }
  } finally {
    await it.return?.(undefined);
  }
}
