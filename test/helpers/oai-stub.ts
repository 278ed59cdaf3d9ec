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

/** A record the stub lists. */
export interface StubRecord {
  id: string;
  datestamp: string;
  deleted?: boolean;
  title?: string;
}

const ENVELOPE = '<?xml version="1.0" encoding="UTF-8"?>\n<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">';
const esc = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const responseDate = (): string => `<responseDate>${new Date().toISOString().slice(0, 19)}Z</responseDate><request>http://stub/oai</request>`;

/** An Identify answer. */
function identifyXml(granularity = 'YYYY-MM-DDThh:mm:ssZ', deletedRecord = 'persistent'): string {
  return `${ENVELOPE}${responseDate()}<Identify><repositoryName>Stub</repositoryName><baseURL>http://stub/oai</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@stub</adminEmail><earliestDatestamp>2000-01-01T00:00:00Z</earliestDatestamp><deletedRecord>${deletedRecord}</deletedRecord><granularity>${granularity}</granularity></Identify></OAI-PMH>`;
}

/** A ListMetadataFormats answer offering oai_dc. */
function formatsXml(): string {
  return `${ENVELOPE}${responseDate()}<ListMetadataFormats><metadataFormat><metadataPrefix>oai_dc</metadataPrefix><schema>http://www.openarchives.org/OAI/2.0/oai_dc.xsd</schema><metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat></ListMetadataFormats></OAI-PMH>`;
}

function recordXml(r: StubRecord, withMetadata: boolean): string {
  const header = `<header${r.deleted === true ? ' status="deleted"' : ''}><identifier>${esc(r.id)}</identifier><datestamp>${r.datestamp}</datestamp></header>`;
  if (!withMetadata) return header;
  const md = r.deleted === true ? '' : `<metadata><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>${esc(r.title ?? r.id)}</dc:title></oai_dc:dc></metadata>`;
  return `<record>${header}${md}</record>`;
}

/** A ListRecords (or, with `verb`, ListIdentifiers) page; `token` undefined ends the list. */
function listXml(records: readonly StubRecord[], token?: string, verb: 'ListRecords' | 'ListIdentifiers' = 'ListRecords'): string {
  const items = records.map((r) => recordXml(r, verb === 'ListRecords')).join('');
  return `${ENVELOPE}${responseDate()}<${verb}>${items}${token === undefined ? '' : `<resumptionToken>${esc(token)}</resumptionToken>`}</${verb}></OAI-PMH>`;
}

/** A GetRecord answer. */
function getRecordXml(r: StubRecord): string {
  return `${ENVELOPE}${responseDate()}<GetRecord>${recordXml(r, true)}</GetRecord></OAI-PMH>`;
}

/** An OAI-PMH error answer. */
export function errorXml(code: string): string {
  return `${ENVELOPE}${responseDate()}<error code="${code}">${code}</error></OAI-PMH>`;
}

/**
 * A stub repository over `records()` (read at each request): Identify, ListMetadataFormats, ListRecords and
 * ListIdentifiers in pages of `page` with offset tokens `offset:N`, GetRecord; `quirk` may answer a request first.
 */
export function stubRepository(records: () => readonly StubRecord[], page = 50, quirk?: (q: URLSearchParams, n: number) => OaiAnswer | undefined): (q: URLSearchParams, n: number) => OaiAnswer {
  return (q, n) => {
    const special = quirk?.(q, n);
    if (special !== undefined) return special;
    const verb = q.get('verb');
    if (verb === 'Identify') return { body: identifyXml() };
    if (verb === 'ListMetadataFormats') return { body: formatsXml() };
    if (verb === 'GetRecord') {
      const r = records().find((x) => x.id === q.get('identifier'));
      return { body: r === undefined ? errorXml('idDoesNotExist') : getRecordXml(r) };
    }
    const token = q.get('resumptionToken');
    const start = token === null ? 0 : Number(token.slice('offset:'.length));
    const from = q.get('from');
    const all = records().filter((r) => from === null || r.datestamp >= from);
    if (all.length === 0) return { body: errorXml('noRecordsMatch') };
    const next = start + page < all.length ? `offset:${start + page}` : undefined;
    return { body: listXml(all.slice(start, start + page), next, verb === 'ListIdentifiers' ? 'ListIdentifiers' : 'ListRecords') };
  };
}
