import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isResourceSyncError } from '../core/errors.js';
import { startTestServer, type TestServer } from '../../test/helpers/test-server.js';
import { createAuthority } from '../client/authority.js';
import { createHttpClient } from '../client/http-client.js';
import { discover } from './discover.js';
import { htmlResourceSyncLinks, robotsSitemaps } from '../core/discovery-hints.js';

const XML = 'application/xml';

/** A small ResourceSync document. */
function urlset(
  capability: string,
  lns: Array<[string, string]>,
  entries: Array<[string, string?]>,
  root: 'urlset' | 'sitemapindex' = 'urlset',
): string {
  const child = root === 'urlset' ? 'url' : 'sitemap';
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n` +
    lns.map(([rel, href]) => `  <rs:ln rel="${rel}" href="${href}"/>\n`).join('') +
    `  <rs:md capability="${capability}"${capability === 'resourcelist' ? ' at="2013-01-03T09:00:00Z"' : ''}/>\n` +
    entries
      .map(([loc, cap]) => `  <${child}><loc>${loc}</loc>${cap ? `<rs:md capability="${cap}"/>` : ''}</${child}>\n`)
      .join('') +
    `</${root}>\n`
  );
}

interface Env {
  s: TestServer;
  other: TestServer;
  run: (start: string, extra?: { maxDocuments?: number }) => ReturnType<typeof discover>;
  close(): Promise<void>;
}

async function env(): Promise<Env> {
  const s = await startTestServer();
  const other = await startTestServer();
  const authority = createAuthority({ origins: [s.origin] });
  const http = createHttpClient({ authority, retries: 0, timeoutMs: 5000 });
  return {
    s,
    other,
    run: (start, extra = {}) => discover(start, { http, authority, ...extra }),
    async close() {
      await http.close();
      await s.close();
      await other.close();
    },
  };
}

/** The usual Source: a Source Description with two Capability Lists. */
function publish(e: Env): void {
  const o = e.s.origin;
  e.s.set('/.well-known/resourcesync', {
    headers: { 'content-type': XML },
    body: urlset(
      'description',
      [['describedby', `${o}/info.html`]],
      [
        [`${o}/dataset1/capabilitylist.xml`, 'capabilitylist'],
        [`${o}/dataset2/capabilitylist.xml`, 'capabilitylist'],
      ],
    ),
  });
  e.s.set('/dataset1/capabilitylist.xml', {
    headers: { 'content-type': XML },
    body: urlset(
      'capabilitylist',
      [
        ['up', `${o}/.well-known/resourcesync`],
        ['describedby', `${o}/dataset1/info.html`],
      ],
      [
        [`${o}/dataset1/resourcelist.xml`, 'resourcelist'],
        ['changelist.xml', 'changelist'],
        [`${o}/dataset1/resourcedump.xml`, 'resourcedump'],
        [`${o}/dataset1/future.xml`, 'somethingnew'],
        [`${o}/dataset1/change-notification/`, 'change-notification'],
        [`${o}/dataset1/framework-notification/`, 'framework-notification'],
      ],
    ),
  });
  e.s.set('/dataset2/capabilitylist.xml', {
    headers: { 'content-type': XML },
    body: urlset(
      'capabilitylist',
      [['up', `${o}/.well-known/resourcesync`]],
      [[`${o}/dataset2/resourcelist-index.xml`, 'resourcelist']],
    ),
  });
  e.s.set('/dataset1/resourcelist.xml', {
    headers: { 'content-type': XML },
    body: urlset('resourcelist', [['up', `${o}/dataset1/capabilitylist.xml`]], [[`${o}/res1`], [`${o}/res2`]]),
  });
  e.s.set('/dataset2/resourcelist-index.xml', {
    headers: { 'content-type': XML },
    body: urlset(
      'resourcelist',
      [['up', `${o}/dataset2/capabilitylist.xml`]],
      [[`${o}/dataset2/rl-part1.xml`]],
      'sitemapindex',
    ),
  });
  e.s.set('/dataset2/rl-part1.xml', {
    headers: { 'content-type': XML },
    body: urlset('resourcelist', [['index', `${o}/dataset2/resourcelist-index.xml`]], [[`${o}/res3`]]),
  });
}

void test('discover from an origin: the well-known Source Description lists every Capability List (§6.3.2)', async () => {
  const e = await env();
  try {
    publish(e);
    const o = e.s.origin;
    const d = await e.run(`${o}/`);
    assert.equal(d.start.kind, 'well-known');
    assert.equal(d.sourceDescription, `${o}/.well-known/resourcesync`);
    assert.deepEqual(d.capabilityLists, [
      {
        url: `${o}/dataset1/capabilitylist.xml`,
        capabilities: {
          resourcelist: [`${o}/dataset1/resourcelist.xml`],
          changelist: [`${o}/dataset1/changelist.xml`],
          resourcedump: [`${o}/dataset1/resourcedump.xml`],
        },
        describedby: `${o}/dataset1/info.html`,
      },
      {
        url: `${o}/dataset2/capabilitylist.xml`,
        capabilities: { resourcelist: [`${o}/dataset2/resourcelist-index.xml`] },
      },
    ]);
    assert.ok(d.warnings.some((n) => n.code === 'capability-unknown' && n.data.capability === 'somethingnew'), JSON.stringify(d.notes));
    // notification channels are known (Change Notification §4), though nothing to synchronize from
    assert.deepEqual(d.warnings.filter((n) => n.code === 'capability-unknown').map((n) => n.data.capability), ['somethingnew']);
    // Three documents, each once.
    assert.deepEqual(
      e.s.requests.map((r) => r.url),
      ['/.well-known/resourcesync', '/dataset1/capabilitylist.xml', '/dataset2/capabilitylist.xml'],
    );
  } finally {
    await e.close();
  }
});

void test('discover from a Capability List, a Resource List, and a Resource List part (walking index then up, §6.2)', async () => {
  const e = await env();
  try {
    publish(e);
    const o = e.s.origin;
    const cl = await e.run(`${o}/dataset1/capabilitylist.xml`);
    assert.equal(cl.start.kind, 'capability-list');
    assert.equal(cl.sourceDescription, `${o}/.well-known/resourcesync`);
    assert.deepEqual(
      cl.capabilityLists.map((c) => c.url),
      [`${o}/dataset1/capabilitylist.xml`],
    );

    const rl = await e.run(`${o}/dataset1/resourcelist.xml`);
    assert.equal(rl.start.kind, 'resource-list');
    assert.deepEqual(
      rl.capabilityLists.map((c) => c.url),
      [`${o}/dataset1/capabilitylist.xml`],
    );

    const part = await e.run(`${o}/dataset2/rl-part1.xml`);
    assert.equal(part.start.kind, 'resource-list');
    assert.deepEqual(part.capabilityLists[0]?.capabilities, { resourcelist: [`${o}/dataset2/resourcelist-index.xml`] });
    assert.ok(part.notes.some((n) => n.code === 'discovery-index' && n.data.index === `${o}/dataset2/resourcelist-index.xml`), JSON.stringify(part.notes));
  } finally {
    await e.close();
  }
});

void test('discover through robots.txt Sitemap directives (§6.3.4), skipping plain Sitemaps', async () => {
  const e = await env();
  try {
    publish(e);
    const o = e.s.origin;
    e.s.set('/sitemap.xml', {
      headers: { 'content-type': XML },
      body: `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>${o}/a</loc></url></urlset>`,
    });
    e.s.set('/robots.txt', {
      headers: { 'content-type': 'text/plain' },
      body: `User-agent: *\nDisallow: /cgi-bin/\n# Sitemap: ${o}/commented.xml\nSitemap: ${o}/sitemap.xml\nsitemap:/dataset1/resourcelist.xml\n`,
    });
    e.s.delete('/.well-known/resourcesync');
    const d = await e.run(`${o}/some/page`);
    assert.equal(d.start.kind, 'robots');
    assert.deepEqual(
      d.capabilityLists.map((c) => c.url),
      [`${o}/dataset1/capabilitylist.xml`],
    );
    assert.ok(d.warnings.some((n) => n.code === 'sitemap-ignored'), JSON.stringify(d.notes));
    assert.ok(!e.s.requests.some((r) => r.url === '/commented.xml'));
  } finally {
    await e.close();
  }
});

void test('discover through an HTTP Link header on any response, and an HTML <link> with a relative href (§6.3.3)', async () => {
  const e = await env();
  try {
    publish(e);
    const o = e.s.origin;
    e.s.set('/res1.pdf', {
      headers: {
        'content-type': 'application/pdf',
        link: `<${o}/next>; rel="next", </dataset1/capabilitylist.xml>; rel="describedby resourcesync"`,
      },
      body: '%PDF-1.4',
    });
    const viaHeader = await e.run(`${o}/res1.pdf`);
    assert.equal(viaHeader.start.kind, 'link-header');
    assert.deepEqual(
      viaHeader.capabilityLists.map((c) => c.url),
      [`${o}/dataset1/capabilitylist.xml`],
    );
    assert.ok(!e.s.requests.some((r) => r.url === '/next'));

    e.s.set('/dataset2/page.html', {
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body: '<!DOCTYPE html><html><head><!-- <link rel="resourcesync" href="/evil.xml"> --><link href=\'capabilitylist.xml\' rel="ResourceSync"/></head><body>x</body></html>',
    });
    e.s.set('/dataset2/page.xhtml', {
      headers: { 'content-type': 'application/xhtml+xml' },
      body: '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><head><link rel="resourcesync" href="capabilitylist.xml"/></head></html>',
    });
    const viaXhtml = await e.run(`${o}/dataset2/page.xhtml`);
    assert.equal(viaXhtml.start.kind, 'html');
    const viaHtml = await e.run(`${o}/dataset2/page.html`);
    assert.equal(viaHtml.start.kind, 'html');
    assert.deepEqual(
      viaHtml.capabilityLists.map((c) => c.url),
      [`${o}/dataset2/capabilitylist.xml`],
    );
    assert.ok(!e.s.requests.some((r) => r.url === '/evil.xml'));
  } finally {
    await e.close();
  }
});

void test('discover is bounded: loops are fetched once, the document limit holds, off-authority links are never fetched', async () => {
  const e = await env();
  try {
    const o = e.s.origin;
    const x = e.other.origin;
    // A Resource List whose up link points to itself, and a Capability List pointing to itself through index.
    e.s.set('/loop.xml', {
      headers: { 'content-type': XML },
      body: urlset(
        'resourcelist',
        [
          ['up', `${o}/loop.xml`],
          ['index', `${o}/loop.xml`],
        ],
        [],
      ),
    });
    const loop = await e.run(`${o}/loop.xml`);
    assert.equal(loop.capabilityLists[0]?.synthetic, true);
    assert.equal(e.s.requests.filter((r) => r.url === '/loop.xml').length, 1);

    // A chain of Source Description Index entries longer than the limit.
    for (let i = 0; i < 20; i++) {
      e.s.set(`/sd${i}.xml`, {
        headers: { 'content-type': XML },
        body: urlset('description', [], [[`${o}/sd${i + 1}.xml`, 'description']]),
      });
    }
    const chain = await e.run(`${o}/sd0.xml`, { maxDocuments: 5 }).catch((err: unknown) => err);
    assert.ok(isResourceSyncError(chain, 'RS_NOT_RESOURCESYNC'));
    assert.ok(e.s.requests.filter((r) => r.url.startsWith('/sd')).length <= 5);

    // Off-authority: Source Description, up link, Link header and HTML link pointing to another origin.
    e.other.set('/cl.xml', { headers: { 'content-type': XML }, body: urlset('capabilitylist', [], []) });
    e.s.set('/.well-known/resourcesync', {
      headers: { 'content-type': XML },
      body: urlset(
        'description',
        [],
        [
          [`${x}/cl.xml`, 'capabilitylist'],
          [`${o}/cl.xml`, 'capabilitylist'],
        ],
      ),
    });
    e.s.set('/cl.xml', {
      headers: { 'content-type': XML },
      body: urlset('capabilitylist', [['up', `${x}/sd.xml`]], [[`${o}/rl.xml`, 'resourcelist']]),
    });
    e.s.set('/rl.xml', { headers: { 'content-type': XML }, body: urlset('resourcelist', [['up', `${x}/cl.xml`]], []) });
    e.s.set('/page.html', {
      headers: { 'content-type': 'text/html', link: `<${x}/cl.xml>; rel=resourcesync` },
      body: `<link rel="resourcesync" href="${x}/cl.xml">`,
    });
    const sd = await e.run(`${o}/`);
    assert.deepEqual(
      sd.capabilityLists.map((c) => c.url),
      [`${o}/cl.xml`],
    );
    assert.ok(sd.warnings.some((n) => n.code === 'outside-authority'), JSON.stringify(sd.notes));
    const rl = await e.run(`${o}/rl.xml`);
    assert.equal(rl.capabilityLists[0]?.synthetic, true);
    // The page's links lead off-authority: discovery falls back to the origin's well-known URI.
    const page = await e.run(`${o}/page.html`);
    assert.deepEqual(
      page.capabilityLists.map((c) => c.url),
      [`${o}/cl.xml`],
    );
    assert.ok(page.warnings.some((n) => n.code === 'outside-authority' && n.data.url === `${x}/cl.xml`), JSON.stringify(page.notes));
    assert.deepEqual(e.other.requests, [], 'the other origin saw no request');
  } finally {
    await e.close();
  }
});

void test('robotsSitemaps and htmlResourceSyncLinks (Z39.99 Examples 9 and 11)', () => {
  assert.deepEqual(
    robotsSitemaps(
      'User-agent: *\nDisallow: /cgi-bin/\nDisallow: /tmp/\nSitemap: http://example.com/dataset1/resourcelist.xml\r\nSITEMAP: /x.xml # c\nSitemap: ftp://x/y',
      'http://example.com/robots.txt',
    ),
    ['http://example.com/dataset1/resourcelist.xml', 'http://example.com/x.xml'],
  );
  const html =
    '<html>\n <head>\n <link rel="resourcesync"\n href="http://www.example.com/dataset1/capabilitylist.xml"/>\n ...\n </head>\n <body>...</body>\n</html>';
  assert.deepEqual(htmlResourceSyncLinks(html, 'http://www.example.com/'), [
    'http://www.example.com/dataset1/capabilitylist.xml',
  ]);
  assert.deepEqual(
    htmlResourceSyncLinks(
      '<base href="http://b.example/d/"><LINK REL="alternate resourcesync" HREF=cl.xml?a=1&amp;b=2><link rel=stylesheet href=x.css><link rel="resourcesync" href="javascript:alert(1)">',
      'http://a.example/p',
    ),
    ['http://b.example/d/cl.xml?a=1&b=2'],
  );
});
