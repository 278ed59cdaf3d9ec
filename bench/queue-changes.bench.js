// The changes of an incremental sync through a job queue (pg-boss on PostgreSQL), against a plain sync in the same run:
// N resources (default 10^4, RS_BENCH_QUEUE_CHANGES, at most 50,000: one Change List) taken by a baseline into two
// folders (plain, and coordinator + 2 `worker` processes), then every one updated at the Source and listed in the
// Change List; the incremental runs are timed: `sync --queue` (coordinator + 2 workers) against a plain `sync`, as
// the ratio of their times (1 KB bodies with length and MD5, on loopback, state in PostgreSQL for both, --no-fsync);
// peak RSS of every process.
// Skips, saying why, where PostgreSQL is not installed.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { postgresBin, startPostgresCluster } from './postgres-cluster.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const N = Math.min(50_000, Number(process.env.RS_BENCH_QUEUE_CHANGES ?? 10_000));

const body = (i, v) => `resource ${i} version ${v} `.repeat(60).slice(0, 1000 + (i % 24));
const md5 = (s) => createHash('md5').update(s).digest('hex');
const iso = (ms) => new Date(ms).toISOString().replace('.000Z', 'Z');
const T0 = Date.UTC(2026, 0, 1);

/** The Source at `version` 1 or 2: a Resource List of N resources, and a Change List (empty, or N updates). */
function source(state) {
  const head = (cap, extra = '') => `<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n<rs:md capability="${cap}"${extra}/>\n`;
  return createServer((req, res) => {
    const origin = `http://${req.headers.host}`;
    const url = req.url ?? '/';
    const v = state.version;
    const xml = (s) => res.writeHead(200, { 'content-type': 'application/xml' }).end(s);
    if (url === '/capabilitylist.xml') {
      return xml(`${head('capabilitylist')}<url><loc>${origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>\n<url><loc>${origin}/changelist.xml</loc><rs:md capability="changelist"/></url>\n</urlset>\n`);
    }
    if (url === '/resourcelist.xml') {
      let out = `${head('resourcelist', ` at="${iso(T0 + (v - 1) * 86_400_000)}"`)}`;
      for (let i = 0; i < N; i++) out += `<url><loc>${origin}/r/${i}.txt</loc><rs:md hash="md5:${md5(body(i, v))}" length="${body(i, v).length}"/></url>\n`;
      return xml(`${out}</urlset>\n`);
    }
    if (url === '/changelist.xml') {
      let out = `${head('changelist', ` from="${iso(T0)}"`)}`;
      if (v === 2) {
        for (let i = 0; i < N; i++) out += `<url><loc>${origin}/r/${i}.txt</loc><rs:md change="updated" datetime="${iso(T0 + 3_600_000 + i * 1000)}" hash="md5:${md5(body(i, 2))}" length="${body(i, 2).length}"/></url>\n`;
      }
      return xml(`${out}</urlset>\n`);
    }
    const r = /^\/r\/(\d+)\.txt$/.exec(url);
    if (r !== null && Number(r[1]) < N) return res.writeHead(200, { 'content-type': 'text/plain' }).end(body(Number(r[1]), v));
    res.writeHead(404).end();
  });
}

let RSS_HOOK = '';

/** A node process with its peak RSS written to `rssFile` at exit. */
function child(args, rssFile) {
  const p = spawn(process.execPath, ['--require', RSS_HOOK, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, RS_BENCH_RSS_FILE: rssFile } });
  let out = '';
  let err = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.on('data', (d) => (err += d));
  return { p, out: () => out, err: () => err };
}

/** The peak RSS (MB) a child wrote at its exit. */
function rssOf(file) {
  try {
    return (Number(readFileSync(file, 'utf8')) / 1024).toFixed(0);
  } catch {
    return '?';
  }
}

/** Runs `args` to its exit; resolves with seconds taken and its JSON report. */
async function timedRun(args, rssFile) {
  const t0 = performance.now();
  const c = child(args, rssFile);
  const [code] = await once(c.p, 'exit');
  const secs = (performance.now() - t0) / 1000;
  if (code !== 0) throw new Error(`${args.slice(1, 3).join(' ')} exited ${code}: ${c.err().slice(0, 500)}`);
  return { secs, report: JSON.parse(c.out()) };
}

async function main() {
  const work = mkdtempSync(join(tmpdir(), 'rs-bench-queue-changes-'));
  RSS_HOOK = join(work, 'rss-hook.cjs');
  writeFileSync(RSS_HOOK, "process.on('exit', () => require('node:fs').writeFileSync(process.env.RS_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS)));\n");
  const pg = await startPostgresCluster();
  const state = { version: 1 };
  const server = source(state);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const cap = `http://127.0.0.1:${server.address().port}/capabilitylist.xml`;
  const workers = [0, 1].map((k) => child([CLI, 'worker', '--queue', pg.url, '--no-fsync', '--poll', '50'], join(work, `rss-worker-${k}`)));
  try {
    const common = ['--state', pg.url, '--no-fsync', '--json'];
    const plain = [CLI, 'sync', cap, join(work, 'plain'), ...common];
    const queued = [CLI, 'sync', cap, join(work, 'queued'), '--queue', pg.url, ...common];
    await timedRun(plain, join(work, 'rss-plain-baseline'));
    await timedRun(queued, join(work, 'rss-coordinator-baseline'));
    state.version = 2;
    const a = await timedRun(plain, join(work, 'rss-plain'));
    const b = await timedRun(queued, join(work, 'rss-coordinator'));
    for (const r of [a.report, b.report]) if (r.mode !== 'incremental' || r.updated !== N) throw new Error(`${r.mode}: ${r.updated} updated, not ${N}`);
    console.log(`queue-changes: ${N} changes (1 KB updates, one Change List): plain sync ${a.secs.toFixed(2)} s (${(N / a.secs).toFixed(0)}/s); coordinator + 2 workers ${b.secs.toFixed(2)} s (${(N / b.secs).toFixed(0)}/s): ${(b.secs / a.secs).toFixed(2)}x the plain sync's time (target <= 1.25x)`);
    for (const w of workers) w.p.kill('SIGTERM');
    for (const w of workers) if (w.p.exitCode === null) await once(w.p, 'exit');
    console.log(`queue-changes: peak RSS: plain sync ${rssOf(join(work, 'rss-plain'))} MB, coordinator ${rssOf(join(work, 'rss-coordinator'))} MB, workers ${rssOf(join(work, 'rss-worker-0'))} and ${rssOf(join(work, 'rss-worker-1'))} MB`);
  } finally {
    for (const w of workers) if (w.p.exitCode === null) w.p.kill('SIGKILL');
    server.close();
    pg.stop();
    rmSync(work, { recursive: true, force: true });
  }
}

if (postgresBin() === undefined) console.log('queue-changes: skipped (PostgreSQL is not installed: apt-get install postgresql)');
else await main();
