/**
 * An OAI-PMH 2.0 harvester's client: the six verbs over the project's HTTP client (timeouts, retries on 5xx with
 * `Retry-After` honoured up to a bound, authority checks), responses streamed through the project's XML reader so
 * that a list is handed out one record at a time and never held whole. Resumption tokens are followed (with or
 * without expiry); a `badResumptionToken` in the middle of a list restarts the list from its first request, at
 * most `maxRestarts` times (records already handed out come again: consumers must be idempotent);
 * `noRecordsMatch` is an empty list, `noSetHierarchy` an empty ListSets.
 * @see OAI-PMH 2.0 §3.1 (HTTP), §3.5 (flow control), §3.6 (errors), §4 (verbs)
 */
import { TextDecoder } from 'node:util';
import { ResourceSyncError } from '../core/errors.js';
import { createAuthority } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import type { HttpGet } from '../client/http.js';
import { OaiResponseReader } from './response-reader.js';
import type { ListArguments, OaiHeader, OaiIdentify, OaiMetadataFormat, OaiRecord, OaiSet } from './types.js';

/** Options of {@link createOaiClient}. */
export interface OaiClientOptions {
  /** The repository's base URL (http or https, no query). */
  baseUrl: string;
  /** The HTTP effect. Default: the project's client allowed to the base URL's origin only, closed by `close()`. */
  http?: HttpGet;
  /** Longest metadata of one record, in characters. Default 16 MiB. */
  maxRecordBytes?: number;
  /** Most records or headers in one list (all its pages). Default 100,000,000. */
  maxRecords?: number;
  /** Most pages (requests) of one list, restarts included. Default 1,000,000. */
  maxPages?: number;
  /** Most restarts of a list after `badResumptionToken`. Default 2. */
  maxRestarts?: number;
  /** Longest response body, in bytes. Default 1 GiB. */
  maxResponseBytes?: number;
  /** Upper bound of a wait that `Retry-After` asks for (default client only). Default 30,000 ms. */
  maxRetryAfterMs?: number;
  /** Retries of a request answered 5xx (503 included) or failing on the network (default client only). Default 4. */
  retries?: number;
  signal?: AbortSignal;
  /** Told when a list restarts after a `badResumptionToken`. */
  onRestart?: (event: { verb: string; restarts: number; token: string }) => void;
}

/** An OAI-PMH client. */
export interface OaiClient {
  readonly baseUrl: string;
  /** `Identify`. @see OAI-PMH 2.0 §4.2 */
  identify(): Promise<OaiIdentify>;
  /** `ListMetadataFormats` (of one item with `identifier`); empty for `noMetadataFormats`. @see OAI-PMH 2.0 §4.4 */
  listMetadataFormats(identifier?: string): Promise<OaiMetadataFormat[]>;
  /** `ListSets`, streamed; empty when the repository has no sets (`noSetHierarchy`). @see OAI-PMH 2.0 §4.6 */
  listSets(): AsyncIterable<OaiSet>;
  /** `ListIdentifiers`, streamed; empty for `noRecordsMatch`. @see OAI-PMH 2.0 §4.5 */
  listIdentifiers(args: ListArguments): AsyncIterable<OaiHeader>;
  /** `ListRecords`, streamed; deleted records come with `deleted: true` and no metadata. @see OAI-PMH 2.0 §4.5 */
  listRecords(args: ListArguments): AsyncIterable<OaiRecord>;
  /** `GetRecord`; undefined for `idDoesNotExist` or `cannotDisseminateFormat`. @see OAI-PMH 2.0 §4.1 */
  getRecord(identifier: string, metadataPrefix: string): Promise<OaiRecord | undefined>;
  /** Closes the default HTTP client (a given one is the caller's). */
  close(): Promise<void>;
}

/** An OAI-PMH error response as a ResourceSyncError (`data.oaiCode`). */
function oaiError(url: string, code: string, message: string): ResourceSyncError {
  return new ResourceSyncError('RS_OAI_PMH', `OAI-PMH request '${url}' failed: ${code}${message === '' ? '' : ` (${message})`}.`, {
    data: { url, oaiCode: code, message },
  });
}

/**
 * Creates an OAI-PMH client for one repository.
 * @example
 * const oai = createOaiClient({ baseUrl: 'https://repo.example/oai' });
 * for await (const record of oai.listRecords({ metadataPrefix: 'oai_dc', from: '2024-01-01' })) console.log(record.identifier);
 * await oai.close();
 */
export function createOaiClient(options: OaiClientOptions): OaiClient {
  const base = new URL(options.baseUrl);
  if ((base.protocol !== 'http:' && base.protocol !== 'https:') || base.search !== '' || base.hash !== '') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${options.baseUrl}' is not an OAI-PMH base URL (http or https, no query).`, { data: { url: options.baseUrl } });
  }
  const own = options.http === undefined;
  const http =
    options.http ??
    createHttpClient({
      authority: createAuthority({ origins: [base.origin] }),
      retries: options.retries ?? 4,
      maxRetryDelayMs: options.maxRetryAfterMs ?? 30_000,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  return new Client(options, http, own);
}

class Client implements OaiClient {
  readonly baseUrl: string;
  readonly #maxRecordChars: number;

  constructor(
    private readonly options: OaiClientOptions,
    private readonly http: HttpGet & { close?: () => Promise<void> },
    private readonly own: boolean,
  ) {
    this.baseUrl = options.baseUrl;
    this.#maxRecordChars = options.maxRecordBytes ?? 16 * 1024 * 1024;
  }

  async identify(): Promise<OaiIdentify> {
    const reader = await this.#whole({ verb: 'Identify' });
    const id = reader.identify;
    if (id.baseURL === undefined || id.earliestDatestamp === undefined) {
      throw new ResourceSyncError('RS_INVALID_DOCUMENT', `The Identify response of '${this.baseUrl}' lacks baseURL or earliestDatestamp.`, { data: { url: this.baseUrl } });
    }
    return {
      repositoryName: id.repositoryName ?? '',
      baseURL: id.baseURL,
      protocolVersion: id.protocolVersion ?? '2.0',
      adminEmail: id.adminEmail,
      earliestDatestamp: id.earliestDatestamp,
      deletedRecord: id.deletedRecord ?? 'no',
      granularity: id.granularity ?? 'YYYY-MM-DD',
      ...(reader.responseDate === undefined ? {} : { responseDate: reader.responseDate }),
    };
  }

  async listMetadataFormats(identifier?: string): Promise<OaiMetadataFormat[]> {
    const reader = await this.#whole({ verb: 'ListMetadataFormats', ...(identifier === undefined ? {} : { identifier }) }, ['noMetadataFormats']);
    return reader.formats;
  }

  async *listSets(): AsyncIterable<OaiSet> {
    for await (const reader of this.#pages({ verb: 'ListSets' }, ['noSetHierarchy'])) {
      yield* reader.sets.splice(0);
    }
  }

  listIdentifiers(args: ListArguments): AsyncIterable<OaiHeader> {
    return this.#items('ListIdentifiers', args);
  }

  listRecords(args: ListArguments): AsyncIterable<OaiRecord> {
    return this.#items('ListRecords', args);
  }

  async getRecord(identifier: string, metadataPrefix: string): Promise<OaiRecord | undefined> {
    const reader = await this.#whole({ verb: 'GetRecord', identifier, metadataPrefix }, ['idDoesNotExist', 'cannotDisseminateFormat']);
    return reader.take()[0];
  }

  async close(): Promise<void> {
    if (this.own) await this.http.close?.();
  }

  /** The items of a list, across its pages. */
  async *#items(verb: string, args: ListArguments): AsyncIterable<OaiRecord> {
    const params: Record<string, string> = { verb, metadataPrefix: args.metadataPrefix };
    if (args.from !== undefined) params['from'] = args.from;
    if (args.until !== undefined) params['until'] = args.until;
    if (args.set !== undefined) params['set'] = args.set;
    const max = this.options.maxRecords ?? 100_000_000;
    let count = 0;
    for await (const reader of this.#pages(params, ['noRecordsMatch'], true)) {
      for (const item of reader.take()) {
        if (++count > max) {
          throw new ResourceSyncError('RS_LIMIT_ENTRIES', `The ${verb} list of '${this.baseUrl}' has more than ${max} items.`, { data: { url: this.baseUrl, limit: max } });
        }
        yield item;
      }
    }
  }

  /**
   * The readers of a list's pages, each handed out several times while its response is read (after each chunk)
   * and once more at its end; resumption tokens followed, `badResumptionToken` restarting the list (bounded).
   */
  async *#pages(first: Record<string, string>, empty: string[], streaming = false): AsyncIterable<OaiResponseReader> {
    const maxPages = this.options.maxPages ?? 1_000_000;
    const maxRestarts = this.options.maxRestarts ?? 2;
    let params = first;
    let restarts = 0;
    let previous: string | undefined;
    for (let page = 1; ; page++) {
      if (page > maxPages) {
        throw new ResourceSyncError('RS_LIMIT_ENTRIES', `The ${first['verb']} list of '${this.baseUrl}' takes more than ${maxPages} requests.`, { data: { url: this.baseUrl, limit: maxPages } });
      }
      const reader = new OaiResponseReader(this.#maxRecordChars);
      const url = this.#url(params);
      for await (const _ of this.#read(url, reader)) if (streaming) yield reader;
      yield reader;
      const error = reader.error;
      if (error !== undefined) {
        const token = params['resumptionToken'];
        if (error.code === 'badResumptionToken' && token !== undefined && restarts < maxRestarts) {
          restarts++;
          this.options.onRestart?.({ verb: first['verb'] ?? '', restarts, token });
          params = first;
          previous = undefined;
          continue;
        }
        if (empty.includes(error.code)) return;
        throw oaiError(url, error.code, error.message);
      }
      const next = reader.token?.value ?? '';
      if (next === '') return;
      if (next === previous || next === params['resumptionToken']) {
        throw new ResourceSyncError('RS_OAI_PMH', `The ${first['verb']} list of '${this.baseUrl}' repeats the resumption token '${next}'.`, { data: { url, token: next } });
      }
      previous = params['resumptionToken'];
      params = { verb: first['verb'] ?? '', resumptionToken: next };
    }
  }

  /** A response read whole (Identify, ListMetadataFormats, GetRecord); an error in `empty` leaves the reader empty. */
  async #whole(params: Record<string, string>, empty: string[] = []): Promise<OaiResponseReader> {
    const reader = new OaiResponseReader(this.#maxRecordChars);
    const url = this.#url(params);
    for await (const _ of this.#read(url, reader));
    const error = reader.error;
    if (error !== undefined && !empty.includes(error.code)) throw oaiError(url, error.code, error.message);
    return reader;
  }

  #url(params: Record<string, string>): string {
    return `${this.baseUrl}?${new URLSearchParams(params).toString()}`;
  }

  /** Requests `url` and feeds its body to `reader`, yielding after each chunk. */
  async *#read(url: string, reader: OaiResponseReader): AsyncIterable<void> {
    const signal = this.options.signal;
    const res = await this.http(url, signal === undefined ? {} : { signal });
    // OAI-PMH errors come with 200; some repositories send them with a 4xx status
    if (res.status !== 200 && !(res.status >= 400 && res.status < 500 && /xml/i.test(res.headers['content-type'] ?? ''))) {
      await res.discard();
      throw new ResourceSyncError('RS_HTTP_STATUS', `OAI-PMH request '${url}' answered HTTP ${res.status}.`, {
        data: { url, status: res.status, retryAfter: res.headers['retry-after'] },
        recoverable: res.status >= 500 || res.status === 429,
      });
    }
    const maxBytes = this.options.maxResponseBytes ?? 1024 ** 3;
    const decoder = new TextDecoder('utf-8', { fatal: true });
    let bytes = 0;
    try {
      for await (const chunk of res.body) {
        bytes += chunk.byteLength;
        if (bytes > maxBytes) throw new ResourceSyncError('RS_LIMIT_BYTES', `OAI-PMH response '${url}' is longer than ${maxBytes} bytes.`, { data: { url, limit: maxBytes } });
        const text = decodeChunk(decoder, chunk, url);
        if (text !== '') reader.feed(text);
        yield;
      }
      const rest = decodeChunk(decoder, undefined, url);
      if (rest !== '') reader.feed(rest);
      reader.finish();
    } catch (error) {
      await res.discard().catch(() => undefined);
      throw withUrl(error, url);
    }
  }
}

function decodeChunk(decoder: TextDecoder, chunk: Uint8Array | undefined, url: string): string {
  try {
    return chunk === undefined ? decoder.decode() : decoder.decode(chunk, { stream: true });
  } catch (cause) {
    throw new ResourceSyncError('RS_XML_ENCODING', `OAI-PMH response '${url}' is not UTF-8.`, { data: { url }, cause });
  }
}

/** A reader's error with the URL of the response added to its data. */
function withUrl(error: unknown, url: string): unknown {
  if (error instanceof ResourceSyncError && error.data['url'] === undefined) error.data['url'] = url;
  return error;
}
