import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FIXTURES } from './paths.js';

/** What the stub answers to one request. */
export interface OaiAnswer {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
}

/** A loopback OAI-PMH stub: `answer` sees each request's parameters and how many requests came before. */
export interface OaiStub {
  /** `http://127.0.0.1:<port>/oai` */
  readonly baseUrl: string;
  /** The query strings of the requests, in order. */
  readonly requests: URLSearchParams[];
  close(): Promise<void>;
}

/** A fixture of test/fixtures/oai/ as text. */
export function oaiFixture(name: string): string {
  return readFileSync(join(FIXTURES, 'oai', name), 'utf8');
}

/**
 * Starts a stub OAI-PMH data provider on 127.0.0.1 port 0 for the quirks a real provider cannot be made to show.
 * Bodies are written in pieces of `chunk` bytes (default 7), so the client's streaming parse meets every boundary.
 * @example const stub = await startOaiStub((q) => ({ body: oaiFixture('dspace-identify.xml') }));
 */
export async function startOaiStub(answer: (query: URLSearchParams, n: number, req: IncomingMessage) => OaiAnswer, chunk = 7): Promise<OaiStub> {
  const requests: URLSearchParams[] = [];
  const server = createServer((req, res) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    requests.push(query);
    const a = answer(query, requests.length - 1, req);
    const body = Buffer.from(a.body ?? '', 'utf8');
    res.writeHead(a.status ?? 200, { 'content-type': 'text/xml; charset=utf-8', ...a.headers });
    let at = 0;
    const next = (): void => {
      if (at >= body.length) {
        res.end();
        return;
      }
      const piece = body.subarray(at, at + chunk);
      at += chunk;
      if (res.write(piece)) setImmediate(next);
      else res.once('drain', next);
    };
    next();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/oai`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
