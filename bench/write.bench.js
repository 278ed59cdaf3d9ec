// Writing benchmark: 1,000,000 Resource List entries (loc, lastmod, md5 hash, length, type) through
// writeDocument into a file with backpressure (writeFileAtomic awaits every write), plain and gzipped.
// Baselines measured in the same run: writing the same number of bytes of a pre-built string in
// 256 KiB chunks, and gzipping those bytes. Targets (issue 2): ≥200,000 entries/s plain, ≥100,000/s gzipped.
import { mkdir, rm, stat } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createGzip } from 'node:zlib';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { setInterval, clearInterval } from 'node:timers';
import { writeDocument } from '../dist/src/core/xml/write-document.js';
import { writeDocumentSet } from '../dist/src/core/xml/write-document-set.js';
import { fileSink, writeFileAtomic } from '../dist/src/node/file-sink.js';

const N = Number(process.env.RS_BENCH_WRITE_ENTRIES ?? 1_000_000);
const DATA = fileURLToPath(new URL('./.data/', import.meta.url));
const CHUNK = 256 * 1024;
const TYPES = ['text/html', 'application/pdf', 'image/png', 'application/xml'];

const header = {
  root: 'urlset',
  md: { capability: 'resourcelist', at: '2013-01-03T09:00:00Z', completed: '2013-01-03T09:10:00Z' },
  ln: [{ rel: 'up', href: 'http://example.com/dataset1/capabilitylist.xml' }],
};

// Value pools keep the cost of making test data small next to the writer's own cost.
const LASTMODS = Array.from(
  { length: 1440 },
  (_, k) => `2013-01-02T${String((k / 60) | 0).padStart(2, '0')}:${String(k % 60).padStart(2, '0')}:00Z`,
);
const HASHES = Array.from({ length: 4096 }, (_, k) => {
  const h = ((k * 2654435761) >>> 0).toString(16).padStart(8, '0');
  return `md5:${h}${h}${h}${h}`;
});

function* entries(n) {
  for (let i = 0; i < n; i++) {
    yield {
      loc: `http://example.com/dataset1/resources/${i}.html`,
      lastmod: LASTMODS[i % 1440],
      md: { hash: HASHES[i & 4095], length: String(1000 + (i % 100_000)), type: TYPES[i & 3] },
    };
  }
}

/** Runs fn while sampling RSS every 20 ms; returns { seconds, peakMB, result }. */
async function measure(fn) {
  let peak = process.memoryUsage.rss();
  const timer = setInterval(() => {
    const r = process.memoryUsage.rss();
    if (r > peak) peak = r;
  }, 20);
  const t0 = performance.now();
  try {
    const result = await fn();
    const seconds = (performance.now() - t0) / 1000;
    const r = process.memoryUsage.rss();
    if (r > peak) peak = r;
    return { seconds, peakMB: peak / 1024 / 1024, result };
  } finally {
    clearInterval(timer);
  }
}

async function writePrebuilt(path, totalBytes) {
  const chunk = Buffer.from('x'.repeat(CHUNK));
  const out = createWriteStream(path);
  for (let written = 0; written < totalBytes; written += CHUNK) {
    const c = totalBytes - written < CHUNK ? chunk.subarray(0, totalBytes - written) : chunk;
    if (!out.write(c)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
}

/** A minimal hand-written serializer (template strings, no escaping) batched into a write stream with drain. */
async function writeMinimal(path, n) {
  const out = createWriteStream(path);
  let buf =
    '<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n';
  for (const e of entries(n)) {
    buf += `  <url>\n    <loc>${e.loc}</loc>\n    <lastmod>${e.lastmod}</lastmod>\n    <rs:md hash="${e.md.hash}" length="${e.md.length}" type="${e.md.type}"/>\n  </url>\n`;
    if (buf.length >= CHUNK) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf + '</urlset>\n');
  await once(out, 'finish');
}

async function gzipPrebuilt(path, sample, totalBytes) {
  // Real document text repeated, so that deflate sees realistic input.
  function* chunks() {
    for (let written = 0; written < totalBytes; written += sample.length) {
      yield totalBytes - written < sample.length ? sample.subarray(0, totalBytes - written) : sample;
    }
  }
  await pipeline(Readable.from(chunks()), createGzip(), createWriteStream(path));
}

const fmt = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

await mkdir(DATA, { recursive: true });
const plainPath = join(DATA, 'write-resourcelist.xml');
const gzPath = join(DATA, 'write-resourcelist.xml.gz');
const basePath = join(DATA, 'write-baseline.bin');
const baseGzPath = join(DATA, 'write-baseline.bin.gz');
try {
  console.log(`write RSS at start: ${fmt(process.memoryUsage.rss() / 1024 / 1024, 1)} MB`);
  // Warm up the code paths (not measured).
  await writeFileAtomic(plainPath, writeDocument(header, entries(20_000)));

  const plain = await measure(() => writeFileAtomic(plainPath, writeDocument(header, entries(N))));
  const bytes = (await stat(plainPath)).size;
  const base = await measure(() => writePrebuilt(basePath, bytes));
  const minimal = await measure(() => writeMinimal(basePath, N));

  const gz = await measure(() => writeFileAtomic(gzPath, writeDocument(header, entries(N), { gzip: true })));
  const gzBytes = (await stat(gzPath)).size;
  const sampleChunks = [];
  for await (const c of writeDocument(header, entries(2000))) sampleChunks.push(c);
  const baseGz = await measure(() => gzipPrebuilt(baseGzPath, Buffer.concat(sampleChunks), bytes));

  const setDir = join(DATA, 'write-set');
  await mkdir(setDir, { recursive: true });
  const set = await measure(() =>
    writeDocumentSet(header, entries(N), {
      indexUrl: 'http://example.com/dataset1/resourcelist.xml',
      partUrl: (n) => `http://example.com/dataset1/resourcelist-${n}.xml`,
      sink: ({ url }) => fileSink(join(setDir, url.slice(url.lastIndexOf('/') + 1))),
      partEntry: () => ({ md: { at: header.md.at } }),
    }),
  );
  await rm(setDir, { recursive: true, force: true });

  const plainRate = N / plain.seconds;
  const gzRate = N / gz.seconds;
  const mb = bytes / 1024 / 1024;
  console.log(`write entries: ${fmt(N)} (${fmt(mb, 1)} MB uncompressed, ${fmt(gzBytes / 1024 / 1024, 1)} MB gzipped)`);
  console.log(`write plain: ${fmt(plainRate)} entries/s (${fmt(base.seconds / plain.seconds, 2)} x baseline)`);
  console.log(
    `write plain throughput: ${fmt(mb / plain.seconds, 1)} MB/s (${fmt(base.seconds / plain.seconds, 2)} x baseline)`,
  );
  console.log(`write plain peak RSS: ${fmt(plain.peakMB, 1)} MB`);
  console.log(
    `baseline raw write of the same bytes in 256 KiB chunks: ${fmt(mb / base.seconds, 1)} MB/s (${fmt(N / base.seconds)} entries/s equivalent, peak RSS ${fmt(base.peakMB, 1)} MB)`,
  );
  console.log(
    `baseline minimal serializer (template strings, no escaping, drain): ${fmt(N / minimal.seconds)} entries/s; writeDocument ${fmt(minimal.seconds / plain.seconds, 2)} x that`,
  );
  console.log(`write plain target ≥200,000 entries/s: ${plainRate >= 200_000 ? 'met' : 'MISSED'}`);
  console.log(`write gzip: ${fmt(gzRate)} entries/s (${fmt(baseGz.seconds / gz.seconds, 2)} x baseline)`);
  console.log(
    `write gzip throughput: ${fmt(mb / gz.seconds, 1)} MB/s uncompressed (${fmt(baseGz.seconds / gz.seconds, 2)} x baseline)`,
  );
  console.log(`write gzip peak RSS: ${fmt(gz.peakMB, 1)} MB`);
  console.log(
    `baseline gzip of the same bytes (node:zlib, default level): ${fmt(mb / baseGz.seconds, 1)} MB/s (${fmt(N / baseGz.seconds)} entries/s equivalent)`,
  );
  console.log(`write gzip target ≥100,000 entries/s: ${gzRate >= 100_000 ? 'met' : 'MISSED'}`);
  const setRate = N / set.seconds;
  console.log(
    `write set (${set.result.parts.length} parts of ≤50,000 + index): ${fmt(setRate)} entries/s (${fmt(base.seconds / set.seconds, 2)} x baseline), peak RSS ${fmt(set.peakMB, 1)} MB`,
  );
} finally {
  await rm(join(DATA, 'write-set'), { recursive: true, force: true });
  await rm(plainPath, { force: true });
  await rm(gzPath, { force: true });
  await rm(basePath, { force: true });
  await rm(baseGzPath, { force: true });
}
