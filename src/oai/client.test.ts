import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createOaiClient, type OaiClient } from './client.js';
import { formatDatestamp, parseDatestamp, type OaiRecord } from './types.js';
import { isResourceSyncError } from '../core/errors.js';
import { oaiFixture, startOaiStub, type OaiAnswer, type OaiStub } from '../../test/helpers/oai-stub.js';

async function withStub(answer: (q: URLSearchParams, n: number) => OaiAnswer, fn: (oai: OaiClient, stub: OaiStub) => Promise<void>, chunk?: number): Promise<void> {
  const stub = await startOaiStub(answer, chunk);
  const oai = createOaiClient({ baseUrl: stub.baseUrl });
  try {
    await fn(oai, stub);
  } finally {
    await oai.close();
    await stub.close();
  }
}

async function all<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

/** Answers a two-page list from fixtures: the first request, then the token `token`. */
function twoPages(first: string, second: string, token: string): (q: URLSearchParams) => OaiAnswer {
  return (q) => ({ body: oaiFixture(q.get('resumptionToken') === token ? second : first) });
}

test('datestamps with and without time are parsed; invalid ones are refused', () => {
  assert.equal(parseDatestamp('2024-03-01'), Date.UTC(2024, 2, 1));
  assert.equal(parseDatestamp('2024-03-01T10:20:30Z'), Date.UTC(2024, 2, 1, 10, 20, 30));
  assert.equal(parseDatestamp('2024-03-01T10:20:30.5Z'), Date.UTC(2024, 2, 1, 10, 20, 30, 500));
  for (const bad of ['2024-02-30', '2024-03-01T24:00:00Z', '2024-03-01T10:20:30', '01/03/2024', '']) assert.equal(parseDatestamp(bad), undefined, bad);
  assert.equal(formatDatestamp(Date.UTC(2024, 2, 1, 10, 20, 30, 999), 'YYYY-MM-DDThh:mm:ssZ'), '2024-03-01T10:20:30Z');
  assert.equal(formatDatestamp(Date.UTC(2024, 2, 1, 23, 59), 'YYYY-MM-DD'), '2024-03-01');
});

test('Identify (DSpace-like, second granularity) and an older repository with day granularity', async () => {
  await withStub(() => ({ body: oaiFixture('dspace-identify.xml') }), async (oai) => {
    const id = await oai.identify();
    assert.equal(id.repositoryName, 'DSpace at Example University');
    assert.equal(id.granularity, 'YYYY-MM-DDThh:mm:ssZ');
    assert.equal(id.deletedRecord, 'persistent');
    assert.deepEqual(id.adminEmail, ['dspace-help@example.edu']);
  });
  await withStub(() => ({ body: oaiFixture('day-identify.xml') }), async (oai) => {
    const id = await oai.identify();
    assert.equal(id.granularity, 'YYYY-MM-DD');
    assert.equal(id.deletedRecord, 'no');
    assert.deepEqual(id.adminEmail, ['a@old.example', 'b@old.example']);
  });
});

test('ListRecords over DSpace-like pages: tokens followed, handles with /, deleted records, metadata standalone', async () => {
  await withStub(twoPages('dspace-list-1.xml', 'dspace-list-2.xml', 'oai_dc////2'), async (oai, stub) => {
    const records = await all(oai.listRecords({ metadataPrefix: 'oai_dc', from: '2019-01-01T00:00:00Z' }));
    assert.deepEqual(records.map((r) => [r.identifier, r.deleted]), [
      ['oai:dspace.example.edu:123456789/42', false],
      ['oai:dspace.example.edu:123456789/43', true],
      ['oai:dspace.example.edu:123456789/44', false],
    ]);
    assert.deepEqual(records[0]!.setSpecs, ['com_123456789_1', 'col_123456789_2']);
    assert.equal(records[0]!.time, Date.UTC(2019, 3, 12, 9, 21, 33));
    assert.equal(records[1]!.metadata, undefined);
    const md = records[0]!.metadata!;
    assert.match(md, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<oai_dc:dc xmlns:oai_dc="http:\/\/www.openarchives.org\/OAI\/2.0\/oai_dc\/" xmlns:dc=/);
    assert.match(md, /xmlns:xsi="http:\/\/www.w3.org\/2001\/XMLSchema-instance"/); // declared on the envelope, needed by xsi:schemaLocation
    assert.match(md, /<dc:creator>Doe, Jane<\/dc:creator>/);
    assert.match(records[2]!.metadata!, /Rivers &amp; lakes/);
    assert.equal(stub.requests.length, 2);
    assert.equal(stub.requests[0]!.get('from'), '2019-01-01T00:00:00Z');
    assert.deepEqual([...stub.requests[1]!.keys()].sort(), ['resumptionToken', 'verb']); // the token is exclusive
  });
});

test('EPrints-like pages: namespaces declared on the envelope are carried into the metadata; a list ending without a token', async () => {
  await withStub(twoPages('eprints-list-1.xml', 'eprints-list-2.xml', 'metadataPrefix%3Doai_dc%26offset%3D2'), async (oai, stub) => {
    const records = await all(oai.listRecords({ metadataPrefix: 'oai_dc' }));
    assert.deepEqual(records.map((r) => r.identifier), ['oai:eprints.example.ac.uk:1001', 'oai:eprints.example.ac.uk:1002', 'oai:eprints.example.ac.uk:1003']);
    const md = records[0]!.metadata!;
    assert.match(md, /<oai_dc:dc xmlns:oai_dc="http:\/\/www.openarchives.org\/OAI\/2.0\/oai_dc\/" xmlns:xsi="[^"]+" xsi:schemaLocation/);
    assert.match(md, /<dc:title xmlns:dc="http:\/\/purl.org\/dc\/elements\/1.1\/">On the dynamics of glaciers<\/dc:title>/);
    assert.equal(records[0]!.setSpecs[0], '7374617475733D707562');
    assert.equal(stub.requests[1]!.get('resumptionToken'), 'metadataPrefix%3Doai_dc%26offset%3D2');
  });
});

test('Zenodo-like pages: opaque tokens with expiry, CDATA and entities re-escaped, the same bytes at any chunking', async () => {
  const read = async (chunk: number): Promise<OaiRecord[]> => {
    let out: OaiRecord[] = [];
    await withStub(twoPages('zenodo-list-1.xml', 'zenodo-list-2.xml', '.eJyrVkrLzClJLUpVslIqLU4tykvMTVXSUcrJT0xRsjI2MDAwUsosLkksKs1VsjLWUUpLTC0qA7KrlQyMzAyMzIA6AQD9FxHe.ZDTwWA.x8GbvdLcyEFOfsm0T3sbuBLWqhI'), async (oai) => {
      out = await all(oai.listRecords({ metadataPrefix: 'oai_dc', set: 'user-glaciology' }));
    }, chunk);
    return out;
  };
  const small = await read(3);
  const large = await read(1 << 20);
  assert.equal(small.length, 2);
  assert.deepEqual(small, large);
  assert.match(small[0]!.metadata!, /<dc:description>Data &lt;and&gt; code for "Glacier &lt;retreat&gt;"<\/dc:description>/);
  assert.match(small[0]!.metadata!, /Müller, Jörg/);
});

test('ListIdentifiers at day granularity; ListMetadataFormats, ListSets, GetRecord', async () => {
  await withStub((q) => {
    const verb = q.get('verb');
    if (verb === 'ListIdentifiers') return { body: oaiFixture('day-list.xml') };
    if (verb === 'ListMetadataFormats') return { body: oaiFixture('formats.xml') };
    if (verb === 'ListSets') return { body: oaiFixture('sets.xml') };
    if (q.get('identifier') === 'gone') return { body: oaiFixture('error-idDoesNotExist.xml') };
    return { body: oaiFixture('getrecord.xml') };
  }, async (oai) => {
    const headers = await all(oai.listIdentifiers({ metadataPrefix: 'oai_dc', from: '2005-01-01' }));
    assert.deepEqual(headers.map((h) => [h.identifier, h.time]), [['oai:old.example:a', Date.UTC(2005, 2, 4)], ['oai:old.example:b', Date.UTC(2006, 11, 31)]]);
    assert.deepEqual((await oai.listMetadataFormats()).map((f) => f.metadataPrefix), ['oai_dc', 'mods']);
    assert.deepEqual((await all(oai.listSets())).map((s) => [s.setSpec, s.setName]), [['com_123456789_1', 'Faculty of Science'], ['col_123456789_2', 'Theses']]);
    const r = await oai.getRecord('oai:dspace.example.edu:123456789/42', 'oai_dc');
    assert.match(r!.metadata!, /<dc:subject\/>/);
    assert.equal(await oai.getRecord('gone', 'oai_dc'), undefined);
  });
});

test('noRecordsMatch is an empty list; noSetHierarchy an empty ListSets; badArgument an RS_OAI_PMH error', async () => {
  await withStub((q) => ({ body: oaiFixture(q.get('verb') === 'ListSets' ? 'error-noSetHierarchy.xml' : q.get('from') === 'x' ? 'error-badArgument.xml' : 'error-noRecordsMatch.xml') }), async (oai) => {
    assert.deepEqual(await all(oai.listRecords({ metadataPrefix: 'oai_dc', from: '2030-01-01' })), []);
    assert.deepEqual(await all(oai.listSets()), []);
    await assert.rejects(all(oai.listRecords({ metadataPrefix: 'oai_dc', from: 'x' })), (e: unknown) => isResourceSyncError(e, 'RS_OAI_PMH') && e.data['oaiCode'] === 'badArgument');
  });
});

test('a badResumptionToken mid-list restarts the list from its first request, at most maxRestarts times', async () => {
  let expired = 1;
  await withStub((q) => {
    if (q.get('resumptionToken') === null) return { body: oaiFixture('dspace-list-1.xml') };
    if (expired-- > 0) return { body: oaiFixture('error-badResumptionToken.xml') };
    return { body: oaiFixture('dspace-list-2.xml') };
  }, async (oai, stub) => {
    const records = await all(oai.listRecords({ metadataPrefix: 'oai_dc', from: '2019-01-01T00:00:00Z' }));
    // the first page comes twice (consumers are idempotent), then the list completes
    assert.equal(records.length, 5);
    assert.deepEqual(stub.requests.map((q) => q.get('from') ?? q.get('resumptionToken')), ['2019-01-01T00:00:00Z', 'oai_dc////2', '2019-01-01T00:00:00Z', 'oai_dc////2']);
  });
  await withStub((q) => ({ body: oaiFixture(q.get('resumptionToken') === null ? 'dspace-list-1.xml' : 'error-badResumptionToken.xml') }), async (oai, stub) => {
    await assert.rejects(all(oai.listRecords({ metadataPrefix: 'oai_dc' })), (e: unknown) => isResourceSyncError(e, 'RS_OAI_PMH') && e.data['oaiCode'] === 'badResumptionToken');
    assert.equal(stub.requests.length, 6); // first try and two restarts, two requests each
  });
});

test('503 with Retry-After is waited for, then the harvest goes on', async () => {
  const t0 = Date.now();
  await withStub((_q, n) => (n < 2 ? { status: 503, headers: { 'retry-after': '1' }, body: 'busy' } : { body: oaiFixture('day-identify.xml') }), async (oai, stub) => {
    const id = await oai.identify();
    assert.equal(id.repositoryName, 'An older repository');
    assert.equal(stub.requests.length, 3);
  });
  assert.ok(Date.now() - t0 >= 1900, `waited ${Date.now() - t0} ms`);
});

test('limits: record size, record count, a repeated token, a response that is not OAI-PMH', async () => {
  await withStub(() => ({ body: oaiFixture('dspace-list-1.xml') }), async (oai) => {
    // the token never changes: the list would never end
    await assert.rejects(all(oai.listRecords({ metadataPrefix: 'oai_dc' })), (e: unknown) => isResourceSyncError(e, 'RS_OAI_PMH'));
  });
  const stub = await startOaiStub(() => ({ body: oaiFixture('dspace-list-2.xml') }));
  try {
    const small = createOaiClient({ baseUrl: stub.baseUrl, maxRecordBytes: 100 });
    await assert.rejects(all(small.listRecords({ metadataPrefix: 'oai_dc' })), (e: unknown) => isResourceSyncError(e, 'RS_LIMIT_BYTES'));
    await small.close();
    const few = createOaiClient({ baseUrl: stub.baseUrl, maxRecords: 0 });
    await assert.rejects(all(few.listRecords({ metadataPrefix: 'oai_dc' })), (e: unknown) => isResourceSyncError(e, 'RS_LIMIT_ENTRIES'));
    await few.close();
  } finally {
    await stub.close();
  }
  await withStub(() => ({ body: '<html><body>Not here</body></html>' }), async (oai) => {
    await assert.rejects(oai.identify(), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_DOCUMENT'));
  });
  await withStub(() => ({ body: '<!DOCTYPE x [<!ENTITY a "b">]><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"/>' }), async (oai) => {
    await assert.rejects(oai.identify(), (e: unknown) => isResourceSyncError(e) && e.code.startsWith('RS_XML'));
  });
  assert.throws(() => createOaiClient({ baseUrl: 'ftp://x/oai' }), (e: unknown) => isResourceSyncError(e, 'RS_INVALID_ARGUMENT'));
});
