/**
 * WARC against independent producers and readers: GNU wget's `--warc-file` output (Debian's wget, crawling a
 * server on 127.0.0.1) read by our reader, every record's digests checked and every payload equal to the file
 * served; and the CDXJ our archive writes equal to the one warcio's indexer (what pywb uses) makes of the same
 * WARC file.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, open, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { CDXIndexer } from 'warcio';
import { tempDir } from './helpers/tmp.js';
import { base32, parseWarcDigest } from '../src/core/warc.js';
import { readWarcPayload, scanWarc } from '../src/node/warc-read.js';
import { openWarcArchive } from '../src/destination/warc-archive.js';

const WGET = spawnSync('wget', ['--version'], { encoding: 'utf8' }).status === 0;

const SITE: Record<string, string | Buffer> = {
  'index.html': '<html><body><a href="sub/b.txt">b</a> <a href="c.bin">c</a> <a href="d%20e.html">d</a></body></html>\n',
  'sub/b.txt': 'bravo\n',
  'c.bin': Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 13) % 256)),
  'd e.html': '<p>d</p>\n',
};

const sha1 = (b: Uint8Array): string => createHash('sha1').update(b).digest('hex');

function run(cmd: string, args: string[], timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'ignore' });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

void test("GNU wget's WARC is read: every record's digests verified, every payload the bytes served", { skip: WGET ? false : 'wget is not installed (apt-get install wget)' }, async () => {
  const { dir, cleanup } = await tempDir('rs-wget-warc-');
  const site = join(dir, 'site');
  for (const [p, c] of Object.entries(SITE)) {
    await mkdir(join(site, p, '..'), { recursive: true });
    await writeFile(join(site, p), c);
  }
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = normalize(join(site, path === '/' ? 'index.html' : path));
    readFile(file).then(
      (body) => res.writeHead(200, { 'content-type': file.endsWith('.html') ? 'text/html' : 'application/octet-stream', 'content-length': body.length }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    const code = await run('wget', ['--warc-file', join(dir, 'crawl'), '--no-verbose', '-r', '-np', '-P', join(dir, 'dl'), `${origin}/`], 60_000);
    assert.equal(code, 0, 'wget succeeded');
    const fh = await open(join(dir, 'crawl.warc.gz'), 'r');
    const payloads = new Map<string, Buffer>();
    let records = 0;
    try {
      for await (const r of scanWarc(fh)) {
        records++;
        if (r.type !== 'response') continue;
        const chunks: Buffer[] = [];
        for await (const c of readWarcPayload(fh, r.offset, r.payloadStart)) chunks.push(c);
        const payload = Buffer.concat(chunks);
        // recomputed here, independently of the scan
        const declared = parseWarcDigest(r.header.fields.get('warc-payload-digest'));
        assert.ok(declared !== undefined, `${r.targetUri} declares a payload digest`);
        assert.equal(declared.hex, createHash(declared.algorithm).update(payload).digest('hex'), r.targetUri);
        payloads.set(r.targetUri!, payload);
      }
    } finally {
      await fh.close();
    }
    assert.ok(records >= 9, `warcinfo, requests, responses, wget's metadata (${records})`);
    for (const [p, c] of Object.entries(SITE)) {
      const url = `${origin}/${p === 'index.html' ? '' : p.replace(' ', '%20')}`;
      assert.equal(sha1(payloads.get(url) ?? Buffer.alloc(0)), sha1(Buffer.from(c)), url);
    }
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await cleanup();
  }
});

void test("the archive's CDXJ is the one warcio's indexer (pywb's format) makes of the same file", async () => {
  const { dir, cleanup } = await tempDir('rs-warc-cdxj-');
  try {
    const archive = await openWarcArchive({ path: join(dir, 'a.warc.gz'), now: () => Date.UTC(2026, 0, 2, 3, 4, 5) });
    const responses: Array<[string, number, Record<string, string>, string]> = [
      ['http://127.0.0.1:8080/b/z.txt?b=2&a=1', 200, { 'content-type': 'text/plain; charset=utf-8' }, 'zed'],
      ['http://www.Example.com/A.html', 200, { 'content-type': 'text/html', 'content-encoding': 'gzip' }, '<p>a</p>'],
      ['https://example.org/', 200, {}, 'root'],
    ];
    for (const [url, status, headers, body] of responses) {
      const capture = archive.capture(url, { status, headers }, (async function* () {
        yield Buffer.from(body);
      })());
      for await (const chunk of capture.body) assert.ok(chunk.byteLength > 0);
      await capture.keep();
    }
    const summary = await archive.close();
    assert.deepEqual(summary.files, [join(dir, 'a.warc.gz')]);
    const ours = (await readFile(join(dir, 'a.cdxj'), 'utf8')).trim().split('\n');
    const theirs: string[] = [];
    const indexer = new CDXIndexer({ format: 'cdxj' });
    for await (const line of indexer.iterIndex([{ filename: 'a.warc.gz', reader: createReadStream(join(dir, 'a.warc.gz')) }])) {
      theirs.push(indexer.serializeCDXJ(line).trim());
    }
    theirs.sort();
    assert.deepEqual(ours.map((l) => l.split(' {')[0]), theirs.map((l) => l.split(' {')[0]), 'keys and timestamps');
    for (let i = 0; i < ours.length; i++) {
      const a = JSON.parse(ours[i]!.slice(ours[i]!.indexOf('{'))) as Record<string, string>;
      const b = JSON.parse(theirs[i]!.slice(theirs[i]!.indexOf('{'))) as Record<string, string>;
      for (const k of ['url', 'mime', 'status', 'digest', 'length', 'offset', 'filename']) assert.equal(a[k], b[k], `${k} of ${a['url']}`);
    }
    assert.equal(base32(Buffer.from('f')), 'MY======');
    assert.deepEqual(await readdir(dir), ['a.cdxj', 'a.warc.gz']);
  } finally {
    await cleanup();
  }
});
