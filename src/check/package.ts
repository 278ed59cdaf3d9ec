/**
 * Reads what `check` needs of a dump's ZIP package: the names and sizes of its files (central directory
 * only) and the bytes of its `manifest.xml`. Nothing is extracted.
 * @see Z39.99 §11.2 (the manifest is `manifest.xml` at the root of the package)
 */
import yauzl from 'yauzl';
import { LIMITS } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';

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
  const message = error instanceof Error ? error.message : String(error);
  return new ResourceSyncError('RS_ZIP', `Package '${file}' cannot be read: ${message}.`, {
    data: { path: file },
    cause: error,
  });
}

/**
 * Lists a ZIP file and reads its `manifest.xml` (at most `LIMITS.maxBytes`).
 * @throws ResourceSyncError RS_ZIP when the file is not a readable ZIP, RS_LIMIT_* beyond the bounds
 * @example const { files, manifest } = await readPackage('/tmp/part1.zip');
 */
export function readPackage(file: string): Promise<PackageContents> {
  return new Promise((resolve, reject) => {
    yauzl.open(
      file,
      { lazyEntries: true, autoClose: false, strictFileNames: true, validateEntrySizes: true },
      (err, zip) => {
        if (err) {
          reject(zipError(file, err));
          return;
        }
        const files = new Map<string, number>();
        let manifestEntry: yauzl.Entry | undefined;
        const fail = (e: unknown): void => {
          zip.close();
          reject(e instanceof ResourceSyncError ? e : zipError(file, e));
        };
        zip.on('error', fail);
        zip.on('entry', (entry: yauzl.Entry) => {
          if (files.size >= MAX_FILES) {
            fail(
              new ResourceSyncError('RS_LIMIT_ENTRIES', `Package '${file}' has more than ${MAX_FILES} files.`, {
                data: { path: file, max: MAX_FILES },
              }),
            );
            return;
          }
          if (!entry.fileName.endsWith('/')) files.set(entry.fileName, entry.uncompressedSize);
          if (entry.fileName === 'manifest.xml') manifestEntry = entry;
          zip.readEntry();
        });
        zip.on('end', () => {
          const entry = manifestEntry;
          if (entry === undefined) {
            zip.close();
            resolve({ files });
            return;
          }
          if (entry.uncompressedSize > LIMITS.maxBytes) {
            fail(
              new ResourceSyncError(
                'RS_LIMIT_BYTES',
                `Package '${file}': manifest.xml is larger than ${LIMITS.maxBytes} bytes.`,
                { data: { path: file } },
              ),
            );
            return;
          }
          zip.openReadStream(entry, (e, stream) => {
            if (e) {
              fail(e);
              return;
            }
            const chunks: Buffer[] = [];
            stream.on('data', (c: Buffer) => chunks.push(c));
            stream.on('error', fail);
            stream.on('end', () => {
              zip.close();
              resolve({ files, manifest: Buffer.concat(chunks) });
            });
          });
        });
        zip.readEntry();
      },
    );
  });
}
