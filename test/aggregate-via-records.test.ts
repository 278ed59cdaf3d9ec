/**
 * The `via` links of a Source whose Destination state is in PostgreSQL: the records are held in memory up to a bound
 * and the rest in a temporary SQLite file, and every link is the same either way (the original's URL, `modified`,
 * `hash`, `length`, `type`; a `via` the Source gave kept; the first set's record of a URL wins). The file is gone
 * once the links are closed. A throwaway PostgreSQL server.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { postgresStateEngine } from '../src/aggregate/engines.js';
import { openViaLinks } from '../src/aggregate/source-mirror.js';
import type { ResourceRecord } from '../src/destination/state.js';
import { POSTGRES_SKIP, startPostgres } from './helpers/postgres.js';
import { tempDir } from './helpers/tmp.js';

const ORIGIN = 'http://127.0.0.1:9';
const N = 500;

const rec = (i: number, extra: Partial<ResourceRecord> = {}): ResourceRecord => ({
  url: `${ORIGIN}/r/${i}.txt`,
  path: `r/${i}.txt`,
  length: i,
  hashes: { md5: i.toString(16).padStart(32, '0') },
  lastmod: '2026-01-01T00:00:00Z',
  type: 'text/plain',
  etag: `"e${i}"`,
  ...extra,
});

void test('aggregate via links from a PostgreSQL state: bounded in memory, the rest in a temporary file, the same links', { skip: POSTGRES_SKIP, timeout: 180_000 }, async (t) => {
  const cluster = await startPostgres();
  const { dir, cleanup } = await tempDir('rs-via-records-');
  t.after(async () => {
    await cluster.stop();
    await cleanup();
  });
  const engine = postgresStateEngine(cluster.url, join(dir, 'out'));
  const source = { id: 'src', url: `${ORIGIN}/`, capabilitySets: [`${ORIGIN}/cl1.xml`, `${ORIGIN}/cl2.xml`] };
  // set 0 holds every record, one of them with the Source's own via; set 1 another record of r/7.txt (not taken)
  const s0 = await engine.openState(source, 0, { readonly: false });
  const records = Array.from({ length: N }, (_, i) => rec(i, i === 3 ? { links: [{ rel: 'via', href: 'http://origin.example/3' }, { rel: 'alternate', href: `${ORIGIN}/alt` }] } : {}));
  await s0.apply({ put: records });
  await s0.close();
  const s1 = await engine.openState(source, 1, { readonly: false });
  await s1.apply({ put: [rec(7, { length: 99999, type: 'text/html' }), rec(N + 1)] });
  await s1.close();

  const spillDir = join(dir, 'tmp');
  await mkdir(spillDir);
  const bounded = await openViaLinks(join(dir, 'out'), source, engine, { inMemory: 16, dir: spillDir });
  const whole = await openViaLinks(join(dir, 'out'), source, engine, { inMemory: 1_000_000, dir: spillDir });
  try {
    for (const i of [0, 1, 3, 7, 15, 16, 17, 250, N - 1, N + 1]) {
      const entry = { loc: `x/r/${i}.txt`, md: { hash: `md5:${i.toString(16).padStart(32, '0')}` } };
      assert.deepEqual(bounded.links(`r/${i}.txt`, entry), whole.links(`r/${i}.txt`, entry), `the same link for r/${i}.txt`);
    }
    assert.deepEqual(bounded.links('r/250.txt', { loc: 'x' }), [{ rel: 'via', href: `${ORIGIN}/r/250.txt`, modified: '2026-01-01T00:00:00Z', hash: `md5:${(250).toString(16).padStart(32, '0')}`, length: '250', type: 'text/plain' }]);
    assert.deepEqual(bounded.links('r/3.txt', { loc: 'x' }), [{ rel: 'via', href: 'http://origin.example/3' }], 'the Source’s via kept');
    assert.equal(bounded.links('r/7.txt', { loc: 'x' })?.[0]?.length, '7', 'the first set’s record wins');
    assert.deepEqual(bounded.links('r/none.txt', { loc: 'x' }), [{ rel: 'via', href: `${ORIGIN}/r/none.txt` }]);
    const folders = readdirSync(spillDir);
    assert.equal(folders.length, 1, `one temporary folder, of the bounded links: ${folders.join(', ')}`);
    assert.ok(existsSync(join(spillDir, folders[0]!, 'via.sqlite')));
  } finally {
    await bounded.close();
    await whole.close();
  }
  assert.deepEqual(readdirSync(spillDir), [], 'the temporary file removed');
});
