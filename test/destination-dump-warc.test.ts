/**
 * WARC dump packages read by the Destination (`applyResourceDump`), good and hostile: each bad package fails
 * with an RS_* code and leaves nothing behind (a truncated record, a wrong Content-Length, a digest that does
 * not match, a gzip bomb, a record too large for the cap, too many records, an unsafe path, a record of
 * another resource, bytes that do not match the manifest).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { dumpXml, manifestXml, type ManifestItem } from './helpers/dump-fixtures.js';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { createMapper } from '../src/destination/mapper.js';
import { createLocalDirectory } from '../src/destination/local-directory.js';
import { applyResourceDump, type ApplyDumpOptions, type DumpReport } from '../src/destination/dump.js';
import { RenameOnly } from '../src/node/durability.js';
import { WarcWriter } from '../src/node/warc-write.js';
import { formatWarcHeader } from '../src/core/warc.js';

interface Env {
  s: TestServer;
  root: string;
  dest: string;
  opts(dumpUrl: string, extra?: Partial<ApplyDumpOptions>): ApplyDumpOptions;
  close(): Promise<void>;
}

async function env(): Promise<Env> {
  const s = await startTestServer();
  const root = await mkdtemp(join(tmpdir(), 'rs-dump-warc-'));
  const dest = join(root, 'dest');
  await mkdir(dest);
  const authority = createAuthority({ origins: [s.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 10_000 });
  const mapper = createMapper({ base: `${s.origin}/` });
  return {
    s,
    root,
    dest,
    opts: (dumpUrl, extra = {}) => ({ dumpUrl, http, authority, storage: createLocalDirectory(dest, { durability: new RenameOnly() }), mapPath: (loc) => mapper.toPath(loc), ...extra }),
    async close() {
      await http.close();
      await s.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

interface Rec {
  id: string;
  loc: string;
  data: string | Buffer;
  /** An HTTP response record: this header before the data. */
  http?: string;
}

/** A WARC package written by our writer: warcinfo, the manifest as metadata, the records. */
async function warcPackage(e: Env, manifest: string, recs: Rec[]): Promise<Buffer> {
  const file = join(e.root, `p-${Math.random().toString(36).slice(2)}.warc.gz`);
  const w = await WarcWriter.open(file);
  await w.write({ type: 'warcinfo', date: 0, contentType: 'application/warc-fields', block: Buffer.from('software: test\r\n'), noPayloadDigest: true });
  await w.write({ type: 'metadata', date: 0, targetUri: `${e.s.origin}/manifest.xml`, contentType: 'application/xml', block: Buffer.from(manifest) });
  for (const r of recs) {
    const data = Buffer.from(r.data);
    const head = r.http === undefined ? Buffer.alloc(0) : Buffer.from(r.http);
    await w.write({
      type: r.http === undefined ? 'resource' : 'response',
      id: r.id,
      date: 0,
      targetUri: r.loc,
      contentType: r.http === undefined ? 'text/plain' : 'application/http; msgtype=response',
      block: Buffer.concat([head, data]),
      payloadStart: head.length,
    });
  }
  await w.close();
  return readFile(file);
}

/** Serves the package and its Resource Dump, applies it. */
async function apply(e: Env, pkg: Buffer, extra: Partial<ApplyDumpOptions> = {}): Promise<DumpReport> {
  const name = `/p${Math.random().toString(36).slice(2)}.warc.gz`;
  e.s.set(name, pkg);
  e.s.set(`${name}.xml`, dumpXml('resourcedump', [{ loc: `${e.s.origin}${name}`, zip: pkg }]).replace('application/zip', 'application/warc'));
  return applyResourceDump(e.opts(`${e.s.origin}${name}.xml`, extra));
}

const items = (_o: string, recs: Rec[]): ManifestItem[] => recs.map((r) => ({ loc: r.loc, path: `/${r.id}`, data: r.data }));

async function written(dest: string): Promise<string[]> {
  return (await readdir(dest, { recursive: true, withFileTypes: true })).filter((d) => d.isFile() && !d.parentPath.includes('.resourcesync')).map((d) => d.name).sort();
}

function recs(o: string): Rec[] {
  return [
    { id: 'urn:uuid:00000000-0000-4000-8000-000000000001', loc: `${o}/a.txt`, data: 'alpha' },
    { id: 'urn:uuid:00000000-0000-4000-8000-000000000002', loc: `${o}/dir/b.bin`, data: Buffer.alloc(100_000, 3) },
    { id: 'urn:uuid:00000000-0000-4000-8000-000000000003', loc: `${o}/c.html`, data: '<p>c</p>', http: 'HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n' },
  ];
}

void test('a WARC package: every bitstream extracted and verified, resource and response records', async () => {
  const e = await env();
  try {
    const r = recs(e.s.origin);
    const report = await apply(e, await warcPackage(e, manifestXml('resourcedump-manifest', items(e.s.origin, r)), r));
    assert.deepEqual(report.failures, []);
    assert.equal(report.extracted, 3);
    assert.equal(await readFile(join(e.dest, 'a.txt'), 'utf8'), 'alpha');
    assert.deepEqual(await readFile(join(e.dest, 'dir', 'b.bin')), Buffer.alloc(100_000, 3));
    assert.equal(await readFile(join(e.dest, 'c.html'), 'utf8'), '<p>c</p>');
  } finally {
    await e.close();
  }
});

void test('hostile WARC packages fail with an RS_* code and write nothing', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const r = recs(o);
    const manifest = manifestXml('resourcedump-manifest', items(o, r));
    const good = await warcPackage(e, manifest, r);
    const failsWith = async (what: string, pkg: Buffer, code: string, extra: Partial<ApplyDumpOptions> = {}, rest: string[] = []): Promise<void> => {
      const report = await apply(e, pkg, extra);
      assert.ok(report.failures.length > 0, `${what}: ${JSON.stringify(report)}`);
      assert.deepEqual([...new Set(report.failures.map((f) => f.code))], [code], `${what}: ${JSON.stringify(report.failures)}`);
      assert.deepEqual(await written(e.dest), rest, `${what}: only the verified bitstreams are written`);
      await rm(e.dest, { recursive: true, force: true });
      await mkdir(e.dest);
    };
    await failsWith('truncated', good.subarray(0, good.length - 30), 'RS_WARC');

    // a plain WARC whose record declares more bytes than it has, and one that declares fewer
    const plain = (declared: number, block: string, digest?: string): Buffer => {
      const fields: Array<[string, string]> = [['WARC-Type', 'metadata'], ['WARC-Record-ID', '<urn:uuid:m>'], ['Content-Type', 'application/xml'], ['Content-Length', String(Buffer.byteLength(manifest))]];
      const rec: Array<[string, string]> = [['WARC-Type', 'resource'], ['WARC-Record-ID', `<${r[0]!.id}>`], ['WARC-Target-URI', r[0]!.loc], ['Content-Length', String(declared)]];
      if (digest !== undefined) rec.push(['WARC-Block-Digest', digest]);
      return Buffer.from(`${formatWarcHeader(fields)}${manifest}\r\n\r\n${formatWarcHeader(rec)}${block}\r\n\r\n`);
    };
    await failsWith('Content-Length too long', plain(50, 'alpha'), 'RS_WARC');
    await failsWith('Content-Length too short', plain(3, 'alpha'), 'RS_WARC');
    await failsWith('block digest', plain(5, 'alpha', 'sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 'RS_HASH_MISMATCH');

    // a gzip bomb: a member that inflates far past its record (50 MiB of zeros behind a 5-byte record)
    const bombRecord = Buffer.concat([
      Buffer.from(formatWarcHeader([['WARC-Type', 'resource'], ['WARC-Record-ID', `<${r[0]!.id}>`], ['WARC-Target-URI', r[0]!.loc], ['Content-Length', '5']])),
      Buffer.from('alpha\r\n\r\n'),
      Buffer.alloc(50 * 1024 * 1024),
    ]);
    const head = await warcPackage(e, manifestXml('resourcedump-manifest', items(o, r.slice(0, 1))), []);
    const t0 = performance.now();
    await failsWith('gzip bomb', Buffer.concat([head, gzipSync(bombRecord)]), 'RS_WARC');
    assert.ok(performance.now() - t0 < 5000, 'the bomb is not inflated');
    await failsWith('over the byte cap', good, 'RS_LIMIT_BYTES', { maxTotalBytes: 1000 });
    await failsWith('too many records', good, 'RS_LIMIT_ENTRIES', { maxEntries: 1 });

    // record digests right, but the bytes are not what the manifest says
    const other = r.map((x, i) => (i === 0 ? { ...x, data: 'ALPHA' } : x));
    await failsWith('manifest hash', await warcPackage(e, manifest, other), 'RS_HASH_MISMATCH', {}, ['b.bin', 'c.html']);
    // a record of another resource under the id the manifest names
    const swapped = r.map((x, i) => (i === 0 ? { ...x, loc: `${o}/elsewhere.txt` } : x));
    await failsWith('target URI', await warcPackage(e, manifestXml('resourcedump-manifest', items(o, r.slice(0, 1))), swapped.slice(0, 1)), 'RS_WARC');
    // a manifest path that leaves the package, and a missing record
    const unsafe = manifestXml('resourcedump-manifest', [{ loc: r[0]!.loc, path: '/../../etc/passwd', data: 'alpha' }]);
    await failsWith('unsafe path', await warcPackage(e, unsafe, r.slice(0, 1)), 'RS_UNSAFE_PATH');
    const missing = manifestXml('resourcedump-manifest', [{ loc: r[0]!.loc, path: '/urn:uuid:nope', data: 'alpha' }]);
    await failsWith('missing record', await warcPackage(e, missing, r.slice(0, 1)), 'RS_WARC');
    // no manifest record at all
    await failsWith('no manifest', gzipSync(Buffer.from('')), 'RS_WARC');
  } finally {
    await e.close();
  }
});
