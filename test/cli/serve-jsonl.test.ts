/**
 * `resourcesync serve --jsonl FILE`: the documents of a feed's Source are served, its resources are not (they are
 * where their loc says), and a change of the file is published as Change List entries; a bad line is reported and
 * the documents stay as they were.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { until } from '../helpers/cli-child.js';
import { startServe } from '../helpers/serve-child.js';
import { tempDir } from '../helpers/tmp.js';

async function text(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
}

void test('serve --jsonl: serves the documents, republishes when the file changes, reports a bad line', async () => {
  const work = await tempDir();
  const feed = join(work.dir, 'items.jsonl');
  writeFileSync(feed, '{"loc":"http://127.0.0.1:9/x/a","length":1}\n{"loc":"http://127.0.0.1:9/x/b","length":2}\n');
  const served = await startServe(['--jsonl', feed, '--state', join(work.dir, 'state'), '--no-hub']);
  try {
    const docs = `${served.url}/.resourcesync/items/`;
    const list = await text(`${docs}resourcelist.xml`);
    assert.equal(list.status, 200);
    assert.deepEqual([...list.body.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]), ['http://127.0.0.1:9/x/a', 'http://127.0.0.1:9/x/b']);
    assert.equal((await text(`${served.url}/x/a`)).status, 404, 'the resources of a feed are not served here');
    assert.match((await text(`${served.url}/.well-known/resourcesync`)).body, /capabilitylist\.xml/);

    // the file replaced (as an export job writes it): b deleted by absence, c created, a updated
    writeFileSync(`${feed}.tmp`, '{"loc":"http://127.0.0.1:9/x/a","length":10}\n{"loc":"http://127.0.0.1:9/x/c","length":3}\n');
    renameSync(`${feed}.tmp`, feed);
    let changes = '';
    await until('the Change List holds the changes of the file', () => /x\/c<\/loc>/.test(changes) || (void text(`${docs}changelist.xml`).then((r) => (changes = r.body)), false), 30_000);
    assert.match(changes, /<loc>http:\/\/127\.0\.0\.1:9\/x\/a<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="updated"/);
    assert.match(changes, /<loc>http:\/\/127\.0\.0\.1:9\/x\/b<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="deleted"/);
    assert.match(changes, /<loc>http:\/\/127\.0\.0\.1:9\/x\/c<\/loc>\s*<lastmod>[^<]+<\/lastmod>\s*<rs:md change="created"/);

    // a bad line: reported, nothing recorded
    writeFileSync(feed, '{"loc":"http://127.0.0.1:9/x/a","length":10}\n{"loc":"relative/d"}\n');
    await until('serve reports the bad line', () => /publishing failed: .*items\.jsonl: line 2: loc: "relative\/d" is not an absolute http\(s\) URL/.test(served.log()), 30_000);
    assert.equal((await text(`${docs}changelist.xml`)).body, changes);
  } finally {
    served.child.kill('SIGTERM');
    await new Promise((resolve) => (served.child.exitCode !== null ? resolve(undefined) : served.child.once('exit', resolve)));
    await work.cleanup();
  }
});

void test('serve with a feed: usage errors exit 2', async () => {
  const { spawnSync } = await import('node:child_process');
  const { REPO_ROOT } = await import('../helpers/paths.js');
  const work = await tempDir();
  try {
    const feed = join(work.dir, 'f.jsonl');
    writeFileSync(feed, '');
    const cases: Array<[string[], RegExp]> = [
      [['--jsonl', feed], /needs --state/],
      [['--jsonl', '-', '--state', work.dir], /stdin\) is for build/],
      [['--jsonl', feed, '--state', work.dir, work.dir], /directories or a feed/],
      [['--jsonl', feed, '--state', work.dir, '--dumps'], /--dumps is not for a feed/],
      [['--name', 'x', work.dir], /--name names a feed/],
    ];
    for (const [args, message] of cases) {
      const r = spawnSync(process.execPath, [join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve', ...args, '--port', '0'], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 2, args.join(' '));
      assert.match(r.stderr, message);
    }
  } finally {
    await work.cleanup();
  }
});
