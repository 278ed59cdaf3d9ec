import { ResourceSyncError, isResourceSyncError, type ErrorCode, toError } from '../core/errors.js';
import type { HashValue } from '../core/hash.js';
import type { Entry, Ln } from '../core/model/types.js';
import type { HttpGet } from '../client/http.js';
import type { SourceFacts } from './plan.js';
import type { ResourceRecord } from './state.js';
import type { MirrorStorage } from './mirror-storage.js';
import { writeVerified } from './verified-write.js';
import { mirrorLinks, patchLinks } from './links.js';

/** What fetching a resource needs (part of the applier's options). */
export interface ResourceFetchOptions {
  http: HttpGet;
  /** The mirror's copies (keys are the mapper's paths); settled by the caller. */
  storage: MirrorStorage;
  /** Attempts per resource after a failed verification or a broken body. Default 2 more. */
  verifyRetries: number;
  signal?: AbortSignal;
  /** Fetches a resource through its mirrors and patch links (§14); used when the entry has such links. */
  fetchViaLinks?: (
    entry: Entry,
    relPath: string,
    localKey: string | undefined,
    mtime: Date | undefined,
    how: { preferMirrors: boolean; usePatches: boolean },
  ) => Promise<{ length: number; hashes: Record<string, string> }>;
  /** Try `duplicate` mirrors before the primary URL. */
  preferMirrors?: boolean;
  /** Where the responses fetched from the resources' URLs are recorded (`sync --warc`). */
  archive?: FetchArchive;
}

/** One response being recorded: its body read through `body`; `keep` once the bytes are verified, else `drop`. */
export interface FetchCapture {
  body: AsyncIterable<Uint8Array>;
  keep(): Promise<void>;
  drop(): Promise<void>;
}

/** Records what a sync fetches (a WARC archive: `openWarcArchive`). */
export interface FetchArchive {
  /** Starts recording the response of `url` (the URL that answered, after redirects). */
  capture(url: string, response: { status: number; headers: Record<string, string> }, body: AsyncIterable<Uint8Array>): FetchCapture;
}

const RETRYABLE: ReadonlySet<ErrorCode> = new Set(['RS_HASH_MISMATCH', 'RS_LENGTH_MISMATCH', 'RS_NETWORK', 'RS_HTTP_TIMEOUT']);

/** The §14 links worth keeping with a resource (everything except the transport ones used right away). */
export function keptLinks(entry: Entry): Ln[] | undefined {
  return entry.ln !== undefined && entry.ln.length > 0 ? entry.ln : undefined;
}

/** `record` with the links and the type `entry` gives now (none when it gives none). */
export function withLinks(record: ResourceRecord, entry: Entry): ResourceRecord {
  const { links: _old, type: _type, ...rest } = record;
  const links = keptLinks(entry);
  const type = entry.md?.type;
  return { ...rest, ...(type === undefined ? {} : { type }), ...(links === undefined ? {} : { links }) };
}

/** The state's record of `url` held at `relPath` with the bytes `got` (and the entry's lastmod and links). */
export function toRecord(url: string, relPath: string, entry: Entry, got: { length: number; hashes: Record<string, string> }, etag?: string): ResourceRecord {
  const r: ResourceRecord = { url, path: relPath, length: got.length, hashes: got.hashes };
  if (entry.lastmod !== undefined) r.lastmod = entry.lastmod;
  if (etag !== undefined) r.etag = etag;
  if (entry.md?.type !== undefined) r.type = entry.md.type;
  const links = keptLinks(entry);
  if (links !== undefined) r.links = links;
  return r;
}

/** Takes the record of a copy just written (counts its bytes, records it); a failure fails the attempt. */
export type WrittenCopy = (record: ResourceRecord) => Promise<void>;

/**
 * Fetches a resource into the mirror: from its primary URL (conditionally when an ETag is given), retrying broken
 * bodies and bad bytes, or through its §14 links (a patch onto the local copy, mirrors first, or mirrors after the
 * primary failed). Bytes are verified before they replace the copy; each copy written is handed to `written`
 * within the attempt that wrote it.
 */
export class ResourceFetcher {
  readonly #options: ResourceFetchOptions;
  readonly #written: WrittenCopy;

  constructor(options: ResourceFetchOptions, written: WrittenCopy) {
    this.#options = options;
    this.#written = written;
  }

  /**
   * Fetches, verifies and writes `entry` at `relPath`.
   * @param etag sent as `If-None-Match`; a 304 then answers 'not-modified' and nothing is written
   * @param present a copy is held at `relPath` (a §14.4 patch can apply to it)
   * @param release called once the body is verified, only waiting for the disk
   * @returns 'written' once the copy is written and handed to `written`, or 'not-modified'
   * @throws the last failure once every way is tried (`RS_ABORTED` as soon as the signal is aborted)
   */
  async fetch(
    entry: Entry,
    facts: SourceFacts,
    relPath: string,
    etag: string | undefined,
    present: boolean,
    release?: () => void,
  ): Promise<'written' | 'not-modified'> {
    const options = this.#options;
    const url = entry.loc;
    const mtime = facts.lastmod === undefined ? undefined : new Date(facts.lastmod);
    const expected: { length?: number; hashes?: HashValue[] } = {};
    if (facts.length !== undefined) expected.length = facts.length;
    if (facts.hashes.length > 0) expected.hashes = facts.hashes;
    const viaLinks = options.fetchViaLinks;
    // the relations read as links.ts follows them (a space-separated, case-insensitive list; Z39.99 §14.2, §14.4)
    const hasMirrors = mirrorLinks(entry).length > 0;
    const hasPatch = patchLinks(entry).length > 0;
    if (viaLinks !== undefined && ((hasPatch && present) || (hasMirrors && options.preferMirrors === true))) {
      // §14.4 a patch onto the local copy, or §14.2 mirrors first: the links module tries them, then the primary
      const got = await viaLinks(entry, relPath, present ? relPath : undefined, mtime, { preferMirrors: options.preferMirrors === true, usePatches: true });
      await this.#written(toRecord(url, relPath, entry, got));
      return 'written';
    }
    let lastErr: unknown;
    for (let attempt = 0; attempt <= options.verifyRetries; attempt++) {
      if (options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', `Sync of '${url}' aborted.`, { data: { url } });
      try {
        const init: { headers?: Record<string, string>; signal?: AbortSignal } = {};
        if (etag !== undefined) init.headers = { 'if-none-match': etag };
        if (options.signal !== undefined) init.signal = options.signal;
        const res = await options.http(url, init);
        if (res.status === 304 && etag !== undefined) {
          await res.discard();
          return 'not-modified';
        }
        if (res.status !== 200) {
          await res.discard();
          throw new ResourceSyncError('RS_HTTP_STATUS', `URL '${url}' answered HTTP ${res.status}.`, { data: { url, status: res.status }, recoverable: true });
        }
        const capture = options.archive?.capture(res.url || url, res, res.body);
        let written;
        try {
          written = await writeVerified({
            storage: options.storage,
            relPath,
            body: capture?.body ?? res.body,
            expected,
            ...(mtime !== undefined ? { mtime } : {}),
            ...(release !== undefined ? { onVerified: release } : {}),
          });
        } catch (err) {
          await capture?.drop();
          throw err;
        }
        await capture?.keep();
        await this.#written(toRecord(url, relPath, entry, written, res.headers['etag']));
        return 'written';
      } catch (err) {
        lastErr = err;
        // the HTTP client already retried failures before the answer; broken bodies and bad bytes are retried here
        if (!isResourceSyncError(err) || !RETRYABLE.has(err.code)) break;
        if ((err.code === 'RS_NETWORK' || err.code === 'RS_HTTP_TIMEOUT') && err.data['phase'] !== 'body') break;
      }
    }
    if (viaLinks !== undefined && hasMirrors) {
      // §14.2: the primary failed; the mirrors in `pri` order
      try {
        const got = await viaLinks(entry, relPath, undefined, mtime, { preferMirrors: true, usePatches: false });
        await this.#written(toRecord(url, relPath, entry, got));
        return 'written';
      } catch (err) {
        if (isResourceSyncError(err, 'RS_ABORTED')) throw err;
        lastErr = err;
      }
    }
    throw toError(lastErr);
  }
}
