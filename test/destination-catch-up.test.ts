// The catch-up after a baseline (the changes since each set's snapshot, run once every set is done) files what fails
// under its own capability set: the set's earlier failures are its own, and no other set keeps a stale entry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';
import { sync } from '../src/destination/sync.js';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';
import { RenameOnly } from '../src/node/durability.js';

const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const md5 = (body: string): string => createHash('md5').update(body).digest('hex');
const SNAPSHOT = '2020-01-01T00:00:00Z';

/**
 * A Source Description with two capability sets, `a` then `b`, each a Resource List as of {@link SNAPSHOT} and a
 * Change List; set a's Change List names `a/late.txt`, created after the snapshot, whose body is `late`.
 */
function publishTwoSets(server: TestServer): { setA: string; setB: string } {
  const origin = server.origin;
  const xml = (body: string): { body: string; headers: Record<string, string> } => ({
    body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
    headers: { 'content-type': 'application/xml' },
  });
  const entry = (loc: string, body: string, extra = ''): string =>
    `<url><loc>${origin}${loc}</loc><rs:md ${extra}hash="md5:${md5(body)}" length="${body.length}"/></url>`;
  server.set('/.well-known/resourcesync', xml(`<urlset ${NS}><rs:md capability="description"/>
<url><loc>${origin}/a/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>
<url><loc>${origin}/b/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`));
  for (const set of ['a', 'b']) {
    server.set(`/${set}/capabilitylist.xml`, xml(`<urlset ${NS}><rs:ln rel="up" href="${origin}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>
<url><loc>${origin}/${set}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${origin}/${set}/changelist.xml</loc><rs:md capability="changelist"/></url></urlset>`));
    server.set(`/${set}/resourcelist.xml`, xml(`<urlset ${NS}><rs:md capability="resourcelist" at="${SNAPSHOT}" completed="${SNAPSHOT}"/>
${entry(`/${set}/listed.txt`, `listed in ${set}`)}</urlset>`));
    server.set(`/${set}/listed.txt`, `listed in ${set}`);
  }
  server.set('/a/changelist.xml', xml(`<urlset ${NS}><rs:md capability="changelist" from="${SNAPSHOT}"/>
${entry('/a/late.txt', 'late', 'change="created" datetime="2020-01-02T00:00:00Z" ')}</urlset>`));
  server.set('/b/changelist.xml', xml(`<urlset ${NS}><rs:md capability="changelist" from="${SNAPSHOT}"/></urlset>`));
  return { setA: `${origin}/a/capabilitylist.xml`, setB: `${origin}/b/capabilitylist.xml` };
}

/** The URLs the state of `dest` holds as pending (failures to retry) under each of `sets`. */
async function pendingOf(dest: string, sets: readonly string[]): Promise<string[][]> {
  const state = await openSqliteDestinationState(dest, { readonly: true });
  try {
    return await Promise.all(sets.map(async (set) => (await state.pending(set)).map((e) => e.loc)));
  } finally {
    await state.close();
  }
}

void test("a resource that fails in a set's catch-up is pending under that set, and none is left pending once the set's next run brings it", async () => {
  const server = await startTestServer();
  const { dir: dest, cleanup } = await tempDir('rs-catch-up-');
  try {
    const { setA, setB } = publishTwoSets(server);
    server.set('/a/late.txt', { status: 500, body: 'unavailable' });
    const options = { source: `${server.origin}/`, dest, durability: new RenameOnly(), retries: 0, verifyRetries: 0 };
    const first = await sync(options);
    assert.equal(first.mode, 'baseline');
    assert.deepEqual(first.sets.map((s) => s.key), [setA, setB]);
    assert.deepEqual(first.failed.map((f) => f.url), [`${server.origin}/a/late.txt`]);
    assert.deepEqual(await pendingOf(dest, [setA, setB]), [[`${server.origin}/a/late.txt`], []]);

    // set a alone, incremental: the resource comes, and no set keeps it pending (set b does not run to clear it)
    server.set('/a/late.txt', 'late');
    const second = await sync({ ...options, capabilityList: setA });
    assert.equal(second.mode, 'incremental');
    assert.deepEqual(second.failed, []);
    assert.equal(await readFile(join(dest, 'a', 'late.txt'), 'utf8'), 'late');
    assert.deepEqual(await pendingOf(dest, [setA, setB]), [[], []]);
  } finally {
    await server.close();
    await cleanup();
  }
});

void test("a resource that fails in a set's baseline and comes in its catch-up is no longer pending", async () => {
  const server = await startTestServer();
  const { dir: dest, cleanup } = await tempDir('rs-catch-up-');
  try {
    const { setA, setB } = publishTwoSets(server);
    const origin = server.origin;
    const listed = (body: string): string =>
      `<url><loc>${origin}/a/flaky.txt</loc><rs:md hash="md5:${md5(body)}" length="${body.length}"/></url>`;
    const { body: list } = server.routes.get('/a/resourcelist.xml')!;
    server.set('/a/resourcelist.xml', { body: String(list).replace('</urlset>', `${listed('flaky')}</urlset>`), headers: { 'content-type': 'application/xml' } });
    const { body: changes } = server.routes.get('/a/changelist.xml')!;
    server.set('/a/changelist.xml', {
      body: String(changes).replace('</urlset>', `<url><loc>${origin}/a/flaky.txt</loc><rs:md change="updated" datetime="2020-01-03T00:00:00Z" hash="md5:${md5('flaky')}" length="5"/></url></urlset>`),
      headers: { 'content-type': 'application/xml' },
    });
    server.set('/a/late.txt', 'late');
    server.set('/a/flaky.txt', 'flaky');
    // the baseline's request fails; the catch-up's (the second) succeeds
    server.fault = (req, res, n) => {
      if (req.url !== '/a/flaky.txt' || n > 1) return false;
      res.writeHead(500).end('unavailable');
      return true;
    };
    await sync({ source: `${origin}/`, dest, durability: new RenameOnly(), retries: 0, verifyRetries: 0 });
    assert.equal(await readFile(join(dest, 'a', 'flaky.txt'), 'utf8'), 'flaky');
    assert.deepEqual(await pendingOf(dest, [setA, setB]), [[], []]);
  } finally {
    await server.close();
    await cleanup();
  }
});
