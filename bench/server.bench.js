/* global AbortController */
// Server benchmark: small-file GETs per second with wrk on loopback, for the ResourceSync Source server (the
// library's core and node:http adapter, and `resourcesync serve` as a process with its watcher, hub and explorer),
// next to two baselines measured in the same run: nginx (1 worker) serving the same directory, and a bare
// node:http server answering from memory. Target: ≥15,000 req/s. Needs `wrk` and `nginx` on PATH; prints
// that a comparison was skipped when one is missing. Bounded: about 5 s per measurement.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { freePort, has } from './support.js';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA = join(ROOT, 'bench', '.data', 'server');
const FILES = join(DATA, 'files');
const COUNT = 2000;
const SIZE = 1024;
const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = 32;
const TARGET = 15000;

const { createSourceResponder } = await import(join(ROOT, 'dist/src/server/source-responder.js'));
const { serve } = await import(join(ROOT, 'dist/src/server/node-adapter.js'));

function generate() {
  rmSync(DATA, { recursive: true, force: true });
  const paths = [];
  for (let i = 0; i < COUNT; i++) {
    const dir = `d${String(i % 20).padStart(2, '0')}`;
    const name = `${dir}/f${String(i).padStart(5, '0')}.txt`;
    mkdirSync(join(FILES, dir), { recursive: true });
    const body = Buffer.alloc(SIZE, 97 + (i % 26));
    writeFileSync(join(FILES, name), body);
    paths.push(`/${name}`);
  }
  mkdirSync(join(DATA, 'publish'), { recursive: true });
  const lua = `local paths = {\n${paths.map((p) => `"${p}"`).join(',\n')}\n}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  if i > #paths then i = 1 end\n  return wrk.format("GET", paths[i])\nend\n`;
  writeFileSync(join(DATA, 'urls.lua'), lua);
  return paths;
}

/** Runs wrk against `url`; also measures this process's CPU time per request (servers run in-process). */
async function runWrk(url) {
  const cpu0 = process.cpuUsage();
  const result = await runWrkOnly(url);
  const cpu = process.cpuUsage(cpu0);
  return { ...result, cpuUsPerRequest: (cpu.user + cpu.system) / result.requests };
}

function runWrkOnly(url) {
  return new Promise((resolve, reject) => {
    const child = spawn('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${SECONDS}s`, '-s', join(DATA, 'urls.lua'), url], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const killer = setTimeout(() => child.kill('SIGKILL'), (SECONDS + 10) * 1000);
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(killer);
      const m = /Requests\/sec:\s*([\d.]+)/.exec(out);
      const non2xx = /Non-2xx or 3xx responses:\s*(\d+)/.exec(out);
      const total = /(\d+) requests in/.exec(out);
      if (m === null || total === null) reject(new Error(`wrk output not understood:\n${out}`));
      else resolve({ rps: Number(m[1]), requests: Number(total[1]), errors: non2xx === null ? 0 : Number(non2xx[1]) });
    });
  });
}

async function withNginx(fn) {
  const port = await freePort();
  const conf = join(DATA, 'nginx.conf');
  mkdirSync(join(DATA, 'nginx-tmp'), { recursive: true });
  const user = process.getuid?.() === 0 ? 'user root;\n' : '';
  writeFileSync(
    conf,
    `${user}worker_processes 1;
daemon off;
master_process on;
pid ${join(DATA, 'nginx.pid')};
error_log ${join(DATA, 'nginx-error.log')};
events { worker_connections 1024; }
http {
  access_log off;
  default_type application/octet-stream;
  types { text/plain txt; }
  sendfile on;
  keepalive_requests 1000000;
  client_body_temp_path ${join(DATA, 'nginx-tmp')};
  proxy_temp_path ${join(DATA, 'nginx-tmp')};
  fastcgi_temp_path ${join(DATA, 'nginx-tmp')};
  uwsgi_temp_path ${join(DATA, 'nginx-tmp')};
  scgi_temp_path ${join(DATA, 'nginx-tmp')};
  server { listen 127.0.0.1:${port}; root ${FILES}; }
}
`,
  );
  const child = spawn('nginx', ['-p', DATA, '-c', conf, '-e', join(DATA, 'nginx-error.log')], { stdio: 'ignore' });
  try {
    // wait until it answers (bounded)
    const deadline = Date.now() + 5000;
    for (;;) {
      try {
        const r = await fetch(`http://127.0.0.1:${port}/d00/f00000.txt`);
        await r.arrayBuffer();
        if (r.status === 200) break;
      } catch {
        // not yet listening
      }
      if (Date.now() > deadline) throw new Error('nginx did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
    return await fn(`http://127.0.0.1:${port}`);
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('close', r));
  }
}

async function withMemoryServer(paths, fn) {
  const mem = new Map(paths.map((p) => [p, readFileSync(join(FILES, p))]));
  const server = createServer({ keepAlive: true }, (req, res) => {
    const body = mem.get(req.url);
    if (body === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'content-length': body.length });
    res.end(body);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await fn(`http://127.0.0.1:${server.address().port}`);
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

async function withSource(fn) {
  const ac = new AbortController();
  const core = createSourceResponder({ sets: [{ name: 'files', dir: FILES }], outDir: join(DATA, 'publish'), baseUrl: 'http://127.0.0.1' });
  const running = await serve(core, { port: 0, host: '127.0.0.1', signal: ac.signal });
  try {
    // sanity: the server answers a resource with the right body and a discovery link
    const r = await fetch(`${running.url}/d00/f00000.txt`);
    const body = Buffer.from(await r.arrayBuffer());
    if (r.status !== 200 || body.length !== SIZE || !(r.headers.get('link') ?? '').includes('rel="resourcesync"')) {
      throw new Error(`unexpected answer from the Source server: ${r.status}`);
    }
    return await fn(running.url);
  } finally {
    ac.abort();
    await running.closed;
  }
}

/** `resourcesync serve` itself (watcher, embedded hub and explorer on), as a user runs it, on the same files. */
async function withCli(fn) {
  const port = await freePort();
  const state = join(DATA, 'serve-state');
  rmSync(state, { recursive: true, force: true });
  const child = spawn(process.execPath, [join(ROOT, 'dist/src/cli/main.js'), 'serve', FILES, '--port', String(port), '--state', state], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    await new Promise((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${out}`)), 60_000);
      child.stdout.on('data', (d) => {
        out += d;
        if (out.includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      child.stderr.on('data', (d) => (out += d));
      child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
    });
    return await fn(`http://127.0.0.1:${port}`);
  } finally {
    child.kill('SIGTERM');
    if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  }
}

const paths = generate();
if (!has('wrk')) {
  console.log('server: skipped (wrk not installed; apt-get install wrk)');
  process.exit(0);
}
// Interleaved rounds, best of each: this machine is shared and figures move ±30 % between runs.
const ROUNDS = 2;
const best = (a, b) => (a === undefined || b.rps > a.rps ? b : a);
let source;
let cli;
let memory;
let nginx;
let nginxSkipped = has('nginx') ? undefined : 'nginx not installed; apt-get install nginx';
for (let round = 0; round < ROUNDS; round++) {
  source = best(source, await withSource(runWrk));
  cli = best(cli, await withCli(runWrkOnly));
  memory = best(memory, await withMemoryServer(paths, runWrk));
  if (nginxSkipped === undefined) {
    try {
      nginx = best(nginx, await withNginx(runWrk));
    } catch (error) {
      nginxSkipped = error.message;
    }
  }
}
if (nginxSkipped !== undefined) console.log(`nginx baseline: skipped (${nginxSkipped})`);

const fmt = (n) => Math.round(n).toLocaleString('en-US');
console.log(`node:http in-memory (baseline): ${fmt(memory.rps)} req/s`);
if (nginx !== undefined) console.log(`nginx 1 worker (baseline): ${fmt(nginx.rps)} req/s`);
const ratios = [`${(source.rps / memory.rps).toFixed(2)}x node:http in-memory`];
if (nginx !== undefined) ratios.push(`${(source.rps / nginx.rps).toFixed(2)}x nginx`);
console.log(`server small-file GET (${COUNT} files of ${SIZE} B, wrk -c${CONNECTIONS}, best of ${ROUNDS}×${SECONDS}s): ${fmt(source.rps)} req/s (${ratios.join(', ')})`);
console.log(
  `server CPU per request (this process): ${source.cpuUsPerRequest.toFixed(1)} µs (${(source.cpuUsPerRequest / memory.cpuUsPerRequest).toFixed(2)}x node:http in-memory at ${memory.cpuUsPerRequest.toFixed(1)} µs)`,
);
console.log(
  `resourcesync serve (watcher, hub, explorer on) small-file GET: ${fmt(cli.rps)} req/s${nginx === undefined ? '' : ` (${(cli.rps / nginx.rps).toFixed(2)}x nginx)`}`,
);
if (source.errors > 0) console.log(`server non-2xx responses: ${source.errors}`);
if (cli.errors > 0) console.log(`resourcesync serve non-2xx responses: ${cli.errors}`);
console.log(`target ≥${fmt(TARGET)} req/s: ${source.rps >= TARGET && source.errors === 0 ? 'met' : 'MISSED'}`);
if (existsSync(join(DATA, 'nginx.pid'))) rmSync(join(DATA, 'nginx.pid'), { force: true });
