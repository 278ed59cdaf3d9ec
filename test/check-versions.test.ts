// `check` validates each document under the version of the standard it implies: a Change List timed by
// <lastmod> alone is a 1.0 document (its 1.0 rules apply), one that uses `datetime` a 1.1 document.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { check, type CheckReport } from '../src/check/check.js';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';

let server: TestServer;
let O: string;
const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;

before(async () => {
  server = await startTestServer();
  O = server.origin;
  const doc = (body: string): { body: string; headers: Record<string, string> } => ({
    body: `<?xml version="1.0" encoding="UTF-8"?>\n${body}\n`,
    headers: { 'content-type': 'application/xml' },
  });
  server.set(
    '/.well-known/resourcesync',
    doc(
      `<urlset ${NS}><rs:ln rel="describedby" href="${O}/about"/><rs:md capability="description"/><url><loc>${O}/cl.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`,
    ),
  );
  server.set(
    '/cl.xml',
    doc(
      `<urlset ${NS}><rs:ln rel="up" href="${O}/.well-known/resourcesync"/><rs:ln rel="describedby" href="${O}/about"/><rs:md capability="capabilitylist"/>` +
        `<url><loc>${O}/ch.xml</loc><rs:md capability="changelist"/></url></urlset>`,
    ),
  );
  // a 1.0 Change List (changes timed by lastmod), whose second change lies after its until: a 1.0 rule
  server.set(
    '/ch.xml',
    doc(
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="changelist" from="2013-01-02T00:00:00Z" until="2013-01-03T00:00:00Z"/>` +
        `<url><loc>${O}/a</loc><lastmod>2013-01-02T12:00:00Z</lastmod><rs:md change="created"/></url>` +
        `<url><loc>${O}/b</loc><lastmod>2013-01-04T12:00:00Z</lastmod><rs:md change="updated"/></url></urlset>`,
    ),
  );
});

after(async () => {
  await server.close();
});

async function run(): Promise<CheckReport> {
  const authority = createAuthority({ origins: [O] });
  const http = createHttpClient({ authority, retries: 0, env: {} });
  try {
    return await check({ url: `${O}/`, http, authority, rate: 0, sample: 0 });
  } finally {
    await http.close();
  }
}

void test('a Change List timed by lastmod is judged as 1.0', async () => {
  const report = await run();
  const ch = report.documents.find((d) => d.url === `${O}/ch.xml`);
  assert.equal(ch?.spec, '1.0');
  assert.deepEqual(
    report.issues.filter((i) => i.url === `${O}/ch.xml`).map((i) => i.code),
    ['lastmod-outside-interval'],
  );
});

void test('the same Change List with datetime attributes is judged as 1.1, by its datetimes', async () => {
  server.set('/ch.xml', {
    body:
      `<?xml version="1.0" encoding="UTF-8"?>\n<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="changelist" from="2013-01-02T00:00:00Z" until="2013-01-03T00:00:00Z"/>` +
      `<url><loc>${O}/a</loc><rs:md change="created" datetime="2013-01-02T12:00:00Z"/></url>` +
      `<url><loc>${O}/b</loc><rs:md change="updated" datetime="2013-01-04T12:00:00Z"/></url></urlset>\n`,
    headers: { 'content-type': 'application/xml' },
  });
  const report = await run();
  const ch = report.documents.find((d) => d.url === `${O}/ch.xml`);
  assert.equal(ch?.spec, '1.1');
  const issues = report.issues.filter((i) => i.url === `${O}/ch.xml`);
  assert.deepEqual(
    issues.map((i) => [i.code, i.severity]),
    [['datetime-outside-interval', 'error']],
  );
  assert.equal(report.conformant, false);
});
