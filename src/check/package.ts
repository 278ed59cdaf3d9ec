/**
 * Reads what `check` needs of a dump's ZIP package: the names and sizes of its files (central directory
 * only) and the bytes of its `manifest.xml`. Nothing is extracted.
 * @see Z39.99 §11.2 (the manifest is `manifest.xml` at the root of the package)
 */
import { LIMITS } from '../core/constants.js';
import { ResourceSyncError, messageOf } from '../core/errors.js';
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
