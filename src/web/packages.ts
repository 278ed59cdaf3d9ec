/**
 * A dump's package as the page shows it: its files (names and sizes, from the ZIP's central directory) and
 * a page of its manifest's entries. The package is downloaded (bounded) to a temporary file, which is
 * removed once read; the last few packages' manifests are kept so that paging does not download again.
 * @see Z39.99 §11.2 (Resource Dump package, `manifest.xml`), §13.2 (Change Dump package)
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceSyncError } from '../core/errors.js';
import { readDocument } from '../core/xml/read-document.js';
import { readPackage } from '../check/package.js';
import type { HttpGet } from '../client/http.js';
import { downloadToFile } from '../client/download-to-file.js';
import { PAGED_READ, pageOfEntries, type EntriesPage } from './entries.js';

/** A package and one page of its manifest. */
export interface PackagePage {
  doc: string;
  /** Bytes of the ZIP file. */
  bytes: number;
  /** Files in the package (manifest.xml included). */
  files: number;
  /** Uncompressed bytes of the files. */
  uncompressed: number;
  /** The manifest's entries, a page; absent when the package has no `manifest.xml`. */
  manifest?: EntriesPage;
}

interface Loaded {
  bytes: number;
  files: number;
  uncompressed: number;
  manifest?: Buffer;
}

/** Downloads and reads packages, keeping the last `keep` of them. */
export class PackageReader {
  readonly #http: HttpGet;
  readonly #maxBytes: number;
  readonly #tmpDir: string;
  readonly #keep: number;
  readonly #cache = new Map<string, Promise<Loaded>>();

  constructor(o: { http: HttpGet; maxBytes: number; tmpDir?: string; keep?: number }) {
    this.#http = o.http;
    this.#maxBytes = o.maxBytes;
    this.#tmpDir = o.tmpDir ?? tmpdir();
    this.#keep = o.keep ?? 2;
  }

  /**
   * Page `page` of the package's manifest.
   * @example const p = await packages.read('https://example.com/dump/part1.zip', 0, 100, 50_000, '');
   */
  async read(url: string, page: number, pageSize: number, scanLimit: number, q: string, signal?: AbortSignal): Promise<PackagePage> {
    let loading = this.#cache.get(url);
    if (loading === undefined) {
      loading = this.#load(url, signal);
      this.#cache.set(url, loading);
      loading.catch(() => this.#cache.delete(url));
      while (this.#cache.size > this.#keep) this.#cache.delete(this.#cache.keys().next().value!);
    }
    const loaded = await loading;
    const out: PackagePage = { doc: url, bytes: loaded.bytes, files: loaded.files, uncompressed: loaded.uncompressed };
    if (loaded.manifest === undefined) return out;
    const manifest = await pageOfEntries(await readDocument(loaded.manifest, PAGED_READ), `${url}#manifest.xml`, { page, pageSize, scanLimit, q });
    return { ...out, manifest };
  }

  async #load(url: string, signal?: AbortSignal): Promise<Loaded> {
    const res = await this.#http(url, signal === undefined ? {} : { signal });
    if (res.status !== 200) {
      await res.discard();
      throw new ResourceSyncError('RS_HTTP_STATUS', `GET '${url}' answered HTTP ${res.status}.`, {
        data: { url, actual: res.status, expected: 200 },
      });
    }
    const dir = await mkdtemp(join(this.#tmpDir, 'rs-web-'));
    const file = join(dir, 'package.zip');
    try {
      const { bytes } = await downloadToFile(res, file, {
        url,
        maxBytes: this.#maxBytes,
        ...(signal === undefined ? {} : { signal }),
      });
      const contents = await readPackage(file);
      let uncompressed = 0;
      for (const size of contents.files.values()) uncompressed += size;
      return {
        bytes,
        files: contents.files.size,
        uncompressed,
        ...(contents.manifest === undefined ? {} : { manifest: contents.manifest }),
      };
    } finally {
      await res.discard().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    }
  }
}
