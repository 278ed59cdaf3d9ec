/**
 * The Source server as a web-standard handler: `(Request) => Promise<Response>`, usable with any runtime or
 * framework that speaks the Fetch API, and in tests without a socket. It is a thin wrapper over the same core
 * that the `node:http` adapter writes directly.
 * @see Z39.99 §6.3 (discovery)
 */
import { Readable } from 'node:stream';
import { createGzip } from 'node:zlib';
import type { ResponderBody, ResponderHandler, ResponderResponse } from './request-response.js';
import { createSourceResponder, type SourceServerOptions } from './source-responder.js';

/** A web-standard request handler. */
export type SourceHandler = (request: Request) => Promise<Response>;

/**
 * Serves a Source: resources of the sets, the published documents, `robots.txt`; see `createSourceResponder` for
 * routes, headers and confinement.
 * @example
 * const handler = createSourceHandler({ sets: [{ name: 'data', dir: 'data' }], outDir: 'data/.resourcesync/publish',
 *   baseUrl: 'http://localhost:8080' });
 * const res = await handler(new Request('http://localhost:8080/.well-known/resourcesync'));
 */
export function createSourceHandler(options: SourceServerOptions): SourceHandler {
  return toWebHandler(createSourceResponder(options));
}

/** Wraps a server core as a web-standard handler. */
export function toWebHandler(core: ResponderHandler): SourceHandler {
  return async (request) => {
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const url = new URL(request.url);
    const res = await core({ method: request.method, target: url.pathname + url.search, headers });
    return toWebResponse(res);
  };
}

function bodyInit(body: ResponderBody | undefined): Uint8Array | ReadableStream<Uint8Array> | null {
  if (body === undefined) return null;
  if (body.type === 'bytes') return body.bytes;
  if (body.end <= body.start) {
    void body.handle.close();
    return new Uint8Array(0);
  }
  const file = body.handle.createReadStream({ start: body.start, end: body.end - 1, autoClose: true });
  const stream = body.gzip ? file.pipe(createGzip()) : file;
  if (body.gzip) file.on('error', (e) => stream.destroy(e));
  return Readable.toWeb(stream) as ReadableStream<Uint8Array>;
}

/** Turns a core response description into a web-standard `Response`. */
export function toWebResponse(res: ResponderResponse): Response {
  const body = bodyInit(res.body);
  // A Response cannot carry a body with 204/304; those never have one here.
  return new Response(body, { status: res.status, headers: res.headers });
}
