// Benchmark: the OAI-PMH bridge's harvest rate against a local OAI-PMH provider (Debian's
// Dancer::Plugin::Catmandu::OAI, test/fixtures/oai-provider/app.pl, 5,000 records in pages of 500), as a ratio to a
// bare ListRecords loop through the same provider in the same run (plain fetch, the resumption token cut out of
// the text, nothing else parsed). The bridge's harvest streams each response through the XML reader, writes one
// file per record (a full harvest into an empty folder, then a second full harvest where nothing changed), and
// keeps its SQLite state; then the publication of the Source's documents is timed on its own. Best of two rounds.
// Skips, saying why, where perl or the Debian package is missing. Prints `name: value unit` lines; exits 0.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
} finally {
  child.kill();
  for (const old of readdirSync(DATA)) rmSync(join(DATA, old), { recursive: true, force: true });
}
