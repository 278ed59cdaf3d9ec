// The aggregator at scale: `resourcesync aggregate` (a child process) over N small Sources (AGGREGATE_BENCH_SOURCES,
// default 1,000), each on its own loopback port of one server process here, each with its own Source Description,
// Capability List, Resource List (3 resources) and an empty Change List. Prints the time to bring all of them in
// step, the steady-state cost of one poll per Source (requests, CPU, from a second round) and the aggregator's RSS
// per Source; the baseline, in the same run, is the library's `sync()` of the same Sources one after the other
// (a sample of 100) in this process.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { sync } from '../dist/src/destination/sync.js';
import { readAggregateStatus } from '../dist/src/aggregate/status.js';

const MAIN = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const N = Number(process.env.AGGREGATE_BENCH_SOURCES ?? 1000);
const SAMPLE = Math.min(100, N);
const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

let requests = 0;
function documents(origin) {
  const at = '2024-01-01T00:00:00Z';
  const url = (loc, md, extra = '') => `<url><loc>${loc}</loc>${extra}<rs:md ${md}/></url>`;
  const res = [1, 2, 3].map((i) => ({ path: `/r${i}.txt`, body: `resource ${i} of ${origin}\n` }));
  return new Map([
    ['/.well-known/resourcesync', `<urlset ${NS}><rs:md capability="description"/>${url(`${origin}/capabilitylist.xml`, 'capability="capabilitylist"')}</urlset>`],
    ['/capabilitylist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>${url(`${origin}/resourcelist.xml`, 'capability="resourcelist"')}${url(`${origin}/changelist.xml`, 'capability="changelist"')}</urlset>`],
    ['/resourcelist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="resourcelist" at="${at}"/>${res.map((r) => url(`${origin}${r.path}`, `length="${Buffer.byteLength(r.body)}" type="text/plain"`, `<lastmod>${at}</lastmod>`)).join('')}</urlset>`],
    ['/changelist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="changelist" from="${at}"/></urlset>`],
    ...res.map((r) => [r.path, r.body]),
  ]);
}

async function startSources(n) {
  const servers = [];
  for (let i = 0; i < n; i++) {
    let docs;
    const server = createServer((req, res) => {
      requests++;
      const body = docs.get(req.url);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': req.url.endsWith('.txt') ? 'text/plain' : 'application/xml' }).end(body);
    });
    await new Promise((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${server.address().port}`;
    docs = documents(origin);
    servers.push({ server, origin });
  }
  return servers;
}

/** CPU seconds (user + system) and RSS (MiB) of a process, from /proc. */
function usage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  return { cpu: ticks / 100, rss };
}

async function until(what, predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const tmp = mkdtempSync(join(tmpdir(), 'rs-aggregate-bench-'));
let child;
const sources = await startSources(N);
try {
  // baseline: the library's sync of a sample, one after the other
  const b0 = performance.now();
  for (let i = 0; i < SAMPLE; i++) await sync({ source: `${sources[i].origin}/.well-known/resourcesync`, dest: join(tmp, 'baseline', String(i)), delete: true });
  const baselineMs = (performance.now() - b0) / SAMPLE;

  const out = join(tmp, 'agg');
  const config = join(tmp, 'aggregate.yaml');
  writeFileSync(config, `out: ${out}\nconcurrency: 16\nsources:\n${sources.map((s, i) => `  - url: ${s.origin}/.well-known/resourcesync\n    id: s${i}\n    interval: 600\n`).join('')}`);
  requests = 0;
  const t0 = performance.now();
  child = spawn(process.execPath, [MAIN, 'aggregate', config, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const synced = (round) => {
    try {
      const list = readAggregateStatus(out);
      return list.length === N && list.every((s) => s.totals.syncs >= round);
    } catch {
      return false;
    }
  };
  await until('every Source in step', () => synced(1), 600_000);
  const inStepMs = performance.now() - t0;
  const firstRequests = requests;
  const u1 = usage(child.pid);
  // a second round: a change of every Source's interval in the file restarts each, polled at once
  requests = 0;
  writeFileSync(config, readFileSync(config, 'utf8').replaceAll('interval: 600', 'interval: 601'));
  await until('a second round', () => synced(2), 600_000);
  const u2 = usage(child.pid);
  const perPoll = requests / N;
  const cpuPerPoll = ((u2.cpu - u1.cpu) / N) * 1000;
  console.log(`aggregate: ${N} Sources (3 resources each), concurrency 16`);
  console.log(`  in step: ${(inStepMs / 1000).toFixed(1)} s (${(inStepMs / N).toFixed(1)} ms per Source; ${(inStepMs / N / baselineMs).toFixed(2)}x baseline ${baselineMs.toFixed(1)} ms per Source, sync() one after the other)`);
  console.log(`  first round: ${(firstRequests / N).toFixed(1)} requests per Source; CPU ${((u1.cpu / N) * 1000).toFixed(1)} ms per Source`);
  console.log(`  steady state (a poll with no change): ${perPoll.toFixed(1)} requests per Source, CPU ${cpuPerPoll.toFixed(1)} ms per Source`);
  console.log(`  RSS: ${u2.rss.toFixed(0)} MiB (${((u2.rss * 1024) / N).toFixed(0)} KiB per Source)`);
  const failures = err.split('\n').filter((l) => l.includes(': failed ('));
  if (failures.length > 0) console.log(`  failures logged: ${failures.length}, e.g. ${failures[0]}`);
} finally {
  child?.kill('SIGTERM');
  if (child) await new Promise((r) => child.once('exit', r));
  for (const s of sources) s.server.close();
  rmSync(tmp, { recursive: true, force: true });
}
