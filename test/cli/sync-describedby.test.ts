// `sync --with describedby`: the metadata records a Source links to (§14.5) are mirrored beside the mirror, in trees
// that no resource path can take, checked against the authority and verified like resources; removed with their link.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runCli } from '../helpers/mirror-check.js';
import { startTestServer } from '../helpers/test-server.js';
import { tempDir } from '../helpers/tmp.js';

const NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
const md5 = (s: string): string => createHash('md5').update(s).digest('hex');

void test('sync --with describedby mirrors the describedby targets beside the mirror, verified, and removes them with their link', async () => {
  const s = await startTestServer();
  const tmp = await tempDir('rs-cli-describedby-');
  try {
    const metaA = '<record>a</record>';
    const metaC = '<record>c</record>';
    const metaC2 = '{"c":2}';
    s.set('/a.txt', 'alpha');
    s.set('/b/c.txt', 'gamma');
    s.set('/d.txt', 'delta');
    s.set('/e.txt', 'epsilon');
    s.set('/meta/a.xml', metaA);
    s.set('/meta/c.xml', metaC);
    s.set('/meta/c2.json', metaC2);
    s.set('/meta/e.xml', 'tampered');
    const list = (withA: boolean): string =>
      `<urlset ${NS}><rs:ln rel="up" href="${s.origin}/capabilitylist.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>` +
      `<url><loc>${s.origin}/a.txt</loc>${withA ? `<rs:ln rel="describedby" href="/meta/a.xml" length="${metaA.length}" hash="md5:${md5(metaA)}"/>` : ''}</url>` +
      `<url><loc>${s.origin}/b/c.txt</loc><rs:ln rel="describedby" href="/meta/c.xml"/><rs:ln rel="describedby" href="/meta/c2.json" type="application/json"/></url>` +
      // another origin (refused before any request: port 1 is never connected to) and a hash that does not match
      `<url><loc>${s.origin}/d.txt</loc><rs:ln rel="describedby" href="http://127.0.0.1:1/meta/d.xml"/></url>` +
      `<url><loc>${s.origin}/e.txt</loc><rs:ln rel="describedby" href="/meta/e.xml" hash="md5:${md5('original')}"/></url></urlset>`;
    s.set(
      '/capabilitylist.xml',
      `<urlset ${NS}><rs:md capability="capabilitylist"/><url><loc>${s.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
    );
    s.set('/resourcelist.xml', list(true));
    const dest = join(tmp.dir, 'm');
    const cap = `${s.origin}/capabilitylist.xml`;

    const first = await runCli(['sync', cap, dest, '--no-fsync', '--with', 'describedby', '--json']);
    assert.equal(first.status, 1, first.stderr); // two targets failed
    const report = JSON.parse(first.stdout) as {
      created: number;
      failed: unknown[];
      describedby: { written: number; failed: { url: string; code: string }[] };
    };
    assert.equal(report.created, 4);
    assert.deepEqual(report.failed, []);
    assert.equal(report.describedby.written, 3);
    assert.deepEqual(report.describedby.failed.map((f) => [f.url, f.code]).sort(), [
      ['http://127.0.0.1:1/meta/d.xml', 'RS_AUTHORITY'],
      [`${s.origin}/meta/e.xml`, 'RS_HASH_MISMATCH'],
    ]);
    assert.equal(await readFile(join(dest, '.resourcesync-describedby', 'a.txt'), 'utf8'), metaA);
    assert.equal(await readFile(join(dest, '.resourcesync-describedby', 'b', 'c.txt'), 'utf8'), metaC);
    assert.equal(await readFile(join(dest, '.resourcesync-describedby-2', 'b', 'c.txt'), 'utf8'), metaC2);
    assert.equal(existsSync(join(dest, '.resourcesync-describedby', 'e.txt')), false); // unverified: never in place
    assert.equal(existsSync(join(dest, '.resourcesync-describedby', '.resourcesync')), false); // no temporary files left
    assert.equal(await readFile(join(dest, 'a.txt'), 'utf8'), 'alpha'); // the resources themselves untouched

    // the trees are not resources: an audit is in sync
    const audit = await runCli(['audit', cap, dest]);
    assert.equal(audit.status, 0, audit.stdout + audit.stderr);

    // a copy that matches its link's hash is not fetched again; a copy whose link is gone is removed
    const asked = (): number => s.requests.filter((r) => r.url === '/meta/a.xml').length;
    const before = asked();
    const again = await runCli(['sync', cap, dest, '--no-fsync', '--with', 'describedby']);
    assert.equal(again.status, 1, again.stderr);
    assert.match(again.stdout, /describedby: 2 written, 1 unchanged, 0 removed, 2 failed/);
    assert.equal(asked(), before);
    s.set('/resourcelist.xml', list(false));
    const removed = await runCli(['sync', cap, dest, '--no-fsync', '--with', 'describedby']);
    assert.match(removed.stdout, /describedby: 2 written, 0 unchanged, 1 removed, 2 failed/);
    assert.equal(existsSync(join(dest, '.resourcesync-describedby', 'a.txt')), false);

    // what this option does not go with
    assert.equal((await runCli(['sync', cap, dest, '--with', 'alternate'])).status, 2);
    assert.equal((await runCli(['sync', cap, dest, '--with', 'describedby', '--dry-run'])).status, 2);
  } finally {
    await s.close();
    await tmp.cleanup();
  }
});
