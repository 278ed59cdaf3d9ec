// Baseline from a Resource Dump (Z39.99 §11): a stored ZIP of 300 × 1 MiB files served from node:http on
// 127.0.0.1, applied with applyResourceDump (download + verify package, then read ZIP + verify sha-256 +
// atomic write of each bitstream). Baseline in the same run: read the same ZIP from disk and hash it.
// Prints `name: value unit (ratio x baseline)`; never fails on a missed target.
import { createHash } from 'node:crypto';
import { createReadStream, existsSync } from 'node:fs';
import { mkdir, open, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import yauzl from 'yauzl';
import yazl from 'yazl';
import { createAuthority } from '../dist/src/client/authority.js';
import { applyResourceDump } from '../dist/src/destination/dump.js';
import { RenameOnly } from '../dist/src/node/durability.js';
import { createHttpClient } from '../dist/src/client/http-client.js';
import { createMapper } from '../dist/src/destination/mapper.js';
import { createLocalDirectory } from '../dist/src/destination/local-directory.js';

const FILES = Number(process.env.DUMP_BENCH_FILES ?? 300);
const CONCURRENCY = Number(process.env.DUMP_BENCH_CONCURRENCY ?? 4);
const SIZE = 1024 * 1024;
const TARGET_EXTRACT = 250; // MB/s, stored ZIP read + verify + extract
const DATA = fileURLToPath(new URL('./.data/dump/', import.meta.url));
// Manifest hashes: md5 by default (the algorithm of the Z39.99 examples, and the one writeVerified always
// computes for the state store); DUMP_BENCH_HASH=sha-256 or =md5,sha-256 to compare.
const HASHES = (process.env.DUMP_BENCH_HASH ?? 'md5').split(',');
const ZIP = join(DATA, `stored-${FILES}-${HASHES.join('+')}.zip`);
const META = join(DATA, `stored-${FILES}-${HASHES.join('+')}.json`);
const MB = 1e6;

function content(i) {
  // 1 MiB per file: a fixed pseudo-random block with the file number stamped in, so every file differs.
  const buf = Buffer.alloc(SIZE);
  let x = 2463534242;
  for (let j = 0; j < SIZE; j += 4) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    buf.writeUInt32LE(x >>> 0, j);
  }
  buf.write(`file ${i} `, 0);
  return buf;
}

async function build() {
  if (existsSync(ZIP) && existsSync(META)) return JSON.parse(await readFile(META, 'utf8'));
  await mkdir(DATA, { recursive: true });
  const base = content(0);
  const items = [];
  const zip = new yazl.ZipFile();
  for (let i = 0; i < FILES; i++) {
    const data = Buffer.from(base);
    data.write(`file ${i} `, 0);
    const name = `files/f${String(i).padStart(4, '0')}.bin`;
    const hash = HASHES.map(
      (a) =>
        `${a}:${createHash(a === 'md5' ? 'md5' : a === 'sha-1' ? 'sha1' : 'sha256')
          .update(data)
          .digest('hex')}`,
    ).join(' ');
    items.push({ loc: `/${name}`, path: `/${name}`, length: data.length, hash });
    zip.addBuffer(data, name, { compress: false });
  }
  const manifestFor = (origin) =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n` +
    `<rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="resourcedump-manifest" at="2024-01-01T00:00:00Z"/>\n` +
    items
      .map(
        (it) =>
          `<url><loc>${origin}${it.loc}</loc><rs:md hash="${it.hash}" length="${it.length}" path="${it.path}"/></url>\n`,
      )
      .join('') +
    '</urlset>\n';
  // The manifest names resources under a fixed origin placeholder, replaced by nothing: locs are relative to the
  // bench server, so write them against http://bench.invalid and map that base.
  zip.addBuffer(Buffer.from(manifestFor('http://bench.invalid')), 'manifest.xml', { compress: false });
  zip.end();
  const out = (await import('node:fs')).createWriteStream(ZIP);
  await new Promise((resolve, reject) => {
    zip.outputStream.pipe(out).on('finish', resolve).on('error', reject);
  });
  const hash = createHash('sha256');
  for await (const c of createReadStream(ZIP, { highWaterMark: 1 << 20 })) hash.update(c);
  const meta = { length: (await stat(ZIP)).size, sha256: hash.digest('hex') };
  await writeFile(META, JSON.stringify(meta));
  return meta;
}

async function rawBaseline() {
  const t0 = performance.now();
  const hash = createHash('sha256');
  let n = 0;
  for await (const c of createReadStream(ZIP, { highWaterMark: 1 << 20 })) {
    hash.update(c);
    n += c.length;
  }
  hash.digest('hex');
  return { bytes: n, ms: performance.now() - t0 };
}

/** Bare loop over the same ZIP: list entries, read each stored range in 1 MiB chunks, md5, write the file. */
async function bareLoop(out) {
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  const t0 = performance.now();
  const zip = await new Promise((res, rej) =>
    yauzl.open(ZIP, { lazyEntries: true, autoClose: false }, (e, z) => (e ? rej(e) : res(z))),
  );
  const entries = await new Promise((res) => {
    const a = [];
    zip.on('entry', (e) => {
      a.push(e);
      zip.readEntry();
    });
    zip.on('end', () => res(a));
    zip.readEntry();
  });
  let n = 0;
  for (const [i, e] of entries.entries()) {
    if (e.fileName === 'manifest.xml') continue;
    const { fileDataStart } = await zip.readLocalFileHeaderPromise(e, { minimal: true });
    const h = createHash('md5');
    const fh = await open(join(out, String(i)), 'w');
    for await (const c of createReadStream(ZIP, {
      start: fileDataStart,
      end: fileDataStart + e.compressedSize - 1,
      highWaterMark: 1 << 20,
    })) {
      h.update(c);
      await fh.write(c);
      n += c.length;
    }
    h.digest('hex');
    await fh.close();
  }
  zip.close();
  const ms = performance.now() - t0;
  await rm(out, { recursive: true, force: true });
  return { bytes: n, ms };
}

async function main() {
  const tb = performance.now();
  const meta = await build();
  const buildMs = performance.now() - tb;
  const server = createServer((req, res) => {
    if (req.url === '/dump.xml') {
      const origin = `http://127.0.0.1:${server.address().port}`;
      const body =
        `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">` +
        `<rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="resourcedump" at="2024-01-01T00:00:00Z"/>` +
        `<url><loc>${origin}/pkg.zip</loc><rs:md type="application/zip" length="${meta.length}" hash="sha-256:${meta.sha256}"/></url></urlset>`;
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
    } else if (req.url === '/pkg.zip') {
      res.writeHead(200, { 'content-type': 'application/zip', 'content-length': meta.length });
      createReadStream(ZIP, { highWaterMark: 1 << 20 }).pipe(res);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  const dest = join(DATA, 'dest');
  await rm(dest, { recursive: true, force: true });
  await mkdir(dest, { recursive: true });
  const authority = createAuthority({ origins: [origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 60_000 });
  const mapper = createMapper({ base: 'http://bench.invalid/' });

  await rawBaseline(); // warm the page cache
  const raw = await rawBaseline();
  const t0 = performance.now();
  const report = await applyResourceDump({
    dumpUrl: `${origin}/dump.xml`,
    http,
    authority,
    storage: createLocalDirectory(dest, { durability: new RenameOnly() }),
    mapPath: (loc) => mapper.toPath(loc),
    concurrency: CONCURRENCY,
  });
  const totalMs = performance.now() - t0;
  const raw2 = await rawBaseline();
  const bare = await bareLoop(join(DATA, 'bare'));
  await http.close();
  server.close();
  if (report.failures.length > 0 || report.extracted !== FILES) {
    console.log(
      `dump bench: FAILED ${JSON.stringify(report.failures.slice(0, 3))} extracted ${report.extracted}/${FILES}`,
    );
  }
  const rawMBs = raw.bytes / MB / (Math.min(raw.ms, raw2.ms) / 1000);
  const extractMBs = report.bytes / MB / (report.timings.extractMs / 1000);
  const downloadMBs = report.packageBytes / MB / (report.timings.downloadMs / 1000);
  const totalMBs = report.bytes / MB / (totalMs / 1000);
  const r = (v) => (v / rawMBs).toFixed(2);
  console.log(`dump raw read+sha-256 of the ZIP (baseline): ${rawMBs.toFixed(0)} MB/s (1.00x baseline)`);
  const bareMBs = bare.bytes / MB / (bare.ms / 1000);
  console.log(
    `dump bare loop (range read + md5 + write, no temp/rename/checks): ${bareMBs.toFixed(0)} MB/s (${r(bareMBs)}x baseline)`,
  );
  console.log(
    `dump extract (ZIP read + ${HASHES.join('+')} verify + atomic write, stored, ${FILES} x 1 MiB, concurrency ${CONCURRENCY}): ${extractMBs.toFixed(0)} MB/s (${r(extractMBs)}x baseline, ${(extractMBs / bareMBs).toFixed(2)}x bare loop)`,
  );
  console.log(
    `dump package download + verify (node:http on 127.0.0.1): ${downloadMBs.toFixed(0)} MB/s (${r(downloadMBs)}x baseline)`,
  );
  console.log(
    `dump whole pipeline (dump document + download + extract): ${totalMBs.toFixed(0)} MB/s (${r(totalMBs)}x baseline)`,
  );
  console.log(`dump extract target ≥${TARGET_EXTRACT} MB/s: ${extractMBs >= TARGET_EXTRACT ? 'met' : 'MISSED'}`);
  console.log(`dump fixture build (cached after the first run): ${(buildMs / 1000).toFixed(1)} s`);
  await rm(dest, { recursive: true, force: true });
}

await main();
