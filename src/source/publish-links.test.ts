import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../test/helpers/tmp.js';
import { parseXml } from '../../test/helpers/xml-oracle.js';
import type { ResourceSyncDocument } from '../core/model/types.js';
import { createSourceResponder } from '../server/source-responder.js';
import { publish, type PublishOptions } from './publish.js';

const BASE = 'http://example.org/';

function clock(start = Date.UTC(2024, 0, 1)): () => number {
  let t = start;
  return () => (t += 1000);
}

function doc(out: string, rel: string): ResourceSyncDocument {
  return parseXml(readFileSync(join(out, ...rel.split('/')), 'utf8'));
}

test('namedSets puts a single set under its name; resourceLinks adds links to Resource, Change Lists and dump manifests', async (t) => {
  const tmp = await tempDir('publish-links-');
  t.after(tmp.cleanup);
  const root = tmp.dir;
  const dir = join(root, 'one');
  const out = join(root, 'out');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'a.txt'), 'alpha');
  writeFileSync(join(dir, 'sub', 'b.txt'), 'beta');
  const seen: string[] = [];
  const options: PublishOptions = {
    sets: [{ name: 'one', dir }],
    baseUrl: BASE,
    outDir: out,
    stateDir: join(root, 'state'),
    namedSets: true,
    dumps: true,
    now: clock(),
    resourceLinks: (set, path, entry) => {
      seen.push(`${set}:${path}`);
      if (path === 'sub/b.txt') return undefined; // no link for this one
      return [{ rel: 'via', href: `https://origin.example.net/${path}`, ...(entry.md?.length !== undefined ? { length: entry.md.length } : {}) }];
    },
  };
  await publish(options);
  const rl = doc(out, '.resourcesync/one/resourcelist.xml');
  const a = rl.entries.find((e) => e.loc === `${BASE}one/a.txt`);
  assert.ok(a, 'the single set is under its name');
  assert.deepEqual(a.ln, [{ rel: 'via', href: 'https://origin.example.net/a.txt', length: '5' }]);
  const b = rl.entries.find((e) => e.loc === `${BASE}one/sub/b.txt`);
  assert.equal(b?.ln, undefined, 'no links where the function gives none');
  assert.ok(seen.includes('one:a.txt') && seen.includes('one:sub/b.txt'));

  // a change: the Change List entry carries the link too
  writeFileSync(join(dir, 'a.txt'), 'alpha, again');
  rmSync(join(dir, 'sub', 'b.txt'));
  await publish(options);
  const cl = doc(out, '.resourcesync/one/changelist.xml');
  const changed = cl.entries.find((e) => e.loc === `${BASE}one/a.txt`);
  assert.equal(changed?.md?.change, 'updated');
  assert.deepEqual(changed?.ln, [{ rel: 'via', href: 'https://origin.example.net/a.txt', length: '12' }]);
  assert.equal(cl.entries.find((e) => e.loc === `${BASE}one/sub/b.txt`)?.md?.change, 'deleted');

  // the Resource Dump's manifest carries it as well
  const rd = doc(out, '.resourcesync/one/resourcedump.xml');
  const manifestUrl = rd.entries[0]?.ln?.find((l) => l.rel === 'contents')?.href;
  assert.ok(manifestUrl);
  const manifest = doc(out, manifestUrl.slice(BASE.length));
  assert.deepEqual(manifest.entries.find((e) => e.loc === `${BASE}one/a.txt`)?.ln, [{ rel: 'via', href: 'https://origin.example.net/a.txt', length: '12' }]);

  // the responder serves the single set under its name too
  const responder = createSourceResponder({ sets: [{ name: 'one', dir }], outDir: out, baseUrl: BASE, namedSets: true, cacheMs: 0 });
  const hit = await responder({ method: 'GET', target: '/one/a.txt', headers: {} });
  assert.equal(hit.status, 200);
  const miss = await responder({ method: 'GET', target: '/a.txt', headers: {} });
  assert.equal(miss.status, 404);
});

test('only: the sets named are published, the Source Description still lists every set', async (t) => {
  const tmp = await tempDir('publish-only-');
  t.after(tmp.cleanup);
  const one = join(tmp.dir, 'one');
  const two = join(tmp.dir, 'two');
  const out = join(tmp.dir, 'out');
  mkdirSync(one);
  mkdirSync(two);
  writeFileSync(join(one, 'a.txt'), 'a');
  writeFileSync(join(two, 'b.txt'), 'b');
  const base: PublishOptions = { sets: [{ name: 'one', dir: one }, { name: 'two', dir: two }], baseUrl: BASE, outDir: out, stateDir: join(tmp.dir, 'state'), now: clock() };
  await publish(base);
  writeFileSync(join(one, 'a2.txt'), 'a2');
  writeFileSync(join(two, 'b2.txt'), 'b2');
  const r = await publish({ ...base, only: ['one'] });
  assert.deepEqual(r.changes, { created: 1, updated: 0, deleted: 0 });
  assert.deepEqual(r.capabilityLists, [`${BASE}.resourcesync/one/capabilitylist.xml`, `${BASE}.resourcesync/two/capabilitylist.xml`]);
  assert.deepEqual(doc(out, '.well-known/resourcesync').entries.map((e) => e.loc), r.capabilityLists);
  assert.deepEqual(doc(out, '.resourcesync/two/resourcelist.xml').entries.map((e) => e.loc), [`${BASE}two/b.txt`], 'two is left as it was');
  assert.equal(doc(out, '.resourcesync/one/resourcelist.xml').entries.length, 2);
  const robots = readFileSync(join(out, 'robots.txt'), 'utf8');
  assert.match(robots, /Sitemap: http:\/\/example\.org\/\.resourcesync\/two\/resourcelist\.xml/);
  const all = await publish(base);
  assert.deepEqual(all.changes, { created: 1, updated: 0, deleted: 0 }, 'two catches up when published');
});
