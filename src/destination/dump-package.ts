import { open, type FileHandle } from 'node:fs/promises';
import { isResourceSyncError, messageOf } from '../core/errors.js';
import { scanWarc, readWarcPayload } from '../node/warc-read.js';
import { capped, isStored, listEntries, openEntry, openZip, storedEntrySource, type ZipEntry } from '../node/zip-read.js';
import { DOC_LIMITS, rsError, type Run } from './dump-run.js';
import type { ByteSource } from './verified-write.js';

/**
 * A downloaded dump package opened for reading, whatever its format: a ZIP (Z39.99 §11.2: `manifest.xml` at its
 * root, bitstreams by path) or a WARC (docs/source.md "Dumps as WARC": the manifest as the first `metadata`
 * record, bitstreams as `resource` or `response` records named by their record id). The format is told by the
 * file's first bytes, not by the `type` the dump gives.
 * @see Z39.99 §11.1, §11.2, §13.1, §13.2
 */

/** A bitstream of a package. */
export interface PackageBitstream {
  /** Bytes of the bitstream, as the package declares them. */
  size: number;
  /** The record's `WARC-Target-URI` (WARC packages): the manifest entry's `loc` must name the same resource. */
  targetUri?: string;
  /** Its bytes, at most `limit` of them, for `writeVerified` (a ByteSource for a stored ZIP entry). */
  body(limit: number, onBytes: (n: number) => void): Promise<AsyncIterable<Uint8Array> | ByteSource>;
}

/** A package open for reading. */
export interface OpenPackage {
  format: 'zip' | 'warc';
  /** The bitstream a manifest `path` names (after `packageName`). */
  get(name: string): PackageBitstream | undefined;
  /** Every bitstream's name, for those the manifest leaves out. */
  names(): Iterable<string>;
  /** The manifest's name (to leave out of the unused names). */
  manifestName: string;
  /** The bytes of the manifest, at most `DOC_LIMITS.maxBytes`. */
  manifest(): Promise<AsyncIterable<Uint8Array>>;
  close(): Promise<void>;
}

/** Opens the package at `tmp` as ZIP or WARC (by its first bytes). */
export async function openPackage(run: Run, pkgUrl: string, tmp: string): Promise<OpenPackage> {
  const fh = await open(tmp, 'r');
  try {
    const magic = Buffer.alloc(5);
    const { bytesRead } = await fh.read(magic, 0, 5, 0);
    const text = magic.subarray(0, bytesRead).toString('latin1');
    if (text.startsWith('WARC/') || (magic[0] === 0x1f && magic[1] === 0x8b)) return await openWarcPackage(run, pkgUrl, fh);
  } catch (err) {
    await fh.close();
    throw err;
  }
  await fh.close();
  return openZipPackage(run, pkgUrl, tmp);
}

async function openZipPackage(run: Run, pkgUrl: string, tmp: string): Promise<OpenPackage> {
  const zip = await openZip(tmp).catch((err: unknown) => {
    throw rsError('RS_ZIP', `Package '${pkgUrl}' is not a readable ZIP file: ${messageOf(err)}.`, { url: pkgUrl }, err);
  });
  let file: Promise<FileHandle> | undefined;
  let entries: Map<string, ZipEntry>;
  try {
    entries = await listEntries(zip, run.opts.maxEntries ?? 1_000_000, pkgUrl);
  } catch (err) {
    zip.close();
    throw err;
  }
  const bitstream = (entry: ZipEntry, name: string): PackageBitstream => ({
    size: entry.uncompressedSize,
    body: async (limit, onBytes) =>
      isStored(entry)
        ? storedEntrySource(zip, entry, await (file ??= open(tmp, 'r')), onBytes)
        : capped(await openEntry(zip, entry, tmp), limit, name, onBytes),
  });
  return {
    format: 'zip',
    manifestName: 'manifest.xml',
    get: (name) => {
      const entry = entries.get(name);
      return entry === undefined || name.endsWith('/') ? undefined : bitstream(entry, name);
    },
    names: () => [...entries.keys()].filter((n) => !n.endsWith('/')),
    manifest: async () => {
      const entry = entries.get('manifest.xml');
      if (entry === undefined) throw rsError('RS_ZIP', `Package '${pkgUrl}' has no manifest.xml at its top level.`, { url: pkgUrl });
      return capped(await openEntry(zip, entry), DOC_LIMITS.maxBytes, 'manifest.xml', () => {});
    },
    close: async () => {
      zip.close();
      await file?.then((h) => h.close()).catch(() => undefined);
    },
  };
}

/** Where a bitstream's record is in a WARC package. */
interface WarcLocation {
  offset: number;
  payloadStart: number;
  size: number;
  targetUri?: string;
}

/**
 * Scans the whole WARC package once (every record's framing and digests verified, bounded in records and in
 * bytes by the run's caps), indexing its bitstream records by id; reads them again at their offsets when applied.
 */
async function openWarcPackage(run: Run, pkgUrl: string, fh: FileHandle): Promise<OpenPackage> {
  const records = new Map<string, WarcLocation>();
  let manifest: { id: string; offset: number } | undefined;
  const maxRecordBytes = Math.max(0, run.maxTotal - run.extractedTotal);
  try {
    // the manifest record counts too: at most DOC_LIMITS.maxBytes more than the cap on extracted bytes
    for await (const r of scanWarc(fh, { maxRecords: (run.opts.maxEntries ?? 1_000_000) + 2, maxRecordBytes, maxTotalBytes: maxRecordBytes + DOC_LIMITS.maxBytes })) {
      if (r.type === 'metadata' && manifest === undefined && records.size === 0 && /^(application|text)\/xml\b/i.test(r.contentType ?? '')) {
        if (r.contentLength > DOC_LIMITS.maxBytes) throw rsError('RS_LIMIT_BYTES', `Package '${pkgUrl}': its manifest is larger than ${DOC_LIMITS.maxBytes} bytes.`, { url: pkgUrl });
        manifest = { id: r.id, offset: r.offset };
        continue;
      }
      if (r.type !== 'resource' && r.type !== 'response') continue;
      if (records.has(r.id)) throw rsError('RS_WARC', `Package '${pkgUrl}' has two records with id '${r.id}'.`, { url: pkgUrl, path: r.id });
      records.set(r.id, { offset: r.offset, payloadStart: r.payloadStart, size: r.contentLength - r.payloadStart, ...(r.targetUri === undefined ? {} : { targetUri: r.targetUri }) });
    }
  } catch (err) {
    await fh.close();
    if (isResourceSyncError(err)) throw rsError(err.code, `Package '${pkgUrl}' is refused: ${err.message}`, { ...err.data, url: pkgUrl }, err);
    throw rsError('RS_WARC', `Package '${pkgUrl}' cannot be read: ${messageOf(err)}.`, { url: pkgUrl }, err);
  }
  if (manifest === undefined) {
    await fh.close();
    throw rsError('RS_WARC', `Package '${pkgUrl}' has no manifest (a metadata record of type application/xml before its bitstreams).`, { url: pkgUrl });
  }
  const at = manifest.offset;
  return {
    format: 'warc',
    manifestName: manifest.id,
    get: (name) => {
      const loc = records.get(name);
      if (loc === undefined) return undefined;
      return {
        size: loc.size,
        ...(loc.targetUri === undefined ? {} : { targetUri: loc.targetUri }),
        body: (limit, onBytes) => Promise.resolve(countBytes(readWarcPayload(fh, loc.offset, loc.payloadStart), limit, name, onBytes)),
      };
    },
    names: () => records.keys(),
    manifest: () => Promise.resolve(countBytes(readWarcPayload(fh, at), DOC_LIMITS.maxBytes, 'manifest', () => {})),
    close: () => fh.close(),
  };
}

/** The bytes of a record, reported as they go, and refused past `limit`. */
async function* countBytes(body: AsyncIterable<Uint8Array>, limit: number, what: string, onBytes: (n: number) => void): AsyncGenerator<Uint8Array> {
  let n = 0;
  for await (const chunk of body) {
    n += chunk.byteLength;
    if (n > limit) throw rsError('RS_LIMIT_BYTES', `WARC record '${what}' is longer than ${limit} bytes.`, { path: what, limit });
    onBytes(chunk.byteLength);
    yield chunk;
  }
}
