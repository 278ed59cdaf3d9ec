// Benchmark: the explorer page (src/web) on a Source with one 50,000-entry Resource List (the Sitemaps limit
// that Z39.99 §7 adopts), served from a file over loopback. Measures the page's first entries page
// (api/entries, page 0), its last page (page 499: the whole list is streamed and skipped) and a search that
// scans the whole list, each the median of 7 requests; the first page's render in headless Chromium (click on
// the list to its 100 rows drawn), median of 5, when /usr/bin/chromium (or $CHROMIUM_PATH) is installed. The
// baseline, in the same run: a raw GET of the whole list (bytes only, no parsing). Target: the first page in
// under 1 s. Prints `name: value unit` lines; always exits 0.
import { existsSync, mkdirSync, statSync, writeFileSync, createWriteStream } from 'node:fs';
import { createServer } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sendDocument } from './support.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const DATA = join(HERE, '.data', 'web-50000');
const ENTRIES = 50_000;
const AT = '2026-01-01T00:00:00Z';
const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
const ORIGIN = 'http://origin.invalid';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

async function generate() {
  const done = join(DATA, '.complete');
  if (existsSync(done)) return;
  mkdirSync(DATA, { recursive: true });
  writeFileSync(
    join(DATA, 'sd.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:md capability="description"/>\n<url><loc>${ORIGIN}/cl.xml</loc><rs:md capability="capabilitylist"/></url>\n</urlset>\n`,
  );
  writeFileSync(
    join(DATA, 'cl.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:ln rel="up" href="${ORIGIN}/.well-known/resourcesync"/>\n<rs:md capability="capabilitylist"/>\n<url><loc>${ORIGIN}/rl.xml</loc><rs:md capability="resourcelist"/></url>\n</urlset>\n`,
  );
  const out = createWriteStream(join(DATA, 'rl.xml'));
  const write = (s) => (out.write(s) ? undefined : new Promise((r) => out.once('drain', r)));
  await write(
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}>\n<rs:ln rel="up" href="${ORIGIN}/cl.xml"/>\n<rs:md capability="resourcelist" at="${AT}" completed="${AT}"/>\n`,
  );
  for (let n = 0; n < ENTRIES; n++) {
    const hash = (n * 2654435761 >>> 0).toString(16).padStart(8, '0').repeat(4);
    await write(
      `<url><loc>${ORIGIN}/r/${n}</loc><lastmod>${AT}</lastmod><rs:md hash="md5:${hash}" length="${100 + (n % 900)}" type="text/plain"/></url>\n`,
    );
  }
  await write('</urlset>\n');
  await new Promise((r) => out.end(r));
  writeFileSync(done, '');
}

/** Serves the documents with the placeholder origin replaced (whole lines, so no placeholder is split). */
async function startSource() {
  let origin = '';
  const server = createServer((req, res) => {
    sendDocument(res, DATA, (req.url ?? '/').split('?')[0], ORIGIN, origin);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${server.address().port}`;
  return {
    origin,
    close: () =>
      new Promise((resolve) => {
        server.close(resolve);
        server.closeAllConnections();
      }),
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function timed(n, fn) {
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function chromiumRender(pageUrl, list) {
  if (!existsSync(CHROMIUM)) return `skipped (no Chromium at ${CHROMIUM})`;
  const { chromium } = await import('playwright-core');
  const profile = await mkdtemp(join(tmpdir(), 'rs-bench-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await context.newPage();
    await page.goto(pageUrl);
    const button = page.locator(`.doc[data-url="${list}"]`);
    await button.waitFor({ timeout: 60_000 });
    const times = [];
    for (let i = 0; i < 5; i++) {
      await page.locator('#tab-timeline').click(); // leave the list, so that the click below reloads it
      const t0 = performance.now();
      await button.click();
      await page.locator('#page-info').filter({ hasText: 'entries 1–100' }).waitFor({ timeout: 30_000 });
      await page.locator('#entries tbody tr').nth(99).waitFor();
      times.push(performance.now() - t0);
      await page.locator('#page-info').evaluate((e) => (e.textContent = ''));
    }
    return median(times);
  } finally {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  }
}

async function main() {
  const dist = join(HERE, '..', 'dist', 'src');
  if (!existsSync(join(dist, 'web', 'explorer.js'))) {
    console.log('web: skipped (build first: dist/src/web/explorer.js is missing)');
    return;
  }
  const { createExplorerHandler } = await import('../dist/src/web/explorer.js');
  const { createAuthority } = await import('../dist/src/client/authority.js');
  const { createHttpClient } = await import('../dist/src/client/http-client.js');
  const { listen } = await import('../dist/src/notify/node-listener.js');
  const g0 = performance.now();
  await generate();
  const genMs = performance.now() - g0;
  const source = await startSource();
  const authority = createAuthority({ origins: [source.origin] });
  const http = createHttpClient({ authority, env: {} });
  const handler = createExplorerHandler({ source: `${source.origin}/`, http, authority, rate: 0 });
  const explorer = await listen(handler, { port: 0 });
  const list = `${source.origin}/rl.xml`;
  const api = (q) => `${explorer.url}/api/entries?doc=${encodeURIComponent(list)}&${q}`;
  try {
    const bytes = statSync(join(DATA, 'rl.xml')).size;
    console.log(`web source: one Resource List of ${ENTRIES.toLocaleString('en-US')} entries, ${(bytes / 1048576).toFixed(1)} MB (generated in ${(genMs / 1000).toFixed(1)} s)`);
    const t0 = performance.now();
    const tree = await (await fetch(`${explorer.url}/api/tree`)).json();
    console.log(`web-tree time: ${(performance.now() - t0).toFixed(0)} ms (the crawl reads the list once for its entry count: ${tree.documents} documents)`);
    const raw = await timed(7, async () => {
      const res = await fetch(list);
      await res.arrayBuffer();
    });
    console.log(`web-baseline raw GET of the whole list: ${raw.toFixed(0)} ms`);
    let rows = 0;
    const first = await timed(7, async () => {
      const body = await (await fetch(api('page=0'))).json();
      rows = body.entries.length;
    });
    console.log(`web-first-page api/entries page 0 (${rows} entries): ${first.toFixed(1)} ms (${(first / raw).toFixed(3)}x baseline) target < 1 s: ${first < 1000 ? 'met' : 'MISSED'}`);
    const last = await timed(7, async () => {
      const body = await (await fetch(api(`page=${ENTRIES / 100 - 1}`))).json();
      rows = body.entries.length;
    });
    console.log(`web-last-page api/entries page ${ENTRIES / 100 - 1} (${rows} entries, the whole list streamed): ${last.toFixed(0)} ms (${(last / raw).toFixed(2)}x baseline)`);
    const search = await timed(7, async () => {
      const body = await (await fetch(api('q=/r/4999'))).json();
      rows = body.entries.length;
    });
    console.log(`web-search q=/r/4999 (${rows} matches, whole list scanned): ${search.toFixed(0)} ms (${(search / raw).toFixed(2)}x baseline)`);
    const render = await chromiumRender(`${explorer.url}/`, list);
    if (typeof render === 'string') console.log(`web-render in Chromium: ${render}`);
    else
      console.log(`web-render first page in Chromium (click to 100 rows drawn): ${render.toFixed(0)} ms (${(render / raw).toFixed(2)}x baseline) target < 1 s: ${render < 1000 ? 'met' : 'MISSED'}`);
  } finally {
    await explorer.close();
    await http.close();
    await source.close();
  }
}

await main();
