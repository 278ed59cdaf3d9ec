/**
 * The Destination's HTTP client against every way an HTTP/1.x server frames a body or ends a connection, with
 * raw `node:net` servers (no HTTP library in between): Content-Length with keep-alive, chunked, Content-Length
 * then close (HTTP/1.1 `Connection: close` and HTTP/1.0, the way `python3 -m http.server` answers), bodies
 * delimited by the close alone (HTTP/1.0 and 1.1), peers that close early (FIN or RST inside a Content-Length
 * body with keep-alive, FIN inside an HTTP/1.0 Content-Length body, FIN inside or between chunks) and a server
 * that sends headers and then nothing.
 *
 * The client runs in a child process (test/helpers/fetch-child.ts) at a sync's concurrency (16 requests in
 * flight, one AbortSignal shared by all), half the bodies read slowly so that the client applies backpressure
 * while the peer's FIN arrives. A crash inside the client shows up here as a non-zero exit with its stderr.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from './helpers/paths.js';
import type { FetchPlan, FetchReport } from './helpers/fetch-child.js';
import { prng } from './helpers/prng.js';

const CHILD = join(REPO_ROOT, 'dist', 'test', 'helpers', 'fetch-child.js');
/** Requests per framing: enough to hit the close-under-backpressure race most runs (it hit in 6 of 10 syncs). */
const REQUESTS = 200;
const CONCURRENCY = 16;
/** Body sizes, 1 byte to 2 MiB; 262,145 is one byte over the size the client reads whole. */
const SIZES = [1, 700, 16_384, 65_536, 262_145, 600_000, 1_048_576, 2_097_152, 5_000, 100];

/** How the server ends a response, and which requests it spoils. */
type Framing =
  | 'keep-alive-length'
  | 'chunked'
  | 'close-length'
  | 'http10-length'
  | 'http10-eof'
  | 'http11-eof'
  | 'cut-length'
  | 'cut-http10-length'
  | 'cut-chunked'
  | 'stall';

/** What the client must see for one request. */
type Expect = 'body' | 'cut' | 'stall';


/** Random bodies, a few per size so that two responses of one size differ. */
const bodies = new Map<string, Buffer>();
function bodyOf(size: number, variant: number): Buffer {
  const key = `${size}/${variant}`;
  let b = bodies.get(key);
  if (b === undefined) bodies.set(key, (b = randomBytes(size)));
  return b;
}
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** A raw HTTP/1.x server on 127.0.0.1 port 0 that answers `GET /r/<i>/<size>/<variant>/<expect>` in one framing. */
class RawServer {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  readonly #framing: Framing;
  requests = 0;

  private constructor(framing: Framing) {
    this.#framing = framing;
    this.#server = createServer((socket) => this.#serve(socket));
  }

  static async start(framing: Framing): Promise<RawServer> {
    const s = new RawServer(framing);
    await new Promise<void>((resolve) => s.#server.listen(0, '127.0.0.1', resolve));
    return s;
  }

  get origin(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => {}); // the client resets connections it gives up on
    let pending = Buffer.alloc(0);
    let ended = false;
    socket.on('data', (d: Buffer) => {
      pending = Buffer.concat([pending, d]);
      // undici sends one request at a time on a connection (pipelining 1); answer each complete head in order
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0 && !ended; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.subarray(0, end).toString('latin1');
        pending = pending.subarray(end + 4);
        this.requests++;
        ended = this.#respond(socket, head.split('\r\n', 1)[0] ?? '');
      }
    });
  }

  /** Writes one response; true when the connection is finished with (closed, reset or stalled). */
  #respond(socket: Socket, requestLine: string): boolean {
    const m = /^GET \/r\/(\d+)\/(\d+)\/(\d+)\/(body|cut|stall) HTTP\/1\.[01]$/.exec(requestLine);
    if (m === null) {
      socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      return true;
    }
    const i = Number(m[1]);
    const body = bodyOf(Number(m[2]), Number(m[3]));
    const expect = m[4] as Expect;
    const type = 'Content-Type: application/octet-stream\r\n';
    const len = `Content-Length: ${body.length}\r\n`;
    const rand = prng(i);
    switch (this.#framing) {
      case 'keep-alive-length':
        socket.write(`HTTP/1.1 200 OK\r\n${type}${len}\r\n`);
        socket.write(body);
        return false;
      case 'close-length':
        socket.write(`HTTP/1.1 200 OK\r\n${type}${len}Connection: close\r\n\r\n`);
        socket.end(body);
        return true;
      case 'http10-length':
        // python3 -m http.server: HTTP/1.0 status line, Content-Length, then close
        socket.write(`HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6 Python/3\r\n${type}${len}\r\n`);
        socket.end(body);
        return true;
      case 'http10-eof':
        socket.write(`HTTP/1.0 200 OK\r\n${type}\r\n`);
        socket.end(body);
        return true;
      case 'http11-eof':
        socket.write(`HTTP/1.1 200 OK\r\n${type}Connection: close\r\n\r\n`);
        socket.end(body);
        return true;
      case 'chunked':
      case 'cut-chunked': {
        socket.write(`HTTP/1.1 200 OK\r\n${type}Transfer-Encoding: chunked\r\n\r\n`);
        const cutAt = expect === 'cut' ? Math.floor(body.length / 2) : body.length;
        let at = 0;
        while (at < cutAt) {
          const n = Math.min(body.length - at, 1 + Math.floor(rand() * 65_536));
          socket.write(`${n.toString(16)}\r\n`);
          if (at + n > cutAt) {
            // the chunk announces n bytes; the peer closes after fewer
            socket.end(body.subarray(at, cutAt));
            return true;
          }
          socket.write(body.subarray(at, at + n));
          socket.write('\r\n');
          at += n;
        }
        if (expect === 'cut') {
          socket.end(); // cut exactly between chunks: no last chunk
          return true;
        }
        socket.write('0\r\n\r\n');
        return false;
      }
      case 'cut-length':
        socket.write(`HTTP/1.1 200 OK\r\n${type}${len}\r\n`);
        if (expect !== 'cut') {
          socket.write(body);
          return false;
        }
        socket.write(body.subarray(0, Math.floor(body.length / 2)));
        // half of the cut connections end with a FIN (a clean close), half with a RST
        if (rand() < 0.5) socket.end();
        else setImmediate(() => socket.resetAndDestroy());
        return true;
      case 'cut-http10-length':
        // python3 -m http.server's framing, cut: after a FIN the client must not take half a body for the end
        socket.write(`HTTP/1.0 200 OK\r\n${type}${len}\r\n`);
        socket.end(expect === 'cut' ? body.subarray(0, Math.floor(body.length / 2)) : body);
        return true;
      case 'stall':
        socket.write(`HTTP/1.1 200 OK\r\n${type}${len}\r\n`);
        if (expect !== 'stall') {
          socket.write(body);
          return false;
        }
        return true; // headers sent, then nothing until the client gives up
    }
  }
}

/** Runs the client in a child process; resolves with its exit status, stderr and report. */
function runChild(plan: FetchPlan, killAfterMs: number): Promise<{ status: number | null; signal: string | null; stderr: string; report?: FetchReport }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CHILD, 'run'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      let report: FetchReport | undefined;
      try {
        report = JSON.parse(stdout) as FetchReport;
      } catch {
        report = undefined;
      }
      resolve({ status, signal, stderr, ...(report !== undefined ? { report } : {}) });
    });
    child.stdin.end(JSON.stringify(plan));
  });
}

interface Case {
  framing: Framing;
  /** Which requests are spoiled, by index. */
  spoil?: { every: number; as: Expect };
  timeoutMs?: number;
}

const CASES: Case[] = [
  { framing: 'keep-alive-length' },
  { framing: 'chunked' },
  { framing: 'close-length' },
  { framing: 'http10-length' },
  // a body delimited by the close alone: a cut is indistinguishable from the end (the Destination's length and
  // hash checks catch it), so only complete bodies are sent here
  { framing: 'http10-eof' },
  { framing: 'http11-eof' },
  { framing: 'cut-length', spoil: { every: 3, as: 'cut' } },
  { framing: 'cut-http10-length', spoil: { every: 3, as: 'cut' } },
  { framing: 'cut-chunked', spoil: { every: 3, as: 'cut' } },
  { framing: 'stall', spoil: { every: 5, as: 'stall' }, timeoutMs: 1000 },
];

const servers: RawServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

for (const c of CASES) {
  void test(`${c.framing}: ${REQUESTS} requests, ${CONCURRENCY} in flight, slow and fast readers`, async () => {
    const server = await RawServer.start(c.framing);
    servers.push(server);
    const seed = 0x5eed + c.framing.length;
    const rand = prng(seed);
    const expected: { expect: Expect; length: number; sha256: string }[] = [];
    const items = Array.from({ length: REQUESTS }, (_, i) => {
      let size = SIZES[i % SIZES.length]!;
      const variant = i % 7;
      const expect: Expect = c.spoil !== undefined && i % c.spoil.every === 0 ? c.spoil.as : 'body';
      if (expect === 'cut' && size < 2) size = 2; // half of one byte is nothing: cut a longer body
      const body = bodyOf(size, variant);
      expected.push({ expect, length: body.length, sha256: sha256(body) });
      // about half of the readers wait 1–3 ms after each chunk, so the client's buffers fill and it pauses
      return { url: `${server.origin}/r/${i}/${size}/${variant}/${expect}`, slowMs: rand() < 0.5 ? 1 + Math.floor(rand() * 3) : 0 };
    });
    const plan: FetchPlan = { origin: server.origin, items, concurrency: CONCURRENCY, timeoutMs: c.timeoutMs ?? 20_000, retries: 0, deadlineMs: 90_000 };
    const run = await runChild(plan, 120_000);
    assert.equal(run.signal, null, `the client process was killed (${run.signal}); stderr:\n${run.stderr}`);
    assert.equal(run.status, 0, `the client process crashed (exit ${run.status}); stderr:\n${run.stderr}`);
    const report = run.report;
    assert.ok(report !== undefined, `no report; stderr:\n${run.stderr}`);
    assert.equal(report.outcomes.length, REQUESTS);
    const wrong: string[] = [];
    report.outcomes.forEach((o, i) => {
      const want = expected[i]!;
      const where = `#${i} ${o.url.slice(server.origin.length)} (slowMs ${items[i]!.slowMs})`;
      if (want.expect === 'body') {
        if (o.outcome !== 'body') wrong.push(`${where}: rejected (${o.error?.code ?? o.error?.name}: ${o.error?.message})`);
        else if (o.status !== 200 || o.length !== want.length || o.sha256 !== want.sha256) wrong.push(`${where}: status ${o.status}, ${o.length} of ${want.length} bytes, sha256 ${o.sha256 === want.sha256 ? 'equal' : 'differs'}`);
        return;
      }
      // a spoiled body must never read as complete, and must fail with the client's recoverable error
      const code = want.expect === 'stall' ? 'RS_HTTP_TIMEOUT' : 'RS_NETWORK';
      if (o.outcome !== 'error') wrong.push(`${where}: a ${want.expect} body resolved as complete (${o.length} of ${want.length} bytes)`);
      else if (o.error?.name !== 'ResourceSyncError' || o.error.code !== code || o.error.recoverable !== true) {
        wrong.push(`${where}: ${o.error?.name} ${o.error?.code} recoverable=${o.error?.recoverable}, expected a recoverable ${code}: ${o.error?.message}`);
      }
    });
    assert.deepEqual(wrong, [], `${wrong.length} of ${REQUESTS} requests went wrong (seed ${seed})`);
    assert.deepEqual(report.warnings, [], 'no process warnings (MaxListenersExceededWarning on the shared AbortSignal)');
  });
}
