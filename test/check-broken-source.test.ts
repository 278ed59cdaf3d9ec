// `check` against a deliberately broken Source on a real server: one planted defect per cross-document rule
// (and per package, discovery and resource rule); each is found, with its code, URL and section, and no
// error is reported that was not planted. Also the CLI: exit codes, --json and a self-contained --html page.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { check, type CheckReport } from '../src/check/check.js';
import { CHECK_CODES, CHECK_MESSAGES } from '../src/check/issues.js';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { yazlZip } from './helpers/dump-fixtures.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';
import { runCli as runCliProcess } from './helpers/mirror-check.js';

const md5 = (b: string | Uint8Array): string => createHash('md5').update(b).digest('hex');

let server: TestServer;
let O: string;

interface Doc {
  root?: 'urlset' | 'sitemapindex';
  md: string;
  ln?: Array<[rel: string, href: string]>;
  entries?: string[];
}

function xml(d: Doc): string {
  const root = d.root ?? 'urlset';
  const ln = (d.ln ?? []).map(([rel, href]) => `  <rs:ln rel="${rel}" href="${href}"/>\n`).join('');
  return (
    `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">\n` +
    `${ln}  <rs:md ${d.md}/>\n${(d.entries ?? []).join('\n')}\n</${root}>\n`
  );
}
const url = (loc: string, md = '', extra = ''): string =>
  `  <url><loc>${loc}</loc>${extra}${md === '' ? '' : `<rs:md ${md}/>`}</url>`;
const sitemap = (loc: string, md = ''): string =>
  `  <sitemap><loc>${loc}</loc>${md === '' ? '' : `<rs:md ${md}/>`}</sitemap>`;

const T = [
  '2026-01-01T00:00:00Z',
  '2026-01-02T00:00:00Z',
  '2026-01-03T00:00:00Z',
  '2026-01-04T00:00:00Z',
  '2026-01-05T00:00:00Z',
  '2026-01-06T00:00:00Z',
  '2026-01-07T00:00:00Z',
  '2026-01-08T00:00:00Z',
] as const;
const AT = '2026-01-02T12:00:00Z';
const R1 = 'resource one\n';
const R2 = 'resource two\n';
const R4 = 'resource four\n';

/** Each planted defect: the code it must raise and the URL (path) it must be reported on. */
const PLANTED: Array<[code: string, path: string]> = [
  ['document-unreachable', '/cl-b.xml'], // a Capability List of the Source Description that does not exist
  ['up-link-elsewhere', '/cl-c.xml'], // a Capability List that does not link back to its Source Description
  ['capability-duplicate', '/cl-c.xml'], // one capability per set (the validator's rule)
  ['capability-mismatch', '/not-a-changedump.xml'], // one capability per document
  ['up-link-elsewhere', '/rd.xml'], // a list whose up link points elsewhere
  ['changelists-gap', '/cli.xml'],
  ['changelists-overlap', '/cli.xml'],
  ['changelist-open-not-last', '/cli.xml'],
  ['changelist-interval-disagrees', '/cl5.xml'],
  ['index-link-elsewhere', '/cl5.xml'],
  ['archive-capability-mismatch', '/archived.xml'],
  ['archive-capability-mismatch', '/rl.xml'], // the current Resource List, reached first from its Capability List
  ['package-length-mismatch', '/rd-1.zip'],
  ['manifest-bitstream-missing', '/rd-1.zip#manifest.xml'],
  ['manifest-resourcelist-disagrees', '/rd-1.zip#manifest.xml'],
  ['robots-sitemap-unknown', '/robots.txt'],
  ['channel-hub-missing', '/cl-a.xml'], // a notification channel advertised without its hub
  ['resource-link-elsewhere', '/r1.txt'],
  ['resource-hash-mismatch', '/r2.txt'],
  ['resource-unreachable', '/r3.txt'],
  ['resource-length-mismatch', '/r4.txt'],
];

before(async () => {
  server = await startTestServer();
  O = server.origin;
  const s = server;
  const put = (path: string, d: Doc): void =>
    s.set(path, { body: xml(d), headers: { 'content-type': 'application/xml' } });
  put('/.well-known/resourcesync', {
    md: 'capability="description"',
    ln: [['describedby', `${O}/about.html`]],
    entries: [
      url(`${O}/cl-a.xml`, 'capability="capabilitylist"'),
      url(`${O}/cl-b.xml`, 'capability="capabilitylist"'),
      url(`${O}/cl-c.xml`, 'capability="capabilitylist"'),
    ],
  });
  s.set('/robots.txt', `User-agent: *\nSitemap: ${O}/.well-known/resourcesync\nSitemap: ${O}/forgotten-sitemap.xml\n`);
  const SD = `${O}/.well-known/resourcesync`;
  put('/cl-a.xml', {
    md: 'capability="capabilitylist"',
    ln: [
      ['up', SD],
      ['describedby', `${O}/about-a.html`],
    ],
    entries: [
      url(`${O}/rl.xml`, 'capability="resourcelist"'),
      url(`${O}/rd.xml`, 'capability="resourcedump"'),
      url(`${O}/cli.xml`, 'capability="changelist"'),
      url(`${O}/cla.xml`, 'capability="changelist-archive"'),
      url(`${O}/not-a-changedump.xml`, 'capability="changedump"'),
      url(`${O}/change/`, 'capability="change-notification"'),
    ],
  });
  const CLA = `${O}/cl-a.xml`;
  put('/cl-c.xml', {
    md: 'capability="capabilitylist"',
    ln: [
      ['up', `${O}/some-other-description.xml`],
      ['describedby', `${O}/about-c.html`],
    ],
    entries: [url(`${O}/rl-c1.xml`, 'capability="resourcelist"'), url(`${O}/rl-c2.xml`, 'capability="resourcelist"')],
  });
  for (const p of ['/rl-c1.xml', '/rl-c2.xml'])
    put(p, { md: `capability="resourcelist" at="${AT}"`, ln: [['up', `${O}/cl-c.xml`]] });
  put('/not-a-changedump.xml', { md: `capability="resourcelist" at="${AT}"`, ln: [['up', CLA]] });

  // Resource List: r1 (Link header elsewhere), r2 (hash wrong), r3 (404), r4 (length wrong, no hash: HEAD)
  put('/rl.xml', {
    md: `capability="resourcelist" at="${AT}" completed="${AT}"`,
    ln: [['up', CLA]],
    entries: [
      url(`${O}/r1.txt`, `hash="md5:${md5(R1)}" length="${R1.length}"`),
      url(`${O}/r2.txt`, `hash="md5:${md5('something else')}" length="${R2.length}"`),
      url(`${O}/r3.txt`, `length="3"`),
      url(`${O}/r4.txt`, `length="${R4.length + 5}"`),
    ],
  });
  s.set('/r1.txt', { body: R1, headers: { link: `<${O}/not-a-capability-list.xml>; rel="resourcesync"` } });
  s.set('/r2.txt', { body: R2, headers: { link: `<${CLA}>; rel="resourcesync"` } });
  s.set('/r4.txt', R4);
  // the channel's topic URL answers, but without WebSub's rel="hub" discovery link
  s.set('/change/', { body: '', headers: { link: `<${O}/change/>; rel="self"` } });

  // Resource Dump: the package's length is wrong; its manifest names a missing bitstream and disagrees with the Resource List on r4
  const manifest = xml({
    md: `capability="resourcedump-manifest" at="${AT}" completed="${AT}"`,
    ln: [['up', CLA]],
    entries: [
      url(`${O}/r1.txt`, `hash="md5:${md5(R1)}" length="${R1.length}" path="/resources/r1.txt"`),
      url(`${O}/r2.txt`, `length="${R2.length}" path="/resources/not-in-the-zip.txt"`),
      url(`${O}/r4.txt`, `length="${R4.length}" path="/resources/r4.txt"`),
    ],
  });
  const zip = await yazlZip([
    { name: 'manifest.xml', data: manifest },
    { name: 'resources/r1.txt', data: R1 },
    { name: 'resources/r4.txt', data: R4 },
  ]);
  s.set('/rd-1.zip', { body: zip, headers: { 'content-type': 'application/zip' } });
  put('/rd.xml', {
    md: `capability="resourcedump" at="${AT}" completed="${AT}"`,
    ln: [['up', `${O}/cl-c.xml`]],
    entries: [url(`${O}/rd-1.zip`, `type="application/zip" length="${zip.length + 1}" hash="md5:${md5(zip)}"`)],
  });

  // Change List Index: cl1 [T0,T1], cl2 [T2,T3] (gap), cl3 [T2,T4] (overlap), cl4 open (not last), cl5 (interval and index link wrong)
  const intervals: Array<[string, string, string | undefined]> = [
    ['/cl1.xml', T[0], T[1]],
    ['/cl2.xml', T[2], T[3]],
    ['/cl3.xml', T[2], T[4]],
    ['/cl4.xml', T[4], undefined],
    ['/cl5.xml', T[5], T[6]],
  ];
  const span = (from: string, until: string | undefined): string =>
    `from="${from}"${until === undefined ? '' : ` until="${until}"`}`;
  put('/cli.xml', {
    root: 'sitemapindex',
    md: `capability="changelist" from="${T[0]}"`,
    ln: [['up', CLA]],
    entries: intervals.map(([p, f, u]) => sitemap(`${O}${p}`, span(f, u))),
  });
  for (const [p, f, u] of intervals) {
    const own = p === '/cl5.xml' ? span(f, T[7]) : span(f, u);
    put(p, {
      md: `capability="changelist" ${own}`,
      ln: [
        ['up', CLA],
        ['index', p === '/cl5.xml' ? `${O}/another-index.xml` : `${O}/cli.xml`],
      ],
    });
  }
  // Change List Archive lists a Resource List, and the current Resource List too
  put('/cla.xml', {
    md: 'capability="changelist-archive"',
    ln: [['up', CLA]],
    entries: [
      url(`${O}/cl1.xml`, span(T[0], T[1])),
      url(`${O}/archived.xml`, span(T[1], T[2])),
      url(`${O}/rl.xml`, span(T[2], T[3])),
    ],
  });
  put('/archived.xml', { md: `capability="resourcelist" at="${T[2]}"`, ln: [['up', CLA]] });
});

after(async () => {
  await server.close();
});

async function runCheck(start: string, sample = 300): Promise<CheckReport> {
  const authority = createAuthority({ origins: [new URL(start).origin] });
  const http = createHttpClient({ authority, retries: 0, env: {} });
  try {
    return await check({ url: start, http, authority, sample, rate: 0 });
  } finally {
    await http.close();
  }
}

void test('every planted defect is found where it was planted, and no error that was not planted', async () => {
  const report = await runCheck(`${O}/`);
  const found = report.issues.map((i) => `${i.code} ${i.url.replace(O, '')}`);
  for (const [code, path] of PLANTED)
    assert.ok(found.includes(`${code} ${path}`), `${code} at ${path}; found:\n${found.join('\n')}`);
  const errors = report.issues.filter((i) => i.severity === 'error').map((i) => `${i.code} ${i.url.replace(O, '')}`);
  const planted = new Set(PLANTED.map(([c, p]) => `${c} ${p}`));
  assert.deepEqual(
    errors.filter((e) => !planted.has(e)),
    [],
    'errors that were not planted',
  );
  assert.equal(report.conformant, false);
  // each reported issue carries its section as the table gives it
  for (const i of report.issues) {
    if ((CHECK_CODES as readonly string[]).includes(i.code))
      assert.equal(i.section, CHECK_MESSAGES[i.code as (typeof CHECK_CODES)[number]].section);
    assert.ok(i.section.length > 0 && i.message.length > 0, i.code);
  }
  // the crawl went down to every document, package and manifest
  const kinds = new Map(report.documents.map((d) => [d.url.replace(O, ''), d.kind]));
  assert.equal(kinds.get('/cli.xml'), 'change-list-index');
  assert.equal(kinds.get('/cl5.xml'), 'change-list');
  assert.equal(kinds.get('/rd-1.zip'), 'package');
  assert.equal(kinds.get('/rd-1.zip#manifest.xml'), 'resource-dump-manifest');
  assert.equal(report.documents.find((d) => d.url === `${O}/cl-b.xml`)?.status, 404);
  assert.equal(report.resources, 4);
  assert.equal(report.sampled, 4);
  assert.equal(report.linkHeaders, 2);
  assert.equal(kinds.get('/change/'), 'notification-channel');
  const channel = report.issues.find((i) => i.code === 'channel-discovery-missing');
  assert.equal(channel?.severity, 'warning');
  assert.match(channel.message, /rel="hub"/);
});

void test('the sample is bounded: --sample 2 fetches two of the four resources', async () => {
  const before = server.requests.length;
  const report = await runCheck(`${O}/`, 2);
  assert.equal(report.sampled, 2);
  const fetched = server.requests.slice(before).filter((r) => /^\/r\d\.txt$/.test(r.url));
  assert.equal(fetched.length, 2);
});

void test('an HTML page whose rel="resourcesync" links lead elsewhere is reported', async () => {
  server.set('/page.html', {
    body: `<!DOCTYPE html><html><head><title>p</title><link rel="resourcesync" href="${O}/cl-a.xml"><link rel="resourcesync" href="${O}/rl.xml"></head><body></body></html>`,
    headers: { 'content-type': 'text/html; charset=utf-8' },
  });
  try {
    const report = await runCheck(`${O}/page.html`, 0);
    const html = report.issues.filter((i) => i.code === 'html-link-elsewhere');
    assert.deepEqual(
      html.map((i) => [i.url, i.severity, i.message.includes(`${O}/rl.xml`)]),
      [[`${O}/page.html`, 'warning', true]],
    );
  } finally {
    server.delete('/page.html');
  }
});

void test('a well-known URI that holds no Source Description is an error', async () => {
  const s = await startTestServer();
  try {
    const cl = xml({ md: 'capability="capabilitylist"', ln: [['up', `${s.origin}/sd.xml`]], entries: [] });
    s.set('/.well-known/resourcesync', cl);
    s.set('/cl.xml', cl);
    s.set(
      '/sd.xml',
      xml({ md: 'capability="description"', entries: [url(`${s.origin}/cl.xml`, 'capability="capabilitylist"')] }),
    );
    const report = await runCheck(`${s.origin}/sd.xml`);
    assert.ok(
      report.issues.some((i) => i.code === 'well-known-not-description' && i.severity === 'error'),
      JSON.stringify(report.issues),
    );
  } finally {
    await s.close();
  }
});

/** The CLI as a child process (bounded in time), its exit code as `code`. */
async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runCliProcess(args);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

void test('CLI: exit 1 with --json (issues with code, severity, url, section) and a self-contained --html page', async () => {
  const { dir, cleanup } = await tempDir('rs-check-cli-');
  try {
    const html = join(dir, 'report.html');
    const r = await runCli(['check', `${O}/`, '--json', '--html', html, '--rate', '0']);
    assert.equal(r.code, 1, r.stderr);
    const report = JSON.parse(r.stdout) as CheckReport;
    assert.ok(report.documents.length >= 15);
    const gap = report.issues.find((i) => i.code === 'changelists-gap');
    assert.ok(gap !== undefined);
    assert.equal(gap.severity, 'error');
    assert.equal(gap.url, `${O}/cli.xml`);
    assert.equal(gap.section, 'Z39.99 §12.2');
    assert.equal(typeof gap.line, 'number');
    const page = await readFile(html, 'utf8');
    assert.match(page, /^<!DOCTYPE html>/);
    assert.match(page, /<style>/);
    assert.doesNotMatch(page, /<script|<link|\ssrc=|@import|url\(/i, 'no external asset');
    assert.ok(page.includes('changelists-gap') && page.includes('not conformant'));
    // a crafted URL is escaped, never markup
    assert.doesNotMatch(page, /<loc>/);
    // terminal summary
    const text = await runCli(['check', `${O}/`, '--sample', '0', '--rate', '0']);
    assert.equal(text.code, 1);
    assert.match(text.stdout, /NOT CONFORMANT/);
    assert.match(text.stdout, /error changelists-overlap: /);
  } finally {
    await cleanup();
  }
});

void test('CLI: exit 3 when the Source cannot be reached or is not a Source; 2 on usage errors', async () => {
  const s = await startTestServer();
  const origin = s.origin;
  s.set('/', '<html><body>nothing here</body></html>');
  try {
    const notSource = await runCli(['check', `${origin}/`, '--rate', '0']);
    assert.equal(notSource.code, 3, notSource.stderr);
    assert.match(notSource.stderr, /no Capability List/);
  } finally {
    await s.close();
  }
  // port 1: nothing listens there (the closed server's port may already serve another test file's Source)
  const closed = await runCli(['check', 'http://127.0.0.1:1/', '--rate', '0', '--timeout', '2000', '--json']);
  assert.equal(closed.code, 3, closed.stderr);
  assert.match(closed.stdout, /"error":\{"code":"RS_/);
  assert.equal((await runCli(['check'])).code, 2);
  assert.equal((await runCli(['check', 'ftp://x/'])).code, 2);
  assert.equal((await runCli(['check', `${origin}/`, '--sample', 'many'])).code, 2);
});
