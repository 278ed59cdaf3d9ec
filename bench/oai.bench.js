// Benchmark: the OAI-PMH bridge's harvest rate against a local OAI-PMH provider (Debian's
// Dancer::Plugin::Catmandu::OAI, test/fixtures/oai-provider/app.pl, 5,000 records in pages of 500), as a ratio to a
// bare ListRecords loop through the same provider in the same run (plain fetch, the resumption token cut out of
// the text, nothing else parsed). The bridge's harvest streams each response through the XML reader, writes one
// file per record (a full harvest into an empty folder, then a second full harvest where nothing changed), and
// keeps its SQLite state; then the publication of the Source's documents is timed on its own. Best of two rounds.
// Skips, saying why, where perl or the Debian package is missing. Prints `name: value unit` lines; exits 0.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const DATA = join(HERE, '.data', 'oai');
const N = 5_000;
const PAGE = 500;

const check = spawnSync('perl', ['-e', 'use Dancer; require Dancer::Plugin::Catmandu::OAI; 1']);
if (check.error !== undefined || check.status !== 0) {
  console.log('oai: skipped (needs perl and the Debian package libdancer-plugin-catmandu-oai-perl)');
  process.exit(0);
}

const { openOaiBridge } = await import(join(ROOT, 'dist/src/oai/bridge.js'));
const { publish } = await import(join(ROOT, 'dist/src/source/publish.js'));

// Each run writes into a folder of its own, marked `chattr +T` where it can be, and removes the folders of earlier
// runs only after measuring: on ext4, files created soon after many were deleted cost several times more kernel
// time (see bench/README.md), which would measure the file system instead of the bridge.
const RUN = join(DATA, `run-${process.pid}-${Date.now()}`);
mkdirSync(RUN, { recursive: true });
spawnSync('chattr', ['+T', RUN]);
const records = Array.from({ length: N }, (_, k) => {
  const i = k + 1;
  return {
    _id: `rec${i}`,
    datestamp: `2024-${String(1 + (i % 12)).padStart(2, '0')}-${String(1 + (i % 28)).padStart(2, '0')}T${String(i % 24).padStart(2, '0')}:00:00Z`,
    title: `Record ${i}: ${'a title of some length '.repeat(1 + (i % 4))}`,
    url: `https://repo.example/items/${i}`,
    set: [i % 2 ? 'odd' : 'even'],
    deleted: 0,
  };
});
writeFileSync(join(RUN, 'records.json'), JSON.stringify(records));
const child = spawn('perl', [join(ROOT, 'test/fixtures/oai-provider/app.pl')], {
  env: { ...process.env, RECORDS: join(RUN, 'records.json'), PORT: '0', LIMIT: String(PAGE) },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const baseUrl = await new Promise((resolve, reject) => {
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    const m = /listening on (\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
  child.once('exit', (code) => reject(new Error(`provider exited ${code}`)));
});
for (let i = 0; i < 200; i++) {
  const ok = await fetch(`${baseUrl}?verb=Identify`).then((r) => r.ok, () => false);
  if (ok) break;
  await new Promise((r) => setTimeout(r, 50));
}

/** The bare loop: ListRecords pages fetched, the token cut out of the text. */
async function bare() {
  let url = `${baseUrl}?verb=ListRecords&metadataPrefix=oai_dc`;
  let count = 0;
  for (let page = 0; page < 10_000; page++) {
    const text = await (await fetch(url)).text();
    count += text.split('<record>').length - 1;
    const m = /<resumptionToken[^>]*>([^<]+)<\/resumptionToken>/.exec(text);
    if (!m) break;
    url = `${baseUrl}?verb=ListRecords&resumptionToken=${encodeURIComponent(m[1])}`;
  }
  return count;
}

/** The bridge: a full harvest into `folder` (the state kept between calls). */
async function bridge(folder) {
  const b = await openOaiBridge({ repository: baseUrl, folder });
  try {
    const report = await b.harvest({ full: true });
    return { count: report.counts.records, written: report.counts.written, sets: b.sets, stateDir: b.stateDir };
  } finally {
    await b.close();
  }
}

async function timed(fn) {
  const t0 = performance.now();
  const result = await fn();
  return { ms: performance.now() - t0, result };
}

const best = { bare: Infinity, fresh: Infinity, again: Infinity, publish: Infinity };
try {
  for (let round = 0; round < 2; round++) {
    const b = await timed(bare);
    if (b.result !== N) throw new Error(`bare loop read ${b.result} records`);
    best.bare = Math.min(best.bare, b.ms);
    const folder = join(RUN, `round-${round}`);
    const fresh = await timed(() => bridge(folder));
    if (fresh.result.count !== N || fresh.result.written !== N) throw new Error(`bridge read ${fresh.result.count}`);
    best.fresh = Math.min(best.fresh, fresh.ms);
    const again = await timed(() => bridge(folder));
    best.again = Math.min(best.again, again.ms);
    const pub = await timed(() =>
      publish({ sets: fresh.result.sets.map((s) => ({ name: s.name, dir: s.dir })), baseUrl: 'http://example.org/', outDir: folder, stateDir: join(fresh.result.stateDir, 'source') }),
    );
    best.publish = Math.min(best.publish, pub.ms);
  }
  const rate = (ms) => Math.round(N / (ms / 1000));
  console.log(`oai bare ListRecords loop: ${rate(best.bare)} records/s (${N} records, pages of ${PAGE})`);
  console.log(`oai bridge full harvest, empty folder: ${rate(best.fresh)} records/s (${(best.bare / best.fresh).toFixed(2)}x baseline)`);
  console.log(`oai bridge full harvest, nothing changed: ${rate(best.again)} records/s (${(best.bare / best.again).toFixed(2)}x baseline)`);
  console.log(`oai publication of the ${N} records (Resource List, snapshot): ${best.publish.toFixed(0)} ms`);
  console.log(`oai peak RSS of this process: ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MB`);
  await hugeSet();
} finally {
  child.kill();
  for (const old of readdirSync(DATA)) rmSync(join(DATA, old), { recursive: true, force: true });
}

/**
 * A huge set in constant memory: 50,000 records (pages of 1,000) generated by a stub in this process, harvested
 * by the bridge into files; the live heap after a collection at 10,000 records and at 50,000.
 */
async function hugeSet() {
  const HUGE = 50_000;
  const HUGE_PAGE = 1_000;
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc');
  const env = '<?xml version="1.0" encoding="UTF-8"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2026-01-01T00:00:00Z</responseDate><request>http://stub/oai</request>';
  const server = createServer((req, res) => {
    const q = new URL(req.url, 'http://x').searchParams;
    const verb = q.get('verb');
    res.writeHead(200, { 'content-type': 'text/xml' });
    if (verb === 'Identify') {
      return res.end(`${env}<Identify><repositoryName>Stub</repositoryName><baseURL>http://stub/oai</baseURL><protocolVersion>2.0</protocolVersion><adminEmail>a@b</adminEmail><earliestDatestamp>2000-01-01T00:00:00Z</earliestDatestamp><deletedRecord>persistent</deletedRecord><granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify></OAI-PMH>`);
    }
    if (verb === 'ListMetadataFormats') {
      return res.end(`${env}<ListMetadataFormats><metadataFormat><metadataPrefix>oai_dc</metadataPrefix><schema>s</schema><metadataNamespace>http://www.openarchives.org/OAI/2.0/oai_dc/</metadataNamespace></metadataFormat></ListMetadataFormats></OAI-PMH>`);
    }
    const start = Number((q.get('resumptionToken') ?? 'offset:0').slice(7));
    let body = `${env}<ListRecords>`;
    for (let i = start; i < Math.min(HUGE, start + HUGE_PAGE); i++) {
      body += `<record><header><identifier>oai:stub:${i}</identifier><datestamp>2024-01-01T00:00:00Z</datestamp></header><metadata><oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Record ${i} ${'x'.repeat(i % 200)}</dc:title><dc:identifier>https://stub/${i}</dc:identifier></oai_dc:dc></metadata></record>`;
    }
    res.end(`${body}${start + HUGE_PAGE < HUGE ? `<resumptionToken>offset:${start + HUGE_PAGE}</resumptionToken>` : ''}</ListRecords></OAI-PMH>`);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const heap = {};
  try {
    const b = await openOaiBridge({
      repository: `http://127.0.0.1:${server.address().port}/oai`,
      folder: join(RUN, 'huge'),
      onEvent: (e) => {
        if (e.type === 'progress' && (e.counts.records === 10_000 || e.counts.records === HUGE)) {
          gc();
          heap[e.counts.records] = process.memoryUsage().heapUsed;
        }
      },
    });
    const t0 = performance.now();
    const report = await b.harvest({ full: true });
    const ms = performance.now() - t0;
    await b.close();
    if (report.counts.written !== HUGE) throw new Error(`huge set: ${report.counts.written} written`);
    const mb = (x) => (x / 1024 / 1024).toFixed(1);
    console.log(`oai bridge, ${HUGE} records from an in-process stub: ${Math.round(HUGE / (ms / 1000))} records/s`);
    console.log(`oai live heap after a collection at 10,000 / ${HUGE} records: ${mb(heap[10_000])} / ${mb(heap[HUGE])} MB (${(heap[HUGE] / heap[10_000]).toFixed(2)}x)`);
  } finally {
    server.close();
  }
}
