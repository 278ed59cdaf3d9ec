/**
 * `resourcesync build --pg-inventory URL --pg-query SQL`: the rows of a query on a throwaway PostgreSQL cluster
 * publish the same Resource List and Change Lists as a JSON-lines feed of the same resources; a query error, a
 * query without `loc` and a bad row are named; the password of the URL never shows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { REPO_ROOT } from '../helpers/paths.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';
import { startServe } from '../helpers/serve-child.js';
import { until } from '../helpers/cli-child.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

const cluster = usePostgres();

const QUERY = `SELECT url AS loc, modified AS lastmod, bytes AS length, 'md5:' || md5 AS hash, mime AS type,
  CASE WHEN gone THEN 'deleted' END AS change FROM items ORDER BY id`;

interface Item {
  id: number;
  url: string;
  modified: string;
  bytes: number;
  md5: string;
  mime: string;
  gone?: boolean;
}

/** The table's rows, and the same resources as feed lines. */
async function load(url: string, items: Item[]): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('DROP TABLE IF EXISTS items; CREATE TABLE items (id int PRIMARY KEY, url text, modified timestamptz, bytes bigint, md5 text, mime text, gone boolean NOT NULL DEFAULT false)');
    for (const i of items) await client.query('INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7)', [i.id, i.url, i.modified, i.bytes, i.md5, i.mime, i.gone === true]);
  } finally {
    await client.end();
  }
  return items.map((i) => JSON.stringify(i.gone === true ? { loc: i.url, change: 'deleted' } : { loc: i.url, lastmod: i.modified, length: i.bytes, hash: `md5:${i.md5}`, type: i.mime })).join('\n');
}

/** A document with its times (`at`, `completed`, `from`, `datetime`, the lastmod of a change) blanked. */
function untimed(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/ (at|completed|from|datetime)="[^"]+"/g, '')
    .replace(/<lastmod>20[0-9]{2}-[0-9-]+T[0-9:.]+Z<\/lastmod>(\s*<rs:md change)/g, '$1');
}

const A = 'a'.repeat(32);
const B = 'b'.repeat(32);

void test('build --pg-inventory publishes what a feed of the same rows publishes, run after run', { skip: POSTGRES_SKIP }, async () => {
  const work = await tempDir();
  try {
    const url = cluster().url;
    const runs: Item[][] = [
      [
        { id: 1, url: 'https://data.example/x/1', modified: '2024-05-01T10:00:00Z', bytes: 10, md5: A, mime: 'text/plain' },
        { id: 2, url: 'https://data.example/x/2', modified: '2024-05-01T11:00:00Z', bytes: 20, md5: B, mime: 'application/json' },
        { id: 3, url: 'https://data.example/x/10', modified: '2024-05-01T12:00:00Z', bytes: 30, md5: A, mime: 'text/plain' },
      ],
      [
        { id: 1, url: 'https://data.example/x/1', modified: '2024-05-02T10:00:00Z', bytes: 11, md5: B, mime: 'text/plain' },
        { id: 2, url: 'https://data.example/x/2', modified: '2024-05-01T11:00:00Z', bytes: 20, md5: B, mime: 'application/json', gone: true },
        { id: 4, url: 'https://data.example/x/4', modified: '2024-05-02T12:00:00Z', bytes: 40, md5: A, mime: 'text/plain' },
      ],
    ];
    const common = ['--base-url', 'http://127.0.0.1:9/', '--name', 'items', '--json', '--changelist-max', '100'];
    for (const items of runs) {
      const lines = await load(url, items);
      writeFileSync(join(work.dir, 'items.jsonl'), lines);
      const fromPg = await cli(['build', '--pg-inventory', url, '--pg-query', QUERY, '--out', join(work.dir, 'pg'), '--state', join(work.dir, 'pg-state'), ...common]);
      assert.equal(fromPg.status, 0, fromPg.stderr);
      const fromFeed = await cli(['build', '--jsonl', join(work.dir, 'items.jsonl'), '--out', join(work.dir, 'feed'), '--state', join(work.dir, 'feed-state'), ...common]);
      assert.equal(fromFeed.status, 0, fromFeed.stderr);
      const [p, f] = [JSON.parse(fromPg.stdout) as { changes: unknown; resources: number }, JSON.parse(fromFeed.stdout) as { changes: unknown; resources: number }];
      assert.deepEqual([p.changes, p.resources], [f.changes, f.resources]);
      for (const doc of ['resourcelist.xml', 'changelist.xml'])
        assert.equal(untimed(join(work.dir, 'pg', '.resourcesync', 'items', doc)), untimed(join(work.dir, 'feed', '.resourcesync', 'items', doc)), doc);
    }
    const last = readFileSync(join(work.dir, 'pg', '.resourcesync', 'items', 'changelist.xml'), 'utf8');
    assert.match(last, /<loc>https:\/\/data\.example\/x\/2<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="deleted"/);
    assert.match(last, /<loc>https:\/\/data\.example\/x\/10<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="deleted"/, 'absent from the rows: deleted');
  } finally {
    await work.cleanup();
  }
});

void test('build --pg-inventory: a query error, a query without loc and a bad row are named; the password never shows', { skip: POSTGRES_SKIP }, async () => {
  const work = await tempDir();
  try {
    const url = cluster().url;
    await load(url, [{ id: 1, url: 'https://data.example/x/1', modified: '2024-05-01T10:00:00Z', bytes: 10, md5: A, mime: 'text/plain' }]);
    const args = (query: string, db = url): string[] => ['build', '--pg-inventory', db, '--pg-query', query, '--base-url', 'http://127.0.0.1:9/', '--out', join(work.dir, 'out'), '--state', join(work.dir, 'state'), '--json'];
    const missing = await cli(args('SELECT url AS loc FROM no_such_table'));
    assert.equal(missing.status, 1);
    assert.equal((JSON.parse(missing.stdout) as { error: { code: string } }).error.code, 'RS_QUERY');
    assert.match(missing.stderr, /The inventory query on postgres:\/\/.* failed: relation "no_such_table" does not exist at character \d+ \[SQLSTATE 42P01\]/);
    const noLoc = await cli(args('SELECT url FROM items'));
    assert.equal(noLoc.status, 1);
    assert.match(noLoc.stderr, /gives no column named loc \(it gives url\)/);
    const badRow = await cli(args("SELECT url AS loc, 'last week' AS lastmod FROM items"));
    assert.equal(badRow.status, 1);
    assert.match(badRow.stderr, /row 1: lastmod: "last week" is not a W3C datetime/);
    const secret = new URL(url);
    secret.password = 'hunter2';
    secret.port = '1';
    const refused = await cli(args('SELECT 1', secret.href));
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /Could not connect to postgres:\/\/postgres@127\.0\.0\.1:1\/postgres/, "the URL named without its password");
    assert.ok(!refused.stderr.includes('hunter2') && !refused.stdout.includes('hunter2'), 'no password printed');
  } finally {
    await work.cleanup();
  }
});

void test('postgresFeed reads the rows a page at a time through a cursor, numbering them', { skip: POSTGRES_SKIP }, async () => {
  const { postgresFeed } = await import('../../src/source/pg-inventory.js');
  const feed = postgresFeed(cluster().url, "SELECT 'https://data.example/' || n AS loc, n AS length FROM generate_series(1, 7) AS n;", { fetchRows: 3 });
  const items: Array<[number, string | undefined, number | undefined]> = [];
  for await (const item of feed.records()) items.push([item.line, item.record?.loc, item.record?.length]);
  assert.deepEqual(items, [1, 2, 3, 4, 5, 6, 7].map((n) => [n, `https://data.example/${n}`, n]));
});

void test('serve --pg-inventory --pg-interval: the query runs again and its changes are published', { skip: POSTGRES_SKIP }, async () => {
  const work = await tempDir();
  const url = cluster().url;
  await load(url, [{ id: 1, url: 'https://data.example/x/1', modified: '2024-05-01T10:00:00Z', bytes: 10, md5: A, mime: 'text/plain' }]);
  const served = await startServe(['--pg-inventory', url, '--pg-query', QUERY, '--pg-interval', '1', '--name', 'items', '--state', join(work.dir, 'state'), '--no-hub']);
  try {
    const docs = `${served.url}/.resourcesync/items/`;
    assert.match(await (await fetch(`${docs}resourcelist.xml`)).text(), /<loc>https:\/\/data\.example\/x\/1<\/loc>/);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("INSERT INTO items VALUES (2, 'https://data.example/x/2', now(), 5, $1, 'text/plain', false)", [B]);
    await client.end();
    let changes = '';
    await until('the new row in the Change List', () => /x\/2<\/loc>/.test(changes) || (void fetch(`${docs}changelist.xml`).then(async (r) => (changes = await r.text())), false), 30_000);
    assert.match(changes, /<loc>https:\/\/data\.example\/x\/2<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="created"/);
  } finally {
    served.child.kill('SIGTERM');
    await new Promise((resolve) => (served.child.exitCode !== null ? resolve(undefined) : served.child.once('exit', resolve)));
    await work.cleanup();
  }
});
