/**
 * The aggregate as a Source (Z39.99 §14.8), end to end with real processes: with `dumps` in the configuration each
 * Source's set offers a Resource Dump of the copies whose manifest carries the `via` links, `sync --prefer-dump`
 * takes byte-identical copies from it and `check` judges the aggregate conformant; and the aggregate's Change List
 * records the changes in the order the aggregator applied them (the Source's Change List order), not in path order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ResourceSyncDocument } from '../src/core/model/types.js';
import { exited } from './helpers/exited.js';
import { startCli, until, type CliChild } from './helpers/cli-child.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';
import { parseXml } from './helpers/xml-oracle.js';

const RS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';

/** A static server over `roots` on loopback (the first that has the file answers), 404 for the others; `seen` has every path asked for. */
async function staticServer(...roots: string[]): Promise<{ origin: string; close: () => Promise<void>; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    seen.push(path);
    if (path.includes('..')) return void res.writeHead(400).end();
    const type = path.endsWith('.zip') ? 'application/zip' : path.endsWith('.txt') ? 'text/plain' : 'application/xml';
    const read = async (): Promise<Buffer | undefined> => {
      for (const root of roots) {
        const b = await readFile(join(root, ...path.split('/'))).catch(() => undefined);
        if (b !== undefined) return b;
      }
      return undefined;
    };
    void read().then((b) => (b === undefined ? res.writeHead(404).end() : res.writeHead(200, { 'content-type': type }).end(b)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())), seen };
}

async function startAggregate(config: string): Promise<{ p: CliChild; url: string }> {
  const p = startCli(['aggregate', config, '--port', '0']);
  await until('the aggregator listening', () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `aggregate exited: ${p.err()}`);
  return { p, url: /^listening on (\S+)/m.exec(p.out())![1]! };
}

/** Fetches `url` until `ok` holds of the parsed document (against a deadline: publication takes longer under load). */
async function documentWhen(url: string, ok: (d: ResourceSyncDocument) => boolean, what: string, p: CliChild): Promise<ResourceSyncDocument> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await fetch(url);
    if (res.status === 200) {
      const d = parseXml(await res.text());
      if (ok(d)) return d;
    } else await res.body?.cancel();
    assert.ok(Date.now() < deadline, `${what} never came: ${p.err()}`);
    await sleep(100);
  }
}

void test('aggregate dumps: a Resource Dump of the copies with via links in its manifest; sync --prefer-dump; check', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-agg-dumps-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const root = join(dir, 'root');
  const data = join(dir, 'data');
  await mkdir(join(data, 'd'), { recursive: true });
  await mkdir(root);
  const files: Record<string, Buffer> = {
    'one.txt': Buffer.from('one\n'),
    'd/two.txt': Buffer.from('two\n'),
    'three.txt': Buffer.from('x'.repeat(70_000)),
  };
  for (const [p, b] of Object.entries(files)) await writeFile(join(data, ...p.split('/')), b);
  const server = await staticServer(root, data);
  teardown.push(server.close);
  const origin = server.origin;
  const build = await runCli(['build', data, '--base-url', `${origin}/`, '--out', root, '--state', join(dir, 'state')]);
  assert.equal(build.status, 0, build.stderr);

  const config = join(dir, 'agg.yaml');
  await writeFile(config, `out: ${join(dir, 'out')}\ndumps: true\nchangelist-max: 2\nsources:\n  - url: ${origin}/\n    id: src\n    interval: 1\n`);
  const agg = await startAggregate(config);
  teardown.push(() => agg.p.child.kill('SIGKILL'));
  const capUrl = `${agg.url}/.resourcesync/src/capabilitylist.xml`;
  const cap = await documentWhen(capUrl, (d) => d.entries.some((e) => e.md?.capability === 'resourcedump'), 'the Resource Dump in the Capability List', agg.p);
  const offered = cap.entries.map((e) => e.md?.capability);
  for (const c of ['resourcelist', 'changelist', 'resourcedump']) assert.ok(offered.includes(c), `the Capability List offers a ${c}: ${offered.join(', ')}`);

  // the dump's manifest: every copy, each with the via link to its original (its hash, length, type and modified)
  const rd = await documentWhen(`${agg.url}/.resourcesync/src/resourcedump.xml`, (d) => d.entries.length > 0, 'the Resource Dump', agg.p);
  const manifestUrl = rd.entries[0]!.ln?.find((l) => l.rel === 'contents')?.href;
  assert.ok(manifestUrl, 'the package links its manifest');
  const manifest = parseXml(await (await fetch(manifestUrl)).text());
  assert.equal(manifest.md?.capability, 'resourcedump-manifest');
  assert.deepEqual(manifest.entries.map((e) => e.loc).sort(), Object.keys(files).map((p) => `${agg.url}/src/${p}`).sort());
  for (const e of manifest.entries) {
    const path = e.loc.slice(`${agg.url}/src/`.length);
    const via = e.ln?.find((l) => l.rel === 'via');
    assert.equal(via?.href, `${origin}/${path}`, `the via of ${path}`);
    assert.equal(via?.length, String(files[path]!.length));
    assert.equal(via?.hash, `md5:${createHash('md5').update(files[path]!).digest('hex')}`);
    assert.equal(via?.type, 'text/plain');
    assert.ok(via?.modified, `the original's modified on ${path}`);
    assert.equal(e.md?.path, `/resources/${path}`, 'the bitstream in the package');
  }

  // a Destination takes its baseline from the dump: byte-identical copies, the via links kept in its state
  const mirror = join(dir, 'mirror');
  const s = await runCli(['sync', `${agg.url}/`, mirror, '--prefer-dump', '--json']);
  assert.equal(s.status, 0, s.stderr);
  const report = JSON.parse(s.stdout) as { mode: string; created: number; sets: { documents: string[] }[] };
  assert.equal(report.mode, 'baseline');
  assert.ok(
    report.sets.some((x) => x.documents.some((d) => d.includes('resourcedump'))),
    `the baseline read the Resource Dump: ${JSON.stringify(report.sets)}`,
  );
  for (const [p, b] of Object.entries(files)) assert.deepEqual(await readFile(join(mirror, 'src', ...p.split('/'))), b, p);
  const links = await runCli(['links', mirror, 'src/d/two.txt', '--json', '--rel', 'via']);
  assert.equal(links.status, 0, links.stderr);
  assert.equal((JSON.parse(links.stdout) as { links: { via?: { href: string }[] } }).links.via?.[0]?.href, `${origin}/d/two.txt`);

  const check = await runCli(['check', `${agg.url}/`]);
  assert.equal(check.status, 0, `check: ${check.stdout}${check.stderr}`);

  // two changes at the Source close the aggregate's Change List (changelist-max: 2): a Change Dump of its period
  files['one.txt'] = Buffer.from('one, again\n');
  files['four.txt'] = Buffer.from('four\n');
  await writeFile(join(data, 'one.txt'), files['one.txt']);
  await writeFile(join(data, 'four.txt'), files['four.txt']);
  const rebuild = await runCli(['build', data, '--base-url', `${origin}/`, '--out', root, '--state', join(dir, 'state')]);
  assert.equal(rebuild.status, 0, rebuild.stderr);
  assert.ok(offered.includes('changedump'), 'the Capability List offers a Change Dump (empty until a Change List closes)');
  const cd = await documentWhen(`${agg.url}/.resourcesync/src/changedump.xml`, (d) => d.entries.length > 0, 'a package in the Change Dump', agg.p);
  const cdManifestUrl = cd.entries[0]?.ln?.find((l) => l.rel === 'contents')?.href;
  assert.ok(cdManifestUrl, `the Change Dump package links its manifest: ${JSON.stringify(cd)}`);
  const cdManifest = parseXml(await (await fetch(cdManifestUrl)).text());
  assert.deepEqual(cdManifest.entries.map((e) => `${e.md?.change ?? '?'} ${e.loc.slice(`${agg.url}/src/`.length)}`).sort(), ['created four.txt', 'updated one.txt']);
  for (const e of cdManifest.entries) assert.equal(e.ln?.find((l) => l.rel === 'via')?.href, e.loc.replace(`${agg.url}/src/`, `${origin}/`), 'a Change Dump entry names its original');
  // the Destination goes on from the Change Dump
  const s2 = await runCli(['sync', `${agg.url}/`, mirror, '--prefer-dump', '--delete', '--json']);
  assert.equal(s2.status, 0, s2.stderr);
  const report2 = JSON.parse(s2.stdout) as { mode: string; sets: { documents: string[] }[] };
  assert.equal(report2.mode, 'incremental');
  assert.ok(
    report2.sets.some((x) => x.documents.some((d) => d.includes('changedump'))),
    `the Destination read the Change Dump: ${JSON.stringify(report2.sets)}`,
  );
  for (const [p, b] of Object.entries(files)) assert.deepEqual(await readFile(join(mirror, 'src', ...p.split('/'))), b, p);
  const check2 = await runCli(['check', `${agg.url}/`]);
  assert.equal(check2.status, 0, `check: ${check2.stdout}${check2.stderr}`);

  // a configuration whose dump fields are wrong is refused, naming the line and the field
  const bad = join(dir, 'bad.yaml');
  await writeFile(bad, `out: ${join(dir, 'out2')}\nsources: []\ndumps: yes please\ndump-format: tar\npackage-size: -1\nchangelist-max: 0\n`);
  const refused = await runCli(['aggregate', bad]);
  assert.equal(refused.status, 2);
  assert.match(refused.stderr, /bad\.yaml:3: dumps: 'yes please' is not true or false/);
  assert.match(refused.stderr, /bad\.yaml:4: dump-format: 'tar' is not zip or warc/);
  assert.match(refused.stderr, /bad\.yaml:5: package-size: '-1' is not an integer/);
  assert.match(refused.stderr, /bad\.yaml:6: changelist-max: '0' is not an integer from 1 to 50000/);

  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, agg.p.err());
});

void test('aggregate Change List: the changes in the order the aggregator applied them (the Source’s order), not path order', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-agg-order-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const root = join(dir, 'root');
  await mkdir(join(root, '.well-known'), { recursive: true });
  const server = await staticServer(root);
  teardown.push(server.close);
  const o = server.origin;
  const at = '2026-01-01T00:00:00Z';
  const entry = (path: string, body: string, change: string, datetime: string): string =>
    `<url><loc>${o}/${path}</loc><lastmod>${datetime}</lastmod><rs:md change="${change}" datetime="${datetime}" hash="md5:${createHash('md5').update(body).digest('hex')}" length="${Buffer.byteLength(body)}" type="text/plain"/></url>`;
  const changeList = (entries: string[]): string =>
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${RS}><rs:ln rel="up" href="${o}/capabilitylist.xml"/><rs:md capability="changelist" from="${at}"/>${entries.join('')}</urlset>\n`;
  await writeFile(join(root, '.well-known', 'resourcesync'), `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${RS}><rs:md capability="description"/><url><loc>${o}/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url></urlset>\n`);
  await writeFile(
    join(root, 'capabilitylist.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${RS}><rs:ln rel="up" href="${o}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>` +
      `<url><loc>${o}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url><url><loc>${o}/changelist.xml</loc><rs:md capability="changelist"/></url></urlset>\n`,
  );
  await writeFile(join(root, 'x.txt'), 'x\n');
  await writeFile(
    join(root, 'resourcelist.xml'),
    `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${RS}><rs:ln rel="up" href="${o}/capabilitylist.xml"/><rs:md capability="resourcelist" at="${at}"/>` +
      `<url><loc>${o}/x.txt</loc><lastmod>${at}</lastmod><rs:md hash="md5:${createHash('md5').update('x\n').digest('hex')}" length="2" type="text/plain"/></url></urlset>\n`,
  );
  await writeFile(join(root, 'changelist.xml'), changeList([]));

  const config = join(dir, 'agg.yaml');
  await writeFile(config, `out: ${join(dir, 'out')}\nsources:\n  - url: ${o}/\n    id: src\n    interval: 0.5\n`);
  const agg = await startAggregate(config);
  teardown.push(() => agg.p.child.kill('SIGKILL'));
  const rlUrl = `${agg.url}/.resourcesync/src/resourcelist.xml`;
  await documentWhen(rlUrl, (d) => d.entries.length === 1, 'the baseline of the aggregate', agg.p);

  // the Source changes c.txt, then a.txt, then b.txt; then, later, x.txt before a.txt again and deletes c.txt
  const bodies = { 'c.txt': 'see\n', 'a.txt': 'ay\n', 'b.txt': 'bee\n' };
  for (const [p, b] of Object.entries(bodies)) await writeFile(join(root, p), b);
  const first = [entry('c.txt', bodies['c.txt'], 'created', '2026-01-02T00:00:01Z'), entry('a.txt', bodies['a.txt'], 'created', '2026-01-02T00:00:02Z'), entry('b.txt', bodies['b.txt'], 'created', '2026-01-02T00:00:03Z')];
  await writeFile(join(root, 'changelist.xml'), changeList(first));
  const clUrl = `${agg.url}/.resourcesync/src/changelist.xml`;
  const names = (d: ResourceSyncDocument): string[] => d.entries.map((e) => `${e.md?.change ?? '?'} ${e.loc.slice(`${agg.url}/src/`.length)}`);
  let cl = await documentWhen(clUrl, (d) => d.entries.length >= 3, 'the three changes in the aggregate', agg.p);
  assert.deepEqual(names(cl), ['created c.txt', 'created a.txt', 'created b.txt'], 'the order applied, not path order');

  await writeFile(join(root, 'x.txt'), 'x, again\n');
  await writeFile(join(root, 'a.txt'), 'ay, again\n');
  const second = [entry('x.txt', 'x, again\n', 'updated', '2026-01-03T00:00:01Z'), entry('a.txt', 'ay, again\n', 'updated', '2026-01-03T00:00:02Z')];
  const gone = `<url><loc>${o}/c.txt</loc><rs:md change="deleted" datetime="2026-01-03T00:00:03Z"/></url>`;
  await writeFile(join(root, 'changelist.xml'), changeList([...first, ...second, gone]));
  cl = await documentWhen(clUrl, (d) => d.entries.length >= 6, 'the later changes in the aggregate', agg.p);
  assert.deepEqual(names(cl), ['created c.txt', 'created a.txt', 'created b.txt', 'updated x.txt', 'updated a.txt', 'deleted c.txt']);
  const times = cl.entries.map((e) => Date.parse(e.md!.datetime!));
  assert.ok(
    times.every((v, i) => i === 0 || v >= times[i - 1]!),
    `datetimes go forward: ${cl.entries.map((e) => e.md?.datetime).join(', ')}`,
  );
  // each entry keeps its via link to the original (the deletion its href alone)
  assert.equal(cl.entries[4]!.ln?.find((l) => l.rel === 'via')?.href, `${o}/a.txt`);
  assert.deepEqual(cl.entries[5]!.ln, [{ rel: 'via', href: `${o}/c.txt` }]);

  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, agg.p.err());
});

void test('aggregate: a dump-only Source polled while its dump stays the same costs the dump document, no package', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-agg-dump-poll-');
  const teardown: (() => unknown)[] = [];
  t.after(async () => {
    for (const f of teardown.reverse()) await f();
    await cleanup();
  });
  const root = join(dir, 'root');
  const data = join(dir, 'data');
  await mkdir(data, { recursive: true });
  await mkdir(root);
  await writeFile(join(data, 'one.txt'), 'one\n');
  const server = await staticServer(root);
  teardown.push(server.close);
  const build = async (): Promise<void> => {
    const r = await runCli(['build', data, '--base-url', `${server.origin}/`, '--out', root, '--state', join(dir, 'state'), '--dumps']);
    assert.equal(r.status, 0, r.stderr);
    const capFile = join(root, '.resourcesync', 'data', 'capabilitylist.xml');
    const cap = await readFile(capFile, 'utf8');
    await writeFile(capFile, cap.replace(/<url>(?:(?!<\/url>)[\s\S])*<\/url>/g, (u) => (/capability="resourcedump"/.test(u) ? u : '')));
  };
  await build();
  const config = join(dir, 'agg.yaml');
  const out = join(dir, 'out');
  await writeFile(config, `out: ${out}\nsources:\n  - url: ${server.origin}/\n    id: dumped\n    interval: 0.2\n`);
  const agg = await startAggregate(config);
  teardown.push(() => agg.p.child.kill('SIGKILL'));
  const syncs = async (): Promise<number> => {
    const r = await runCli(['aggregate', 'status', config, '--json']);
    return r.status === 0 ? ((JSON.parse(r.stdout) as { sources: { totals: { syncs: number } }[] }).sources[0]?.totals.syncs ?? 0) : 0;
  };
  const deadline = Date.now() + 120_000;
  while ((await syncs()) < 1) {
    assert.ok(Date.now() < deadline, `never synced: ${agg.p.err()}`);
    await sleep(100);
  }
  const packages = (): number => server.seen.filter((p) => p.endsWith('.zip')).length;
  const before = { packages: packages(), requests: server.seen.length, syncs: await syncs() };
  while ((await syncs()) < before.syncs + 5) {
    assert.ok(Date.now() < deadline, `the polls did not go on: ${agg.p.err()}`);
    await sleep(100);
  }
  const window = server.seen.slice(before.requests);
  const byPath = new Map<string, number>();
  for (const p of window) byPath.set(p, (byPath.get(p) ?? 0) + 1);
  // each poll reads the dump's document once: the polls in the window (a poll in flight at either end counted)
  const polls = byPath.get('/.resourcesync/data/resourcedump.xml') ?? 0;
  t.diagnostic(`${polls} polls of an unchanged dump-only Source: ${window.length} requests (${(window.length / polls).toFixed(1)} per poll): ${JSON.stringify(Object.fromEntries(byPath))}`);
  assert.equal(packages(), before.packages, 'no package read again');
  assert.ok(polls >= 4);
  // a poll: the Source Description, the Capability List and the dump's document, nothing else
  assert.deepEqual([...byPath.keys()].sort(), ['/.resourcesync/data/capabilitylist.xml', '/.resourcesync/data/resourcedump.xml', '/.well-known/resourcesync']);
  for (const n of byPath.values()) assert.ok(Math.abs(n - polls) <= 1, `one of each a poll: ${JSON.stringify(Object.fromEntries(byPath))}`);

  // a new dump is taken in
  await writeFile(join(data, 'two.txt'), 'two\n');
  await build();
  await until('the new dump applied', () => existsSync(join(out, 'sources', 'dumped', 'mirror', 'two.txt')), 120_000);
  assert.ok(packages() > before.packages);
  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, agg.p.err());
});
