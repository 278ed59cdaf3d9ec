// A JSON-lines feed of N resources (default 1,000,000; RS_BENCH_JSONL=10000000 for 10^7) generated on the fly into
// the stdin of a child process that publishes it as a Resource List Index (`build --jsonl -`: lines parsed and
// checked, staged by loc, recorded in the SQLite snapshots, the index and its parts written): entries/s and peak
// RSS, next to a child that only reads and JSON.parses the same lines (the baseline), and next to the same number of
// entries put straight into the snapshot store and written as a Resource List Index (source-million.child.js: what
// the feed adds to the store and the writer). Locs come in the order of a database's ids (…/items/1, …/items/2, …),
// which is not the order of the Resource List.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATA = join(ROOT, 'bench', '.data', 'jsonl');
const N = Number(process.env.RS_BENCH_JSONL ?? 1_000_000);

function line(name, value, unit, baseline) {
  const ratio = baseline ? ` (${(value / baseline).toFixed(2)} x baseline)` : '';
  console.log(`${name}: ${Math.round(value).toLocaleString('en-US')} ${unit}${ratio}`);
}

/** Line i of the feed: what a database export gives. */
function feedLine(i) {
  const hex = (i * 2654435761 >>> 0).toString(16).padStart(8, '0');
  const day = String(1 + (i % 28)).padStart(2, '0');
  return `{"loc":"https://data.example.org/items/${i}","lastmod":"2024-05-${day}T10:00:00Z","length":${1000 + (i % 977)},"hash":"md5:${hex}${hex}${hex}${hex}","type":"text/plain"}\n`;
}

/** Runs the child in `mode`, writing N lines into its stdin with backpressure; resolves to its JSON line. */
function runChild(mode, n, out) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, 'bench', 'jsonl.child.js'), mode, out], { stdio: ['pipe', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.once('error', reject);
    child.once('close', (code) => (code === 0 ? resolve(JSON.parse(stdout)) : reject(new Error(`${mode} child exited ${code}`))));
    let i = 0;
    const write = () => {
      while (i < n) {
        let chunk = '';
        for (const end = Math.min(n, i + 1000); i < end; i++) chunk += feedLine(i);
        if (!child.stdin.write(chunk)) {
          child.stdin.once('drain', write);
          return;
        }
      }
      child.stdin.end();
    };
    write();
  });
}

rmSync(DATA, { recursive: true, force: true });
mkdirSync(DATA, { recursive: true });
const label = N.toLocaleString('en-US');
const base = await runChild('parse', N, DATA);
const pub = await runChild('publish', N, DATA);
if (pub.entries !== N) throw new Error(`published ${pub.entries} of ${N}`);
const million = spawnSync(process.execPath, [join(ROOT, 'bench', 'source-million.child.js'), join(DATA, 'store'), String(N)], { encoding: 'utf8' });
if (million.status !== 0) throw new Error(`source-million.child.js failed: ${million.stderr}`);
const store = JSON.parse(million.stdout);
// per entry: the store's insert, then the Resource List write
const storeRate = 1 / (1 / store.insertRate + 1 / store.writeRate);
const storeCpuRate = 1 / (1 / store.insertCpuRate + 1 / store.writeCpuRate);
line(`${label} feed lines read + JSON.parse (baseline)`, N / (base.ms / 1000), 'entries/s');
line(`${label} feed lines published as a Resource List Index (${pub.parts} parts)`, N / (pub.ms / 1000), 'entries/s', N / (base.ms / 1000));
line(`${label} feed lines published per CPU-second`, N / (pub.cpuMs / 1000), 'entries/cpu-s', N / (base.cpuMs / 1000));
line(`${label} entries straight into the snapshot store and a Resource List Index (no feed)`, storeRate, 'entries/s');
line(`${label} feed lines published, against the store and the Resource List Index alone`, N / (pub.ms / 1000), 'entries/s', storeRate);
line(`${label} feed lines published per CPU-second, against the store and the Resource List Index alone`, N / (pub.cpuMs / 1000), 'entries/cpu-s', storeCpuRate);
console.log(`${label} feed lines: peak RSS ${(pub.maxRSS / 1024).toFixed(0)} MB publishing, ${(base.maxRSS / 1024).toFixed(0)} MB parsing (baseline)`);
console.log(`${label} feed lines: published in ${(pub.ms / 1000).toFixed(1)} s; 10^8 at this rate: ${((1e8 / N) * pub.ms / 60_000).toFixed(0)} min`);
rmSync(DATA, { recursive: true, force: true });
