// A Destination reads what real producers publish beside the standard (a draft-era `modified` on the Source
// Description and Capability List, a Source Description entry with capability 'resourcelist', a Resource List whose
// `completed` is before its `at`, a Change List Index with `at`/`completed` instead of `from`): the sync mirrors the
// Source and says what it tolerated, by code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startTestServer } from './helpers/test-server.js';
import { runCli } from './helpers/mirror-check.js';
import { tempDir } from './helpers/tmp.js';

const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const md5 = (b: string): string => createHash('md5').update(b).digest('hex');

void test('sync mirrors a Source that publishes the shapes lenient reading tolerates, and reports each by code', async () => {
  const s = await startTestServer();
  const O = s.origin;
  const { dir, cleanup } = await tempDir('rs-lenient-shapes-');
  try {
    const put = (path: string, body: string): void =>
      s.set(path, {
        body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}`,
        headers: { 'content-type': 'application/xml' },
      });
    put(
      '/.well-known/resourcesync',
      `<urlset ${NS}><rs:md capability="description" modified="2013-01-02T14:00:00Z"/>` +
        `<url><loc>${O}/cl.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
    );
    put(
      '/cl.xml',
      `<urlset ${NS}><rs:ln rel="up" href="${O}/.well-known/resourcesync"/><rs:md capability="capabilitylist" modified="2013-01-02T14:00:00Z"/>` +
        `<url><loc>${O}/rl.xml</loc><rs:md capability="resourcelist"/></url>` +
        `<url><loc>${O}/cli.xml</loc><rs:md capability="changelist"/></url></urlset>`,
    );
    put(
      '/rl.xml',
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z" completed="2013-01-03T08:00:00Z"/>` +
        `<url><loc>${O}/a.txt</loc><rs:md hash="md5:${md5('alpha\n')}" length="6"/></url></urlset>`,
    );
    put(
      '/cli.xml',
      `<sitemapindex ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="changelist" at="2013-01-03T09:00:00Z" completed="2013-01-03T09:00:01Z"/>` +
        `<sitemap><loc>${O}/cl1.xml</loc><rs:md from="2013-01-03T09:00:00Z"/></sitemap></sitemapindex>`,
    );
    put(
      '/cl1.xml',
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:ln rel="index" href="${O}/cli.xml"/><rs:md capability="changelist" from="2013-01-03T09:00:00Z"/>` +
        `<url><loc>${O}/b.txt</loc><rs:md change="created" datetime="2013-01-03T10:00:00Z" length="5"/></url></urlset>`,
    );
    s.set('/a.txt', 'alpha\n');
    s.set('/b.txt', 'beta\n');
    const r = await runCli(['sync', `${O}/`, dir, '--json'], 60_000);
    assert.equal(r.status, 0, r.stderr + r.stdout);
    assert.equal(await readFile(join(dir, 'a.txt'), 'utf8'), 'alpha\n');
    assert.equal(await readFile(join(dir, 'b.txt'), 'utf8'), 'beta\n');
    const report = JSON.parse(r.stdout.trim().split('\n').pop()!) as {
      warnings: Array<{ code: string; data?: { issue?: string } }>;
    };
    const codes = report.warnings.map((w) => w.data?.issue ?? w.code);
    for (const code of [
      'source-description-entry-as-capability-list',
      'tolerated-completed-before-at',
      'tolerated-at-instead-of-from',
    ])
      assert.ok(codes.includes(code), `${code} in ${codes.join(', ')}`);
  } finally {
    await s.close();
    await cleanup();
  }
});
