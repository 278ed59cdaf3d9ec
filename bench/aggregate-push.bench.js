// The aggregator following N small Sources by push (AGGREGATE_PUSH_BENCH_SOURCES, default 200), each on its own
// loopback port of one server process here, each advertising a change channel whose hub is one WebSub hub of this
// process (served at `/hub` on every Source's port, so that each Source's hub is on its own origin). Measures, for
// `resourcesync aggregate` (a child process): the cost per Source of a change pushed (requests to the Sources,
// deliveries, CPU of the aggregator), the cost of a quiet stretch, and the RSS; the baseline, in the same run, is
// the same aggregator polling the same Sources (`mode: poll`): the cost per Source of a poll that finds the
// change, of a poll that finds none (what a reconciliation of a pushed Source reads as well), and its RSS.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { readAggregateStatus } from '../dist/src/aggregate/status.js';
import { createHub } from '../dist/src/notify/hub.js';
import { nodeListener } from '../dist/src/notify/node-listener.js';
import { openSqliteHubStore } from '../dist/src/notify/sqlite-hub-store.js';
import { publishNotification } from '../dist/src/notify/publisher.js';
import { changeNotification } from '../dist/src/core/model/notification.js';

const MAIN = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const N = Number(process.env.AGGREGATE_PUSH_BENCH_SOURCES ?? 200);
const QUIET_S = 20;
const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
const AT = '2024-01-01T00:00:00Z';

const count = { documents: 0, hub: 0, deliveries: 0 };
const tmp = mkdtempSync(join(tmpdir(), 'rs-aggregate-push-bench-'));
const hubStore = openSqliteHubStore(join(tmp, 'hub.sqlite'));

/** One Source: its documents, made from its changes so far. */
function documents(s) {
  const { origin } = s;
  const url = (loc, md, extra = '') => `<url><loc>${loc}</loc>${extra}<rs:md ${md}/></url>`;
  const body = (i) => (i === 1 ? `resource 1 of ${origin}, version ${s.version}\n` : `resource ${i} of ${origin}\n`);
  const channel = `<url><loc>${origin}/change-notification/</loc><rs:md capability="change-notification"/><rs:ln rel="hub" href="${origin}/hub"/></url>`;
  return new Map([
    ['/.well-known/resourcesync', `<urlset ${NS}><rs:md capability="description"/>${url(`${origin}/capabilitylist.xml`, 'capability="capabilitylist"')}</urlset>`],
    ['/capabilitylist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>${url(`${origin}/resourcelist.xml`, 'capability="resourcelist"')}${url(`${origin}/changelist.xml`, 'capability="changelist"')}${channel}</urlset>`],
    ['/resourcelist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="resourcelist" at="${AT}"/>${[1, 2, 3].map((i) => url(`${origin}/r${i}.txt`, `length="${Buffer.byteLength(body(i))}" type="text/plain"`, `<lastmod>${AT}</lastmod>`)).join('')}</urlset>`],
    ['/changelist.xml', `<urlset ${NS}><rs:ln rel="up" href="${origin}/capabilitylist.xml"/><rs:md capability="changelist" from="${AT}"/>${s.changes.map((c) => url(`${origin}/r1.txt`, `change="updated" datetime="${c.at}" length="${c.length}"`, `<lastmod>${c.at}</lastmod>`)).join('')}</urlset>`],
    ...[1, 2, 3].map((i) => [`/r${i}.txt`, body(i)]),
  ]);
}

async function startSources(n, hub) {
  const sources = [];
  for (let i = 0; i < n; i++) {
    const s = { version: 0, changes: [], docs: undefined, origin: '', server: undefined };
    let toHub;
    s.server = createServer((req, res) => {
      if (req.url.startsWith('/hub')) {
        count.hub++;
        return void toHub(req, res);
      }
      count.documents++;
      const body = s.docs.get(req.url);
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': req.url.endsWith('.txt') ? 'text/plain' : 'application/xml' }).end(body);
    });
    await new Promise((r) => s.server.listen(0, '127.0.0.1', r));
    s.origin = `http://127.0.0.1:${s.server.address().port}`;
    toHub = nodeListener(hub.handle, s.origin);
    s.docs = documents(s);
    sources.push(s);
  }
  return sources;
}

/** A change of resource 1 of `s`: its Change List has it; with `notify`, a Change Notification goes to the hub. */
async function change(s, hub, notify) {
  const from = s.changes.at(-1)?.at ?? AT;
  s.version++;
  const at = new Date(Math.max(Date.now(), Date.parse(from) + 1)).toISOString();
  const length = Buffer.byteLength(`resource 1 of ${s.origin}, version ${s.version}\n`);
  s.changes.push({ at, length });
  s.docs = documents(s);
  if (!notify) return;
  const payload = changeNotification({ from, until: at, entries: [{ loc: `${s.origin}/r1.txt`, lastmod: at, md: { change: 'updated', datetime: at, length } }] });
  await publishNotification({ hub: `${s.origin}/hub`, topic: `${s.origin}/change-notification/`, capabilityList: `${s.origin}/capabilitylist.xml`, payload }, (r) => hub.handleLocal(r));
}

/** CPU seconds (user + system) and RSS (MiB) of a process, from /proc. */
function usage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024;
  return { cpu: (Number(stat[11]) + Number(stat[12])) / 100, rss };
}

async function until(what, predicate, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const statuses = (out) => {
  try {
    return readAggregateStatus(out);
  } catch {
    return [];
  }
};

function startAggregator(name, sources, mode, interval) {
  const out = join(tmp, name);
  const config = join(tmp, `${name}.yaml`);
  const write = (i) => writeFileSync(config, `out: ${out}\nconcurrency: 16\nsources:\n${sources.map((s, k) => `  - { url: "${s.origin}/.well-known/resourcesync", id: s${k}, interval: ${i}, mode: ${mode} }\n`).join('')}`);
  write(interval);
  const child = spawn(process.execPath, [MAIN, 'aggregate', config, '--port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  return { child, out, rewrite: write, err: () => err, stop: () => (child.kill('SIGTERM'), new Promise((r) => child.once('exit', r))) };
}

const hub = createHub({ store: hubStore, hubUrl: 'http://127.0.0.1/hub', onEvent: (e) => void (e.type === 'delivered' && count.deliveries++) });
const sources = await startSources(N, hub);
const children = [];
const reset = () => Object.assign(count, { documents: 0, hub: 0, deliveries: 0 });
const per = (x) => (x / N).toFixed(1);
try {
  // push: every Source subscribed, then one change each, announced through the hub
  const push = startAggregator('push', sources, 'push', 3600);
  children.push(push);
  const t0 = performance.now();
  await until('every Source followed by push', () => { const l = statuses(push.out); return l.length === N && l.every((s) => s.mode === 'push'); }, 600_000);
  const subscribedMs = performance.now() - t0;
  await sleep(10_000); // the aggregate's own first publications end
  const p0 = usage(push.child.pid);
  reset();
  await sleep(QUIET_S * 1000);
  const p1 = usage(push.child.pid);
  const quiet = { requests: count.documents + count.hub, cpuMs: (p1.cpu - p0.cpu) * 1000 };
  reset();
  const c0 = performance.now();
  for (const s of sources) await change(s, hub, true);
  await until('every change applied by push', () => statuses(push.out).filter((s) => s.totals.updated >= 1).length === N, 600_000);
  const pushChangeMs = performance.now() - c0;
  const p2 = usage(push.child.pid);
  const pushed = { requests: count.documents + count.hub, deliveries: count.deliveries, cpuMs: (p2.cpu - p1.cpu) * 1000, rss: p2.rss };
  await push.stop();
  children.length = 0;

  // baseline: the same Sources polled; a round that finds a change each, a round that finds none
  const poll = startAggregator('poll', sources, 'poll', 600);
  children.push(poll);
  await until('every Source polled once', () => { const l = statuses(poll.out); return l.length === N && l.every((s) => s.totals.syncs >= 1); }, 600_000);
  for (const s of sources) await change(s, hub, false);
  const q0 = usage(poll.child.pid);
  reset();
  poll.rewrite(601); // every Source restarts: polled at once
  await until('a round of polls with a change', () => statuses(poll.out).filter((s) => s.totals.syncs >= 2 && s.totals.updated >= 1).length === N, 600_000);
  const q1 = usage(poll.child.pid);
  const polledChange = { requests: count.documents, cpuMs: (q1.cpu - q0.cpu) * 1000 };
  reset();
  poll.rewrite(602);
  await until('a round of polls without a change', () => statuses(poll.out).filter((s) => s.totals.syncs >= 3).length === N, 600_000);
  const q2 = usage(poll.child.pid);
  const polledNothing = { requests: count.documents, cpuMs: (q2.cpu - q1.cpu) * 1000, rss: q2.rss };

  console.log(`aggregate by push: ${N} Sources (3 resources each), one hub, concurrency 16`);
  console.log(`  subscribed: all in ${(subscribedMs / 1000).toFixed(1)} s`);
  console.log(`  a change pushed: ${per(pushed.requests)} requests and ${per(pushed.deliveries)} deliveries per Source, CPU ${per(pushed.cpuMs)} ms per Source (${(pushed.cpuMs / polledChange.cpuMs).toFixed(2)}x a poll that finds it: ${per(polledChange.requests)} requests, ${per(polledChange.cpuMs)} ms); all ${N} applied in ${(pushChangeMs / 1000).toFixed(1)} s`);
  console.log(`  quiet (${QUIET_S} s, subscribed, nothing changes): ${quiet.requests} requests, CPU ${(quiet.cpuMs / N).toFixed(2)} ms per Source`);
  const reconcile = polledNothing.requests / N;
  console.log(`  a poll that finds nothing (= a reconciliation's read): ${reconcile.toFixed(1)} requests, CPU ${per(polledNothing.cpuMs)} ms per Source`);
  console.log(`  an idle hour per Source: push ${(12 * reconcile).toFixed(0)} requests (12 reconciliations; a renewal every 8 days with the hub's 10-day lease), poll every 300 s ${(12 * reconcile).toFixed(0)}, every 60 s ${(60 * reconcile).toFixed(0)}`);
  console.log(`  RSS: push ${pushed.rss.toFixed(0)} MiB (${((pushed.rss * 1024) / N).toFixed(0)} KiB per Source), poll ${polledNothing.rss.toFixed(0)} MiB (${(pushed.rss / polledNothing.rss).toFixed(2)}x)`);
  const failures = [...children.map((c) => c.err())].join('\n').split('\n').filter((l) => l.includes(': failed ('));
  if (failures.length > 0) console.log(`  failures logged: ${failures.length}, e.g. ${failures[0]}`);
} finally {
  for (const c of children) await c.stop();
  await hub.close();
  hubStore.close();
  for (const s of sources) s.server.close();
  rmSync(tmp, { recursive: true, force: true });
}
