import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Entry } from '../core/model/types.js';
import { plan, planBatches, planEntry, planGone, type LocalFacts, type LocalLookup, type PlanItem, type PlanOptions, type SourceFacts } from './plan.js';

// The digests of the three bytes 'abc', and of 'abd' (another content of the same length).
const MD5 = '900150983cd24fb0d6963f7d28e17f72';
const MD5_B64 = 'kAFQmDzST7DWlj99KOF/cg==';
const SHA1 = 'a9993e364706816aba3e25717850c26c9cd0d89d';
const SHA1_B64 = 'qZk+NkcGgWq6PiVxeFDCbJzQ2J0=';
const SHA256 = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad';
const SHA256_B64 = 'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=';
const MD5_ABD = '4911e516e5aa21d327512e0c8b197616';
const SHA1_ABD = 'cb4cc28df0fdbe0ecf9d9662e294b118092a5735';
const SHA256_ABD = 'a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9';

const URL_A = 'http://example.com/a.txt';
const T0 = '2026-01-01T00:00:00Z';
const T1 = '2026-01-02T00:00:00Z';
const ms = (t: string): number => Date.parse(t);

/** A copy of 'abc' held locally, with the digests of the given algorithms. */
const abc = (algorithms: ('md5' | 'sha-1' | 'sha-256')[], lastmod?: string): LocalFacts => {
  const all = { md5: MD5, 'sha-1': SHA1, 'sha-256': SHA256 };
  const l: LocalFacts = { length: 3, hashes: Object.fromEntries(algorithms.map((a) => [a, all[a]])) };
  if (lastmod !== undefined) l.lastmod = ms(lastmod);
  return l;
};

interface Row {
  name: string;
  /** The entry's `rs:md` (hash, length, change) and `lastmod`. */
  source: { hash?: string; length?: string; lastmod?: string; change?: string };
  local: LocalLookup;
  options?: PlanOptions;
  expect: Pick<PlanItem, 'action' | 'reason'> & { kept?: true };
}

const ROWS: Row[] = [
  // nothing held
  { name: 'not held', source: { hash: `md5:${MD5}` }, local: {}, expect: { action: 'create', reason: 'missing' } },
  { name: 'held in the state, file gone', source: { hash: `md5:${MD5}` }, local: { held: true }, expect: { action: 'update', reason: 'missing' } },
  // hashes per algorithm
  { name: 'md5 matches', source: { hash: `md5:${MD5}` }, local: { local: abc(['md5']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'md5 differs', source: { hash: `md5:${MD5_ABD}` }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'sha-1 matches', source: { hash: `sha-1:${SHA1}` }, local: { local: abc(['sha-1']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'sha-1 differs', source: { hash: `sha-1:${SHA1_ABD}` }, local: { local: abc(['sha-1']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'sha-256 matches', source: { hash: `sha-256:${SHA256}` }, local: { local: abc(['sha-256']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'sha-256 differs', source: { hash: `sha-256:${SHA256_ABD}` }, local: { local: abc(['sha-256']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'md5 matches, sha-256 differs', source: { hash: `md5:${MD5} sha-256:${SHA256_ABD}` }, local: { local: abc(['md5', 'sha-256']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'two algorithms, the one held matches', source: { hash: `md5:${MD5_ABD} sha-256:${SHA256}` }, local: { local: abc(['sha-256']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'no algorithm in common, nothing else to compare', source: { hash: `md5:${MD5}` }, local: { local: abc(['sha-256']) }, expect: { action: 'update', reason: 'unverifiable' } },
  { name: 'no algorithm in common, length equal', source: { hash: `md5:${MD5}`, length: '3' }, local: { local: abc(['sha-256']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'upper-case hex matches', source: { hash: `md5:${MD5.toUpperCase()}` }, local: { local: abc(['md5']) }, expect: { action: 'unchanged', reason: 'same' } },
  // base64 digests (tolerated) are the bytes they stand for
  { name: 'base64 md5 matches', source: { hash: `md5:${MD5_B64}` }, local: { local: abc(['md5']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'base64 sha-1 matches', source: { hash: `sha-1:${SHA1_B64}` }, local: { local: abc(['sha-1']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'base64 sha-256 matches', source: { hash: `sha-256:${SHA256_B64}` }, local: { local: abc(['sha-256']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'base64 md5 differs', source: { hash: `md5:${Buffer.from(MD5_ABD, 'hex').toString('base64')}` }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'hash' } },
  // length
  { name: 'length differs (before the hash)', source: { hash: `md5:${MD5}`, length: '4' }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'length' } },
  { name: 'length equal, no hash', source: { length: '3' }, local: { local: abc([]) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'length equal, hash differs', source: { hash: `md5:${MD5_ABD}`, length: '3' }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'hash' } },
  // lastmod, when no hash decides
  { name: 'lastmod newer at the Source', source: { lastmod: T1 }, local: { local: abc([], T0) }, expect: { action: 'update', reason: 'lastmod' } },
  { name: 'lastmod older at the Source', source: { lastmod: T0 }, local: { local: abc([], T1) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'lastmod equal', source: { lastmod: T0 }, local: { local: abc([], T0) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'lastmod newer, hash matches: the hash decides', source: { hash: `md5:${MD5}`, lastmod: T1 }, local: { local: abc(['md5'], T0) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'lastmod newer, length equal', source: { length: '3', lastmod: T1 }, local: { local: abc([], T0) }, expect: { action: 'update', reason: 'lastmod' } },
  { name: 'lastmod at the Source, none held', source: { lastmod: T1 }, local: { local: abc([]) }, expect: { action: 'update', reason: 'unverifiable' } },
  { name: 'nothing to compare', source: {}, local: { local: abc(['md5'], T0) }, expect: { action: 'update', reason: 'unverifiable' } },
  { name: 'a malformed length is no length', source: { length: '-3' }, local: { local: abc([]) }, expect: { action: 'update', reason: 'unverifiable' } },
  // Change List entries (§12.1)
  { name: 'created, not held', source: { hash: `md5:${MD5}`, change: 'created' }, local: {}, expect: { action: 'create', reason: 'missing' } },
  { name: 'created, held and the same', source: { hash: `md5:${MD5}`, change: 'created' }, local: { local: abc(['md5']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'updated, held and different', source: { hash: `md5:${MD5_ABD}`, change: 'updated' }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'updated, held and the same', source: { hash: `md5:${MD5}`, change: 'updated' }, local: { local: abc(['md5']) }, expect: { action: 'unchanged', reason: 'same' } },
  { name: 'updated, not held', source: { hash: `md5:${MD5}`, change: 'updated' }, local: {}, expect: { action: 'create', reason: 'missing' } },
  { name: 'an unknown change is an update', source: { hash: `md5:${MD5_ABD}`, change: 'moved' }, local: { local: abc(['md5']) }, expect: { action: 'update', reason: 'hash' } },
  { name: 'deleted, held, deletions on', source: { change: 'deleted' }, local: { local: abc(['md5']), held: true }, options: { delete: true }, expect: { action: 'delete', reason: 'deleted-at-source' } },
  { name: 'deleted, held, deletions off: kept', source: { change: 'deleted' }, local: { local: abc(['md5']), held: true }, expect: { action: 'delete', reason: 'deleted-at-source', kept: true } },
  { name: 'deleted, file there but unknown to the state', source: { change: 'deleted' }, local: { local: abc([]) }, options: { delete: true }, expect: { action: 'delete', reason: 'deleted-at-source' } },
  { name: 'deleted, in the state, file gone', source: { change: 'deleted' }, local: { held: true }, options: { delete: true }, expect: { action: 'delete', reason: 'deleted-at-source' } },
  { name: 'deleted, not held', source: { change: 'deleted', hash: `md5:${MD5}` }, local: {}, options: { delete: true }, expect: { action: 'unchanged', reason: 'absent' } },
];

function entryOf(s: Row['source']): Entry {
  const e: Entry = { loc: URL_A };
  if (s.lastmod !== undefined) e.lastmod = s.lastmod;
  const md: NonNullable<Entry['md']> = {};
  if (s.hash !== undefined) md.hash = s.hash;
  if (s.length !== undefined) md.length = s.length;
  if (s.change !== undefined) md.change = s.change;
  if (Object.keys(md).length > 0) e.md = md;
  return e;
}

void describe('planEntry: source facts × local facts → action and reason', () => {
  for (const row of ROWS) {
    void it(row.name, () => {
      const item = planEntry(entryOf(row.source), { path: 'a.txt', ...row.local }, row.options);
      assert.deepEqual({ action: item.action, reason: item.reason, ...(item.kept ? { kept: item.kept } : {}) }, row.expect);
      assert.equal(item.url, URL_A);
      assert.equal(item.path, 'a.txt');
      assert.equal(item.change, row.source.change);
      assert.deepEqual(item.local, row.local.local);
      assert.equal(item.source?.url, URL_A);
    });
  }

  void it('the source facts carry the digests as lower-case hex, the length and lastmod in ms', () => {
    const item = planEntry(entryOf({ hash: `md5:${MD5_B64} sha-256:${SHA256.toUpperCase()} foo:bar`, length: '3', lastmod: T1 }), {});
    assert.deepEqual(item.source, {
      url: URL_A,
      hashes: [
        { algorithm: 'md5', digest: MD5 },
        { algorithm: 'sha-256', digest: SHA256 },
      ],
      length: 3,
      lastmod: ms(T1),
    } satisfies SourceFacts);
  });
});

void describe('planGone: held, no longer on offer', () => {
  const rows: { name: string; local: LocalLookup; options?: PlanOptions; expect: Pick<PlanItem, 'action' | 'reason'> & { kept?: true } }[] = [
    { name: 'held, deletions on', local: { held: true, local: abc(['md5']) }, options: { delete: true }, expect: { action: 'delete', reason: 'gone' } },
    { name: 'held, deletions off: kept', local: { held: true }, expect: { action: 'delete', reason: 'gone', kept: true } },
    { name: 'a file the state does not know', local: { local: abc([]) }, options: { delete: true }, expect: { action: 'delete', reason: 'gone' } },
    { name: 'nothing held', local: {}, options: { delete: true }, expect: { action: 'unchanged', reason: 'absent' } },
  ];
  for (const row of rows) {
    void it(row.name, () => {
      const item = planGone(URL_A, { path: 'a.txt', ...row.local }, row.options);
      assert.deepEqual({ action: item.action, reason: item.reason, ...(item.kept ? { kept: item.kept } : {}) }, row.expect);
      assert.equal(item.source, undefined);
      assert.equal(item.path, 'a.txt');
    });
  }
});

void describe('plan: the stream', () => {
  void it('one item per entry in order; the lookup sees the source facts, none for a deletion, and may be async', async () => {
    const held = new Map<string, LocalFacts>([
      ['http://example.com/same', abc(['md5'])],
      ['http://example.com/changed', abc(['md5'])],
      ['http://example.com/removed', abc(['md5'])],
    ]);
    const seen: [string, SourceFacts | undefined][] = [];
    async function* entries(): AsyncGenerator<Entry> {
      yield { loc: 'http://example.com/new', md: { hash: `md5:${MD5}` } };
      yield { loc: 'http://example.com/same', md: { hash: `md5:${MD5}` } };
      yield { loc: 'http://example.com/changed', md: { hash: `md5:${MD5_ABD}`, change: 'updated' } };
      yield { loc: 'http://example.com/removed', md: { change: 'deleted' } };
      yield { loc: 'http://example.com/never', md: { change: 'deleted' } };
    }
    const items: PlanItem[] = [];
    const lookup = async (url: string, source: SourceFacts | undefined): Promise<LocalLookup> => {
      seen.push([url, source]);
      await new Promise((r) => setImmediate(r));
      const local = held.get(url);
      return { path: new URL(url).pathname.slice(1), ...(local !== undefined ? { local, held: true } : {}) };
    };
    for await (const item of plan(entries(), lookup)) items.push(item);
    assert.deepEqual(
      items.map((i) => `${i.action} ${i.path} ${i.reason}${i.kept ? ' kept' : ''}`),
      ['create new missing', 'unchanged same same', 'update changed hash', 'delete removed deleted-at-source kept', 'unchanged never absent'],
    );
    assert.deepEqual(
      seen.map(([u, s]) => `${u} ${s === undefined ? '-' : s.hashes.map((h) => h.digest).join(',')}`),
      [`http://example.com/new ${MD5}`, `http://example.com/same ${MD5}`, `http://example.com/changed ${MD5_ABD}`, 'http://example.com/removed -', 'http://example.com/never -'],
    );
  });

  void it('plans a synchronous iterable with a synchronous lookup, deletions applied', async () => {
    const items: PlanItem[] = [];
    for await (const item of plan([{ loc: URL_A, md: { change: 'deleted' } }], () => ({ held: true }), { delete: true })) items.push(item);
    assert.deepEqual(items, [{ url: URL_A, action: 'delete', reason: 'deleted-at-source', change: 'deleted', source: { url: URL_A, hashes: [] } }]);
  });

  void it('planBatches: the same items, one array per chunk, a synchronous and an asynchronous lookup alike', async () => {
    const chunks: Entry[][] = [
      [{ loc: 'http://example.com/1', md: { hash: `md5:${MD5}` } }, { loc: 'http://example.com/2', md: { hash: `md5:${MD5_ABD}` } }],
      [],
      [{ loc: 'http://example.com/3', md: { change: 'deleted' } }],
    ];
    const held = (url: string): LocalLookup => (url.endsWith('/1') ? {} : { local: abc(['md5']), held: true });
    const flat: PlanItem[] = [];
    for await (const item of plan(chunks.flat(), held)) flat.push(item);
    for (const lookup of [held, (url: string) => Promise.resolve(held(url))]) {
      const got: PlanItem[][] = [];
      for await (const items of planBatches(chunks, lookup, {})) got.push(items);
      assert.deepEqual(got.map((b) => b.length), [2, 0, 1]);
      assert.deepEqual(got.flat(), flat);
    }
    assert.deepEqual(flat.map((i) => `${i.action} ${i.reason}`), ['create missing', 'update hash', 'delete deleted-at-source']);
  });

  void it('a lookup that fails ends the stream with its error', async () => {
    const boom = new Error('disk gone');
    await assert.rejects(async () => {
      for await (const item of plan([{ loc: URL_A }], () => Promise.reject(boom))) assert.fail(`planned ${item.url}`);
    }, boom);
  });
});
