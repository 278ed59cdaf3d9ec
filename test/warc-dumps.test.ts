/**
 * Dumps as WARC, ours written and ours read: `publish` with `dumps: { format: 'warc' }` served by the project's
 * Source on 127.0.0.1, then `sync` with `preferDump` (baseline from the Resource Dump, then the Change Dumps with
 * deletions); the mirror is byte for byte the published folder. warcio (an independent reader) reads the packages
 * and agrees with every digest; the manifests validate; the dump documents say `application/warc`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readFile, readdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { WARCParser } from 'warcio';
import { tempDir } from './helpers/tmp.js';
import { base32 } from '../src/core/warc.js';
import { publish } from '../src/source/publish.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { serve } from '../src/server/node-adapter.js';
import { sync } from '../src/destination/sync.js';
import { audit, listFiles } from '../src/destination/audit.js';
import { RenameOnly } from '../src/node/durability.js';
import { validate } from '../src/core/validate/index.js';
import { readDocument } from '../src/core/xml/read-document.js';

const FILES: Record<string, string | Buffer> = {
  'a.txt': 'alpha\n',
  'dir/b.txt': 'bravo\n',
  'with space/d e.txt': 'delta echo\n',
  'unicodé/naïve €.txt': 'non-ASCII\n',
  'big.bin': Buffer.from(Array.from({ length: 5 * 1024 * 1024 + 7 }, (_, i) => (i * 31) % 256)),
  'empty.txt': '',
};

async function sameTree(a: string, b: string): Promise<void> {
  const files = listFiles(a).sort();
  assert.deepEqual(listFiles(b).sort(), files);
  for (const f of files) assert.deepEqual(await readFile(join(b, f)), await readFile(join(a, f)), f);
}

/** Every record of a WARC file as warcio reads it, with the sha1 of its payload recomputed. */
async function warcioRecords(file: string): Promise<Array<{ type: string; uri: string | undefined; declared: string | undefined; actual: string; id: string }>> {
  const out = [];
  for await (const rec of new WARCParser(createReadStream(file))) {
    const payload = await rec.readFully(true);
    out.push({
      type: rec.warcType ?? '',
      uri: rec.warcTargetURI ?? undefined,
      declared: rec.warcPayloadDigest ?? undefined,
      actual: `sha1:${base32(createHash('sha1').update(payload).digest())}`,
      id: (rec.warcHeader('WARC-Record-ID') ?? '').replace(/^<|>$/g, ''),
    });
  }
  return out;
}

void test('WARC dumps round-trip: Resource Dump baseline and Change Dumps (deletions included) give a byte-identical mirror', async () => {
  const { dir, cleanup } = await tempDir('rs-warc-dumps-');
  const src = join(dir, 'collection');
  const outDir = join(dir, 'publish');
  for (const [p, c] of Object.entries(FILES)) {
    await mkdir(join(src, p, '..'), { recursive: true });
    await writeFile(join(src, p), c);
  }
  const live: { core?: SourceResponder } = {};
  const requested: string[] = [];
  const front: ResponderHandler = (req) => {
    requested.push(req.target);
    return live.core!(req);
  };
  const server = await serve(front, { port: 0, host: '127.0.0.1' });
  const base = `${server.url}/`;
  const sets = [{ name: 'collection', dir: src }];
  const republish = async (): Promise<void> => {
    const r = await publish({ sets, baseUrl: base, outDir, stateDir: join(dir, 'state'), hashes: ['md5', 'sha-256'], dumps: { format: 'warc' }, changeList: { maxEntries: 1 } });
    live.core ??= createSourceResponder({ sets: [{ ...sets[0]!, capabilityList: r.capabilityLists[0]! }], outDir, baseUrl: base, cacheMs: 0 });
    live.core.invalidate();
  };
  const mirror = join(dir, 'mirror');
  try {
    await republish();
    const docs = join(outDir, '.resourcesync', 'collection');
    const packages = (await readdir(docs)).filter((n) => n.startsWith('resourcedump-') && n.endsWith('.warc.gz'));
    assert.equal(packages.length, 1, String(await readdir(docs)));
    assert.match(await readFile(join(docs, 'resourcedump.xml'), 'utf8'), /type="application\/warc"/);
    const manifestName = packages[0]!.replace('.warc.gz', '-manifest.xml');
    const manifest = await readFile(join(docs, manifestName), 'utf8');
    const verdict = await validate(await readDocument([Buffer.from(manifest)]));
    assert.deepEqual(verdict.issues.filter((i) => i.severity === 'error'), [], JSON.stringify(verdict));

    // an independent reader: warcinfo, the manifest as metadata, then one resource record per manifest entry
    const records = await warcioRecords(join(docs, packages[0]!));
    assert.deepEqual(records.slice(0, 2).map((r) => r.type), ['warcinfo', 'metadata']);
    const resources = records.filter((r) => r.type === 'resource');
    assert.equal(resources.length, Object.keys(FILES).length);
    for (const r of resources) {
      assert.equal(r.declared, r.actual, r.uri);
      assert.ok(manifest.includes(`path="/${r.id}"`), `the manifest names record ${r.id}`);
    }

    const first = await sync({ source: base, dest: mirror, preferDump: true, durability: new RenameOnly() });
    assert.equal(first.mode, 'baseline');
    assert.deepEqual(first.failed, []);
    assert.equal(first.created, Object.keys(FILES).length);
    assert.ok(first.sets[0]?.documents.some((d) => /resourcedump/.test(d)), JSON.stringify(first.sets));
    await sameTree(src, mirror);

    // changes: an update, a creation, a deletion; the Change Dump packages carry them as WARC
    await writeFile(join(src, 'a.txt'), 'alpha, later\n');
    await writeFile(join(src, 'new.txt'), 'new\n');
    await unlink(join(src, 'dir', 'b.txt'));
    await republish();
    await writeFile(join(src, 'new.txt'), 'newer\n');
    await republish();
    const changePackages = (await readdir(docs)).filter((n) => /^changedump-\d+\.warc\.gz$/.test(n));
    assert.ok(changePackages.length >= 1, String(await readdir(docs)));
    assert.equal((await readdir(docs)).filter((n) => n.endsWith('.zip')).length, 0, 'no ZIP package in a WARC dump');
    const second = await sync({ source: base, dest: mirror, preferDump: true, delete: true, durability: new RenameOnly() });
    assert.deepEqual(second.failed, []);
    assert.equal(second.mode, 'incremental');
    assert.ok(requested.some((p) => /changedump-\d+\.warc\.gz$/.test(p)), JSON.stringify(requested));
    assert.equal(second.deleted, 1);
    await sameTree(src, mirror);
    assert.equal((await audit({ source: base, dest: mirror })).inSync, true);
  } finally {
    await server.close();
    await cleanup();
  }
});
