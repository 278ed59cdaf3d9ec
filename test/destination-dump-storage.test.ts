import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { startTestServer } from './helpers/test-server.js';
import { dumpXml, manifestXml, yazlZip } from './helpers/dump-fixtures.js';
import { MemoryStorage } from './contracts/memory-storage.js';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { createMapper } from '../src/destination/mapper.js';
import { applyChangeDump, applyResourceDump } from '../src/destination/dump.js';

void test('dumps on a storage of the caller\'s: bitstreams, a packaged patch and a deletion go through the storage alone', async () => {
  const s = await startTestServer();
  const authority = createAuthority({ origins: [s.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 10_000 });
  const mapper = createMapper({ base: `${s.origin}/` });
  try {
    const o = s.origin;
    const storage = new MemoryStorage();
    const options = { http, authority, storage, mapPath: (loc: string) => mapper.toPath(loc) };
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 7); // larger than the pooled read buffers
    const rd = await yazlZip([
      {
        name: 'manifest.xml',
        data: manifestXml('resourcedump-manifest', [
          { loc: `${o}/a/one.txt`, path: '/r/one.txt', data: 'one', lastmod: '2013-01-02T13:00:00Z' },
          { loc: `${o}/big.bin`, path: '/r/big.bin', data: big },
          { loc: `${o}/doc.json`, path: '/r/doc.json', data: '{"title":"A"}' },
          { loc: `${o}/gone.txt`, path: '/r/gone.txt', data: 'to be deleted' },
        ]),
      },
      { name: 'r/one.txt', data: 'one' },
      { name: 'r/big.bin', data: big, compress: false },
      { name: 'r/doc.json', data: '{"title":"A"}' },
      { name: 'r/gone.txt', data: 'to be deleted' },
    ]);
    s.set('/rd.zip', rd);
    s.set('/rd.xml', dumpXml('resourcedump', [{ loc: `${o}/rd.zip`, zip: rd }]));
    const baseline = await applyResourceDump({ ...options, dumpUrl: `${o}/rd.xml` });
    assert.deepEqual(baseline.failures, []);
    assert.equal(baseline.extracted, 4);
    assert.deepEqual([...storage.copies.keys()].sort(), ['a/one.txt', 'big.bin', 'doc.json', 'gone.txt']);
    assert.ok(storage.copies.get('big.bin')!.bytes.equals(big));
    assert.equal(storage.copies.get('a/one.txt')!.mtimeMs, Date.parse('2013-01-02T13:00:00Z'));

    const after = '{"title":"B"}';
    const patchEntry =
      `<url><loc>${o}/doc.json</loc><rs:md change="updated" hash="md5:${createHash('md5').update(after).digest('hex')}" length="${after.length}"/>` +
      `<rs:ln rel="http://www.openarchives.org/rs/terms/patch" type="application/json-patch+json" path="/p/doc.json" href="${o}/p/doc.json"/></url>`;
    const manifest = manifestXml('changedump-manifest', [
      { loc: `${o}/a/one.txt`, path: '/c/one.txt', data: 'one, updated', change: 'updated' },
      { loc: `${o}/gone.txt`, change: 'deleted' },
    ]).replace('</urlset>', `${patchEntry}</urlset>`);
    const cd = await yazlZip([
      { name: 'manifest.xml', data: manifest },
      { name: 'c/one.txt', data: 'one, updated' },
      { name: 'p/doc.json', data: JSON.stringify([{ op: 'replace', path: '/title', value: 'B' }]) },
    ]);
    s.set('/cd.zip', cd);
    s.set('/cd.xml', dumpXml('changedump', [{ loc: `${o}/cd.zip`, zip: cd }]));
    const changes = await applyChangeDump({ ...options, dumpUrl: `${o}/cd.xml`, delete: true });
    assert.deepEqual(changes.failures, []);
    assert.deepEqual([changes.updated, changes.patched, changes.deleted], [2, 1, 1]);
    assert.equal(storage.copies.get('a/one.txt')!.bytes.toString(), 'one, updated');
    assert.equal(storage.copies.get('doc.json')!.bytes.toString(), after);
    assert.equal(storage.copies.has('gone.txt'), false);
  } finally {
    await http.close();
    await s.close();
  }
});
