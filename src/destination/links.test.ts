import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REL_PATCH } from '../core/constants.js';
import { isResourceSyncError } from '../core/errors.js';
import type { Entry } from '../core/model/types.js';
import { startTestServer, type TestServer } from '../../test/helpers/test-server.js';
import { createAuthority } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import {
  fetchResource,
  linkPriority,
  mirrorLinks,
  patchLinks,
  relatedLinks,
  type FetchResourceOptions,
} from './links.js';

const md5 = (s: string | Buffer) => createHash('md5').update(s).digest('hex');
const sha256 = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

interface Env {
  src: TestServer;
  other: TestServer;
  dest: string;
  opts: (extra?: Partial<FetchResourceOptions>) => FetchResourceOptions;
  close(): Promise<void>;
}

async function env(): Promise<Env> {
  const src = await startTestServer();
  const other = await startTestServer();
  const dest = await mkdtemp(join(tmpdir(), 'rs-links-'));
  const authority = createAuthority({ origins: [src.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 5000 });
  return {
    src,
    other,
    dest,
    opts: (extra = {}) => ({ http, authority, dest, relPath: 'res.json', fsync: false, ...extra }),
    async close() {
      await http.close();
      await src.close();
      await other.close();
      await rm(dest, { recursive: true, force: true });
    },
  };
}

async function noTemp(dest: string): Promise<void> {
  const tmp = await readdir(join(dest, '.resourcesync', 'tmp')).catch(() => []);
  assert.deepEqual(tmp, [], 'no temporary files are left');
}

void test('mirrorLinks orders by pri (absent = 999999), ties in document order; patchLinks and linkPriority', () => {
  const entry: Entry = {
    loc: 'http://example.com/res1',
    ln: [
      { rel: 'duplicate', href: 'http://m.example/a', pri: '5' },
      { rel: 'duplicate', href: 'http://m.example/b', pri: '1' },
      { rel: 'duplicate', href: 'http://m.example/c' },
      { rel: 'describedby', href: '/meta.xml' },
      { rel: 'duplicate', href: 'http://m.example/d', pri: '5' },
      { rel: 'duplicate', href: 'http://m.example/e', pri: 'junk' },
      { rel: 'duplicate', href: 'relative/f', pri: '999999' },
      { rel: REL_PATCH, href: 'http://example.com/p2', pri: '2', type: 'application/json-patch+json' },
      { rel: REL_PATCH, href: 'http://example.com/p1', pri: '1', type: 'application/json-patch+json' },
    ],
  };
  assert.deepEqual(
    mirrorLinks(entry).map((l) => l.href),
    [
      'http://m.example/b',
      'http://m.example/a',
      'http://m.example/d',
      'http://m.example/c',
      'http://m.example/e',
      'http://example.com/relative/f',
    ],
  );
  assert.deepEqual(
    patchLinks(entry).map((l) => l.href),
    ['http://example.com/p1', 'http://example.com/p2'],
  );
  assert.equal(linkPriority({ pri: '0' }), 999_999);
  assert.equal(linkPriority({ pri: '1000000' }), 999_999);
  assert.equal(linkPriority({ pri: '7' }), 7);
});

void test('relatedLinks keeps alternate, canonical, memento, timegate, timemap, describedby, describes, collection, via (Z39.99 Examples 25-32)', () => {
  const entry: Entry = {
    loc: 'http://example.com/res1',
    ln: [
      { rel: 'alternate', href: 'http://example.com/res1.html', modified: '2013-01-03T18:00:00Z', type: 'text/html' },
      { rel: 'alternate', href: 'http://example.com/res1.pdf', type: 'application/pdf' },
      { rel: 'canonical', href: 'http://example.com/res1' },
      {
        rel: 'memento',
        href: 'http://example.com/20130103070000/res1',
        hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6',
        length: '8876',
      },
      { rel: 'timegate', href: 'http://example.com/timegate/http://example.com/res1' },
      { rel: 'timemap', href: 'http://example.com/timemap/http://example.com/res1', type: 'application/link-format' },
      { rel: 'describedby', href: '/res1_dc.xml' },
      { rel: 'describes', href: 'http://example.com/res2.pdf' },
      { rel: 'collection', href: 'http://example.com/aggregation/0601007' },
      { rel: 'via', href: 'http://original.example.com/res1.html' },
      { rel: 'duplicate', href: 'http://mirror.example/res1' },
      { rel: 'up', href: 'http://example.com/cl.xml' },
    ],
  };
  const r = relatedLinks(entry);
  assert.deepEqual(Object.keys(r).sort(), [
    'alternate',
    'canonical',
    'collection',
    'describedby',
    'describes',
    'memento',
    'timegate',
    'timemap',
    'via',
  ]);
  assert.deepEqual(r.alternate, [
    { href: 'http://example.com/res1.html', type: 'text/html', modified: '2013-01-03T18:00:00Z' },
    { href: 'http://example.com/res1.pdf', type: 'application/pdf' },
  ]);
  assert.deepEqual(r.describedby, [{ href: 'http://example.com/res1_dc.xml' }]);
  assert.deepEqual(r.memento, [
    { href: 'http://example.com/20130103070000/res1', hash: 'md5:1584abdf8ebdc9802ac0c6a7402c03b6', length: '8876' },
  ]);
  assert.equal(r.via?.[0]?.href, 'http://original.example.com/res1.html');
});

void test('fetchResource: primary first; on failure, mirrors in pri order; off-authority and non-http mirrors skipped, never requested', async () => {
  const e = await env();
  try {
    const body = '{"v":1}';
    e.src.set('/res.json', { status: 500, body: 'boom' });
    e.src.set('/m1/res.json', { status: 404, body: 'gone' });
    e.src.set('/m2/res.json', body);
    e.other.set('/res.json', body);
    const entry: Entry = {
      loc: `${e.src.origin}/res.json`,
      md: { hash: `md5:${md5(body)}`, length: String(body.length) },
      ln: [
        { rel: 'duplicate', href: `${e.src.origin}/m2/res.json`, pri: '3' },
        { rel: 'duplicate', href: `${e.other.origin}/res.json`, pri: '1' },
        { rel: 'duplicate', href: 'gsiftp://gridftp.example.com/res1', pri: '1' },
        { rel: 'duplicate', href: `${e.src.origin}/m1/res.json`, pri: '2' },
      ],
    };
    const r = await fetchResource(entry, e.opts());
    assert.equal(r.via, 'mirror');
    assert.equal(r.url, `${e.src.origin}/m2/res.json`);
    assert.equal(await readFile(join(e.dest, 'res.json'), 'utf8'), body);
    assert.equal(r.hashes.md5, md5(body));
    assert.deepEqual(
      r.attempts.map((a) => [a.kind, a.outcome, a.code]),
      [
        ['primary', 'failed', 'RS_HTTP_STATUS'],
        ['mirror', 'skipped', 'RS_AUTHORITY'],
        ['mirror', 'skipped', 'RS_INVALID_ARGUMENT'],
        ['mirror', 'failed', 'RS_HTTP_STATUS'],
        ['mirror', 'ok', undefined],
      ],
    );
    assert.deepEqual(e.other.requests, [], 'the off-authority mirror was never contacted');
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('fetchResource: preferMirrors tries the mirror first; wrong content for the hash is never committed', async () => {
  const e = await env();
  try {
    const good = 'the right bytes';
    e.src.set('/res.json', good);
    e.src.set('/mirror/res.json', 'the WRONG bytes');
    const entry: Entry = {
      loc: `${e.src.origin}/res.json`,
      md: { hash: `sha-256:${sha256(good)}` },
      ln: [{ rel: 'duplicate', href: `${e.src.origin}/mirror/res.json` }],
    };
    const r = await fetchResource(entry, e.opts({ preferMirrors: true }));
    assert.equal(r.via, 'primary');
    assert.deepEqual(
      r.attempts.map((a) => [a.kind, a.outcome, a.code]),
      [
        ['mirror', 'failed', 'RS_HASH_MISMATCH'],
        ['primary', 'ok', undefined],
      ],
    );
    assert.deepEqual(
      e.src.requests.map((q) => q.url),
      ['/mirror/res.json', '/res.json'],
    );
    assert.equal(await readFile(join(e.dest, 'res.json'), 'utf8'), good);
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('fetchResource: every candidate failing throws a recoverable error listing the attempts; nothing written', async () => {
  const e = await env();
  try {
    e.src.set('/res.json', 'abc');
    const entry: Entry = {
      loc: `${e.src.origin}/res.json`,
      md: { length: '4' },
      ln: [{ rel: 'duplicate', href: `${e.src.origin}/nope` }],
    };
    await assert.rejects(fetchResource(entry, e.opts()), (err: unknown) => {
      assert.ok(isResourceSyncError(err));
      assert.equal(err.recoverable, true);
      assert.equal(err.code, 'RS_HTTP_STATUS');
      assert.equal((err.data.attempts as unknown[]).length, 2);
      return true;
    });
    await assert.rejects(readFile(join(e.dest, 'res.json')));
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('fetchResource: a JSON Patch link is applied to the local copy and verified by hash; the resource itself is not fetched', async () => {
  const e = await env();
  try {
    const before = { title: 'A', tags: ['x'], n: 1 };
    const after = { title: 'B', tags: ['x', 'y'], n: 1 };
    for (const [name, text] of [
      ['compact', JSON.stringify(after)],
      ['pretty', JSON.stringify(after, null, 2) + '\n'],
    ] as const) {
      const local = join(e.dest, 'res.json');
      await writeFile(local, JSON.stringify(before));
      const patch = JSON.stringify([
        { op: 'test', path: '/title', value: 'A' },
        { op: 'replace', path: '/title', value: 'B' },
        { op: 'add', path: '/tags/-', value: 'y' },
      ]);
      e.src.set(`/patch-${name}`, patch);
      e.src.set('/res.json', text);
      e.src.requests.length = 0;
      const entry: Entry = {
        loc: `${e.src.origin}/res.json`,
        md: { change: 'updated', hash: `md5:${md5(text)}`, length: String(Buffer.byteLength(text)) },
        ln: [
          {
            rel: REL_PATCH,
            href: `${e.src.origin}/patch-${name}`,
            type: 'application/json-patch+json',
            hash: `md5:${md5(patch)}`,
            length: String(patch.length),
          },
        ],
      };
      const r = await fetchResource(entry, e.opts({ localCopy: local }));
      assert.equal(r.via, 'patch', `${name}: ${JSON.stringify(r.attempts)}`);
      assert.equal(await readFile(local, 'utf8'), text, name);
      assert.deepEqual(
        e.src.requests.map((q) => q.url),
        [`/patch-${name}`],
        `${name}: only the patch was requested`,
      );
    }
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});

void test('fetchResource: a patch that fails (bad result, failed test op, off-authority, unknown type) falls back to a full GET', async () => {
  const e = await env();
  try {
    const local = join(e.dest, 'res.json');
    const text = JSON.stringify({ a: 2 });
    e.src.set('/res.json', text);
    e.src.set('/wrong', JSON.stringify([{ op: 'replace', path: '/a', value: 3 }]));
    e.src.set('/failing-test', JSON.stringify([{ op: 'test', path: '/a', value: 99 }]));
    e.src.set('/not-json', '{{{');
    e.other.set('/patch', JSON.stringify([{ op: 'replace', path: '/a', value: 2 }]));
    const entry: Entry = {
      loc: `${e.src.origin}/res.json`,
      md: { hash: `md5:${md5(text)}` },
      ln: [
        { rel: REL_PATCH, href: `${e.src.origin}/wrong`, type: 'application/json-patch+json', pri: '1' },
        { rel: REL_PATCH, href: `${e.src.origin}/failing-test`, type: 'application/json-patch+json', pri: '2' },
        { rel: REL_PATCH, href: `${e.src.origin}/not-json`, type: 'application/json-patch', pri: '3' },
        { rel: REL_PATCH, href: `${e.other.origin}/patch`, type: 'application/json-patch+json', pri: '4' },
        { rel: REL_PATCH, href: `${e.src.origin}/tiff-diff`, type: 'application/x-tiff-diff', pri: '5' },
      ],
    };
    await writeFile(local, JSON.stringify({ a: 1 }));
    const r = await fetchResource(entry, e.opts({ localCopy: local }));
    assert.equal(r.via, 'primary');
    assert.deepEqual(
      r.attempts.map((a) => [a.kind, a.outcome, a.code]),
      [
        ['patch', 'failed', 'RS_HASH_MISMATCH'],
        ['patch', 'failed', 'RS_PATCH'],
        ['patch', 'failed', 'RS_PATCH'],
        ['patch', 'skipped', 'RS_AUTHORITY'],
        ['patch', 'skipped', 'RS_PATCH'],
        ['primary', 'ok', undefined],
      ],
    );
    assert.equal(await readFile(local, 'utf8'), text);
    assert.deepEqual(e.other.requests, []);
    assert.ok(!e.src.requests.some((q) => q.url === '/tiff-diff'));
    // Without a hash on the entry a patch cannot be verified: not even requested.
    e.src.requests.length = 0;
    const r2 = await fetchResource({ ...entry, md: {} }, e.opts({ localCopy: local }));
    assert.equal(r2.via, 'primary');
    assert.deepEqual(
      e.src.requests.map((q) => q.url),
      ['/res.json'],
    );
    await noTemp(e.dest);
  } finally {
    await e.close();
  }
});
