/**
 * `sync --warc`: what a sync fetches, written as WARC/1.1 `response` records (gzip per record) for web archives
 * that replay them, with a CDXJ index beside each file (SURT-sorted keys, as pywb reads them).
 *
 * - Each resource fetched from its URL and verified becomes one `response` record: `WARC-Target-URI` the URL
 *   answered, the HTTP header as received (less `Content-Encoding` and `Transfer-Encoding`, with the
 *   `Content-Length` of the body kept: the body is stored as verified, decoded), `WARC-Block-Digest` and
 *   `WARC-Payload-Digest` (sha1, base32) of those bytes. A body is held in memory up to 4 MiB, spooled to a
 *   file past that. A body that fails verification is not recorded.
 * - Files rotate at `maxBytes` (default 1 GiB) or `maxRecords` (default 100,000, which bounds the CDXJ lines
 *   held in memory). A file being written is named `….warc.gz.open`; once closed its `.cdxj` is written and it
 *   is renamed to `….warc.gz`.
 * - Crash safety: a `.warc.gz.open` left by a killed run is repaired when the next archive opens in that folder:
 *   its records are read and verified, whatever follows the last whole record is truncated away, its CDXJ is
 *   written and it is renamed (`recovered` in the summary).
 * @see ISO 28500:2017; the CDXJ format of pywb (https://pywb.readthedocs.io, "CDXJ Format")
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { open, rename, rm, truncate, type FileHandle } from 'node:fs/promises';
import { STATUS_CODES } from 'node:http';
import { basename, dirname, join } from 'node:path';
import { cdxTimestamp, surtKey, warcDate } from '../core/warc.js';
import { scanWarc, readWarcPayload } from '../node/warc-read.js';
import { WarcWriter, type WarcBlock } from '../node/warc-write.js';
import { writeFileAtomic } from '../node/file-sink.js';
import type { FetchArchive, FetchCapture } from './resource-fetch.js';

/** Options of {@link openWarcArchive}. */
export interface WarcArchiveOptions {
  /** A file name ending in `.warc.gz` (rotated ones get `-00001`, `-00002`… before it), or a folder. */
  path: string;
  /** Bytes per WARC file before the next one is started. Default 1 GiB. */
  maxBytes?: number;
  /** Records per WARC file. Default 100,000. */
  maxRecords?: number;
  now?: () => number;
}

/** What an archive wrote. */
export interface WarcArchiveSummary {
  /** The WARC files written (closed), each with its `.cdxj` beside it. */
  files: string[];
  records: number;
  bytes: number;
  /** Files left half-written by an earlier run, repaired: records kept and bytes cut off. */
  recovered: Array<{ file: string; records: number; truncatedBytes: number }>;
}

/** An open archive: the sync's `archive`, closed by the caller when the sync is done. */
export interface WarcArchive extends FetchArchive {
  close(): Promise<WarcArchiveSummary>;
}

const IN_MEMORY = 4 * 1024 * 1024;
const DROPPED = new Set(['content-encoding', 'transfer-encoding', 'content-length']);

/** One CDXJ line of a record. */
function cdxjLine(url: string, date: string, fields: { mime: string | undefined; status: string; digest: string; length: number; offset: number; filename: string }): string {
  const json = JSON.stringify({ url, ...(fields.mime === undefined ? {} : { mime: fields.mime }), status: fields.status, digest: fields.digest.replace(/^sha1:/, ''), length: String(fields.length), offset: String(fields.offset), filename: fields.filename });
  return `${surtKey(url)} ${cdxTimestamp(date)} ${json}`;
}

/** The HTTP response header kept in a record: as received, for the decoded body of `length` bytes. */
function httpHeader(status: number, headers: Record<string, string>, length: number): Buffer {
  let out = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n`;
  for (const [name, value] of Object.entries(headers)) if (!DROPPED.has(name) && !/[\r\n]/.test(value)) out += `${name}: ${value}\r\n`;
  return Buffer.from(`${out}content-length: ${length}\r\n\r\n`);
}

/**
 * Opens an archive at `options.path` (a folder is created), first repairing files a killed run left open there.
 * @example const archive = await openWarcArchive({ path: '/archive' }); await sync({ source, dest, archive }); await archive.close();
 */
export async function openWarcArchive(options: WarcArchiveOptions): Promise<WarcArchive> {
  const isFile = options.path.endsWith('.warc.gz');
  const folder = isFile ? dirname(options.path) : options.path;
  mkdirSync(folder, { recursive: true });
  const stem = isFile ? basename(options.path).slice(0, -'.warc.gz'.length) : undefined;
  const recovered = [];
  for (const name of readdirSync(folder)) if (name.endsWith('.warc.gz.open')) recovered.push(await repair(join(folder, name)));
  return new Archive(folder, stem, options, recovered);
}

class Archive implements WarcArchive {
  private writer: WarcWriter | undefined;
  private file = '';
  private lines: string[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private spools = 0;
  private readonly summary: WarcArchiveSummary;
  private readonly maxBytes: number;
  private readonly maxRecords: number;
  private readonly now: () => number;

  constructor(
    private readonly folder: string,
    private readonly stem: string | undefined,
    options: WarcArchiveOptions,
    recovered: WarcArchiveSummary['recovered'],
  ) {
    this.summary = { files: [], records: 0, bytes: 0, recovered };
    this.maxBytes = options.maxBytes ?? 2 ** 30;
    this.maxRecords = options.maxRecords ?? 100_000;
    this.now = options.now ?? Date.now;
  }

  capture(url: string, response: { status: number; headers: Record<string, string> }, body: AsyncIterable<Uint8Array>): FetchCapture {
    const date = this.now();
    const chunks: Uint8Array[] = [];
    let size = 0;
    let spool: { file: string; write: Promise<FileHandle> } | undefined;
    const spoolName = join(this.folder, `.warc-spool-${process.pid}-${++this.spools}`);
    async function* tee(): AsyncGenerator<Uint8Array> {
      for await (const chunk of body) {
        size += chunk.byteLength;
        if (spool === undefined && size > IN_MEMORY) spool = { file: spoolName, write: open(spoolName, 'w') };
        if (spool !== undefined) {
          const fh = await spool.write;
          for (const c of chunks.splice(0)) await fh.write(c);
          await fh.write(chunk);
        } else {
          chunks.push(chunk);
        }
        yield chunk;
      }
    }
    const drop = async (): Promise<void> => {
      if (spool !== undefined) {
        await (await spool.write).close().catch(() => undefined);
        await rm(spool.file, { force: true });
      }
    };
    return {
      body: tee(),
      keep: async () => {
        let block: WarcBlock;
        const head = httpHeader(response.status, response.headers, size);
        if (spool !== undefined) {
          await (await spool.write).close();
          block = { file: spool.file, size };
        } else {
          block = Buffer.concat([head, ...chunks]);
        }
        try {
          await this.enqueue(() => this.record(url, date, response, block, head));
        } finally {
          await drop();
        }
      },
      drop,
    };
  }

  /** Runs `task` after the tasks before it (one writer, records in turn). */
  private enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.chain.then(task);
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async record(url: string, date: number, response: { status: number; headers: Record<string, string> }, block: WarcBlock, head: Buffer): Promise<void> {
    const writer = this.writer ?? (await this.start());
    const isFile = !(block instanceof Uint8Array);
    const written = await writer.write({
      type: 'response',
      date,
      targetUri: url,
      contentType: 'application/http; msgtype=response',
      block,
      ...(isFile ? { prefix: head } : { payloadStart: head.length }),
    });
    const mime = response.headers['content-type']?.split(';')[0]!.trim();
    this.lines.push(cdxjLine(url, warcDate(date), { mime, status: String(response.status), digest: written.payloadDigest, length: written.length, offset: written.offset, filename: basename(this.file) }));
    this.summary.records++;
    if (writer.size >= this.maxBytes || this.lines.length >= this.maxRecords) await this.finish();
  }

  /** A new file, with its warcinfo record. */
  private async start(): Promise<WarcWriter> {
    for (let guard = 0; guard < 1_000_000; guard++) {
      const n = this.seq++;
      const name = this.stem !== undefined ? (n === 0 ? this.stem : `${this.stem}-${String(n).padStart(5, '0')}`) : `rs-${cdxTimestamp(warcDate(this.now()))}-${String(n).padStart(5, '0')}`;
      const file = join(this.folder, `${name}.warc.gz`);
      if (existsSync(file) || existsSync(`${file}.open`)) continue;
      this.file = file;
      this.writer = await WarcWriter.open(`${file}.open`);
      await this.writer.write({
        type: 'warcinfo',
        date: this.now(),
        id: `urn:uuid:${randomUUID()}`,
        contentType: 'application/warc-fields',
        fields: [['WARC-Filename', basename(file)]],
        block: Buffer.from('software: resourcesync (sync --warc)\r\nformat: WARC File Format 1.1\r\n'),
        noPayloadDigest: true,
      });
      return this.writer;
    }
    throw new Error(`No free WARC file name in '${this.folder}'.`);
  }

  /** Closes the current file: synced, its CDXJ written, renamed into place. */
  private async finish(): Promise<void> {
    const writer = this.writer;
    if (writer === undefined) return;
    this.writer = undefined;
    await writer.sync();
    this.summary.bytes += writer.size;
    await writer.close();
    await writeCdxj(this.file, this.lines);
    this.lines = [];
    await rename(`${this.file}.open`, this.file);
    this.summary.files.push(this.file);
  }

  async close(): Promise<WarcArchiveSummary> {
    await this.enqueue(() => this.finish());
    return this.summary;
  }
}

/** The sorted CDXJ index of a WARC file, beside it (`x.warc.gz` → `x.cdxj`). */
async function writeCdxj(warcFile: string, lines: string[]): Promise<void> {
  const sorted = [...lines].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  await writeFileAtomic(warcFile.replace(/\.warc\.gz$/, '.cdxj'), [Buffer.from(sorted.map((l) => `${l}\n`).join(''))]);
}

/** Repairs a file a killed run left open: whole records kept, the rest cut off, indexed and renamed. */
async function repair(openFile: string): Promise<{ file: string; records: number; truncatedBytes: number }> {
  const file = openFile.slice(0, -'.open'.length);
  const fh = await open(openFile, 'r');
  const lines: string[] = [];
  let end = 0;
  let records = 0;
  const { size } = await fh.stat();
  try {
    for await (const r of scanWarc(fh)) {
      end = r.offset + r.length;
      if (r.type !== 'response' || r.targetUri === undefined) continue;
      records++;
      const head = await firstBytes(readWarcPayload(fh, r.offset), Math.min(r.payloadStart, 64 * 1024));
      const status = /^HTTP\/\S+ (\d{3})/.exec(head)?.[1] ?? '';
      const mime = /\r\ncontent-type:\s*([^;\r\n]+)/i.exec(head)?.[1]?.trim();
      lines.push(cdxjLine(r.targetUri, r.date ?? '', { mime, status, digest: r.payloadDigest, length: r.length, offset: r.offset, filename: basename(file) }));
    }
  } catch {
    // a record cut short by the kill: everything from it on goes
  } finally {
    await fh.close();
  }
  if (end === 0) {
    await rm(openFile, { force: true });
    return { file, records: 0, truncatedBytes: size };
  }
  await truncate(openFile, end);
  await writeCdxj(file, lines);
  await rename(openFile, file);
  return { file, records, truncatedBytes: size - end };
}

async function firstBytes(body: AsyncIterable<Uint8Array>, n: number): Promise<string> {
  const parts: Uint8Array[] = [];
  let got = 0;
  for await (const c of body) {
    parts.push(c);
    got += c.byteLength;
    if (got >= n) break;
  }
  return Buffer.concat(parts).subarray(0, n).toString('latin1');
}
