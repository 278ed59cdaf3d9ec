// Benchmark: parse + validate a 50,000-entry Resource List (every entry with loc, lastmod, md5
// hash, length and type), and stream a 500,000-entry Resource List Index (index + 10 parts).
// Each measurement runs in a fresh child process, which reports its own peak RSS
// (process.resourceUsage().maxRSS). Baselines measured in the same run: a raw read of the file,
// saxes (strict, namespace-aware) and `xmllint --stream --noout` when it is on PATH.
// Prints `name: value unit (ratio x baseline)` lines; always exits 0.
import { spawnSync } from 'node:child_process';
import { createReadStream, existsSync, mkdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join, dirname, basename } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const DATA = join(HERE, '.data');
const RL = join(DATA, 'resourcelist-50k.xml');
const INDEX_DIR = join(DATA, 'resourcelist-index-500k');
const INDEX = join(INDEX_DIR, 'resourcelist-index.xml');
const PARTS = 10;
const PER_PART = 50_000;

const HEAD = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
`;

function hex(n, len) {
  let s = '';
  let x = (n * 2654435761) >>> 0;
  while (s.length < len) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += x.toString(16).padStart(8, '0');
  }
  return s.slice(0, len);
}

function resourceList(path, count, offset, indexHref) {
  const chunks = [HEAD];
  if (indexHref) chunks.push(`  <rs:ln rel="index" href="${indexHref}"/>\n`);
  chunks.push('  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z" completed="2013-01-03T09:10:00Z"/>\n');
  const base = Date.UTC(2012, 0, 1);
  for (let i = 0; i < count; i++) {
    const n = offset + i;
    const lastmod = new Date(base + n * 61_000).toISOString().replace('.000Z', 'Z');
    chunks.push(
      `  <url>\n    <loc>http://example.com/dataset1/resources/item-${n}.html</loc>\n    <lastmod>${lastmod}</lastmod>\n` +
        `    <rs:md hash="md5:${hex(n, 32)}" length="${1000 + (n % 90_000)}" type="text/html"/>\n  </url>\n`,
    );
  }
  chunks.push('</urlset>\n');
  writeFileSync(path, chunks.join(''));
}

function generate() {
  mkdirSync(INDEX_DIR, { recursive: true });
  if (!existsSync(RL)) resourceList(RL, PER_PART, 0);
  if (!existsSync(INDEX)) {
    const parts = [];
    for (let p = 1; p <= PARTS; p++) {
      const name = `resourcelist-part${String(p).padStart(2, '0')}.xml`;
      resourceList(join(INDEX_DIR, name), PER_PART, (p - 1) * PER_PART, 'http://example.com/dataset1/resourcelist-index.xml');
      parts.push(`  <sitemap>\n    <loc>http://example.com/dataset1/${name}</loc>\n    <rs:md at="2013-01-03T09:00:00Z"/>\n  </sitemap>\n`);
    }
    writeFileSync(
      INDEX,
      `<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
${parts.join('')}</sitemapindex>
`,
    );
  }
}

// ---- child-process measurements -----------------------------------------------------------------

async function childValidate(file) {
  const { readDocument } = await import('../dist/src/core/xml/read-document.js');
  const { validate } = await import('../dist/src/core/validate/index.js');
  const t0 = performance.now();
  const reader = await readDocument(createReadStream(file, { highWaterMark: 256 * 1024 }));
  const { issues, entries } = await validate(reader, { spec: '1.1' });
  const ms = performance.now() - t0;
  return { entries, ms, errors: issues.filter((i) => i.severity === 'error').length };
}

async function childParse(file) {
  const { readDocument } = await import('../dist/src/core/xml/read-document.js');
  const t0 = performance.now();
  const reader = await readDocument(createReadStream(file, { highWaterMark: 256 * 1024 }));
  let entries = 0;
  for await (const e of reader.entries) if (e.loc) entries++;
  return { entries, ms: performance.now() - t0 };
}

async function childIndex(indexFile) {
  const { readDocument } = await import('../dist/src/core/xml/read-document.js');
  const { validate } = await import('../dist/src/core/validate/index.js');
  const t0 = performance.now();
  const index = await readDocument(createReadStream(indexFile));
  const parts = [];
  for await (const e of index.entries) parts.push(join(dirname(indexFile), basename(new URL(e.loc).pathname)));
  let entries = 0;
  let errors = 0;
  // The rate and the resident size after each part come from a pass that only reads; the live heap after a full
  // collection (flat: nothing is kept from part to part) from a second pass, since collections forced between
  // parts slow the reading that follows them.
  const rss = [];
  const live = [];
  const readPart = async (part) => {
    const reader = await readDocument(createReadStream(part, { highWaterMark: 256 * 1024 }));
    return validate(reader, { spec: '1.1' });
  };
  for (const part of parts) {
    const r = await readPart(part);
    entries += r.entries;
    errors += r.issues.filter((i) => i.severity === 'error').length;
    rss.push(process.memoryUsage().rss);
  }
  const ms = performance.now() - t0;
  for (const part of parts) {
    await readPart(part);
    globalThis.gc?.();
    live.push(process.memoryUsage().heapUsed);
  }
  const half = Math.ceil(rss.length / 2);
  const firstHalf = Math.max(...rss.slice(0, half));
  const secondHalf = Math.max(...rss.slice(half));
  const liveFirst = Math.max(...live.slice(0, half));
  const liveSecond = Math.max(...live.slice(half));
  return { entries, ms, errors, parts: parts.length, firstHalf, secondHalf, liveFirst, liveSecond };
}

async function childRaw(file) {
  const t0 = performance.now();
  let bytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) bytes += chunk.length;
  return { bytes, ms: performance.now() - t0 };
}

async function childSaxes(file) {
  const { SaxesParser } = await import('saxes');
  const t0 = performance.now();
  const parser = new SaxesParser({ xmlns: true });
  let entries = 0;
  parser.on('opentag', (tag) => {
    if (tag.local === 'url') entries++;
  });
  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 256 * 1024 })) parser.write(chunk);
  parser.close();
  return { entries, ms: performance.now() - t0 };
}

function spawnChild(kind, file) {
  const r = spawnSync(process.execPath, [...(kind === 'index' ? ['--expose-gc'] : []), fileURLToPath(import.meta.url), '--child', kind, file], { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`child ${kind} failed: ${r.stderr || r.error}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

function best(kind, file, runs) {
  let out;
  for (let i = 0; i < runs; i++) {
    const r = spawnChild(kind, file);
    if (!out || r.ms < out.ms) out = { ...r, maxRSS: Math.max(r.maxRSS, out?.maxRSS ?? 0) };
    else out.maxRSS = Math.max(out.maxRSS, r.maxRSS);
  }
  return out;
}

function xmllint(file) {
  const which = spawnSync('sh', ['-c', 'command -v xmllint'], { encoding: 'utf8' });
  if (which.status !== 0) return undefined;
  const t0 = performance.now();
  const r = spawnSync('xmllint', ['--stream', '--noout', file], { timeout: 60_000 });
  return r.status === 0 ? performance.now() - t0 : undefined;
}

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const mb = (kb) => (kb / 1024).toFixed(1);

async function main() {
  if (process.argv[2] === '--child') {
    const [, , , kind, file] = process.argv;
    const fn = { validate: childValidate, parse: childParse, index: childIndex, raw: childRaw, saxes: childSaxes }[kind];
    const r = await fn(file);
    process.stdout.write(`${JSON.stringify({ ...r, maxRSS: process.resourceUsage().maxRSS })}\n`);
    return;
  }
  if (!existsSync(join(ROOT, 'dist', 'src', 'core', 'xml', 'read-document.js'))) {
    console.log('validate: skipped (build first: dist/src/core/xml/read-document.js is missing)');
    return;
  }
  generate();
  const size = statSync(RL).size;
  const runs = 3;
  const raw = best('raw', RL, runs);
  const v = best('validate', RL, runs);
  const p = best('parse', RL, runs);
  const sx = best('saxes', RL, 1);
  const rate = (v.entries / v.ms) * 1000;
  const rawRate = (PER_PART / raw.ms) * 1000;
  const saxRate = (sx.entries / sx.ms) * 1000;
  console.log(`validate-50k file: ${(size / 1048576).toFixed(1)} MB, ${fmt(v.entries)} entries, ${v.errors} errors`);
  console.log(`validate-50k baseline raw read: ${fmt(rawRate)} entries/s (1.00 x baseline)`);
  console.log(`validate-50k baseline saxes (xmlns): ${fmt(saxRate)} entries/s (${(saxRate / rawRate).toFixed(2)} x baseline)`);
  const lint = xmllint(RL);
  if (lint !== undefined) {
    const lintRate = (PER_PART / lint) * 1000;
    console.log(`validate-50k baseline xmllint --stream: ${fmt(lintRate)} entries/s (${(lintRate / rawRate).toFixed(2)} x baseline)`);
  } else {
    console.log('validate-50k baseline xmllint --stream: not on PATH');
  }
  const parseRate = (p.entries / p.ms) * 1000;
  console.log(`validate-50k readDocument alone: ${fmt(parseRate)} entries/s (${(parseRate / rawRate).toFixed(2)} x baseline, ${(parseRate / saxRate).toFixed(2)} x saxes), peak RSS ${mb(p.maxRSS)} MB`);
  console.log(`validate-50k readDocument+validate: ${fmt(rate)} entries/s (${(rate / rawRate).toFixed(2)} x baseline, ${(rate / saxRate).toFixed(2)} x saxes)`);
  console.log(`validate-50k validator share: ${(((v.ms - p.ms) / v.entries) * 1000).toFixed(2)} µs/entry over parsing (${((1 - p.ms / v.ms) * 100).toFixed(0)}% of the time)`);
  console.log(`validate-50k target ≥150,000 entries/s: ${rate >= 150_000 ? 'met' : 'MISSED'}`);
  console.log(`validate-50k peak RSS: ${mb(v.maxRSS)} MB (${(v.maxRSS / raw.maxRSS).toFixed(2)} x baseline raw read ${mb(raw.maxRSS)} MB)`);
  console.log(`validate-50k target ≤80 MB: ${v.maxRSS / 1024 <= 80 ? 'met' : 'MISSED'}`);

  const ix = best('index', INDEX, 1);
  const ixRate = (ix.entries / ix.ms) * 1000;
  console.log(`validate-index-500k: ${fmt(ix.entries)} entries in ${ix.parts} parts, ${ix.errors} errors`);
  console.log(`validate-index-500k readDocument+validate: ${fmt(ixRate)} entries/s (${(ixRate / rawRate).toFixed(2)} x baseline raw read of one part)`);
  const growth = ix.secondHalf / ix.firstHalf;
  console.log(`validate-index-500k peak RSS: ${mb(ix.maxRSS)} MB (${(ix.maxRSS / v.maxRSS).toFixed(2)} x the 50k list)`);
  const liveGrowth = ix.liveSecond / ix.liveFirst;
  console.log(
    `validate-index-500k live heap after a collection, parts 1-${Math.ceil(ix.parts / 2)}: ${(ix.liveFirst / 1048576).toFixed(1)} MB, after the rest: ${(ix.liveSecond / 1048576).toFixed(1)} MB (${liveGrowth.toFixed(2)} x: flat memory ${liveGrowth <= 1.15 ? 'yes' : 'NO'})`,
  );
  console.log(
    `validate-index-500k RSS after parts 1-${Math.ceil(ix.parts / 2)}: ${(ix.firstHalf / 1048576).toFixed(1)} MB, after the rest: ${(ix.secondHalf / 1048576).toFixed(1)} MB (${growth.toFixed(2)} x; the allocator keeps freed memory for reuse)`,
  );
  // keep the reading of a file around to catch a broken generator early
  if (!readFileSync(INDEX, 'utf8').includes('<sitemap>')) console.log('validate-index-500k: index file looks wrong');
}

main().catch((err) => {
  console.log(`validate: failed: ${err && err.stack ? err.stack : err}`);
});
