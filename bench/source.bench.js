// Source benchmarks: inventory (small and large files), a 1,000,000-entry Resource List Index with
// flat memory, and ZIP packaging. Each figure is printed next to a baseline measured in the same run.
// Usage: node bench/source.bench.js   (after `npm run build`)
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inventory } from '../dist/src/node/inventory.js';
import { writeZipPackage } from '../dist/src/source/zip-package.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DATA = join(ROOT, 'bench', '.data', 'source');
const DEADLINE = Date.now() + 55_000;

function line(name, value, unit, baseline, target) {
  const ratio = baseline ? ` (${(value / baseline).toFixed(2)} x baseline)` : '';
  const t = target === undefined ? '' : `  target ≥${target}: ${value >= target ? 'met' : 'MISSED'}`;
  console.log(`${name}: ${value.toFixed(value >= 100 ? 0 : 1)} ${unit}${ratio}${t}`);
}

function smallFiles() {
  const dir = join(DATA, 'small');
  const marker = join(dir, '.complete');
  if (!existsSync(marker)) {
    rmSync(dir, { recursive: true, force: true });
    const body = Buffer.alloc(1024);
    for (let d = 0; d < 20; d++) {
      mkdirSync(join(dir, `d${d}`), { recursive: true });
      for (let i = 0; i < 1000; i++) {
        body.writeUInt32LE(d * 1000 + i, 0);
        writeFileSync(join(dir, `d${d}`, `file-${i}.txt`), body);
      }
    }
    writeFileSync(marker, '');
  }
  return dir;
}

function largeFiles(count) {
  const dir = join(DATA, 'large');
  const marker = join(dir, '.complete');
  if (!existsSync(marker) || readFileSync(marker, 'utf8') !== String(count)) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const body = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < body.length; i += 4) body.writeUInt32LE((i * 2654435761) >>> 0, i);
    for (let i = 0; i < count; i++) {
      body.writeUInt32LE(i, 0);
      writeFileSync(join(dir, `blob-${String(i).padStart(4, '0')}.bin`), body);
    }
    writeFileSync(marker, String(count));
  }
  return dir;
}

function listFiles(dir) {
  const out = [];
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (d.name.startsWith('.')) continue;
    const p = join(dir, d.name);
    if (d.isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

function rawHashLoop(files, algs) {
  const c0 = cpuMs();
  const t0 = performance.now();
  let bytes = 0;
  for (const f of files) {
    const b = readFileSync(f);
    bytes += b.length;
    for (const a of algs) createHash(a).update(b).digest('hex');
  }
  return { ms: performance.now() - t0, cpu: cpuMs() - c0, bytes };
}

async function runInventory(dir, hashes, previous) {
  const c0 = cpuMs();
  const t0 = performance.now();
  let n = 0;
  let bytes = 0;
  for await (const e of inventory(dir, { hashes, ...(previous ? { previous } : {}) })) {
    n++;
    bytes += e.size;
  }
  return { ms: performance.now() - t0, cpu: cpuMs() - c0, n, bytes };
}

function best(runs) {
  return runs.reduce((a, b) => (b.ms < a.ms ? b : a));
}

// 1. 20,000 files of 1 KB, md5
{
  const dir = smallFiles();
  const files = listFiles(dir);
  rawHashLoop(files, ['md5']); // warm the page cache
  const raw = rawHashLoop(files, ['md5']);
  const runs = [];
  for (let i = 0; i < 2 && (i === 0 || Date.now() < DEADLINE - 45_000); i++) runs.push(await runInventory(dir, ['md5']));
  const inv = best(runs);
  const rawRate = (files.length / raw.ms) * 1000;
  line('raw readFileSync+md5 loop, 20,000 x 1 KB (baseline, no walk)', rawRate, 'files/s');
  line('inventory md5, 20,000 x 1 KB, warm', (inv.n / inv.ms) * 1000, 'files/s', rawRate, 30_000);
  // per CPU-second: steadier than wall time when other processes share the machine
  line('raw loop per CPU-second (baseline)', (files.length / raw.cpu) * 1000, 'files/cpu-s');
  line('inventory md5 per CPU-second', (inv.n / inv.cpu) * 1000, 'files/cpu-s', (files.length / raw.cpu) * 1000);
  // unchanged since the stored snapshot: stat only
  const prev = new Map();
  for await (const e of inventory(dir, { hashes: ['md5'] })) prev.set(e.path, e);
  const again = await runInventory(dir, ['md5'], (p) => prev.get(p));
  line('inventory md5, unchanged (stat only, hashes from the snapshot)', (again.n / again.ms) * 1000, 'files/s', rawRate);
  line('inventory md5, unchanged, per CPU-second', (again.n / again.cpu) * 1000, 'files/cpu-s', (files.length / raw.cpu) * 1000);
}

// 2. 1 MiB files, md5 + sha-256
{
  const dir = largeFiles(100);
  const files = listFiles(dir);
  rawHashLoop(files, ['md5']);
  const raw = rawHashLoop(files, ['md5', 'sha256']);
  const rawRate = raw.bytes / 1e6 / (raw.ms / 1000);
  const inv = await runInventory(dir, ['md5', 'sha-256']);
  const rate = inv.bytes / 1e6 / (inv.ms / 1000);
  line('raw readFileSync+md5+sha-256 loop, 100 x 1 MiB (baseline)', rawRate, 'MB/s');
  line('inventory md5+sha-256, 100 x 1 MiB', rate, 'MB/s', rawRate, 250);
  line('raw loop per CPU-second (baseline)', raw.bytes / 1e6 / (raw.cpu / 1000), 'MB/cpu-s');
  line('inventory md5+sha-256 per CPU-second', inv.bytes / 1e6 / (inv.cpu / 1000), 'MB/cpu-s', raw.bytes / 1e6 / (raw.cpu / 1000));
}

// 4. ZIP write, stored, next to a raw copy of the same bytes
{
  const dir = largeFiles(100);
  const files = listFiles(dir);
  const zipOut = join(DATA, 'bench.zip');
  const copyOut = join(DATA, 'copy.bin');
  const c0 = cpuMs();
  const t0 = performance.now();
  const ws = createWriteStream(copyOut);
  for (const f of files) {
    for await (const chunk of createReadStream(f, { highWaterMark: 1024 * 1024 })) {
      if (!ws.write(chunk)) await once(ws, 'drain');
    }
  }
  await new Promise((resolve) => ws.end(resolve));
  const copyMs = performance.now() - t0;
  const copyCpu = cpuMs() - c0;
  const total = files.length * 1024 * 1024;
  const copyRate = total / 1e6 / (copyMs / 1000);
  const items = files.map((f, i) => ({ zipPath: `resources/${i}.bin`, file: f, size: 1024 * 1024, mtimeMs: Date.now() }));
  const c1 = cpuMs();
  const t1 = performance.now();
  const pkg = await writeZipPackage(zipOut, Buffer.from('<urlset/>'), items);
  const zipMs = performance.now() - t1;
  const zipCpu = cpuMs() - c1;
  const zipRate = total / 1e6 / (zipMs / 1000);
  line('raw stream copy of 100 x 1 MiB into one file (baseline)', copyRate, 'MB/s');
  line(`ZIP package write, stored, 100 x 1 MiB (${(pkg.length / 1e6).toFixed(0)} MB, package md5 measured)`, zipRate, 'MB/s', copyRate, 120);
  line('raw copy per CPU-second (baseline)', total / 1e6 / (copyCpu / 1000), 'MB/cpu-s');
  line('ZIP package write per CPU-second', total / 1e6 / (zipCpu / 1000), 'MB/cpu-s', total / 1e6 / (copyCpu / 1000));
  const withMd5 = items.map((it) => ({ ...it, md5: createHash('md5').update(readFileSync(it.file)).digest('hex') }));
  const t2 = performance.now();
  await writeZipPackage(zipOut, Buffer.from('<urlset/>'), withMd5);
  const verMs = performance.now() - t2;
  line('ZIP package write, stored, each bitstream verified against its md5', total / 1e6 / (verMs / 1000), 'MB/s', copyRate);
  rmSync(zipOut, { force: true });
  rmSync(copyOut, { force: true });
}

// 3. 1,000,000 synthetic entries → snapshot store → Resource List Index, in a child process (peak RSS)
{
  const child = join(ROOT, 'bench', 'source-million.child.js');
  const out = join(DATA, 'million');
  const runChild = (n, budget) => {
    rmSync(out, { recursive: true, force: true });
    const r = spawnSync(process.execPath, [child, out, String(n)], { encoding: 'utf8', timeout: budget });
    if (r.error?.code === 'ETIMEDOUT') return undefined;
    if (r.status !== 0) throw new Error(`child failed: ${r.stderr || r.error}`);
    return JSON.parse(r.stdout);
  };
  const base = runChild(0, 10_000);
  const budget = Math.max(10_000, DEADLINE - Date.now() - 8_000);
  const m = runChild(1_000_000, budget);
  console.log(`child process at rest, 0 entries (baseline): peak RSS ${(base.maxRSS / 1024).toFixed(0)} MB`);
  if (m === undefined) {
    console.log(`1,000,000 entries: not finished within the ${(budget / 1000).toFixed(0)} s left of this bench's budget: MISSED (machine busy?)`);
  } else {
    line('1,000,000 entries: snapshot store insert', m.insertRate, 'entries/s');
    line(`1,000,000 entries written as a Resource List Index (${m.parts} parts, ${(m.bytes / 1e6).toFixed(0)} MB)`, m.writeRate, 'entries/s');
    line('1,000,000 entries: insert per CPU-second', m.insertCpuRate, 'entries/cpu-s');
    line('1,000,000 entries: Resource List Index write per CPU-second', m.writeCpuRate, 'entries/cpu-s');
    console.log(`1,000,000 entries: peak RSS ${(m.maxRSS / 1024).toFixed(0)} MB (baseline ${(base.maxRSS / 1024).toFixed(0)} MB; flat: the list streams from SQLite)`);
  }
  rmSync(out, { recursive: true, force: true });
}
