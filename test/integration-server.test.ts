// The node:http adapter against a real socket on 127.0.0.1 port 0: bodies, HEAD, ranges, gzip streaming,
// keep-alive, backpressure with a slow reader, and clean shutdown.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { gunzipSync } from 'node:zlib';
import { createSourceResponder } from '../src/server/source-responder.js';
import { serve, type RunningServer } from '../src/server/node-adapter.js';

let tmp: string;
let dir: string;
let outDir: string;
let running: RunningServer;
const big = Buffer.alloc(5 * 1024 * 1024);
for (let i = 0; i < big.length; i += 4) big.writeUInt32LE((i * 2654435761) >>> 0, i);
const text = 'a line of text\n'.repeat(20_000);
const md5 = (b: Buffer): string => createHash('md5').update(b).digest('hex');

interface Reply {
  status: number;
  headers: IncomingMessage['headers'];
  body: Buffer;
  socketReused: boolean;
}

function get(path: string, headers: Record<string, string> = {}, method = 'GET', agent?: Agent): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: running.port, path, method, headers, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), socketReused: req.reusedSocket }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.end();
  });
}

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-node-'));
  dir = join(tmp, 'data');
  outDir = join(dir, '.resourcesync', 'publish');
  await mkdir(join(outDir, '.well-known'), { recursive: true });
  await writeFile(join(outDir, '.well-known', 'resourcesync'), '<urlset/>');
  await writeFile(join(dir, 'big.bin'), big);
  await writeFile(join(dir, 'text.txt'), text);
  await writeFile(join(dir, 'small.txt'), 'small');
  const core = createSourceResponder({ sets: [{ name: 'data', dir }], outDir, baseUrl: 'http://127.0.0.1' });
  running = await serve(core, { port: 0, host: '127.0.0.1' });
});

after(async () => {
  await running.close();
  await rm(tmp, { recursive: true, force: true });
});

void test('listening URL and a small file', async () => {
  assert.match(running.url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const r = await get('/small.txt');
  assert.equal(r.status, 200);
  assert.equal(r.body.toString(), 'small');
  assert.equal(r.headers.link, '<http://127.0.0.1/.resourcesync/data/capabilitylist.xml>; rel="resourcesync"');
  assert.ok(r.headers.date !== undefined);
});

void test('a large file streams whole, and a range of it', async () => {
  const r = await get('/big.bin');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-length'], String(big.length));
  assert.equal(md5(r.body), md5(big));
  const part = await get('/big.bin', { range: 'bytes=1000000-1999999' });
  assert.equal(part.status, 206);
  assert.equal(part.headers['content-range'], `bytes 1000000-1999999/${big.length}`);
  assert.equal(md5(part.body), md5(big.subarray(1000000, 2000000)));
  const none = await get('/big.bin', { range: `bytes=${big.length + 1}-` });
  assert.equal(none.status, 416);
});

void test('HEAD sends headers only', async () => {
  const r = await get('/big.bin', {}, 'HEAD');
  assert.equal(r.status, 200);
  assert.equal(r.headers['content-length'], String(big.length));
  assert.equal(r.body.length, 0);
});

void test('gzip over the wire, chunked, when accepted', async () => {
  const r = await get('/text.txt', { 'accept-encoding': 'gzip' });
  assert.equal(r.headers['content-encoding'], 'gzip');
  assert.equal(r.headers['transfer-encoding'], 'chunked');
  assert.equal(r.headers.vary, 'Accept-Encoding');
  assert.equal(gunzipSync(r.body).toString(), text);
  const c = await get('/text.txt', { 'if-none-match': r.headers.etag!, 'accept-encoding': 'gzip' });
  assert.equal(c.status, 304);
  assert.equal(c.body.length, 0);
});

void test('keep-alive: several requests reuse one connection', async () => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const replies: Reply[] = [];
    for (let i = 0; i < 5; i++) replies.push(await get(i % 2 === 0 ? '/small.txt' : '/big.bin', {}, 'GET', agent));
    assert.ok(replies.slice(1).every((r) => r.socketReused));
    assert.equal(md5(replies[1]!.body), md5(big));
  } finally {
    agent.destroy();
  }
});

void test('a slow reader is served with backpressure and gets every byte', async () => {
  const body = await new Promise<Buffer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: running.port, path: '/big.bin', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.pause();
      const timer = setInterval(() => {
        let c: Buffer | null;
        let n = 0;
        while (n < 4 && (c = res.read() as Buffer | null) !== null) {
          chunks.push(c);
          n++;
        }
      }, 5);
      res.on('end', () => {
        clearInterval(timer);
        resolve(Buffer.concat(chunks));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  assert.equal(md5(body), md5(big));
});

void test('shutdown: idle connections close, an in-flight response finishes, then closed resolves', async () => {
  const ac = new AbortController();
  const core = createSourceResponder({ sets: [{ name: 'data', dir }], outDir });
  const srv = await serve(core, { port: 0, host: '127.0.0.1', signal: ac.signal });
  const agent = new Agent({ keepAlive: true });
  try {
    const idle = await new Promise<IncomingMessage>((resolve, reject) => {
      request({ host: '127.0.0.1', port: srv.port, path: '/small.txt', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve(res));
      })
        .on('error', reject)
        .end();
    });
    assert.equal(idle.statusCode, 200);
    // a slow download in flight
    const inflight = new Promise<Buffer>((resolve, reject) => {
      request({ host: '127.0.0.1', port: srv.port, path: '/big.bin', agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.pause();
        const t = setInterval(() => {
          let c: Buffer | null;
          while ((c = res.read() as Buffer | null) !== null) chunks.push(c);
        }, 20);
        res.on('end', () => {
          clearInterval(t);
          resolve(Buffer.concat(chunks));
        });
        res.on('error', reject);
      })
        .on('error', reject)
        .end();
    });
    await sleep(50);
    const t0 = Date.now();
    ac.abort();
    const body = await inflight;
    assert.equal(md5(body), md5(big));
    await srv.closed;
    assert.ok(Date.now() - t0 < 4000);
    await assert.rejects(fetch(`${srv.url}/small.txt`));
  } finally {
    agent.destroy();
  }
});
