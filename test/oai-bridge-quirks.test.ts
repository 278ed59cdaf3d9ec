// The OAI-PMH bridge against what real repositories do that the Catmandu provider cannot be made to do, through a
// loopback stub (test/helpers/oai-stub.ts): a resumption token that expires mid-harvest (badResumptionToken),
// noRecordsMatch on an incremental harvest, 503 with Retry-After, records deleted between ListIdentifiers and
// GetRecord, identifiers that are not file names, and a repository that goes down under a running service.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { publishOaiRepository, startOaiSource, type OaiSourceEvent } from '../src/oai/oai-source.js';
import { parseDocument } from '../src/core/xml/read-document.js';
import { startOaiStub, stubRepository, errorXml, type StubRecord } from './helpers/oai-stub.js';
import { tempDir } from './helpers/tmp.js';
import { until } from './helpers/cli-child.js';

const recs = (n: number, datestamp = '2024-02-01T00:00:00Z'): StubRecord[] => Array.from({ length: n }, (_, i) => ({ id: `oai:stub:${i + 1}`, datestamp }));

async function files(dir: string): Promise<string[]> {
  return ((await readdir(join(dir, 'oai', 'oai_dc')))).filter((f) => !f.startsWith('.')).sort();
}

void test('a resumption token that expires mid-harvest: the harvest restarts and publishes every record once', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  let expired = false;
  const stub = await startOaiStub(
    stubRepository(() => recs(25), 10, (q) => {
      if (q.get('resumptionToken') === 'offset:20' && !expired) {
        expired = true;
        return { body: errorXml('badResumptionToken') };
      }
      return undefined;
    }),
    4096,
  );
  try {
    const events: string[] = [];
    const r = await publishOaiRepository({ repository: stub.baseUrl, outDir: tmp.dir, baseUrl: 'http://example.org/', onEvent: (e) => events.push(e.type) });
    assert.ok(expired);
    assert.deepEqual(events.filter((e) => e === 'restart'), ['restart']);
    assert.equal(r.published.resources, 25);
    assert.equal((await files(tmp.dir)).length, 25);
    // the first two pages came twice: the second time their bytes had not changed
    assert.equal(r.harvest.counts.written, 25);
    assert.equal(r.harvest.counts.unchanged, 20);
  } finally {
    await stub.close();
    await tmp.cleanup();
  }
});

void test('noRecordsMatch on an incremental harvest is an empty harvest; 503 Retry-After is waited for', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  let busy = 0;
  const stub = await startOaiStub(
    stubRepository(() => recs(3), 10, (q) => (q.get('verb') === 'ListRecords' && q.get('from') !== null && busy++ < 1 ? { status: 503, headers: { 'retry-after': '1' }, body: 'busy' } : undefined)),
    4096,
  );
  try {
    const first = await publishOaiRepository({ repository: stub.baseUrl, outDir: tmp.dir, baseUrl: 'http://example.org/' });
    assert.equal(first.published.resources, 3);
    const t0 = Date.now();
    const second = await publishOaiRepository({ repository: stub.baseUrl, outDir: tmp.dir, baseUrl: 'http://example.org/' });
    assert.ok(Date.now() - t0 >= 900, 'Retry-After was honoured');
    assert.equal(second.harvest.full, false);
    assert.equal(second.harvest.counts.records, 0);
    assert.deepEqual(second.published.changes, { created: 0, updated: 0, deleted: 0 });
    const froms = stub.requests.filter((q) => q.get('verb') === 'ListRecords').map((q) => q.get('from'));
    assert.equal(froms.length, 3); // the full list, then the incremental one answered 503, then noRecordsMatch
    assert.match(froms[2]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  } finally {
    await stub.close();
    await tmp.cleanup();
  }
});

void test('ListIdentifiers and GetRecord: a record deleted between the list and the fetch is not published', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  let all = recs(5);
  const stub = await startOaiStub(
    stubRepository(() => all, 10, (q) => {
      // the list is answered, then record 2 disappears and record 3 is deleted, before their GetRecord
      if (q.get('verb') === 'ListIdentifiers') setImmediate(() => (all = all.filter((r) => r.id !== 'oai:stub:2').map((r) => (r.id === 'oai:stub:3' ? { ...r, deleted: true } : r))));
      return undefined;
    }),
    4096,
  );
  try {
    const r = await publishOaiRepository({ repository: stub.baseUrl, outDir: tmp.dir, baseUrl: 'http://example.org/', listIdentifiers: true });
    assert.deepEqual(await files(tmp.dir), ['oai:stub:1.xml', 'oai:stub:4.xml', 'oai:stub:5.xml']);
    assert.equal(r.published.resources, 3);
    assert.ok(stub.requests.some((q) => q.get('verb') === 'GetRecord'));
  } finally {
    await stub.close();
    await tmp.cleanup();
  }
});

void test('identifiers with / and a leading dot become safe file names; one too long is left out and reported', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  const list: StubRecord[] = [
    { id: 'oai:dspace:123456789/42', datestamp: '2024-01-01T00:00:00Z' },
    { id: '.hidden', datestamp: '2024-01-01T00:00:00Z' },
    { id: '../../etc/passwd', datestamp: '2024-01-01T00:00:00Z' },
    { id: `oai:x:${'a'.repeat(300)}`, datestamp: '2024-01-01T00:00:00Z' },
  ];
  const stub = await startOaiStub(stubRepository(() => list), 4096);
  try {
    const skipped: string[] = [];
    const r = await publishOaiRepository({
      repository: stub.baseUrl,
      outDir: tmp.dir,
      baseUrl: 'http://example.org/',
      onEvent: (e) => (e.type === 'skipped' ? skipped.push(e.identifier) : undefined),
    });
    assert.deepEqual(await files(tmp.dir), ['%2E.%2F..%2Fetc%2Fpasswd.xml', '%2Ehidden.xml', 'oai:dspace:123456789%2F42.xml']);
    assert.equal(skipped.length, 1);
    const rl = await parseDocument(await readFile(join(tmp.dir, '.resourcesync', 'oai', 'resourcelist.xml')));
    assert.ok(rl.entries.some((e) => e.loc === 'http://example.org/oai/oai_dc/oai%3Adspace%3A123456789%252F42.xml'));
    assert.equal(r.published.resources, 3);
  } finally {
    await stub.close();
    await tmp.cleanup();
  }
});

void test('a repository that goes down: the service keeps serving what it published, backs off, and catches up when it is back', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  let down = false;
  let list = recs(4);
  const stub = await startOaiStub(stubRepository(() => list, 10, () => (down ? { status: 500, body: 'down' } : undefined)), 4096);
  const events: OaiSourceEvent[] = [];
  const oai = await startOaiSource({ repository: stub.baseUrl, folder: tmp.dir, port: 0, intervalMs: 200, client: { retries: 0 }, onEvent: (e) => events.push(e) });
  try {
    await oai.firstHarvest();
    const rl = `${oai.url}/.resourcesync/oai/resourcelist.xml`;
    const count = async (): Promise<number> => (await parseDocument(new Uint8Array(await (await fetch(rl)).arrayBuffer()))).entries.length;
    assert.equal(await count(), 4);
    down = true;
    await until('a failed harvest', () => events.some((e) => e.type === 'harvest-failed'), 30_000);
    const failed = events.find((e) => e.type === 'harvest-failed') as { retryInMs: number };
    assert.ok(failed.retryInMs >= 200);
    assert.equal(await count(), 4, 'what was published is still served');
    const res = await fetch(`${oai.url}/oai/oai_dc/oai%3Astub%3A1.xml`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /<dc:title>oai:stub:1<\/dc:title>/);
    list = [...list, { id: 'oai:stub:9', datestamp: `${new Date().toISOString().slice(0, 19)}Z` }];
    down = false;
    await until('the catch-up', () => events.some((e) => e.type === 'harvest' && e.report.counts.written === 1), 30_000);
    const deadline = Date.now() + 30_000;
    while ((await count()) !== 5) {
      assert.ok(Date.now() < deadline, 'the new record published');
      await new Promise((r) => setTimeout(r, 50));
    }
    await stat(join(tmp.dir, 'oai', 'oai_dc', 'oai:stub:9.xml'));
  } finally {
    await oai.close();
    await stub.close();
    await tmp.cleanup();
  }
});

void test('a bridge restarted while its repository is down serves what it published before; a first run cannot start', async () => {
  const tmp = await tempDir('rs-oai-quirk-');
  let down = false;
  const stub = await startOaiStub(stubRepository(() => recs(3), 10, () => (down ? { status: 503, body: 'down' } : undefined)), 4096);
  try {
    const first = await startOaiSource({ repository: stub.baseUrl, folder: tmp.dir, port: 0, intervalMs: 60_000 });
    await first.firstHarvest();
    await first.close();
    down = true;
    const events: OaiSourceEvent[] = [];
    const again = await startOaiSource({ repository: stub.baseUrl, folder: tmp.dir, port: 0, intervalMs: 60_000, client: { retries: 0 }, onEvent: (e) => events.push(e) });
    try {
      const rl = await fetch(`${again.url}/.resourcesync/oai/resourcelist.xml`);
      assert.equal(rl.status, 200);
      assert.equal((await parseDocument(new Uint8Array(await rl.arrayBuffer()))).entries.length, 3);
      await until('a failed harvest', () => events.some((e) => e.type === 'harvest-failed'), 30_000);
    } finally {
      await again.close();
    }
    const empty = await tempDir('rs-oai-quirk-');
    await assert.rejects(startOaiSource({ repository: stub.baseUrl, folder: empty.dir, port: 0, client: { retries: 0 } }), (e: unknown) => (e as { code?: string }).code === 'RS_HTTP_STATUS');
    await empty.cleanup();
  } finally {
    await stub.close();
    await tmp.cleanup();
  }
});
