// Sync workers on a job queue (pg-boss on PostgreSQL), against a plain sync in the same run:
//  1. `sync --queue` (coordinator) + 2 `worker` processes against a single-process `sync` of the same N resources
//     (a Resource List Index of parts of 50,000)
//     (default 10^4, RS_BENCH_QUEUE_RESOURCES; 1 KB bodies with length and MD5, on loopback, state in PostgreSQL
//     for both, --no-fsync), as the ratio of their times; peak RSS of every process.
//  2. Planning 10^6 resources (RS_BENCH_QUEUE_PLAN): a Resource List Index of 20 parts read and parsed, and every
//     chunk job (1,000 entries each, the entries in the job's row) inserted, with no worker running; split by
//     phase: the list read and parsed alone (the same lists, entries drained) and the jobs' inserts (the rest).
//  3. Memory per process against the number of resources: peak RSS of the plain sync, the coordinator and the
//     workers of (1) at N/10 and N, and of the planning coordinator of (2) at PLAN/10 and PLAN, as ratios (flat:
//     about 1). The machine's load average is printed beside them: peak RSS is a V8 heap sized by allocation rate
//     too, so a loaded machine moves it. What the planning coordinator needs (its live data, not the garbage V8
//     lets pile up) is measured by running it again at both sizes under a heap cap (HEAP_CAP MB of old space): it
//     completes at both, and its peak RSS is then the memory it needs.
// Skips, saying why, where PostgreSQL is not installed.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBin, startPostgresCluster } from './postgres-cluster.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const N = Number(process.env.RS_BENCH_QUEUE_RESOURCES ?? 10_000);
const PLAN = Number(process.env.RS_BENCH_QUEUE_PLAN ?? 1_000_000);
const PART = 50_000;
/** The old-space cap (MB) of the capped planning runs. */
const HEAP_CAP = 48;

const body = (i) => `resource ${i} `.repeat(80).slice(0, 1000 + (i % 24));
const md5 = (s) => createHash('md5').update(s).digest('hex');

/**
 * The Source: a Capability List of n resources (`/s<n>/`, served, with length and MD5) and one of n resources to
 * plan (`/p<n>/`, lastmod and length only), each with a Resource List Index of parts of PART; n at most the
 * largest size the bench uses.
 */
function source() {
  const most = Math.max(N, PLAN);
  const md5s = Array.from({ length: N }, (_, i) => md5(body(i)));
  const head = (cap, extra = '') => `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n<rs:md capability="${cap}"${extra}/>\n`;
  const at = ' at="2026-01-01T00:00:00Z"';
  return createServer((req, res) => {
    const origin = `http://${req.headers.host}`;
    const url = req.url ?? '/';
    const xml = (s) => res.writeHead(200, { 'content-type': 'application/xml' }).end(s);
    const m = /^\/(s|p)(\d+)\/(.*)$/.exec(url);
    const count = m === null ? 0 : Number(m[2]);
    if (m === null || count > most || (m[1] === 's' && count > N)) return res.writeHead(404).end();
    const [, kind, , rest] = m;
    const base = `${origin}/${kind}${count}`;
    if (rest === 'capabilitylist.xml') return xml(`${head('capabilitylist')}<url><loc>${base}/resourcelist-index.xml</loc><rs:md capability="resourcelist"/></url>\n</urlset>\n`);
    if (rest === 'resourcelist-index.xml') {
      const parts = Array.from({ length: Math.ceil(count / PART) }, (_, k) => `<sitemap><loc>${base}/part-${k}.xml</loc></sitemap>`);
      return xml(`<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n<rs:md capability="resourcelist"${at}/>\n${parts.join('\n')}\n</sitemapindex>\n`);
    }
    const part = /^part-(\d+)\.xml$/.exec(rest);
    if (part !== null) {
      res.writeHead(200, { 'content-type': 'application/xml' });
      let out = `${head('resourcelist', at)}<rs:ln rel="up" href="${base}/capabilitylist.xml"/>\n`;
      const k = Number(part[1]);
      for (let i = k * PART; i < Math.min(count, (k + 1) * PART); i++) {
        out += kind === 's'
          ? `<url><loc>${base}/r/${i}.txt</loc><rs:md hash="md5:${md5s[i]}" length="${body(i).length}"/></url>\n`
          : `<url><loc>${base}/r/${i}.txt</loc><lastmod>2025-12-31T00:00:00Z</lastmod><rs:md length="${1000 + (i % 24)}"/></url>\n`;
      }
      return res.end(`${out}</urlset>\n`);
    }
    const r = /^r\/(\d+)\.txt$/.exec(rest);
    if (kind === 's' && r !== null && Number(r[1]) < count) return res.writeHead(200, { 'content-type': 'text/plain' }).end(body(Number(r[1])));
    res.writeHead(404).end();
  });
}

/** A node process with its peak RSS written to `rssFile` at exit. */
function child(args, rssFile) {
  const p = spawn(process.execPath, ['--require', RSS_HOOK, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RS_BENCH_RSS_FILE: rssFile } });
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  return { p, out: () => out, err: () => err };
}

let RSS_HOOK = '';
/** The peak RSS (MB) a child wrote at its exit. */
function rssOf(dir, name) {
  try {
    return (Number(readFileSync(join(dir, name), 'utf8')) / 1024).toFixed(0);
  } catch {
    return '?';
  }
}

/** Runs `args` to its exit; resolves with seconds taken and what it printed. */
async function timedRun(args, rssFile) {
  const t0 = performance.now();
  const c = child(args, rssFile);
  const [code] = await once(c.p, 'exit');
  const secs = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`${args.slice(0, 2).join(' ')} exited ${code}: ${c.err().slice(0, 500)}`);
  return { secs, out: c.out() };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'rs-bench-queue-'));
  RSS_HOOK = join(work, 'rss-hook.cjs');
  writeFileSync(RSS_HOOK, "process.on('exit', () => require('node:fs').writeFileSync(process.env.RS_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS)));\n");
  const pg = await startPostgresCluster();
  const server = source();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${server.address().port}`;
  try {
    const common = ['--state', pg.url, '--no-fsync', '--json'];
    // 1. plain sync, then coordinator + 2 workers, each into a folder of its own
    const at = await syncRound(work, origin, pg.url, common, N);
    console.log(`queue: ${N} resources (1 KB): plain sync ${at.plain.toFixed(2)} s (${(N / at.plain).toFixed(0)}/s); coordinator + 2 workers ${at.queued.toFixed(2)} s (${(N / at.queued).toFixed(0)}/s): ${(at.queued / at.plain).toFixed(2)}x the plain sync's time (target <= 1.25x)`);
    console.log(`queue: peak RSS: plain sync ${at.rss.plain} MB, coordinator ${at.rss.coordinator} MB, workers ${at.rss.workers.join(' and ')} MB`);
    // 3. (memory) the same at a tenth of N, before any planning: a planning run leaves jobs that no worker is to take
    const small = Math.max(100, Math.round(N / 10));
    const tenth = await syncRound(work, origin, pg.url, common, small);
    // 2. planning PLAN resources: parse alone, then parse + jobs inserted, no worker running; then (3) a tenth of PLAN
    const p = await planRound(work, origin, pg.url, PLAN);
    console.log(`queue: planning ${PLAN} resources: ${p.secs.toFixed(1)} s (target about 30 s): lists read and parsed ${p.parseSecs.toFixed(1)} s, ${p.chunks} jobs inserted ${(p.secs - p.parseSecs).toFixed(1)} s (${(p.chunks / Math.max(0.001, p.secs - p.parseSecs)).toFixed(0)} jobs/s, ${(PLAN / p.secs).toFixed(0)} resources/s overall); ${(p.jobBytes / PLAN).toFixed(0)} B of job table per resource`);
    console.log(`queue: peak RSS planning ${PLAN}: coordinator ${p.rss.plan} MB (parse alone ${p.rss.parse} MB; coordinator of ${N}: ${at.rss.coordinator} MB)`);
    const planSmall = Math.max(1000, Math.round(PLAN / 10));
    const p10 = await planRound(work, origin, pg.url, planSmall);
    const ratio = (a, b) => `${a} -> ${b} MB (${(Number(b) / Number(a)).toFixed(2)}x)`;
    const load = loadavg().map((l) => l.toFixed(1)).join(' ');
    console.log(`queue: memory per process, peak RSS at ${small} -> ${N} resources: plain sync ${ratio(tenth.rss.plain, at.rss.plain)}, coordinator ${ratio(tenth.rss.coordinator, at.rss.coordinator)}, worker ${ratio(Math.max(...tenth.rss.workers), Math.max(...at.rss.workers))} (target: flat, about 1x; load average ${load} on ${cpus().length} CPUs)`);
    console.log(`queue: memory planning ${planSmall} -> ${PLAN} resources: coordinator ${ratio(p10.rss.plan, p.rss.plan)}, parse alone ${ratio(p10.rss.parse, p.rss.parse)} (target: flat, about 1x); under a ${HEAP_CAP} MB heap cap: coordinator ${ratio(p10.rss.capped, p.rss.capped)}, planning ${PLAN} in ${p.cappedSecs.toFixed(1)} s (${(p.cappedSecs / p.secs).toFixed(2)}x uncapped)`);
  } finally {
    server.close();
    pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * A plain sync of `n` resources, then the same by a coordinator and 2 workers (started and their queue opened
 * before the clock starts), each into a folder of its own: seconds taken and peak RSS (MB) of each process.
 */
async function syncRound(work, origin, pgUrl, common, n) {
  const list = `${origin}/s${n}/capabilitylist.xml`;
  const tag = `-${n}`;
  const plain = await timedRun([CLI, 'sync', list, join(work, `plain${tag}`), ...common], join(work, `rss-plain${tag}`));
  const workers = [0, 1].map((k) => child([CLI, 'worker', '--queue', pgUrl, '--no-fsync', '--poll', '50'], join(work, `rss-worker-${k}${tag}`)));
  await new Promise((r) => setTimeout(r, 1500)); // the workers' queue opened before the clock starts (their start is not the run's)
  const queued = await timedRun([CLI, 'sync', list, join(work, `queued${tag}`), '--queue', pgUrl, ...common], join(work, `rss-coordinator${tag}`));
  for (const w of workers) w.p.kill('SIGTERM');
  for (const w of workers) if (w.p.exitCode === null) await once(w.p, 'exit');
  const a = JSON.parse(plain.out);
  const b = JSON.parse(queued.out);
  if (a.created !== n || b.created !== n) throw new Error(`created ${a.created} and ${b.created}, not ${n}`);
  const rss = { plain: rssOf(work, `rss-plain${tag}`), coordinator: rssOf(work, `rss-coordinator${tag}`), workers: [0, 1].map((k) => rssOf(work, `rss-worker-${k}${tag}`)) };
  return { plain: plain.secs, queued: queued.secs, rss };
}

/** Planning `n` resources: the lists parsed alone, then parsed and every chunk job inserted; times and peak RSS. */
async function planRound(work, origin, pgUrl, n) {
  const list = `${origin}/p${n}/capabilitylist.xml`;
  const me = join(ROOT, 'bench', 'queue.bench.js');
  const parse = await timedRun([me, '--plan-child', list, 'parse', String(n)], join(work, `rss-parse-${n}`));
  const planned = await timedRun([me, '--plan-child', list, pgUrl, String(n)], join(work, `rss-plan-${n}`));
  // again under a heap cap: it completes, and its peak RSS is what it needs (a planning run adds jobs of its own run)
  const capped = await timedRun([`--max-old-space-size=${HEAP_CAP}`, me, '--plan-child', list, pgUrl, String(n)], join(work, `rss-capped-${n}`));
  const p = JSON.parse(planned.out);
  const c = JSON.parse(capped.out);
  return { ...p, parseSecs: JSON.parse(parse.out).secs, cappedSecs: c.secs, rss: { parse: rssOf(work, `rss-parse-${n}`), plan: rssOf(work, `rss-plan-${n}`), capped: rssOf(work, `rss-capped-${n}`) } };
}

/**
 * The planning child: with `queue` 'parse', the lists read and parsed with their entries drained; otherwise a
 * coordinator on that queue (and state) stopped once every chunk job of `total` resources is inserted.
 */
async function planChild(capabilityList, queue, total) {
  const dest = mkdtempSync(join(tmpdir(), 'rs-bench-plan-'));
  const t0 = performance.now();
  try {
    if (queue === 'parse') {
      const { baseline } = await import(join(ROOT, 'dist/src/destination/baseline.js'));
      const { connect } = await import(join(ROOT, 'dist/src/destination/connection.js'));
      const c = connect({ source: capabilityList });
      let n = 0;
      const applier = { phase() {}, estimateTotal() {}, addTotal() {}, includes: () => true, flush: async () => {}, warn() {}, fail(u, e) { throw e; } };
      // the resources seen kept as a sync keeps them (in memory up to a bound, then in a temporary file)
      const { SpillingSet } = await import(join(ROOT, 'dist/src/node/spilling-set.js'));
      const seen = new SpillingSet();
      try {
        await baseline({ http: c.documents, authority: c.authority, applier, seen, applyEntries: async (es) => { for await (const e of es) if (e.loc !== '') n++; } }, capabilityList.replace('capabilitylist.xml', 'resourcelist-index.xml'));
      } finally {
        seen.close();
      }
      await c.close();
      if (n !== total) throw new Error(`parsed ${n} entries, not ${total}`);
      console.log(JSON.stringify({ secs: (performance.now() - t0) / 1000 }));
      return;
    }
    const { syncWithQueue } = await import(join(ROOT, 'dist/src/destination/queue-sync.js'));
    const stop = new globalThis.AbortController();
    const expected = Math.ceil(total / 1000);
    let secs;
    await syncWithQueue({ source: capabilityList, dest, queue, stateUrl: queue, signal: stop.signal, onQueueProgress: (p) => {
      if (secs === undefined && p.chunks === expected) {
        secs = (performance.now() - t0) / 1000;
        stop.abort();
      }
    } }).catch((err) => { if (!stop.signal.aborted) throw err; });
    const pg = (await import('pg')).default;
    const client = new pg.Client({ connectionString: queue });
    await client.connect();
    const size = await client.query(`SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) + pg_total_relation_size('pgboss.job') AS b FROM pg_inherits WHERE inhparent = 'pgboss.job'::regclass`).catch(() => ({ rows: [{ b: 0 }] }));
    await client.end();
    console.log(JSON.stringify({ secs, chunks: expected, jobBytes: Number(size.rows[0].b) }));
  } finally {
    rmSync(dest, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--plan-child') await planChild(process.argv[3], process.argv[4], Number(process.argv[5]));
else if (postgresBin() === undefined) console.log('queue: skipped (PostgreSQL is not installed: apt-get install postgresql)');
else await main();
