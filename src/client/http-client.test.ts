import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer } from '../../test/helpers/test-server.js';
import { createAuthority } from './authority.js';
import { authFromEnv, createHttpClient } from './http-client.js';
import { retryAfterMs } from './http-failure.js';
import { isResourceSyncError } from '../core/errors.js';

async function text(body: AsyncIterable<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  for await (const c of body) parts.push(c);
  return Buffer.concat(parts).toString('utf8');
}

void test('GET with keep-alive, gzip decoding, user agent and per-origin auth', async () => {
  const s = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), env: { RESOURCESYNC_BEARER: 'tok' } });
  try {
    s.gzip = true;
    s.set('/a.txt', 'hello world '.repeat(100));
    const res = await http(`${s.origin}/a.txt`);
    assert.equal(res.status, 200);
    assert.equal(await text(res.body), 'hello world '.repeat(100));
    const seen = s.requests[0]!;
    assert.match(seen.headers['user-agent'] ?? '', /^resourcesync\/\d/);
    assert.equal(seen.headers['authorization'], 'Bearer tok');
    assert.match(seen.headers['accept-encoding'] ?? '', /gzip/);
    const missing = await http(`${s.origin}/nope`);
    assert.equal(missing.status, 404);
    await missing.discard();
  } finally {
    await http.close();
    await s.close();
  }
});

void test('retries 5xx and 429 honouring Retry-After, then returns the final status', async () => {
  const s = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 2, retryBaseMs: 5, env: {} });
  try {
    s.set('/r', 'ok');
    s.fault = (req, res, n) => {
      if (req.url === '/r' && n === 1) {
        res.writeHead(503, { 'retry-after': '0' }).end();
        return true;
      }
      if (req.url === '/r' && n === 2) {
        res.writeHead(429).end();
        return true;
      }
      if (req.url === '/always') {
        res.writeHead(500).end('boom');
        return true;
      }
      if (req.url === '/reset' && n < 3) {
        req.socket.destroy();
        return true;
      }
      return false;
    };
    const r = await http(`${s.origin}/r`);
    assert.equal(r.status, 200);
    assert.equal(await text(r.body), 'ok');
    const a = await http(`${s.origin}/always`);
    assert.equal(a.status, 500);
    await a.discard();
    assert.equal(s.requests.filter((q) => q.url === '/always').length, 3);
    s.set('/reset', 'back');
    const z = await http(`${s.origin}/reset`);
    assert.equal(await text(z.body), 'back');
  } finally {
    await http.close();
    await s.close();
  }
});

void test('network failures after retries reject with RS_NETWORK / RS_HTTP_TIMEOUT', async () => {
  const s = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 1, retryBaseMs: 5, timeoutMs: 500, env: {} });
  const once = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 0, timeoutMs: 500, env: {} });
  try {
    s.fault = async (req, res) => {
      if (req.url === '/reset') {
        req.socket.destroy();
        return true;
      }
      if (req.url === '/slow') {
        await new Promise((r) => setTimeout(r, 2000));
        res.end('late');
        return true;
      }
      return false;
    };
    await assert.rejects(http(`${s.origin}/reset`), (e: unknown) => isResourceSyncError(e, 'RS_NETWORK') && e.recoverable);
    // undici's timers have a resolution of about half a second
    await assert.rejects(once(`${s.origin}/slow`), (e: unknown) => isResourceSyncError(e, 'RS_HTTP_TIMEOUT'));
  } finally {
    await http.close();
    await once.close();
    await s.close();
  }
});

void test('redirects are followed with the authority checked on each target', async () => {
  const s = await startTestServer();
  const other = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), env: { RESOURCESYNC_BEARER: 'secret' } });
  try {
    s.set('/from', { status: 302, headers: { location: '/to' } });
    s.set('/to', 'arrived');
    s.set('/away', { status: 301, headers: { location: `${other.origin}/x` } });
    s.set('/loop', { status: 307, headers: { location: '/loop' } });
    const r = await http(`${s.origin}/from`);
    assert.equal(r.url, `${s.origin}/to`);
    assert.equal(await text(r.body), 'arrived');
    await assert.rejects(http(`${s.origin}/away`), (e: unknown) => isResourceSyncError(e, 'RS_AUTHORITY'));
    await assert.rejects(http(`${s.origin}/loop`), (e: unknown) => isResourceSyncError(e, 'RS_NETWORK'));
    await assert.rejects(http(`${other.origin}/x`), (e: unknown) => isResourceSyncError(e, 'RS_AUTHORITY'));
    assert.equal(other.requests.length, 0, 'nothing fetched off-authority');
  } finally {
    await http.close();
    await s.close();
    await other.close();
  }
});

void test('credentials from the environment and Retry-After parsing', () => {
  assert.deepEqual(authFromEnv(['http://127.0.0.1:8080', 'https://m.example'], { RESOURCESYNC_AUTH_127_0_0_1_8080: 'Basic eA==', RESOURCESYNC_AUTH_M_EXAMPLE: 'Bearer m' }), {
    'http://127.0.0.1:8080': 'Basic eA==',
    'https://m.example': 'Bearer m',
  });
  assert.deepEqual(authFromEnv(['https://e.example'], { RESOURCESYNC_BASIC: 'u:p' }), { 'https://e.example': `Basic ${Buffer.from('u:p').toString('base64')}` });
  assert.equal(retryAfterMs('3'), 3000);
  assert.equal(retryAfterMs(new Date(10_000).toUTCString(), 4_000), 6000);
  assert.equal(retryAfterMs('soon'), undefined);
});

void test('bodies: small declared ones read whole, large and chunked ones streamed; a cut body is a body-phase network error', async () => {
  const s = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 0, env: {} });
  try {
    const big = 'x'.repeat(300 * 1024);
    s.set('/small', 'small body');
    s.set('/big', big);
    s.set('/empty', '');
    s.fault = (req, res) => {
      if (req.url === '/chunked') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('part one, ');
        setTimeout(() => res.end('part two'), 5);
        return true;
      }
      if (req.url === '/cut') {
        res.writeHead(200, { 'content-length': '100' });
        res.write('only forty bytes of the hundred declared');
        setTimeout(() => res.socket?.destroy(), 5);
        return true;
      }
      return false;
    };
    const chunks = async (url: string): Promise<Uint8Array[]> => {
      const out: Uint8Array[] = [];
      for await (const c of (await http(`${s.origin}${url}`)).body) out.push(c);
      return out;
    };
    const small = await chunks('/small');
    assert.equal(small.length, 1, 'a small declared body is one chunk');
    assert.equal(Buffer.from(small[0]!).toString(), 'small body');
    assert.deepEqual(await chunks('/empty'), []);
    assert.equal(Buffer.concat(await chunks('/big')).toString(), big);
    assert.equal(Buffer.concat(await chunks('/chunked')).toString(), 'part one, part two');
    await assert.rejects(chunks('/cut'), (e: unknown) => isResourceSyncError(e, 'RS_NETWORK') && e.data['phase'] === 'body');
    // the connection pool still serves after the cut
    assert.equal(await text((await http(`${s.origin}/small`)).body), 'small body');
  } finally {
    await http.close();
    await s.close();
  }
});

/** A raw server answering every request with `head` + `body`, then closing the connection (HTTP/1.0 style). */
async function closingServer(head: (body: Buffer) => string, body: Buffer): Promise<{ origin: string; close(): Promise<void> }> {
  const { createServer } = await import('node:net');
  const srv = createServer((sock) => {
    sock.on('error', () => undefined);
    sock.once('data', () => {
      sock.write(head(body));
      sock.end(body);
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as { port: number };
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise<void>((r) => srv.close(() => r())) };
}

for (const [name, head] of [
  ['HTTP/1.0 close-delimited', (): string => 'HTTP/1.0 200 OK\r\n\r\n'],
  ['Connection: close with a length', (b: Buffer): string => `HTTP/1.1 200 OK\r\nContent-Length: ${b.length}\r\nConnection: close\r\n\r\n`],
] as const) {
  void test(`${name}: slow readers of bodies larger than the queue, 16 at once, never crash and read every byte`, async () => {
    const body = Buffer.alloc(3 * 1024 * 1024 + 17, 0x61);
    const s = await closingServer(head, body);
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.name);
    process.on('warning', onWarning);
    const ac = new AbortController();
    const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), signal: ac.signal, retries: 0, env: {} });
    try {
      const lengths = await Promise.all(
        Array.from({ length: 48 }, async (_, i) => {
          const res = await http(`${s.origin}/r${i}`, { signal: ac.signal });
          let n = 0;
          for await (const c of res.body) {
            n += c.length;
            await new Promise((r) => setTimeout(r, 1));
          }
          return n;
        }),
      );
      assert.deepEqual(new Set(lengths), new Set([body.length]));
      assert.deepEqual(warnings, []);
    } finally {
      process.off('warning', onWarning);
      await http.close();
      await s.close();
    }
  });
}

void test('a body cut short under its Content-Length by a closing server rejects as RS_NETWORK, never as complete', async () => {
  const body = Buffer.alloc(2 * 1024 * 1024, 0x62);
  const s = await closingServer((b) => `HTTP/1.1 200 OK\r\nContent-Length: ${b.length + 100}\r\nConnection: close\r\n\r\n`, body);
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 0, env: {} });
  try {
    const res = await http(`${s.origin}/cut`);
    await assert.rejects(text(res.body), (e: unknown) => isResourceSyncError(e, 'RS_NETWORK') && e.recoverable);
  } finally {
    await http.close();
    await s.close();
  }
});

void test('--rate paces requests to an origin; a Retry-After on a 503 holds every request to that origin', async () => {
  const s = await startTestServer();
  const http = createHttpClient({ authority: createAuthority({ origins: [s.origin] }), retries: 1, retryBaseMs: 1, rate: 20, env: {} });
  try {
    s.set('/a', 'a');
    s.set('/b', 'b');
    const seen: number[] = [];
    s.fault = (req, res, n) => {
      seen.push(Date.now());
      if (req.url === '/busy' && n === 1) {
        res.writeHead(503, { 'retry-after': '1' }).end();
        return true;
      }
      return false;
    };
    for (let i = 0; i < 5; i++) await (await http(`${s.origin}/a`)).discard();
    // five requests at 20/s: 200 ms from the first to the fifth (less the first connection's set-up)
    assert.ok(seen[4]! - seen[0]! >= 180, `paced: ${seen.map((t) => t - seen[0]!).join(', ')}`);
    seen.length = 0;
    const busy = http(`${s.origin}/busy`); // 503 Retry-After: 1, retried
    await new Promise((r) => setTimeout(r, 100));
    const other = await http(`${s.origin}/b`); // asked while the origin is held
    assert.equal(await text(other.body), 'b');
    assert.equal((await busy).status, 404);
    assert.ok(seen[1]! - seen[0]! >= 950, `held: ${seen.map((t) => t - seen[0]!).join(', ')}`);
  } finally {
    await http.close();
    await s.close();
  }
});
