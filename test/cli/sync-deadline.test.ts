import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../helpers/paths.js';

const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

/**
 * A Source whose documents in `drip` are sent one byte every 500 ms (a minute and more for the whole document), the
 * rest at once: a Capability List, a Resource List of one resource, a Change List with the changes in `changes`.
 */
async function dripSource(): Promise<{ origin: string; drip: Set<string>; body: { a: string }; changes: string[]; dripped: () => number; close: () => Promise<void> }> {
  const drip = new Set<string>();
  const body = { a: 'first' };
  const changes: string[] = [];
  let dripped = 0;
  const send = (res: ServerResponse, path: string, text: string): void => {
    if (!drip.has(path)) {
      res.writeHead(200, { 'content-type': 'application/xml' }).end(text);
      return;
    }
    res.writeHead(200, { 'content-type': 'application/xml', 'content-length': String(Buffer.byteLength(text)) });
    const bytes = Buffer.from(text);
    let i = 0;
    const timer = setInterval(() => {
      if (i >= bytes.length) {
        clearInterval(timer);
        res.end();
        return;
      }
      dripped++;
      res.write(bytes.subarray(i, ++i));
    }, 500);
    res.on('close', () => clearInterval(timer));
  };
  const server = createServer((req, res) => {
    const o = `http://${req.headers.host}`;
    const path = new URL(req.url ?? '/', o).pathname;
    if (path === '/capabilitylist.xml') {
      send(res, path, `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${o}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url><url><loc>${o}/changelist.xml</loc><rs:md capability="changelist"/></url></urlset>`);
    } else if (path === '/resourcelist.xml') {
      send(res, path, `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z" completed="2020-01-01T00:00:00Z"/><url><loc>${o}/a.txt</loc><lastmod>2020-01-01T00:00:00Z</lastmod><rs:md length="${body.a.length}"/></url></urlset>`);
    } else if (path === '/changelist.xml') {
      send(res, path, `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/>${changes.join('')}</urlset>`);
    } else if (path === '/a.txt') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(body.a);
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    drip,
    body,
    changes,
    dripped: () => dripped,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/** Runs `resourcesync sync …` to its end: exit code, stderr and how long it took. */
async function syncRun(args: string[]): Promise<{ code: number | null; err: string; ms: number }> {
  const started = Date.now();
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'), 'sync', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr.on('data', (c: Buffer) => (err += c.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
  const code = await new Promise<number | null>((r) => child.on('close', r));
  clearTimeout(timer);
  return { code, err, ms: Date.now() - started };
}

void test('sync --deadline: a Change List dripped a byte every 500 ms ends the run with exit 5, the mirror as it was', async () => {
  const s = await dripSource();
  const dir = await mkdtemp(join(tmpdir(), 'rs-deadline-'));
  const mirror = join(dir, 'm');
  try {
    const first = await syncRun([`${s.origin}/capabilitylist.xml`, mirror, '--no-fsync']);
    assert.equal(first.code, 0, first.err);
    assert.equal(readFileSync(join(mirror, 'a.txt'), 'utf8'), 'first');

    // a change whose Change List drips (about 190 s for its bytes)
    s.body.a = 'second!';
    s.changes.push(`<url><loc>${s.origin}/a.txt</loc><lastmod>2020-01-02T00:00:00Z</lastmod><rs:md change="updated" datetime="2020-01-02T00:00:00Z" length="7"/></url>`);
    s.drip.add('/changelist.xml');
    const late = await syncRun([`${s.origin}/capabilitylist.xml`, mirror, '--no-fsync', '--deadline', '3000', '--retries', '0']);
    assert.equal(late.code, 5, late.err);
    assert.match(late.err, /changelist\.xml' did not arrive whole within 3000 ms/);
    assert.ok(late.ms < 60_000, `ended after ${late.ms} ms`);
    assert.ok(s.dripped() >= 2, 'the Change List was being dripped');
    assert.equal(readFileSync(join(mirror, 'a.txt'), 'utf8'), 'first');
    assert.deepEqual(readdirSync(mirror).sort(), ['.resourcesync', 'a.txt']);
    assert.deepEqual(existsSync(join(mirror, '.resourcesync', 'tmp')) ? readdirSync(join(mirror, '.resourcesync', 'tmp')) : [], []);

    // the Source well again: the next run applies the change (the cursor did not move past it)
    s.drip.clear();
    const after = await syncRun([`${s.origin}/capabilitylist.xml`, mirror, '--no-fsync', '--deadline', '3000']);
    assert.equal(after.code, 0, after.err);
    assert.equal(readFileSync(join(mirror, 'a.txt'), 'utf8'), 'second!');
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});

void test('sync --deadline: a Capability List dripped during discovery ends a first run with exit 5, nothing left behind', async () => {
  const s = await dripSource();
  const dir = await mkdtemp(join(tmpdir(), 'rs-deadline-'));
  const mirror = join(dir, 'm');
  try {
    s.drip.add('/capabilitylist.xml');
    const r = await syncRun([`${s.origin}/capabilitylist.xml`, mirror, '--no-fsync', '--deadline', '3000', '--retries', '0', '--json']);
    assert.equal(r.code, 5, r.err);
    assert.match(r.err, /within 3000 ms/);
    assert.ok(r.ms < 60_000, `ended after ${r.ms} ms`);
    assert.equal(existsSync(mirror), false, 'a failed first run leaves no folder');
  } finally {
    await s.close();
    await rm(dir, { recursive: true, force: true });
  }
});
