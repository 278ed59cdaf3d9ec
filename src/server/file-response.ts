/**
 * HTTP response semantics of the Source server: a resolved file and a request become a response description
 * (status, header fields, body as bytes or as an open file range) with validators, conditional requests
 * (304/412), byte ranges (206/416) and gzip content coding. The pure pieces are in `http-semantics.ts`.
 * @see RFC 9110 §8.8 (validators), §13 (conditional requests), §14 (range requests), §12.5.3 (Accept-Encoding)
 */
import { open, type FileHandle } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import {
  acceptsEncoding,
  evaluatePreconditions,
  ifRangeHolds,
  isCompressible,
  parseRange,
  type ConditionalHeaders,
} from './http-semantics.js';
import { infoFrom, type FileInfo, type Resolution } from './file-resolver.js';
import type { ResponderRequest, ResponderResponse } from './request-response.js';

const GZIP_MIN = 256;

/** A short `text/plain` response: `<status> <text>`. */
export function statusResponse(status: number, text: string, extra?: Record<string, string>): ResponderResponse {
  const bytes = Buffer.from(`${status} ${text}\n`);
  return {
    status,
    headers: {
      'content-type': 'text/plain; charset=utf-8',
      'content-length': String(bytes.length),
      ...extra,
    },
    body: { type: 'bytes', bytes },
  };
}

function header(h: ResponderRequest['headers'], name: string): string | undefined {
  const v = h[name];
  return Array.isArray(v) ? v.join(', ') : v;
}

function gzipTag(etag: string): string {
  return `${etag.slice(0, -1)}-gz"`;
}

/** How responses are made: gzip on or off, and where the bytes of a new in-memory gzip copy are counted. */
export interface ResponseOptions {
  gzip: boolean;
  /** Called with the size of a gzip copy kept in `info.gz` (the resolution cache counts it). */
  onHeld: (bytes: number) => void;
}

/**
 * The response to `req` for the file `r` with metadata `info`: bytes from memory when `info.bytes` is set,
 * otherwise a range of `handle` (none for HEAD, or when `handle` is undefined).
 */
export function respond(
  req: ResponderRequest,
  r: Resolution,
  info: FileInfo,
  handle: FileHandle | undefined,
  options: ResponseOptions,
): ResponderResponse {
  const h = req.headers;
  const size = info.size;
  const headers: Record<string, string> = {
    'content-type': r.contentType,
    'last-modified': info.lastModified,
    'accept-ranges': 'bytes',
  };
  if (r.link !== undefined) headers.link = r.link;
  if (r.kind !== 'resource') headers['cache-control'] = 'no-cache';
  const rangeHeader = req.method === 'GET' ? header(h, 'range') : undefined;
  let gzip = false;
  if (options.gzip && size >= GZIP_MIN && isCompressible(r.contentType)) {
    headers.vary = 'Accept-Encoding';
    gzip = rangeHeader === undefined && acceptsEncoding(header(h, 'accept-encoding'), 'gzip');
  }
  const etag = gzip ? gzipTag(info.etag) : info.etag;
  headers.etag = etag;

  const conditional = conditionalResponse(h, headers, etag, info);
  if (conditional !== undefined) return conditional;

  let status = 200;
  let start = 0;
  let end = size;
  if (rangeHeader !== undefined && ifRangeHolds(header(h, 'if-range'), etag, info.lastModified)) {
    const range = parseRange(rangeHeader, size);
    if (range === 'unsatisfiable') {
      return statusResponse(416, 'Range Not Satisfiable', {
        'content-range': `bytes */${size}`,
        'accept-ranges': 'bytes',
      });
    }
    if (range !== undefined) {
      status = 206;
      start = range.start;
      end = range.end;
      headers['content-range'] = `bytes ${start}-${end - 1}/${size}`;
    }
  }
  const head = req.method === 'HEAD';
  if (info.bytes !== undefined) return memoryResponse(r, info, info.bytes, { status, headers, start, end, gzip, head }, options);
  if (gzip) headers['content-encoding'] = 'gzip';
  else headers['content-length'] = String(end - start);
  if (head || handle === undefined) return { status, headers };
  return { status, headers, body: { type: 'file', handle, start, end, gzip } };
}

/**
 * The answer to a conditional request (RFC 9110 §13): 412 when a precondition fails, 304 when not modified;
 * undefined when the request is not conditional or its conditions hold.
 */
function conditionalResponse(h: ResponderRequest['headers'], headers: Record<string, string>, etag: string, info: FileInfo): ResponderResponse | undefined {
  if (
    h['if-match'] === undefined &&
    h['if-none-match'] === undefined &&
    h['if-modified-since'] === undefined &&
    h['if-unmodified-since'] === undefined
  ) {
    return undefined;
  }
  const conditional: ConditionalHeaders = {
    'if-match': header(h, 'if-match'),
    'if-none-match': header(h, 'if-none-match'),
    'if-modified-since': header(h, 'if-modified-since'),
    'if-unmodified-since': header(h, 'if-unmodified-since'),
  };
  const pre = evaluatePreconditions(conditional, etag, info.mtimeSeconds);
  if (pre === 'failed') return statusResponse(412, 'Precondition Failed', { etag });
  if (pre === 'not-modified') {
    delete headers['content-type'];
    delete headers['accept-ranges'];
    return { status: 304, headers };
  }
  return undefined;
}

/** The response being made: its status and header fields, the byte range, gzip, and whether it is for HEAD. */
interface ResponsePlan {
  status: number;
  headers: Record<string, string>;
  start: number;
  end: number;
  gzip: boolean;
  head: boolean;
}

/** A response from bytes held in memory: the gzip copy (made once and kept in `info.gz`), the range, or all. */
function memoryResponse(r: Resolution, info: FileInfo, held: Buffer, plan: ResponsePlan, options: ResponseOptions): ResponderResponse {
  const { status, headers } = plan;
  let bytes: Buffer = held;
  if (plan.gzip) {
    if (info.gz === undefined) {
      info.gz = gzipSync(held);
      r.weight += info.gz.length;
      options.onHeld(info.gz.length);
    }
    bytes = info.gz;
    headers['content-encoding'] = 'gzip';
  } else if (status === 206) {
    bytes = bytes.subarray(plan.start, plan.end);
  }
  headers['content-length'] = String(bytes.length);
  return plan.head ? { status, headers } : { status, headers, body: { type: 'bytes', bytes } };
}

/** Serves a file without bytes in memory through a descriptor, with metadata from that descriptor. */
export async function respondFromDescriptor(
  req: ResponderRequest,
  r: Resolution,
  options: ResponseOptions,
): Promise<ResponderResponse> {
  const handle = await open(r.real!, 'r');
  let res: ResponderResponse | undefined;
  try {
    const st = await handle.stat();
    if (!st.isFile()) return statusResponse(404, 'Not Found');
    res = respond(req, r, infoFrom(st), handle, options);
    return res;
  } finally {
    if (res?.body?.type !== 'file') await handle.close();
  }
}
