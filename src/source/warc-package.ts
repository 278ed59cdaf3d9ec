/**
 * Dump packages as WARC (the `warc` dump format): one `.warc.gz` file per package, each record gzipped on its
 * own. Z39.99 names ZIP as the package format and lets communities define others, as long as one dump points
 * to packages of one format (§11.1, §13.1); the 2012 alpha draft meant WARC for its Appendix B and left it
 * empty. The convention written here (docs/source.md, "Dumps as WARC"):
 *
 * 1. a `warcinfo` record first;
 * 2. then the package's manifest (the Resource Dump Manifest or Change Dump Manifest) as a `metadata` record,
 *    `Content-Type: application/xml`, `WARC-Target-URI` the manifest's published URL;
 * 3. then one `resource` record per bitstream, in manifest order: `WARC-Target-URI` the entry's `loc`,
 *    `WARC-Date` its `lastmod` (a change's `datetime`), `Content-Type` its `type`, the block the bitstream,
 *    `WARC-Block-Digest` and `WARC-Payload-Digest` its sha1 in base32; deletions have no record;
 * 4. each manifest entry's `path` is `/` followed by its record's `WARC-Record-ID` without the angle brackets
 *    (`/urn:uuid:…`): a path relative to the package root with a leading slash, as §11.2 and §13.2 ask, that
 *    names exactly one record even when a Change Dump Manifest lists one `loc` twice.
 *
 * The package's `type` in the dump is `application/warc`. The package is written to a temporary file and
 * renamed into place; its length and md5 are measured from the file.
 * @see Z39.99 §11.1, §11.2, §13.1, §13.2; ISO 28500:2017
 */
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import { basename } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { parseW3CDatetime } from '../core/w3c-datetime.js';
import { WARC_MEDIA_TYPE } from '../core/warc.js';
import { WarcWriter, type WarcBlock } from '../node/warc-write.js';
import { writeZipPackage, type PackageItem, type PackageResult } from './zip-package.js';

/** How a dump's packages are written: ZIP (the standard's format) or WARC. */
export type DumpFormat = 'zip' | 'warc';

/** The dump's `type` of a package of each format. @see Z39.99 §11.1 */
export const PACKAGE_MEDIA_TYPES: Record<DumpFormat, string> = { zip: 'application/zip', warc: WARC_MEDIA_TYPE };
/** The file extension of a package of each format. */
export const PACKAGE_EXTENSIONS: Record<DumpFormat, string> = { zip: '.zip', warc: '.warc.gz' };

/** A bitstream of a package, with what a WARC record of it needs. */
export interface DumpItem extends PackageItem {
  /** The resource's URI (`WARC-Target-URI`). */
  loc: string;
  /** `Content-Type` of its record. */
  type?: string;
  /** `WARC-Date` of its record (W3C Datetime: the entry's `lastmod` or `datetime`). */
  date?: string;
  /** The record's id (`urn:uuid:…`), set by {@link bitstreamPath} for WARC packages. */
  recordId?: string;
}

/** Bitstreams up to this size are read whole (one read, one gzip call); larger ones are streamed twice. */
const IN_MEMORY_BYTES = 4 * 1024 * 1024;

/**
 * The manifest `path` of an item in a package of `format`: `/<zipPath>` in a ZIP, `/<record id>` in a WARC
 * (a new `urn:uuid:` id is given to the item).
 * @see Z39.99 §11.2, §13.2 (`path`)
 */
export function bitstreamPath(format: DumpFormat, item: DumpItem): string {
  if (format === 'zip') return `/${item.zipPath}`;
  item.recordId ??= `urn:uuid:${randomUUID()}`;
  return `/${item.recordId}`;
}

/**
 * Writes one package of `format` with `manifest` and `items` (their `path`s given by {@link bitstreamPath}).
 * @example const pkg = await writeDumpPackage('warc', '/pub/rd-part1.warc.gz', manifest, items, { manifestUrl });
 */
export function writeDumpPackage(
  format: DumpFormat,
  outFile: string,
  manifest: Uint8Array,
  items: readonly DumpItem[],
  options: { signal?: AbortSignal; now?: () => number; manifestUrl: string },
): Promise<PackageResult> {
  if (format === 'zip') return writeZipPackage(outFile, manifest, items, options);
  return writeWarcPackage(outFile, manifest, items, options);
}

/** Writes a WARC package (see the module's convention) atomically. */
async function writeWarcPackage(
  outFile: string,
  manifest: Uint8Array,
  items: readonly DumpItem[],
  options: { signal?: AbortSignal; now?: () => number; manifestUrl: string },
): Promise<PackageResult> {
  const now = (options.now ?? Date.now)();
  const tmp = `${outFile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  const writer = await WarcWriter.open(tmp);
  try {
    const info = await writer.write({
      type: 'warcinfo',
      date: now,
      contentType: 'application/warc-fields',
      fields: [['WARC-Filename', basename(outFile)]],
      block: Buffer.from(
        'software: resourcesync\r\nformat: WARC File Format 1.1\r\n' +
          'conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n' +
          'description: ResourceSync dump package; its manifest is the metadata record that follows\r\n',
      ),
      noPayloadDigest: true,
    });
    const infoField = ['WARC-Warcinfo-ID', `<${info.id}>`] as const;
    await writer.write({ type: 'metadata', date: now, targetUri: options.manifestUrl, contentType: 'application/xml', fields: [infoField], block: manifest });
    for (const item of items) {
      if (options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', `Package '${outFile}' was aborted.`, { cause: options.signal.reason });
      await writer.write({
        type: 'resource',
        id: item.recordId ?? `urn:uuid:${randomUUID()}`,
        date: (item.date === undefined ? undefined : parseW3CDatetime(item.date, true)?.ms) ?? item.mtimeMs,
        targetUri: item.loc,
        contentType: item.type ?? 'application/octet-stream',
        fields: [infoField],
        block: await blockOf(item),
        ...(item.md5 !== undefined ? { md5: item.md5 } : {}),
      });
    }
    await writer.close();
    const measured = await measure(tmp);
    await rename(tmp, outFile);
    return measured;
  } catch (err) {
    await writer.close().catch(() => undefined);
    await rm(tmp, { force: true });
    if (err instanceof ResourceSyncError) throw err;
    throw new ResourceSyncError('RS_WARC', `Package '${outFile}' cannot be written.`, { data: { path: outFile }, cause: err });
  }
}

/** The bytes of an item: rewritten, read whole when small, else the file itself (streamed twice). */
async function blockOf(item: DumpItem): Promise<WarcBlock> {
  if (item.rewrite === undefined && item.size > IN_MEMORY_BYTES) return { file: item.file, size: item.size };
  let bytes: Uint8Array;
  try {
    bytes = await readFile(item.file);
  } catch (err) {
    throw new ResourceSyncError('RS_HASH_MISMATCH', `File '${item.file}' changed while it was being packaged.`, { data: { path: item.file }, recoverable: true, cause: err });
  }
  if (item.rewrite !== undefined) bytes = item.rewrite(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (bytes.byteLength !== item.size) {
    throw new ResourceSyncError('RS_HASH_MISMATCH', `File '${item.file}' changed while it was being packaged.`, { data: { path: item.file }, recoverable: true });
  }
  return bytes;
}

/** The length and md5 of a written file. */
async function measure(file: string): Promise<PackageResult> {
  const h = createHash('md5');
  let length = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    h.update(chunk);
    length += chunk.length;
  }
  return { length, md5: h.digest('hex') };
}
