// Benchmark: `check` of a 1,000,000-resource Source (a Resource List Index of 20 lists of 50,000 entries,
// the Sitemaps limit that Z39.99 §7 adopts) served over loopback, and of a 100,000-resource Source (2 lists)
// for comparison: memory must not grow with the number of resources. Each check runs in a fresh child
// process that reports its own time and peak RSS (process.resourceUsage().maxRSS); 300 resources are
// sampled (GET and md5). The server (documents from files, resources generated) runs in this process.
// Prints `name: value unit` lines; always exits 0.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createWriteStream, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sendDocument } from './support.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = join(HERE, '.data');
const PER_LIST = 50_000;
const SAMPLE = 300;
const AT = '2026-01-01T00:00:00Z';
const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

/** The bytes of resource n (32 to 95 bytes). */
function resource(n) {
  return Buffer.from(`resource ${n} `.padEnd(32 + (n % 64), '.'));
}

/** Documents are written with the origin as a placeholder and served with the real one. */
const ORIGIN = 'http://origin.invalid';

async function writeList(path, from, count) {
  const out = createWriteStream(path);
  const write = (s) => (out.write(s) ? undefined : new Promise((r) => out.once('drain', r)));
  await write(
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:ln rel="up" href="${ORIGIN}/cl.xml"/>\n<rs:ln rel="index" href="${ORIGIN}/rl.xml"/>\n<rs:md capability="resourcelist" at="${AT}" completed="${AT}"/>\n`,
  );
  for (let n = from; n < from + count; n++) {
    const b = resource(n);
    await write(
      `<url><loc>${ORIGIN}/r/${n}</loc><rs:md hash="md5:${createHash('md5').update(b).digest('hex')}" length="${b.length}"/></url>\n`,
    );
  }
  await write('</urlset>\n');
  await new Promise((r) => out.end(r));
}

/** Writes a Source of `lists` lists under DATA/check-<n>; reused when present. */
async function generate(lists) {
  const dir = join(DATA, `check-${lists * PER_LIST}`);
  const done = join(dir, '.complete');
  if (existsSync(done)) return dir;
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, 'sd.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:ln rel="describedby" href="${ORIGIN}/about.html"/>\n<rs:md capability="description"/>\n<url><loc>${ORIGIN}/cl.xml</loc><rs:md capability="capabilitylist"/></url>\n</urlset>\n`,
  );
  writeFileSync(
    join(dir, 'cl.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:ln rel="up" href="${ORIGIN}/.well-known/resourcesync"/>\n<rs:ln rel="describedby" href="${ORIGIN}/about.html"/>\n<rs:md capability="capabilitylist"/>\n<url><loc>${ORIGIN}/rl.xml</loc><rs:md capability="resourcelist"/></url>\n</urlset>\n`,
  );
  const parts = [];
  for (let i = 1; i <= lists; i++) {
    const name = `rl-${String(i).padStart(2, '0')}.xml`;
    await writeList(join(dir, name), (i - 1) * PER_LIST, PER_LIST);
    parts.push(`<sitemap><loc>${ORIGIN}/${name}</loc><rs:md at="${AT}" completed="${AT}"/></sitemap>`);
  }
  writeFileSync(
    join(dir, 'rl.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex ${NS}>\n<rs:ln rel="up" href="${ORIGIN}/cl.xml"/>\n<rs:md capability="resourcelist" at="${AT}" completed="${AT}"/>\n${parts.join('\n')}\n</sitemapindex>\n`,
  );
  writeFileSync(done, '');
  return dir;
}

/** Serves the documents (origin placeholder replaced while streaming) and generated resources. */
async function startServer(dir) {
  let origin = '';
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const r = /^\/r\/(\d+)$/.exec(path);
    if (r) {
      const b = resource(Number(r[1]));
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': b.length });
      res.end(req.method === 'HEAD' ? undefined : b);
      return;
    }
    sendDocument(res, dir, path, ORIGIN, origin);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return { origin, close: () => new Promise((resolve) => server.close(resolve)) };
}

async function child(url) {
  const { check } = await import('../dist/src/check/check.js');
  const { createAuthority } = await import('../dist/src/client/authority.js');
  const { createHttpClient } = await import('../dist/src/client/http-client.js');
  const authority = createAuthority({ origins: [new URL(url).origin] });
  const http = createHttpClient({ authority, env: {} });
  const t0 = performance.now();
  const report = await check({ url, http, authority, sample: SAMPLE, rate: 0, maxDocuments: 100 });
  const ms = performance.now() - t0;
  await http.close();
  const codes = [...new Set(report.issues.map((i) => `${i.severity} ${i.code}`))];
  process.stdout.write(
    `${JSON.stringify({ ms, documents: report.documents.length, resources: report.resources, sampled: report.sampled, errors: report.errors, warnings: report.warnings, codes, maxRSS: process.resourceUsage().maxRSS })}\n`,
  );
}

function runChild(url) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url), '--child', url], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), 180_000);
    p.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(JSON.parse(out));
      else reject(new Error(`check child exited ${code}`));
    });
  });
}

async function main() {
  if (process.argv[2] === '--child') return child(process.argv[3]);
  if (!existsSync(join(HERE, '..', 'dist', 'src', 'check', 'check.js'))) {
    console.log('check: skipped (build first: dist/src/check/check.js is missing)');
    return;
  }
  for (const lists of [2, 20]) {
    const n = lists * PER_LIST;
    const g0 = performance.now();
    const dir = await generate(lists);
    const genMs = performance.now() - g0;
    let bytes = 0;
    for (let i = 1; i <= lists; i++) bytes += statSync(join(dir, `rl-${String(i).padStart(2, '0')}.xml`)).size;
    const server = await startServer(dir);
    try {
      const r = await runChild(`${server.origin}/`);
      const label = `check-${n.toLocaleString('en-US').replaceAll(',', '_')}`;
      console.log(
        `${label} source: ${lists} lists in an index, ${(bytes / 1048576).toFixed(0)} MB of lists (generated in ${(genMs / 1000).toFixed(1)} s)`,
      );
      console.log(
        `${label} time: ${(r.ms / 1000).toFixed(1)} s (${Math.round(r.resources / (r.ms / 1000)).toLocaleString('en-US')} listed resources/s, ${r.sampled} sampled)`,
      );
      console.log(`${label} peak RSS: ${(r.maxRSS / 1024).toFixed(0)} MB`);
      console.log(
        `${label} verdict: ${r.documents} documents, ${r.resources} resources, ${r.errors} errors, ${r.warnings} warnings ${JSON.stringify(r.codes)}`,
      );
    } catch (error) {
      console.log(`check-${n}: failed (${error.message})`);
    } finally {
      await server.close();
    }
  }
}

await main();
