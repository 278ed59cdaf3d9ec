/**
 * Reads what `check` needs of a dump's package: the names and sizes of its files (a ZIP's central directory
 * only; a WARC package's records by id, every record's framing and digests checked) and the bytes of its
 * manifest (`manifest.xml`, or a WARC package's manifest record). Nothing is extracted.
 * @see Z39.99 §11.2 (the manifest is `manifest.xml` at the root of the package); docs/source.md "Dumps as WARC"
 */
import { open } from 'node:fs/promises';
import { LIMITS } from '../core/constants.js';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { readWarcPayload, scanWarc } from '../node/warc-read.js';
import { capped, listEntries, openEntry, openZip, type ZipFile } from '../node/zip-read.js';

/** The files of a package and its manifest. */
export interface PackageContents {
  /** Uncompressed size of each file, by name. */
  files: Map<string, number>;
  /** The bytes of `manifest.xml`, when present. */
  manifest?: Buffer;
}

/** Most files listed in one package. */
const MAX_FILES = 1_000_000;

function zipError(file: string, error: unknown): ResourceSyncError {
  const message = messageOf(error);
  return new ResourceSyncError('RS_ZIP', `Package '${file}' cannot be read: ${message}.`, {
    data: { path: file },
    cause: error,
  });
}

/**
 * Lists a ZIP file and reads its `manifest.xml` (at most `LIMITS.maxBytes`), through the Destination's bounded
 * ZIP reader (`src/node/zip-read.ts`).
 * @throws ResourceSyncError RS_ZIP when the file is not a readable ZIP, RS_LIMIT_* beyond the bounds
 * @example const { files, manifest } = await readPackage('/tmp/part1.zip');
 */
export async function readPackage(file: string): Promise<PackageContents> {
  if (await isWarc(file)) return readWarcPackage(file);
  let zip: ZipFile;
  try {
    zip = await openZip(file);
  } catch (e) {
    throw zipError(file, e);
  }
  try {
    const entries = await listEntries(zip, MAX_FILES, file);
    const files = new Map<string, number>();
    for (const [name, entry] of entries) if (!name.endsWith('/')) files.set(name, entry.uncompressedSize);
    const manifest = entries.get('manifest.xml');
    if (manifest === undefined) return { files };
    if (manifest.uncompressedSize > LIMITS.maxBytes) {
      throw new ResourceSyncError('RS_LIMIT_BYTES', `Package '${file}': manifest.xml is larger than ${LIMITS.maxBytes} bytes.`, {
        data: { path: file },
      });
    }
    const chunks: Uint8Array[] = [];
    for await (const c of capped(await openEntry(zip, manifest, file), LIMITS.maxBytes, 'manifest.xml', () => {})) chunks.push(c);
    return { files, manifest: Buffer.concat(chunks) };
  } catch (e) {
    throw e instanceof ResourceSyncError ? e : zipError(file, e);
  } finally {
    zip.close();
  }
}

/** A WARC package (plain or gzipped) by its first bytes. */
async function isWarc(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const b = Buffer.alloc(5);
    const { bytesRead } = await fh.read(b, 0, 5, 0);
    return (bytesRead >= 2 && b[0] === 0x1f && b[1] === 0x8b) || b.subarray(0, bytesRead).toString('latin1') === 'WARC/';
  } finally {
    await fh.close();
  }
}

/** The bitstream records of a WARC package by id, and its manifest: the first `metadata` XML record before them. */
async function readWarcPackage(file: string): Promise<PackageContents> {
  const fh = await open(file, 'r');
  try {
    const files = new Map<string, number>();
    let manifestAt: number | undefined;
    for await (const r of scanWarc(fh, { maxRecords: MAX_FILES })) {
      if (r.type === 'metadata' && manifestAt === undefined && files.size === 0 && /^(application|text)\/xml\b/i.test(r.contentType ?? '')) {
        if (r.contentLength > LIMITS.maxBytes) {
          throw new ResourceSyncError('RS_LIMIT_BYTES', `Package '${file}': its manifest is larger than ${LIMITS.maxBytes} bytes.`, { data: { path: file } });
        }
        manifestAt = r.offset;
      } else if (r.type === 'resource' || r.type === 'response') {
        files.set(r.id, r.contentLength - r.payloadStart);
      }
    }
    if (manifestAt === undefined) return { files };
    const chunks: Buffer[] = [];
    for await (const c of readWarcPayload(fh, manifestAt)) chunks.push(c);
    return { files, manifest: Buffer.concat(chunks) };
  } finally {
    await fh.close();
  }
}
