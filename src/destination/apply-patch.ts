/**
 * Applying a patch link (`rel="patch"`, JSON Patch) to the local copy of a resource: the patch document is
 * fetched (bounded), checked against the link's length and hash, applied to the local copy (bounded), and the
 * result is accepted only when one of its serializations matches the entry's hash and length. The pure
 * RFC 6902 operations are in src/core/json-patch.ts.
 * @see Z39.99 §14.4; RFC 6902
 */
import { createHash } from 'node:crypto';
import { open } from 'node:fs/promises';
import { ResourceSyncError } from '../core/errors.js';
import { isKnownHashAlgorithm, knownHashes, nodeHashName, parseLength, type HashValue } from '../core/hash.js';
import { applyJsonPatch, type JsonValue } from '../core/json-patch.js';
import type { Entry, Ln } from '../core/model/types.js';
import type { HttpGet } from '../client/http.js';
import type { MirrorStorage } from './mirror-storage.js';

/** What applying a patch link needs: the client, the local copy and the bound on what is read. */
export interface PatchOptions {
  http: HttpGet;
  /** Absolute path of the current local copy (without `localKey`). */
  localCopy?: string;
  /** The key of the current copy in `storage`, read there. */
  localKey?: string;
  storage?: MirrorStorage;
  signal?: AbortSignal;
  /** Largest patch document and local copy read, bytes. Default 16 MiB. */
  maxPatchBytes?: number;
}

/** One buffer as an async iterable body (for `writeVerified`). */
export function singleChunk(bytes: Uint8Array): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      let done = false;
      return {
        next: () => {
          const r: IteratorResult<Uint8Array> = done ? { done: true, value: undefined } : { done: false, value: bytes };
          done = true;
          return Promise.resolve(r);
        },
      };
    },
  };
}

async function readCapped(body: AsyncIterable<Uint8Array>, max: number, url: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.byteLength;
    if (total > max) {
      throw new ResourceSyncError('RS_LIMIT_BYTES', `Patch '${url}' is larger than ${max} bytes.`, {
        data: { url, max },
        recoverable: true,
      });
    }
    chunks.push(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
  }
  return Buffer.concat(chunks, total);
}

/**
 * The copy a patch applies to: the storage's copy under `localKey`, else the file `localCopy`, of at most `max`
 * bytes (`RS_LIMIT_BYTES`); a missing copy is a recoverable `RS_IO`.
 */
async function readLocalCopy(options: PatchOptions, max: number): Promise<Uint8Array> {
  if (options.localKey === undefined || options.storage === undefined) return readFileCapped(options.localCopy!, max);
  const bytes = await options.storage.read(options.localKey, { maxBytes: max });
  if (bytes !== undefined) return bytes;
  throw new ResourceSyncError('RS_IO', `Local copy '${options.localKey}' is missing.`, { data: { path: options.localKey }, recoverable: true });
}

/** Reads a whole file of at most `max` bytes, else throws `RS_LIMIT_BYTES`. */
export async function readFileCapped(path: string, max: number): Promise<Buffer> {
  const fh = await open(path, 'r');
  try {
    const { size } = await fh.stat();
    if (size > max)
      throw new ResourceSyncError('RS_LIMIT_BYTES', `Local copy '${path}' is larger than ${max} bytes for patching.`, {
        data: { path, max },
        recoverable: true,
      });
    const buf = Buffer.alloc(size);
    let off = 0;
    while (off < size) {
      const { bytesRead } = await fh.read(buf, off, size - off, off);
      if (bytesRead === 0) break;
      off += bytesRead;
    }
    return buf.subarray(0, off);
  } finally {
    await fh.close();
  }
}

function digestMatches(bytes: Uint8Array, hashes: HashValue[]): boolean {
  return hashes.every(
    (h) =>
      isKnownHashAlgorithm(h.algorithm) &&
      createHash(nodeHashName(h.algorithm)).update(bytes).digest('hex') === h.digest,
  );
}

/**
 * Serializations tried for a patched JSON value: JSON has no canonical form, so the result is
 * accepted only when one of these matches the entry's hash exactly.
 */
function serializations(value: JsonValue): Buffer[] {
  const out: Buffer[] = [];
  for (const indent of [undefined, 2, 4, '\t'] as const) {
    const text = JSON.stringify(value, null, indent);
    out.push(Buffer.from(text), Buffer.from(text + '\n'));
  }
  return out;
}

/**
 * Fetches the patch document of `ln`, checks it against the link's length and hash, and applies it to the
 * local copy; returns the patched bytes that match the entry (`hashes`, length). Throws a recoverable
 * `RS_HTTP_STATUS`, `RS_LIMIT_BYTES`, `RS_LENGTH_MISMATCH`, `RS_HASH_MISMATCH` or `RS_PATCH`.
 */
export async function applyPatchLink(
  url: string,
  ln: Ln,
  entry: Entry,
  options: PatchOptions,
  hashes: HashValue[],
): Promise<Buffer> {
  const max = options.maxPatchBytes ?? 16 * 1024 * 1024;
  const res = await options.http(url, options.signal ? { signal: options.signal } : {});
  if (res.status !== 200) {
    await res.discard();
    throw new ResourceSyncError('RS_HTTP_STATUS', `Patch '${url}' answered HTTP ${res.status}.`, {
      data: { url, status: res.status },
      recoverable: true,
    });
  }
  const patchBytes = await readCapped(res.body, max, url);
  const patchLength = parseLength(ln.length);
  if (patchLength !== undefined && patchLength !== patchBytes.length) {
    throw new ResourceSyncError(
      'RS_LENGTH_MISMATCH',
      `Patch '${url}' has ${patchBytes.length} bytes, not '${ln.length}'.`,
      { data: { url }, recoverable: true },
    );
  }
  const patchHashes = knownHashes(ln.hash);
  if (!digestMatches(patchBytes, patchHashes)) {
    throw new ResourceSyncError('RS_HASH_MISMATCH', `Patch '${url}' does not match its hash.`, {
      data: { url },
      recoverable: true,
    });
  }
  const local = await readLocalCopy(options, max);
  return applyJsonPatchBytes(
    local,
    patchBytes,
    { hashes, ...(parseLength(entry.md?.length) === undefined ? {} : { length: parseLength(entry.md?.length)! }) },
    entry.loc,
  );
}

/**
 * Applies a JSON Patch document (bytes) to a JSON resource (bytes) and returns the new bytes, accepted
 * only when they match `expected.hashes` (and `length`). JSON has no canonical form, so the compact and
 * the usual indented serializations (2, 4 spaces, tab; with or without a final newline) are tried.
 * Throws `RS_PATCH` (not JSON, a failing operation) or `RS_HASH_MISMATCH` (no serialization matches).
 * @example const bytes = applyJsonPatchBytes(await readFile(local), patchBytes, { hashes: parseHashes(entry.md?.hash) }, entry.loc);
 * @see Z39.99 §14.4; RFC 6902
 */
export function applyJsonPatchBytes(
  local: Uint8Array,
  patch: Uint8Array,
  expected: { hashes: HashValue[]; length?: number },
  what: string,
): Buffer {
  const hashes = expected.hashes.filter((h) => isKnownHashAlgorithm(h.algorithm));
  if (hashes.length === 0) {
    throw new ResourceSyncError('RS_PATCH', `Patch for '${what}' cannot be verified: no known hash.`, {
      data: { loc: what },
      recoverable: true,
    });
  }
  let ops: unknown;
  let doc: JsonValue;
  try {
    ops = JSON.parse(Buffer.from(patch).toString('utf8'));
    doc = JSON.parse(Buffer.from(local).toString('utf8')) as JsonValue;
  } catch (err) {
    throw new ResourceSyncError('RS_PATCH', `Patch for '${what}' or its local copy is not JSON.`, {
      data: { loc: what },
      cause: err,
      recoverable: true,
    });
  }
  const result = applyJsonPatch(doc, ops);
  for (const bytes of serializations(result)) {
    if (expected.length !== undefined && bytes.length !== expected.length) continue;
    if (digestMatches(bytes, hashes)) return bytes;
  }
  throw new ResourceSyncError('RS_HASH_MISMATCH', `Patched '${what}' does not match the entry's hash.`, {
    data: { loc: what },
    recoverable: true,
  });
}
