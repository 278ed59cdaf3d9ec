// The OAI-PMH bridge over a real data provider (Debian's Dancer::Plugin::Catmandu::OAI, test/fixtures/oai-provider):
// `resourcesync oai-pmh --port` keeps a Destination (`resourcesync sync --delete`) in step while records are added,
// changed and deleted in the provider, its mirror byte-identical to what the bridge serves; the changes reach a
// WebSub subscriber; `resourcesync check` judges it conformant. The one-shot form over resumption tokens, a record
// missing from a full harvest, day granularity and the OAI sets as capability sets.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from '../src/core/xml/read-document.js';
import { catmanduMissing, sampleRecords, startCatmanduProvider, type CatmanduProvider, type ProviderRecord } from './helpers/oai-provider.js';
import { runCli } from './helpers/mirror-check.js';
import { startCli, until, type CliChild } from './helpers/cli-child.js';
import { tempDir } from './helpers/tmp.js';
import { TestSubscriber } from './helpers/websub-subscriber.js';
import { exited } from './helpers/exited.js';

const missing = catmanduMissing();
const WAIT_MS = 60_000;
const now = (): string => `${new Date().toISOString().slice(0, 19)}Z`;

/** The resources a Source's Resource List names (the single set `oai`). */
async function listed(url: string): Promise<string[]> {
  const res = await fetch(`${url}/.resourcesync/oai/resourcelist.xml`);
  if (res.status !== 200) return [];
  const d = await parseDocument(new Uint8Array(await res.arrayBuffer()));
  return d.entries.map((e) => e.loc);
}

/** Every file of the mirror (relative paths, state left out). */
async function mirrored(dest: string): Promise<string[]> {
  const all = (await readdir(dest, { recursive: true }));
  const files: string[] = [];
  for (const f of all) if (!f.split('/').some((s) => s.startsWith('.')) && (await stat(join(dest, f))).isFile()) files.push(f);
  return files.sort();
}

/** The mirror holds exactly what the bridge lists, each file byte-identical to what the bridge serves. */
async function inStep(url: string, dest: string): Promise<string[]> {
  const locs = await listed(url);
  const files = await mirrored(dest);
  assert.deepEqual(files, locs.map((l) => decodeURIComponent(l.slice(url.length + 1))).sort());
  for (const loc of locs) {
    const served = Buffer.from(await (await fetch(loc)).arrayBuffer());
    assert.deepEqual(await readFile(join(dest, decodeURIComponent(loc.slice(url.length + 1)))), served, loc);
  }
  return files;
}

void describe('the OAI-PMH bridge over the Catmandu provider', { skip: missing }, () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let provider: CatmanduProvider;
  let records: ProviderRecord[];
  let bridge: CliChild;
  let url: string;
  let sub: TestSubscriber;

  before(async () => {
    tmp = await tempDir('rs-oai-bridge-');
    records = sampleRecords(20);
    records[9]!.deleted = 1; // rec10: a deleted record the repository keeps (deletedRecord persistent)
    provider = await startCatmanduProvider(tmp.dir, records, { limit: 7 }); // three pages, resumption tokens
    bridge = startCli(['oai-pmh', provider.baseUrl, '--port', '0', '--interval', '1', '--out', join(tmp.dir, 'bridge'), '--verbose']);
    await until('listening', () => /^listening on /m.test(bridge.out()), WAIT_MS);
    url = /listening on (\S+)/.exec(bridge.out())![1]!;
    sub = await TestSubscriber.start();
  });

  after(async () => {
    if (bridge.child.exitCode === null) {
      bridge.child.kill('SIGTERM');
      assert.deepEqual(await exited(bridge.child), [0, null]);
    }
    await provider.close();
    await sub.close();
    await tmp.cleanup();
  });

  void test('a Destination stays in step while records are added, changed and deleted; changes are pushed; check is conformant', async () => {
    await until('the first harvest', () => /full harvest: 20 records/.test(bridge.err()), WAIT_MS);
    const deadline = Date.now() + WAIT_MS;
    while ((await listed(url)).length !== 19) {
      assert.ok(Date.now() < deadline, `19 resources listed; log: ${bridge.err()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const dest = join(tmp.dir, 'dest');
    const first = await runCli(['sync', url, dest, '--delete']);
    assert.equal(first.status, 0, first.stderr);
    const before = await inStep(url, dest);
    assert.equal(before.length, 19);
    assert.ok(before.includes('oai/oai_dc/oai:repo.example:rec3.xml'));
    assert.ok(!before.includes('oai/oai_dc/oai:repo.example:rec10.xml'));

    // subscribe to the set's change channel through the embedded hub
    const topic = `${url}/.resourcesync/oai/change-notification/`;
    const res = await fetch(`${url}/hub`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': `${sub.url}/cn` }).toString(),
    });
    assert.equal(res.status, 202);
    await res.arrayBuffer();
    await until('the subscription', () => /hub: verified/.test(bridge.err()), WAIT_MS);

    // in the provider: rec3 changed, rec4 deleted, rec21 added
    const stamp = now();
    records[2] = { ...records[2]!, title: 'Record 3, revised', datestamp: stamp };
    records[3] = { ...records[3]!, deleted: 1, datestamp: stamp };
    records.push({ _id: 'rec21', datestamp: stamp, title: 'Record 21', url: 'https://repo.example/items/21', set: ['odd'], deleted: 0 });
    provider.setRecords(records);
    const pushedNow = (): string => sub.deliveries.map((d) => d.body.toString()).join('\n');
    await until('the changes pushed', () => ['rec21.xml', 'rec3.xml', 'rec4.xml'].every((r) => pushedNow().includes(r)), WAIT_MS);
    const pushed = pushedNow();
    assert.match(pushed, /oai%3Arepo\.example%3Arec4\.xml<\/loc>(?:(?!<\/url>)[\s\S])*change="deleted"/);
    assert.match(pushed, /oai%3Arepo\.example%3Arec21\.xml<\/loc>(?:(?!<\/url>)[\s\S])*change="created"/);
    assert.match(pushed, /oai%3Arepo\.example%3Arec3\.xml<\/loc>(?:(?!<\/url>)[\s\S])*change="updated"/);

    const second = await runCli(['sync', url, dest, '--delete']);
    assert.equal(second.status, 0, second.stderr);
    const after = await inStep(url, dest);
    assert.ok(after.includes('oai/oai_dc/oai:repo.example:rec21.xml'));
    assert.ok(!after.includes('oai/oai_dc/oai:repo.example:rec4.xml'), 'the deletion was applied');
    assert.match(await readFile(join(dest, 'oai/oai_dc/oai:repo.example:rec3.xml'), 'utf8'), /<dc:title>Record 3, revised<\/dc:title>/);

    const check = await runCli(['check', url]);
    assert.equal(check.status, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /CONFORMANT/);
  });
});

void describe('resourcesync oai-pmh once (--out)', { skip: missing }, () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  before(async () => {
    tmp = await tempDir('rs-oai-once-');
  });
  after(async () => {
    await tmp.cleanup();
  });

  void test('a full harvest over several pages, an incremental one, a record missing from a full harvest is deleted', async () => {
    const records = sampleRecords(15);
    const provider = await startCatmanduProvider(join(tmp.dir), records, { limit: 4 });
    try {
      const out = join(tmp.dir, 'out');
      const args = ['oai-pmh', provider.baseUrl, '--out', out, '--base-url', 'http://example.org/oai/', '--json'];
      const first = await runCli(args);
      assert.equal(first.status, 0, first.stderr);
      const r1 = JSON.parse(first.stdout) as { harvest: { full: boolean; counts: { records: number; written: number } }; resources: number };
      assert.equal(r1.harvest.full, true);
      assert.equal(r1.harvest.counts.written, 15);
      assert.equal(r1.resources, 15);
      const rl = await parseDocument(await readFile(join(out, '.resourcesync', 'oai', 'resourcelist.xml')));
      const e = rl.entries.find((x) => x.loc === 'http://example.org/oai/oai/oai_dc/oai%3Arepo.example%3Arec5.xml')!;
      const bytes = await readFile(join(out, 'oai', 'oai_dc', 'oai:repo.example:rec5.xml'));
      assert.equal(e.md?.length, String(bytes.length), 'the length is of the bytes served');
      assert.equal(e.lastmod, records[4]!.datestamp, 'lastmod is the datestamp');
      assert.equal(e.md?.type, 'application/xml');

      // nothing changed: an incremental harvest (from the last start, by the repository's clock) records nothing
      const second = await runCli(args);
      assert.equal(second.status, 0, second.stderr);
      const r2 = JSON.parse(second.stdout) as { harvest: { full: boolean; from: string }; changes: { created: number; updated: number; deleted: number } };
      assert.equal(r2.harvest.full, false);
      assert.match(r2.harvest.from, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.deepEqual(r2.changes, { created: 0, updated: 0, deleted: 0 });

      // rec5 vanishes without a trace (as in a repository whose deletedRecord is "no"): a full harvest deletes it
      provider.setRecords(records.filter((r) => r._id !== 'rec5'));
      const third = await runCli([...args, '--full']);
      assert.equal(third.status, 0, third.stderr);
      const r3 = JSON.parse(third.stdout) as { harvest: { counts: { deleted: number } }; changes: { deleted: number }; resources: number };
      assert.equal(r3.harvest.counts.deleted, 1);
      assert.equal(r3.changes.deleted, 1);
      assert.equal(r3.resources, 14);
      await assert.rejects(stat(join(out, 'oai', 'oai_dc', 'oai:repo.example:rec5.xml')));
    } finally {
      await provider.close();
    }
  });

  void test('a metadata format the repository does not offer is a usage error (exit 2); an unreachable repository on a first run exits 1', async () => {
    const dir = join(tmp.dir, 'formats');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir);
    const provider = await startCatmanduProvider(dir, sampleRecords(2));
    try {
      const r = await runCli(['oai-pmh', provider.baseUrl, '--out', join(dir, 'out'), '--base-url', 'http://example.org/', '--metadata-prefix', 'mods']);
      assert.equal(r.status, 2, r.stderr);
      assert.match(r.stderr, /does not disseminate 'mods' \(it offers oai_dc\)/);
    } finally {
      await provider.close();
    }
    const down = await runCli(['oai-pmh', provider.baseUrl, '--out', join(dir, 'out2'), '--base-url', 'http://example.org/']);
    assert.equal(down.status, 1, down.stderr);
    assert.match(down.stderr, /^resourcesync oai-pmh: .*connection refused/m);
  });

  void test('day granularity: the incremental harvest asks from the day of the last start; OAI sets as capability sets', async () => {
    const records = sampleRecords(6, true);
    const dir = join(tmp.dir, 'day');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(dir);
    const provider = await startCatmanduProvider(dir, records, { day: true });
    try {
      const out = join(dir, 'out');
      const args = ['oai-pmh', provider.baseUrl, '--out', out, '--base-url', 'http://example.org/', '--sets', '--json'];
      const first = await runCli(args);
      assert.equal(first.status, 0, first.stderr);
      const sd = await readFile(join(out, '.well-known', 'resourcesync'), 'utf8');
      assert.match(sd, /http:\/\/example\.org\/\.resourcesync\/even\/capabilitylist\.xml/);
      assert.match(sd, /http:\/\/example\.org\/\.resourcesync\/odd\/capabilitylist\.xml/);
      const odd = await parseDocument(await readFile(join(out, '.resourcesync', 'odd', 'resourcelist.xml')));
      assert.deepEqual(odd.entries.map((x) => x.loc).sort(), ['rec1', 'rec3', 'rec5'].map((id) => `http://example.org/odd/oai/oai_dc/oai%3Arepo.example%3A${id}.xml`));
      assert.equal(odd.entries.find((x) => x.loc.endsWith('rec1.xml'))?.lastmod, '2024-01-02T00:00:00Z');

      // a record changed today, stamped with the day only: the next harvest (from today) records it
      const today = new Date().toISOString().slice(0, 10);
      provider.setRecords(records.map((r) => (r._id === 'rec3' ? { ...r, title: 'Three', datestamp: today } : r)));
      const second = await runCli(args);
      assert.equal(second.status, 0, second.stderr);
      const r2 = JSON.parse(second.stdout) as { harvest: { from: string }; changes: { updated: number; created: number; deleted: number } };
      assert.equal(r2.harvest.from, today);
      assert.deepEqual(r2.changes, { created: 0, updated: 1, deleted: 0 });
      // changed again the same day, to the same length: still seen
      provider.setRecords(records.map((r) => (r._id === 'rec3' ? { ...r, title: 'Tree', datestamp: today } : r)));
      const third = await runCli(args);
      const r3 = JSON.parse(third.stdout) as { changes: { updated: number } };
      assert.equal(r3.changes.updated, 1);
      assert.match(await readFile(join(out, 'odd', 'oai', 'oai_dc', 'oai:repo.example:rec3.xml'), 'utf8'), /<dc:title>Tree<\/dc:title>/);
    } finally {
      await provider.close();
    }
  });
});

void test('resourcesync oai-pmh: usage errors exit 2', async () => {
  for (const args of [
    ['oai-pmh'],
    ['oai-pmh', 'ftp://x/oai', '--out', 'o', '--base-url', 'http://e/'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--out', 'o'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--base-url', 'http://e/'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--out', 'o', '--base-url', 'http://e/', '--interval', '5'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--port', '0', '--interval', '0'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--port', '0', '--metadata-prefix', '../x'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--port', '0', '--full'],
    ['oai-pmh', 'http://127.0.0.1:9/oai', '--port', '0', '--out', 'o', '--no-hub', '--hub', 'http://h/'],
  ]) {
    const r = await runCli(args);
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /^resourcesync oai-pmh: /);
  }
});
