import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';

/**
 * Every entry of a ZIP file, read with yauzl, in the order of its central directory. Each entry's bytes
 * are checked against the CRC-32 and the size its central directory records, as `unzip -t` does.
 */
export function unzipEntries(file: string): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    yauzl.open(file, { lazyEntries: true }, (err, zip) => {
      if (err) return reject(err);
      const out = new Map<string, Buffer>();
      zip.on('entry', (e: yauzl.Entry) => {
        zip.openReadStream(e, (err2, rs) => {
          if (err2) return reject(err2);
          const chunks: Buffer[] = [];
          rs.on('data', (c: Buffer) => chunks.push(c));
          rs.on('error', reject);
          rs.on('end', () => {
            const bytes = Buffer.concat(chunks);
            try {
              assert.equal(bytes.length, e.uncompressedSize, `${e.fileName}: size`);
              assert.equal(crc32(bytes), e.crc32, `${e.fileName}: CRC-32`);
            } catch (bad) {
              reject(bad instanceof Error ? bad : new Error(String(bad)));
              return;
            }
            out.set(e.fileName, bytes);
            zip.readEntry();
          });
        });
      });
      zip.on('end', () => resolve(out));
      zip.on('error', reject);
      zip.readEntry();
    });
  });
}

/** Extracts a ZIP file into `dest` (checked as by {@link unzipEntries}); yauzl refuses absolute and `..` names. */
export async function unzipTo(file: string, dest: string): Promise<void> {
  for (const [name, bytes] of await unzipEntries(file)) {
    if (name.endsWith('/')) {
      await mkdir(join(dest, name), { recursive: true });
      continue;
    }
    const path = join(dest, ...name.split('/'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, bytes);
  }
}
