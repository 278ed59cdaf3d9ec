// Destination benchmark. Figures next to baselines measured in the same run:
//  1. baseline sync of 5,000 files of 1 KB from nginx (1 worker, loopback) with hash verification and atomic
//     writes: files/s (target ≥4,000) and the ratio to a bare loop (undici GET + md5 + writeFile, 16 at once);
//  2. large files: MB/s (target ≥150) next to the same bare loop;
//  3. audit of 100,000 resources against a complete mirror, every file hashed: seconds (target ≤3) and peak RSS
//     (in a child process), next to a bare loop (read + md5 of the same files).
// nginx (Debian `nginx`) is used when installed; otherwise a node:http static server in a child process, and
// the bench says so. Data goes under bench/.data/destination (kept between runs for the audit set).
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { writeFile } from 'node:fs/promises';
import { freePort, has } from './support.js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA = join(ROOT, 'bench', '.data', 'destination');
const WWW = join(DATA, 'www');
/**
 * Every measured run's destination (removed once all runs are done), in a new folder of the system's temporary
 * directory, marked with the ext4 attribute `T` (`chattr +T`, where available): each run's folder is then placed
 * by the Orlov allocator in a block group with free inodes, instead of beside its parent (here /tmp, whose
 * groups hold tens of thousands of test folders).
 */
const RUNS = process.argv[2] === '--audit-child' ? '' : mkdtempSync(join(tmpdir(), 'resourcesync-bench-destination-'));
const SPREAD = RUNS !== '' && spawnSync('chattr', ['+T', RUNS], { stdio: 'ignore' }).status === 0;
/**
 * This machine's root file system is ext4 without a journal, which does not reuse an inode deleted less than
 * 60 s ago (300 s while its inode table block is dirty, as it stays while files are created beside it): each
 * create checks every such inode of the block group whose inode table block is still in the buffer cache.
 * After a mass deletion (a test suite's temporary folders, an earlier bench's runs) a create in those groups
 * costs 100–500 µs of kernel time instead of about 20 (perf: ext4_create → recently_deleted →
 * find_get_block_common, 40% of all samples; bare loop 1,700–3,000 files/s instead of 7,000–10,000), for
 * minutes. That measures the kernel's caution, not a sync: when the bench may (as root), it flushes and drops
 * the clean page cache first (the check skips blocks that are not cached: they were written out), then reads
 * the served files back. Each run's folder is probed (200 creates of 1 KB beside the destination, in the same
 * block group) and the bench prints the median.
 */
function dropCleanCaches() {
  spawnSync('sync');
  try {
    writeFileSync('/proc/sys/vm/drop_caches', '1');
    return true;
  } catch {
    return false;
  }
}

const probeUs = [];

/** A new run folder (`RUNS/<name>`), probed; returns its destination folder. */
function runDir(name) {
  const dir = join(RUNS, name);
  const probe = join(dir, 'probe');
  mkdirSync(probe, { recursive: true });
  const b = Buffer.alloc(1024, 97);
  const t = performance.now();
  for (let i = 0; i < 200; i++) writeFileSync(join(probe, `f${i}`), b);
  probeUs.push(((performance.now() - t) * 1000) / 200);
  return join(dir, 'dest');
}

const SMALL = 5000;
const LARGE_COUNT = 4;
const LARGE_SIZE = 32 * 1024 * 1024;
const AUDIT_COUNT = 100_000;
const CONCURRENCY = 16;
const ROUNDS = 6;

const { sync } = await import(join(ROOT, 'dist/src/destination/sync.js'));
const { audit } = await import(join(ROOT, 'dist/src/destination/audit.js'));
const { cliDurability } = await import(join(ROOT, 'dist/src/cli/commands/sync.js'));
const { RenameOnly } = await import(join(ROOT, 'dist/src/node/durability.js'));

/**
 * The durability the CLI builds for `mode` (`--no-fsync`; the default `--fsync-method batch`: a group commit
 * flushed by syncfs; `--fsync-method file`), small files written on a worker thread. Each mode's is made once
 * and serves every round, as a long-running caller keeps one: a CLI run pays the thread's start-up (about
 * 30 ms) once, as it pays its own.
 */
const cliDurabilities = new Map();
function cliDurabilityOf(mode) {
  let d = cliDurabilities.get(mode);
  if (d === undefined) {
    d = cliDurability(mode !== 'no-fsync', mode === 'file' ? 'file' : 'batch');
    cliDurabilities.set(mode, d);
  }
  return d.durability;
}

/** A sync with the durability the CLI builds for `mode`. */
function cli(mode, source, dest) {
  return ours(source, dest, { durability: cliDurabilityOf(mode) });
}

async function closeCliDurabilities() {
  for (const d of cliDurabilities.values()) await d.close();
}

if (process.argv[2] === '--audit-child') {
  // child: one audit, prints its figures as JSON
  const [, , , source, dest] = process.argv;
  const t0 = performance.now();
  const r = await audit({ source, dest });
  const seconds = (performance.now() - t0) / 1000;
  process.stdout.write(JSON.stringify({ seconds, inSync: r.inSync, total: r.total, maxRssKb: process.resourceUsage().maxRSS }));
  process.exit(0);
}

const md5 = (b) => createHash('md5').update(b).digest('hex');
const iso = (t) => new Date(t).toISOString().replace('.000Z', 'Z');

function resourceList(origin, items, at) {
  const urls = items.map((i) => `<url><loc>${origin}/${i.path}</loc><lastmod>${at}</lastmod><rs:md hash="md5:${i.md5}" length="${i.length}"/></url>`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n<rs:md capability="resourcelist" at="${at}"/>\n${urls.join('\n')}\n</urlset>\n`;
}

function resourceListIndex(origin, parts, at) {
  return `<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n<rs:md capability="resourcelist" at="${at}"/>\n${parts.map((p) => `<sitemap><loc>${origin}/${p}</loc></sitemap>`).join('\n')}\n</sitemapindex>\n`;
}

/** Writes the served files once (kept between runs); returns their descriptions. */
function generate() {
  const marker = join(DATA, 'generated-v1');
  const small = [];
  for (let i = 0; i < SMALL; i++) small.push({ path: `small/d${i % 50}/f${i}.txt`, seed: i });
  const large = [];
  for (let i = 0; i < LARGE_COUNT; i++) large.push({ path: `large/f${i}.bin`, seed: i });
  const auditItems = [];
  for (let i = 0; i < AUDIT_COUNT; i++) auditItems.push({ path: `a/d${i % 500}/r${i}.txt`, seed: i });
  const body = (seed, size) => {
    const b = Buffer.alloc(size);
    for (let j = 0; j < size; j += 64) b.write(`${seed.toString(36)}-${j.toString(36)} `.padEnd(64, '.'), j);
    return b;
  };
  if (!existsSync(marker)) {
    rmSync(DATA, { recursive: true, force: true });
    for (const it of small) {
      mkdirSync(dirname(join(WWW, it.path)), { recursive: true });
      writeFileSync(join(WWW, it.path), body(it.seed, 1024));
    }
    mkdirSync(join(WWW, 'large'), { recursive: true });
    for (const it of large) writeFileSync(join(WWW, it.path), body(it.seed + 1e6, LARGE_SIZE));
    // the audit's complete mirror: the same bytes the Source lists (not served, only listed)
    for (const it of auditItems) {
      const p = join(DATA, 'audit-mirror', it.path);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, body(it.seed + 2e6, 200 + (it.seed % 300)));
    }
    writeFileSync(marker, 'ok');
  }
  for (const it of small) {
    const b = readFileSync(join(WWW, it.path));
    it.md5 = md5(b);
    it.length = b.length;
  }
  for (const it of large) {
    const b = readFileSync(join(WWW, it.path));
    it.md5 = md5(b);
    it.length = b.length;
  }
  for (const it of auditItems) {
    const b = body(it.seed + 2e6, 200 + (it.seed % 300));
    it.md5 = md5(b);
    it.length = b.length;
  }
  return { small, large, auditItems };
}

async function startNginx(port) {
  const prefix = join(DATA, 'nginx');
  mkdirSync(join(prefix, 'logs'), { recursive: true });
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${join(prefix, 'nginx.pid')};
error_log ${join(prefix, 'logs', 'error.log')} warn;
events { worker_connections 1024; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  types { text/plain txt; application/xml xml; application/octet-stream bin; }
  client_body_temp_path ${join(prefix, 'tmp')};
  proxy_temp_path ${join(prefix, 'tmp')};
  fastcgi_temp_path ${join(prefix, 'tmp')};
  uwsgi_temp_path ${join(prefix, 'tmp')};
  scgi_temp_path ${join(prefix, 'tmp')};
  server { listen 127.0.0.1:${port}; root ${WWW}; }
}
`,
  );
  mkdirSync(join(prefix, 'tmp'), { recursive: true });
  const child = spawn('nginx', ['-c', conf, '-p', prefix], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  await waitForPort(port, () => err);
  return { kind: 'nginx (1 worker)', stop: () => new Promise((r) => (child.exitCode !== null ? r() : (child.once('exit', r), child.kill('SIGQUIT')))) };
}

async function startNodeStatic(port) {
  const script = `
    import { createServer } from 'node:http';
    import { readFile } from 'node:fs/promises';
    import { join, normalize } from 'node:path';
    const root = ${JSON.stringify(WWW)};
    createServer(async (req, res) => {
      try {
        const p = normalize(decodeURIComponent(req.url.split('?')[0]));
        const body = await readFile(join(root, p));
        res.writeHead(200, { 'content-length': body.length }).end(body);
      } catch { res.writeHead(404).end(); }
    }).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
  await waitForPort(port, () => '');
  return { kind: 'node:http static server (nginx not installed)', stop: () => new Promise((r) => (child.once('exit', r), child.kill())) };
}

async function waitForPort(port, why) {
  const pool = new Pool(`http://127.0.0.1:${port}`);
  for (let i = 0; i < 200; i++) {
    try {
      const r = await pool.request({ path: '/', method: 'GET' });
      await r.body.dump();
      await pool.close();
      return;
    } catch {
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  await pool.destroy();
  throw new Error(`server on port ${port} did not start: ${why()}`);
}

/** The bare loop: undici GET + md5 + writeFile, CONCURRENCY at once. */
async function bareLoop(origin, items, dir) {
  const pool = new Pool(origin, { connections: CONCURRENCY, pipelining: 1 });
  for (const d of new Set(items.map((i) => dirname(join(dir, i.path))))) mkdirSync(d, { recursive: true });
  settle();
  let next = 0;
  let bytes = 0;
  const cpu0 = cpuTimes();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) {
        const it = items[next++];
        const { body } = await pool.request({ path: `/${it.path}`, method: 'GET' });
        const b = Buffer.from(await body.arrayBuffer());
        if (md5(b) !== it.md5) throw new Error(`bare loop: ${it.path} differs`);
        bytes += b.length;
        await writeFile(join(dir, it.path), b);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  if (items.length === SMALL) spent(cpu0);
  await pool.close();
  return { seconds, bytes };
}

/**
 * Flushes what earlier runs wrote: no run pays for another's write-back. Nothing is removed between runs (every
 * run writes into a new folder under RUNS, removed at the end): a removal would slow the next runs' creates (see
 * {@link dropCleanCaches}).
 */
function settle() {
  spawnSync('sync');
}

async function ours(source, dest, options) {
  settle();
  const cpu0 = cpuTimes();
  const t0 = performance.now();
  const r = await sync({ source, dest, concurrency: CONCURRENCY, ...options });
  const seconds = (performance.now() - t0) / 1000;
  if (source.endsWith('/small-list.xml')) spent(cpu0);
  if (r.failed.length > 0) throw new Error(`sync failed: ${JSON.stringify(r.failed.slice(0, 3))}`);
  return { seconds, bytes: r.bytes, created: r.created };
}

/** The machine's CPU times (/proc/stat: user, nice, system, idle, iowait, irq, softirq, steal), or undefined. */
function cpuTimes() {
  try {
    return readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1, 9).map(Number);
  } catch {
    return undefined;
  }
}

/** CPU times spent during the timed small-file runs (not during flushes and probes). */
let cpuSpent = cpuTimes()?.map(() => 0);

/** Adds the machine's CPU times since `a` (a {@link cpuTimes}) to {@link cpuSpent}. */
function spent(a) {
  const b = cpuTimes();
  if (a !== undefined && b !== undefined && cpuSpent !== undefined) cpuSpent = cpuSpent.map((v, i) => v + b[i] - a[i]);
}

/** How the CPUs' time went, as text, from summed {@link cpuTimes} deltas. */
function cpuShares(d) {
  if (d === undefined) return 'CPU times not available';
  const total = d.reduce((s, v) => s + v, 0) || 1;
  const pct = (v) => `${Math.round((100 * v) / total)}%`;
  return `busy ${pct(d[0] + d[1] + d[2] + d[5] + d[6])}, idle ${pct(d[3] + d[4])}, stolen by the host ${pct(d[7])}`;
}

const fmt = (n, d = 0) => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const verdict = (ok) => (ok ? 'met' : 'MISSED');

const started = performance.now();
const { small, large, auditItems } = generate();
if (existsSync(join(DATA, 'runs'))) {
  // left by an earlier version of this bench: removed, then a pause for the removal's discards before anything is measured
  rmSync(join(DATA, 'runs'), { recursive: true, force: true });
  settle();
  spawnSync('sleep', ['3']);
}
const port = await freePort();
const server = has('nginx') ? await startNginx(port) : await startNodeStatic(port);
const origin = `http://127.0.0.1:${port}`;
console.log(`server: ${server.kind} on ${origin}; runs in ${RUNS}${SPREAD ? ' (chattr +T: run folders spread over block groups)' : ' (chattr +T not available: run folders placed by the file system)'}`);
try {
  const at = iso(Date.UTC(2024, 0, 1));
  writeFileSync(join(WWW, 'small-list.xml'), resourceList(origin, small, at));
  writeFileSync(join(WWW, 'large-list.xml'), resourceList(origin, large, at));
  const parts = [];
  for (let i = 0; i * 50_000 < auditItems.length; i++) {
    writeFileSync(join(WWW, `audit-list-${i}.xml`), resourceList(origin, auditItems.slice(i * 50_000, (i + 1) * 50_000), at));
    parts.push(`audit-list-${i}.xml`);
  }
  writeFileSync(join(WWW, 'audit-index.xml'), resourceListIndex(origin, parts, at));

  const dropped = dropCleanCaches();
  for (const it of small) readFileSync(join(WWW, it.path)); // served from memory again

  // 1. small files: bare loop, ours without fsync and ours with the default durability, one after the other,
  // six rounds, each starting with the next of the three (so no mode always runs first or last); the best of each,
  // the bare loop's too (this machine's CPU time varies 2-fold from run to run, and the host steals up to a third
  // of it). Every run writes into a new folder, after the previous runs' writes were flushed (`sync`), so no run
  // pays for another's write-back.
  const rounds = { bare: [], nofsync: [], durable: [] };
  const runs = [
    ['bare', (round) => bareLoop(origin, small, runDir(`bare-${round}`))],
    ['nofsync', (round) => cli('no-fsync', `${origin}/small-list.xml`, runDir(`mirror-small-${round}`))],
    ['durable', (round) => cli('batch', `${origin}/small-list.xml`, runDir(`mirror-fsync-${round}`))],
  ];
  for (let round = 0; round < ROUNDS; round++) {
    for (let k = 0; k < runs.length; k++) {
      const [mode, run] = runs[(round + k) % runs.length];
      rounds[mode].push((await run(round)).seconds); // each run flushes what came before it (settle)
    }
  }
  const mineFile = (await cli('file', `${origin}/small-list.xml`, runDir('mirror-file'))).seconds;
  const minePlain = (await ours(`${origin}/small-list.xml`, runDir('mirror-plain'), {})).seconds;
  const minePlainNoFsync = (await ours(`${origin}/small-list.xml`, runDir('mirror-plain-nofsync'), { durability: new RenameOnly() })).seconds;
  const bare = Math.min(...rounds.bare);
  const mine = Math.min(...rounds.nofsync);
  const mineFsync = Math.min(...rounds.durable);
  const bareRate = SMALL / bare;
  const rate = SMALL / mine;
  const rateFsync = SMALL / mineFsync;
  console.log(`bare loop (undici GET + md5 + writeFile, ${CONCURRENCY} at once, no fsync): ${fmt(bareRate)} files/s`);
  console.log(`baseline sync 5,000 x 1 KB, md5 + length verified, atomic writes, the CLI's --no-fsync: ${fmt(rate)} files/s (${fmt(rate / bareRate, 2)} x bare loop)`);
  console.log(`  target ≥4,000 files/s: ${verdict(rate >= 4000)}; target ≥0.7 x bare loop: ${verdict(rate / bareRate >= 0.7)}`);
  console.log(`baseline sync 5,000 x 1 KB, durable, the CLI's default (group commit, one syncfs per batch): ${fmt(rateFsync)} files/s (${fmt(rateFsync / bareRate, 2)} x bare loop)`);
  console.log(`  (the CLI writes small files on a worker thread, SmallFileThread; the library's plain paths without it are below)`);
  console.log(`  target ≥4,000 files/s: ${verdict(rateFsync >= 4000)}; target ≥0.7 x bare loop: ${verdict(rateFsync / bareRate >= 0.7)}`);
  console.log(`baseline sync 5,000 x 1 KB, the CLI's --fsync-method file (an fsync per file, one run): ${fmt(SMALL / mineFile)} files/s (${fmt(SMALL / mineFile / bareRate, 2)} x bare loop)`);
  console.log(`baseline sync 5,000 x 1 KB, the library's default (group commit, the batch's fsyncs in parallel, no thread, one run): ${fmt(SMALL / minePlain)} files/s (${fmt(SMALL / minePlain / bareRate, 2)} x bare loop)`);
  console.log(`baseline sync 5,000 x 1 KB, the library with fsync: false (no thread, one run): ${fmt(SMALL / minePlainNoFsync)} files/s (${fmt(SMALL / minePlainNoFsync / bareRate, 2)} x bare loop)`);
  const cpu = cpuShares(cpuSpent);
  const perRound = (xs) => xs.map((t) => fmt(SMALL / t)).join(' / ');
  console.log(`  (each round, files/s: bare loop ${perRound(rounds.bare)}; --no-fsync ${perRound(rounds.nofsync)}; durable ${perRound(rounds.durable)})`);
  const sortedProbe = [...probeUs].sort((x, y) => x - y);
  const probeMedian = sortedProbe[sortedProbe.length >> 1];
  console.log(
    `  (creates of 1 KB in the run folders before each run: median ${fmt(probeMedian, 0)} µs${probeMedian > 60 ? ' (slow: the file system is avoiding recently deleted inodes; every figure above suffers)' : ''}; page cache ${dropped ? 'flushed and dropped first' : 'not dropped (needs root)'})`,
  );
  console.log(`  (during the small-file runs, of ${cpus().length} CPUs' time: ${cpu}; time stolen by the host slows every figure, the bare loop's too)`);

  // 2. large files: ours with the default durability (an fsync per large file) and without fsync, two rounds
  // each, the best of each
  const bareLarge = await bareLoop(origin, large, runDir('bare-large'));
  const bestOf = (a, b) => (a.seconds <= b.seconds ? a : b);
  let mineLarge = await ours(`${origin}/large-list.xml`, runDir('mirror-large-0'), {});
  let mineLargeNoFsync = await ours(`${origin}/large-list.xml`, runDir('mirror-large-nofsync-0'), { durability: new RenameOnly() });
  mineLarge = bestOf(mineLarge, await ours(`${origin}/large-list.xml`, runDir('mirror-large-1'), {}));
  mineLargeNoFsync = bestOf(mineLargeNoFsync, await ours(`${origin}/large-list.xml`, runDir('mirror-large-nofsync-1'), { durability: new RenameOnly() }));
  const mbBare = bareLarge.bytes / 1048576 / bareLarge.seconds;
  const mb = mineLarge.bytes / 1048576 / mineLarge.seconds;
  const mbNoFsync = mineLargeNoFsync.bytes / 1048576 / mineLargeNoFsync.seconds;
  console.log(`bare loop, ${LARGE_COUNT} x ${LARGE_SIZE / 1048576} MB (buffered GET + md5 + writeFile, no fsync): ${fmt(mbBare)} MB/s`);
  console.log(`baseline sync large files (streamed, md5 + length verified, atomic), the default (fsync each): ${fmt(mb)} MB/s (${fmt(mb / mbBare, 2)} x bare loop)`);
  console.log(`  target ≥150 MB/s: ${verdict(mb >= 150)}`);
  console.log(`baseline sync large files, --no-fsync: ${fmt(mbNoFsync)} MB/s (${fmt(mbNoFsync / mbBare, 2)} x bare loop)`);

  // 3. audit of 100,000 resources, every file hashed (child process, for its own peak RSS)
  const mirror = join(DATA, 'audit-mirror');
  if (dropped) for (const it of auditItems) readFileSync(join(mirror, it.path)); // back in the page cache, untimed: both sides read warm
  const tb = performance.now();
  for (const it of auditItems) {
    if (md5(readFileSync(join(mirror, it.path))) !== it.md5) throw new Error(`audit mirror differs at ${it.path}`);
  }
  const bareAudit = (performance.now() - tb) / 1000;
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--audit-child', `${origin}/audit-index.xml`, mirror], { encoding: 'utf8', timeout: 60_000 });
  if (child.status !== 0) throw new Error(`audit child failed: ${child.stderr}`);
  const a = JSON.parse(child.stdout);
  if (!a.inSync || a.total !== AUDIT_COUNT) throw new Error(`audit did not find the mirror complete: ${child.stdout}`);
  console.log(`bare loop (readFileSync + md5 of 100,000 files, no list): ${fmt(bareAudit, 2)} s`);
  console.log(`audit 100,000 resources, every file hashed: ${fmt(a.seconds, 2)} s (${fmt(a.seconds / bareAudit, 2)} x baseline), peak RSS ${fmt(a.maxRssKb / 1024)} MB`);
  console.log(`  target ≤3 s: ${verdict(a.seconds <= 3)}`);
} finally {
  await closeCliDurabilities();
  await server.stop();
  rmSync(RUNS, { recursive: true, force: true });
}
console.log(`bench time: ${fmt((performance.now() - started) / 1000, 1)} s`);
