import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sync, type SyncProgress } from '../src/destination/sync.js';
import { RenameOnly } from '../src/node/durability.js';

const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
const N = 400;

void test('baseline progress: a Resource List that streams in is estimated from its bytes read, then counted', async () => {
  const server = createServer((req, res) => {
    const o = `http://${req.headers.host}`;
    const path = req.url ?? '/';
    if (path === '/resourcelist.xml') {
      const urls = Array.from({ length: N }, (_, i) => `<url><loc>${o}/r/${i}.txt</loc><rs:md length="${`resource ${i}`.length}"/></url>`);
      const text = Buffer.from(`<urlset ${NS}><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>${urls.join(`\n${' '.repeat(800)}`)}</urlset>`);
      res.writeHead(200, { 'content-type': 'application/xml', 'content-length': String(text.length) });
      // over 256 KB (a smaller body is handed out whole), in 20 pieces, each once the one before is taken, so that
      // the list is read while it comes in
      const piece = Math.ceil(text.length / 20);
      let at = 0;
      const next = (): void => {
        if (at >= text.length) return void res.end();
        const more = res.write(text.subarray(at, (at += piece)));
        if (more) setTimeout(next, 20);
        else res.once('drain', next);
      };
      next();
    } else if (path.startsWith('/r/')) {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`resource ${path.slice(3, -4)}`);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), 'rs-estimate-'));
  try {
    const seen: SyncProgress[] = [];
    const report = await sync({ source: `${origin}/resourcelist.xml`, dest: join(dir, 'm'), durability: new RenameOnly(), concurrency: 2, onProgress: (p) => seen.push({ ...p }) });
    assert.equal(report.created, N);
    const estimated = seen.filter((p) => p.phase === 'baseline' && p.total === undefined && p.estimate !== undefined);
    assert.ok(estimated.length > 0, 'an estimate before the list was read through');
    for (const p of estimated) {
      assert.ok(p.estimate! >= p.done && p.estimate! > 0, `estimate ${p.estimate} for ${p.done} done`);
      assert.ok(p.estimate! <= 2 * N, `estimate ${p.estimate} for a list of ${N}`);
    }
    // the last estimates are close: the entries are alike
    assert.ok(Math.abs(estimated.at(-1)!.estimate! - N) <= N / 4, `last estimate ${estimated.at(-1)!.estimate}`);
    for (const p of seen) if (p.total !== undefined) assert.equal(p.estimate, undefined);
    assert.equal(seen.at(-1)!.total, N);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
    await rm(dir, { recursive: true, force: true });
  }
});
