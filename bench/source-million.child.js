// Child of source.bench.js: N synthetic entries → SQLite snapshots → Resource List Index on disk.
// Prints one JSON line with rates and process.resourceUsage().maxRSS (KiB).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { openSqliteSnapshots } from '../dist/src/source/sqlite-snapshots.js';
import { header, atTimes, listedEntry } from '../dist/src/source/documents.js';
import { mapEntries } from '../dist/src/source/publish-context.js';
import { writeDocumentSet } from '../dist/src/core/xml/write-document-set.js';
import { fileSink } from '../dist/src/node/file-sink.js';

const [out, nArg] = process.argv.slice(2);
const n = Number(nArg);
mkdirSync(out, { recursive: true });
const result = { entries: n, insertRate: 0, writeRate: 0, insertCpuRate: 0, writeCpuRate: 0, parts: 0, bytes: 0, maxRSS: 0 };
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
if (n > 0) {
  const store = openSqliteSnapshots(join(out, 'state', 'source.sqlite'));
  const md5 = 'd41d8cd98f00b204e9800998ecf8427e';
  function* synthetic() {
    for (let i = 0; i < n; i++) {
      const d = String(Math.floor(i / 1000)).padStart(4, '0');
      yield { path: `dir-${d}/résource ${String(i % 1000).padStart(3, '0')}.txt`, size: 1024 + (i % 977), mtimeMs: 1.7e12 + i * 1000, type: 'text/plain', hashes: { md5 } };
    }
  }
  const c0 = cpuMs();
  const t0 = performance.now();
  await store.rebuild(synthetic(), { now: () => 1.8e12 });
  result.insertRate = n / ((performance.now() - t0) / 1000);
  result.insertCpuRate = n / ((cpuMs() - c0) / 1000);
  const base = 'https://example.org/';
  const docs = `${base}.resourcesync/data/`;
  const c1 = cpuMs();
  const t1 = performance.now();
  const res = await writeDocumentSet(
    header('resource-list', atTimes(1.8e12, 1.8e12 + 1000), { up: `${docs}capabilitylist.xml` }),
    mapEntries(store.listing(), (r) => listedEntry(base, r)),
    {
      indexUrl: `${docs}resourcelist.xml`,
      partUrl: (k) => `${docs}resourcelist-part${k}.xml`,
      sink: ({ url }) => fileSink(join(out, url.slice(docs.length))),
      partEntry: () => ({ md: { at: '2027-01-15T08:00:00Z' } }),
    },
  );
  result.writeRate = n / ((performance.now() - t1) / 1000);
  result.writeCpuRate = n / ((cpuMs() - c1) / 1000);
  result.parts = res.parts.length;
  result.bytes = res.parts.reduce((a, p) => a + p.bytes, 0);
  await store.close();
}
result.maxRSS = process.resourceUsage().maxRSS;
process.stdout.write(`${JSON.stringify(result)}\n`);
