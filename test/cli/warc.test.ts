/**
 * WARC from the command line: `build --dumps --dump-format warc` then `sync --prefer-dump` from the served tree
 * (a byte-identical mirror), and `sync --warc`: every fetched resource has a `response` record whose payload
 * digest matches the mirrored bytes (recomputed here), the CDXJ lines are SURT-sorted and point at the record of
 * their URL, files rotate by size, and a file a killed run left half-written is cut back on the next run.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { appendFile, copyFile, mkdir, open, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, normalize } from 'node:path';
import { runCli } from '../helpers/mirror-check.js';
import { startCli, until } from '../helpers/cli-child.js';
import { tempDir } from '../helpers/tmp.js';
import { base32 } from '../../src/core/warc.js';
import { readWarcPayload, scanWarc } from '../../src/node/warc-read.js';
import { listFiles } from '../../src/destination/audit.js';

const FILES: Record<string, string | Buffer> = {
  'a.txt': 'alpha\n',
  'dir/b.txt': 'bravo\n',
  'dir/page.html': '<html><head><title>p</title></head><body>page</body></html>\n',
  'with space/d e.txt': 'delta echo\n',
  'big.bin': Buffer.from(Array.from({ length: 6 * 1024 * 1024 }, (_, i) => (i * 7) % 256)),
};

/** A static server: the published documents from `pub`, the resources from `src`. */
async function staticServer(src: string, pub: string): Promise<{ server: Server; base: string }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const root = /^\/(\.resourcesync|\.well-known|robots\.txt)/.test(path) ? pub : src;
    const file = normalize(join(root, path));
    if (!file.startsWith(root)) return void res.writeHead(403).end();
    readFile(file).then(
      (body) => res.writeHead(200, { 'content-type': file.endsWith('.xml') ? 'application/xml' : 'application/octet-stream', 'content-length': body.length }).end(body),
      () => res.writeHead(404).end(),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}/` };
}

async function withTree(fn: (env: { dir: string; src: string; pub: string; base: string }) => Promise<void>): Promise<void> {
  const { dir, cleanup } = await tempDir('rs-cli-warc-');
  const src = join(dir, 'src');
  const pub = join(dir, 'pub');
  for (const [p, c] of Object.entries(FILES)) {
    await mkdir(join(src, p, '..'), { recursive: true });
    await writeFile(join(src, p), c);
  }
  const { server, base } = await staticServer(src, pub);
  try {
    await fn({ dir, src, pub, base });
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await cleanup();
  }
}

async function sameTree(a: string, b: string): Promise<void> {
  const files = listFiles(a).sort();
  assert.deepEqual(listFiles(b).sort(), files);
  for (const f of files) assert.deepEqual(await readFile(join(b, f)), await readFile(join(a, f)), f);
}

const sha1 = (b: Uint8Array): string => `sha1:${base32(createHash('sha1').update(b).digest())}`;

/** Every response record of the WARC files in `folder`, each checked against its CDXJ line. */
async function checkArchive(folder: string): Promise<Map<string, string>> {
  const digests = new Map<string, string>();
  const names = (await readdir(folder)).filter((n) => n.endsWith('.warc.gz')).sort();
  assert.deepEqual((await readdir(folder)).filter((n) => n.endsWith('.open') || n.startsWith('.warc-spool')), [], 'nothing left half-done');
  for (const name of names) {
    const fh = await open(join(folder, name), 'r');
    try {
      const byOffset = new Map<number, string>();
      for await (const r of scanWarc(fh)) if (r.type === 'response') byOffset.set(r.offset, r.targetUri!);
      const lines = (await readFile(join(folder, name.replace('.warc.gz', '.cdxj')), 'utf8')).split('\n').filter((l) => l !== '');
      assert.equal(lines.length, byOffset.size, `${name}: one CDXJ line per response record`);
      assert.deepEqual([...lines].sort(), lines, 'CDXJ lines are sorted');
      for (const line of lines) {
        const [key, stamp, json] = [line.split(' ')[0]!, line.split(' ')[1]!, line.slice(line.indexOf('{'))];
        const f = JSON.parse(json) as { url: string; offset: string; length: string; digest: string; filename: string; status: string };
        assert.equal(f.filename, name);
        assert.equal(byOffset.get(Number(f.offset)), f.url, `the record at ${f.offset} is that of ${f.url}`);
        assert.match(stamp, /^\d{14}$/);
        assert.ok(key.startsWith('0,0,1,127:') || key.startsWith('1,0,0,127:'), key);
        assert.equal(f.status, '200');
        // the payload read at the line's offset has the line's digest
        const scanned = await firstRecord(fh, Number(f.offset));
        const chunks: Buffer[] = [];
        for await (const c of readWarcPayload(fh, Number(f.offset), scanned)) chunks.push(c);
        assert.equal(`sha1:${f.digest}`, sha1(Buffer.concat(chunks)), f.url);
        digests.set(f.url, sha1(Buffer.concat(chunks)));
      }
    } finally {
      await fh.close();
    }
  }
  return digests;
}

/** The payload start of the record at `offset`, found from its HTTP header. */
async function firstRecord(fh: import('node:fs/promises').FileHandle, offset: number): Promise<number> {
  const parts: Buffer[] = [];
  for await (const c of readWarcPayload(fh, offset)) {
    parts.push(c);
    if (Buffer.concat(parts).includes('\r\n\r\n')) break;
  }
  return Buffer.concat(parts).indexOf('\r\n\r\n') + 4;
}

void test('build --dumps --dump-format warc, then sync --prefer-dump: a byte-identical mirror', async () => {
  await withTree(async ({ dir, src, pub, base }) => {
    const built = await runCli(['build', src, '--base-url', base, '--out', pub, '--dumps', '--dump-format', 'warc']);
    assert.equal(built.status, 0, built.stderr);
    const docs = await readdir(join(pub, '.resourcesync', 'src'));
    assert.ok(docs.some((n) => n.endsWith('.warc.gz')), String(docs));
    const checked = await runCli(['validate', join(pub, '.resourcesync', 'src', docs.find((n) => n.endsWith('-manifest.xml'))!)]);
    assert.equal(checked.status, 0, checked.stdout + checked.stderr);
    const mirror = join(dir, 'mirror');
    const synced = await runCli(['sync', `${base}.resourcesync/src/capabilitylist.xml`, mirror, '--prefer-dump', '--json', '--no-fsync']);
    assert.equal(synced.status, 0, synced.stdout + synced.stderr);
    assert.equal((JSON.parse(synced.stdout) as { created: number }).created, Object.keys(FILES).length);
    await sameTree(src, mirror);
    // check judges the WARC packages: manifests validated, every bitstream found at its path with its length
    const judged = await runCli(['check', `${base}.resourcesync/src/capabilitylist.xml`, '--json']);
    assert.equal(judged.status, 0, judged.stdout + judged.stderr);
    const report = JSON.parse(judged.stdout) as { conformant: boolean; documents: Array<{ url: string; kind: string | null; entries: number }> };
    assert.equal(report.conformant, true);
    const pkg = report.documents.find((d) => d.kind === 'package' && d.url.endsWith('.warc.gz'));
    assert.equal(pkg?.entries, Object.keys(FILES).length, JSON.stringify(report.documents));
    const manifest = report.documents.find((d) => d.url === `${pkg.url}#manifest.xml`);
    assert.equal(manifest?.kind, 'resource-dump-manifest');
    assert.equal(manifest.entries, Object.keys(FILES).length);
  });
});

void test('sync --warc: a response record per fetched resource, digests of the mirrored bytes, CDXJ at the right offsets; rotation; a killed run repaired', async () => {
  await withTree(async ({ dir, src, pub, base }) => {
    assert.equal((await runCli(['build', src, '--base-url', base, '--out', pub])).status, 0);
    const cap = `${base}.resourcesync/src/capabilitylist.xml`;
    const archive = join(dir, 'archive');
    const mirror = join(dir, 'mirror');
    const synced = await runCli(['sync', cap, mirror, '--warc', archive, '--no-fsync']);
    assert.equal(synced.status, 0, synced.stdout + synced.stderr);
    assert.match(synced.stderr, /WARC: 5 records/);
    const digests = await checkArchive(archive);
    assert.equal(digests.size, Object.keys(FILES).length);
    for (const f of listFiles(mirror)) {
      const url = `${base}${f.split('/').map(encodeURIComponent).join('/')}`;
      assert.equal(digests.get(url), sha1(await readFile(join(mirror, f))), url);
    }

    // rotation: files of at most 1 byte, so one record each (after their warcinfo)
    const rotated = join(dir, 'rotated');
    const again = await runCli(['sync', cap, join(dir, 'mirror2'), '--warc', join(rotated, 'crawl.warc.gz'), '--warc-max-size', '1', '--no-fsync']);
    assert.equal(again.status, 0, again.stderr);
    const files = (await readdir(rotated)).filter((n) => n.endsWith('.warc.gz')).sort();
    assert.deepEqual(files, ['crawl-00001.warc.gz', 'crawl-00002.warc.gz', 'crawl-00003.warc.gz', 'crawl-00004.warc.gz', 'crawl.warc.gz']);
    assert.equal((await checkArchive(rotated)).size, Object.keys(FILES).length);

    // a run killed mid-record: the next run cuts the file back to its last whole record and indexes it
    const first = files[0]!;
    const open1 = join(rotated, 'killed.warc.gz.open');
    await copyFile(join(rotated, first), open1);
    const whole = (await readFile(open1)).length;
    // the first 300 bytes of another file's response record (after its warcinfo)
    const other = await open(join(rotated, files[1]!), 'r');
    let infoLength = 0;
    for await (const r of scanWarc(other)) {
      infoLength = r.length;
      break;
    }
    await other.close();
    await appendFile(open1, (await readFile(join(rotated, files[1]!))).subarray(infoLength, infoLength + 300));
    const third = await runCli(['sync', cap, join(dir, 'mirror3'), '--warc', rotated, '--no-fsync']);
    assert.equal(third.status, 0, third.stderr);
    assert.match(third.stderr, /repaired .*killed\.warc\.gz .*: 1 records kept, 300 bytes cut off/);
    assert.equal((await readFile(join(rotated, 'killed.warc.gz'))).length, whole);
    await checkArchive(rotated);
  });
});

void test('sync --follow --warc: records the first sync and each batch; SIGTERM closes and indexes the file', async () => {
  await withTree(async ({ dir, src, pub, base }) => {
    assert.equal((await runCli(['build', src, '--base-url', base, '--out', pub])).status, 0);
    const cap = `${base}.resourcesync/src/capabilitylist.xml`;
    const archive = join(dir, 'followed');
    const p = startCli(['sync', cap, join(dir, 'mirror'), '--follow', '--interval', '1', '--warc', archive, '--no-fsync']);
    try {
      await until('the first sync', () => listFiles(join(dir, 'mirror')).length === Object.keys(FILES).length);
      await writeFile(join(src, 'later.txt'), 'later\n');
      assert.equal((await runCli(['build', src, '--base-url', base, '--out', pub])).status, 0);
      await until('the change applied', () => listFiles(join(dir, 'mirror')).includes('later.txt'));
    } finally {
      p.child.kill('SIGTERM');
    }
    await until('the follower to stop', () => p.child.exitCode !== null || p.child.signalCode !== null);
    assert.equal(p.child.exitCode, 0, p.err());
    assert.match(p.err(), /WARC: 6 records/);
    const digests = await checkArchive(archive);
    assert.ok(digests.has(`${base}later.txt`), JSON.stringify([...digests.keys()]));
  });
});

void test('usage errors: --dump-format other than zip or warc, --warc with --dry-run', async () => {
  const bad = await runCli(['build', '.', '--base-url', 'http://127.0.0.1:9/', '--out', '/nonexistent', '--dumps', '--dump-format', 'tar']);
  assert.equal(bad.status, 2, bad.stderr);
  assert.match(bad.stderr, /--dump-format 'tar'/);
  const dry = await runCli(['sync', 'http://127.0.0.1:9/cap.xml', '/nonexistent', '--warc', '/tmp/x', '--dry-run']);
  assert.equal(dry.status, 2, dry.stderr);
  assert.match(dry.stderr, /--warc goes without --dry-run/);
  const noSize = await runCli(['sync', 'http://127.0.0.1:9/cap.xml', '/nonexistent', '--warc', '/tmp/x', '--warc-max-size', '1T']);
  assert.equal(noSize.status, 2, noSize.stderr);
  assert.match(noSize.stderr, /--warc-max-size '1T'/);
});
