// `check` and `explore` against Sources that stall or loop: the exit code follows the verdict when a gzip body is
// abandoned mid-way, an index cycle is an error, and a document that drips its bytes is cut off by the whole-body
// deadline and reported with its code.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { runCli } from './helpers/mirror-check.js';

const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const HEAD = `<?xml version="1.0" encoding="UTF-8"?>\n`;

/** What the raw server answers for a path: a whole document, or a behaviour on the socket. */
type Answer = string | ((socket: Socket) => void);

let server: Server;
let O: string;
const routes = new Map<string, Answer>();
const sockets = new Set<Socket>();
const drips = new Set<NodeJS.Timeout>();

/** A raw HTTP/1.1 server on 127.0.0.1: keep-alive, one request at a time per connection. */
before(async () => {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    let buffered = '';
    socket.on('data', (d: Buffer) => {
      buffered += d.toString('latin1');
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) return;
      const path = buffered.split(' ')[1] ?? '/';
      buffered = buffered.slice(end + 4);
      const answer = routes.get(path);
      if (answer === undefined) socket.write('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n');
      else if (typeof answer === 'string') {
        const body = Buffer.from(HEAD + answer);
        socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\ncontent-length: ${body.length}\r\n\r\n`);
        socket.write(body);
      } else answer(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  O = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

after(async () => {
  for (const t of drips) clearInterval(t);
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const sd = (...lists: string[]): string =>
  `<urlset ${NS}><rs:md capability="description"/>${lists.map((l) => `<url><loc>${O}${l}</loc><rs:md capability="capabilitylist"/></url>`).join('')}</urlset>`;
const capabilityList = (path: string, entries: Array<[loc: string, capability: string]>): string =>
  `<urlset ${NS}><rs:ln rel="up" href="${O}/sd-${path}.xml"/><rs:md capability="capabilitylist"/>` +
  entries.map(([loc, cap]) => `<url><loc>${O}${loc}</loc><rs:md capability="${cap}"/></url>`).join('') +
  `</urlset>`;

void test('a gzip body abandoned mid-way after a parse error: NOT CONFORMANT and exit 1, for check and explore', async () => {
  routes.set('/sd-gz.xml', sd('/cl-gz.xml'));
  routes.set('/cl-gz.xml', capabilityList('gz', [['/rl-gz.xml', 'resourcelist']]));
  // a malformed Resource List, gzipped, stored (level 0) so that its 3 MiB go over the wire; the server sends all
  // but its last bytes and then neither ends nor closes
  const xml =
    `${HEAD}<urlset ${NS}><rs:ln rel="up" href="${O}/cl-gz.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
    `<url><loc>${O}/a</loc></urlx><!-- ${randomBytes(3 << 20).toString('base64')} -->`;
  const gz = gzipSync(xml, { level: 0 });
  routes.set('/rl-gz.xml', (socket) => {
    socket.write(
      `HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\ncontent-encoding: gzip\r\ncontent-length: ${gz.length}\r\n\r\n`,
    );
    socket.write(gz.subarray(0, gz.length - 100));
  });
  const r = await runCli(['check', `${O}/sd-gz.xml`, '--rate', '0', '--sample', '0', '--timeout', '3000'], 60_000);
  assert.equal(r.killed, false);
  assert.match(r.stdout, /NOT CONFORMANT/);
  assert.match(r.stdout, /error document-unreadable: .*\/rl-gz\.xml/);
  assert.equal(r.status, 1, r.stderr);
  const e = await runCli(['explore', `${O}/sd-gz.xml`, '--rate', '0', '--timeout', '3000'], 60_000);
  assert.match(e.stdout, /rl-gz\.xml/);
  assert.equal(e.status, 0, e.stderr);
});

void test('Resource List Indexes that list themselves or each other: index-cycle, NOT CONFORMANT, exit 1', async () => {
  const index = (path: string, parts: string[]): string =>
    `<sitemapindex ${NS}><rs:ln rel="up" href="${O}/cl-cycle.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
    parts.map((p) => `<sitemap><loc>${O}${p}</loc></sitemap>`).join('') +
    `</sitemapindex>`;
  const list = `<urlset ${NS}><rs:ln rel="up" href="${O}/cl-cycle.xml"/><rs:ln rel="index" href="${O}/rli-self.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/></urlset>`;
  routes.set('/sd-cycle.xml', sd('/cl-cycle.xml', '/cl-cycle2.xml'));
  routes.set('/cl-cycle.xml', capabilityList('cycle', [['/rli-self.xml', 'resourcelist']]));
  routes.set('/cl-cycle2.xml', capabilityList('cycle', [['/rli-a.xml', 'resourcelist']]));
  routes.set('/rli-self.xml', index('/rli-self.xml', ['/rl-part.xml', '/rli-self.xml']));
  routes.set('/rl-part.xml', list);
  routes.set('/rli-a.xml', index('/rli-a.xml', ['/rli-b.xml']));
  routes.set('/rli-b.xml', index('/rli-b.xml', ['/rli-a.xml']));
  const r = await runCli(['check', `${O}/sd-cycle.xml`, '--rate', '0', '--sample', '0', '--json'], 60_000);
  assert.equal(r.status, 1, r.stderr);
  const report = JSON.parse(r.stdout) as {
    conformant: boolean;
    issues: Array<{ code: string; url: string; severity: string }>;
  };
  assert.equal(report.conformant, false);
  const found = report.issues.filter((i) => i.severity === 'error').map((i) => `${i.code} ${i.url.replace(O, '')}`);
  assert.ok(found.includes('index-cycle /rli-self.xml'), found.join('\n'));
  assert.ok(found.includes('index-cycle /rli-b.xml'), found.join('\n'));
  // an index listed by an index is not the kind it lists
  assert.ok(found.includes('listed-kind-mismatch /rli-b.xml'), found.join('\n'));
});

/** Sends a document's head and start, then one byte of a comment every `everyMs`, never its end. */
function dripping(start: string, everyMs: number): (socket: Socket) => void {
  return (socket) => {
    socket.write(`HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\ntransfer-encoding: chunked\r\n\r\n`);
    const first = Buffer.from(`${HEAD}${start}<!-- `);
    socket.write(`${first.length.toString(16)}\r\n`);
    socket.write(first);
    socket.write('\r\n');
    const timer = setInterval(() => socket.write('1\r\nx\r\n'), everyMs);
    drips.add(timer);
    socket.on('close', () => {
      clearInterval(timer);
      drips.delete(timer);
    });
  };
}

void test('a Resource List that drips a byte every 500 ms: document-too-slow at the --deadline, exit 1', async () => {
  routes.set('/sd-drip.xml', sd('/cl-drip.xml'));
  routes.set('/cl-drip.xml', capabilityList('drip', [['/rl-drip.xml', 'resourcelist']]));
  routes.set(
    '/rl-drip.xml',
    dripping(
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl-drip.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>`,
      500,
    ),
  );
  const started = Date.now();
  const r = await runCli(
    ['check', `${O}/sd-drip.xml`, '--rate', '0', '--sample', '0', '--deadline', '3000', '--json'],
    90_000,
  );
  assert.equal(r.killed, false);
  assert.equal(r.status, 1, r.stderr);
  const report = JSON.parse(r.stdout) as {
    issues: Array<{ code: string; url: string; severity: string; message: string }>;
  };
  const slow = report.issues.find((i) => i.code === 'document-too-slow');
  assert.equal(slow?.url, `${O}/rl-drip.xml`);
  assert.equal(slow.severity, 'error');
  assert.match(slow.message, /3000 ms/);
  // the deadline ended it, not the idle timeout (30 s by default)
  assert.ok(Date.now() - started < 25_000, `${Date.now() - started} ms`);
});

void test('a Source Description that drips a byte every 2 s: check and explore end at the deadline, exit 3', async () => {
  routes.set('/sd-slow.xml', dripping(`<urlset ${NS}><rs:md capability="description"/>`, 2000));
  for (const command of ['check', 'explore']) {
    const started = Date.now();
    const r = await runCli([command, `${O}/sd-slow.xml`, '--rate', '0', '--deadline', '3000', '--json'], 90_000);
    assert.equal(r.killed, false);
    assert.equal(r.status, 3, r.stderr);
    const out = JSON.parse(r.stdout) as { error: { code: string; message: string } };
    assert.equal(out.error.code, 'RS_HTTP_TIMEOUT', r.stdout);
    assert.match(out.error.message, /did not arrive whole within 3000 ms/);
    assert.ok(Date.now() - started < 25_000, `${command}: ${Date.now() - started} ms`);
  }
});
