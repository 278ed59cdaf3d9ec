// The explorer page (src/web): its JSON API over HTTP (tree, paging, search and its scan limit, time line,
// packages, check, refusals of URLs outside the Source, escaping), `explore --web` as a process, and the page
// itself in headless Chromium (Playwright) against our own published Source, a hostile Source and `serve`'s
// /.resourcesync/ui/. Screenshots go to test-artifacts/.
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { createAuthority, type Authority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import { listen, type Listener } from '../src/notify/node-listener.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { serve, type RunningServer } from '../src/server/node-adapter.js';
import { publish } from '../src/source/publish.js';
import { createExplorerHandler, type ExplorerOptions } from '../src/web/explorer.js';
import type { EntriesPage } from '../src/web/entries.js';
import type { PackagePage } from '../src/web/packages.js';
import type { TimelinePage } from '../src/web/timeline.js';
import type { CheckReport } from '../src/check/check.js';
import type { ExploreResult, TreeNode } from '../src/check/explore.js';
import { ARTIFACTS, launchChromium, noBrowser } from './helpers/browser.js';
import { CLI } from './helpers/mirror-check.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { tempDir } from './helpers/tmp.js';
import { startServe } from './helpers/serve-child.js';
import { TestSubscriber } from './helpers/websub-subscriber.js';
import type { ChannelSummary } from '../src/web/explorer.js';
import { setTimeout as sleep } from 'node:timers/promises';

const FILES = 250;
const name = (i: number): string => `f${String(i).padStart(3, '0')}.txt`;

let tmp: { dir: string; cleanup: () => Promise<void> };
let source: RunningServer;
const sourceAbort = new AbortController();
let hostile: TestServer;
const explorers: Array<{ listener: Listener; close: () => Promise<void> }> = [];
const children: ChildProcess[] = [];

type Tree = ExploreResult & { source: string; crawledAt: number; channels: boolean };

/** Starts an explorer for `start` on 127.0.0.1 port 0. */
async function startExplorer(start: string, extra: Partial<ExplorerOptions> = {}): Promise<string> {
  const authority: Authority = createAuthority({ origins: [new URL(start).origin] });
  const http = createHttpClient({ authority, retries: 0, env: {} });
  const handler = createExplorerHandler({ source: start, http, authority, rate: 0, checkSample: 20, ...extra });
  const listener = await listen(handler, { port: 0 });
  explorers.push({ listener, close: () => http.close() });
  return `${listener.url}${extra.basePath ?? '/'}`;
}

async function getJson<T>(url: string): Promise<{ status: number; body: T; headers: Headers }> {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, body: (await res.json()) as T };
}

function find(nodes: readonly TreeNode[], kind: string): TreeNode | undefined {
  for (const n of nodes) {
    if (n.kind === kind) return n;
    const c = find(n.children, kind);
    if (c !== undefined) return c;
  }
  return undefined;
}

let ui: string; // explorer of our own Source
let tree: Tree;
let resourceList: string;

before(async () => {
  tmp = await tempDir('rs-web-');
  const site = join(tmp.dir, 'site');
  const out = join(tmp.dir, 'out');
  const state = join(tmp.dir, 'state');
  await mkdir(site, { recursive: true });
  for (let i = 0; i < FILES; i++) await writeFile(join(site, name(i)), `file ${i}\n`);
  const live: { core?: SourceResponder } = {};
  const front: ResponderHandler = (req) => live.core?.(req) ?? { status: 503, headers: { 'content-length': '0' } };
  source = await serve(front, { port: 0, signal: sourceAbort.signal });
  const options = { sets: [{ name: 'site', dir: site }], baseUrl: source.url, outDir: out, stateDir: state, dumps: true };
  let now = Date.parse('2026-01-01T00:00:00Z');
  await publish({ ...options, now: () => now });
  // 12 changes on the time line: 5 updated, 4 created, 3 deleted.
  for (let i = 0; i < 5; i++) await writeFile(join(site, name(i)), `changed ${i}\n`);
  for (let i = 0; i < 4; i++) await writeFile(join(site, `new${i}.txt`), `new ${i}\n`);
  for (let i = 0; i < 3; i++) await rm(join(site, name(FILES - 1 - i)));
  now += 3_600_000;
  await publish({ ...options, now: () => now });
  live.core = createSourceResponder({ sets: [{ name: 'site', dir: site }], outDir: out, baseUrl: source.url });

  hostile = await startTestServer();
  const O = hostile.origin;
  const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
  const xml = (body: string): string => `<?xml version="1.0" encoding="UTF-8"?>\n${body}`;
  hostile.set('/.well-known/resourcesync', { body: xml(`<urlset ${NS}><rs:md capability="description"/><url><loc>${O}/cl.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`), headers: { 'content-type': 'application/xml' } });
  hostile.set('/cl.xml', { body: xml(`<urlset ${NS}><rs:ln rel="up" href="${O}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/><url><loc>${O}/rl.xml</loc><rs:md capability="resourcelist"/></url></urlset>`), headers: { 'content-type': 'application/xml' } });
  hostile.set('/rl.xml', {
    body: xml(
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
        `<url><loc>${O}/&lt;img src=x onerror="window.__pwned=1"&gt;</loc></url>` +
        `<url><loc>javascript:window.__pwned=2</loc></url>` +
        `<url><loc>${O}/&lt;script&gt;window.__pwned=3&lt;/script&gt;</loc><rs:md type="&lt;b&gt;bold&lt;/b&gt;"/></url></urlset>`,
    ),
    headers: { 'content-type': 'application/xml' },
  });

  ui = await startExplorer(`${source.url}/`);
  const r = await getJson<Tree>(`${ui}api/tree`);
  assert.equal(r.status, 200);
  tree = r.body;
  resourceList = find(tree.roots, 'resource-list')!.url;
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const e of explorers) {
    await e.listener.close();
    await e.close();
  }
  sourceAbort.abort();
  await source.closed;
  await hostile.close();
  await tmp.cleanup();
});

describe('JSON API', () => {
  void test('the page and its assets: same-origin CSP, no Source data in the HTML', async () => {
    const res = await fetch(ui);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^text\/html/);
    assert.match(res.headers.get('content-security-policy')!, /default-src 'self'/);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    const html = await res.text();
    assert.ok(!html.includes(source.url), 'the HTML shell carries nothing of the Source');
    assert.doesNotMatch(html, /<script>|https?:\/\//, 'no inline script, no external asset');
    for (const [asset, type] of [['app.js', 'text/javascript'], ['app.css', 'text/css']] as const) {
      const a = await fetch(`${ui}${asset}`);
      assert.equal(a.status, 200);
      assert.ok(a.headers.get('content-type')!.startsWith(type));
      assert.doesNotMatch(await a.text(), /innerHTML|outerHTML|insertAdjacentHTML|document\.write/);
    }
    assert.equal((await fetch(`${ui}nothing`)).status, 404);
    assert.equal((await fetch(`${ui}api/nothing`)).status, 404);
    assert.equal((await fetch(`${ui}api/tree`, { method: 'POST' })).status, 405);
  });

  void test('the tree has the Source Description, the Capability List and its documents', () => {
    assert.equal(tree.source, `${source.url}/`);
    const sd = tree.roots[0]!;
    assert.equal(sd.kind, 'source-description');
    const cl = sd.children[0]!;
    assert.equal(cl.kind, 'capability-list');
    const kinds = new Set(cl.children.map((c) => c.kind));
    for (const k of ['resource-list', 'change-list', 'resource-dump']) assert.ok(kinds.has(k), `${k} in ${[...kinds].join(', ')}`);
    assert.equal(find(tree.roots, 'resource-list')!.entries, FILES + 4 - 3);
    assert.ok(find(tree.roots, 'package'), 'the dump lists its package');
  });

  void test('entries are paged: 100 a page, disjoint pages, the last one short, with the total', async () => {
    const total = FILES + 4 - 3;
    const pages: EntriesPage[] = [];
    for (let page = 0; page < 3; page++) {
      const r = await getJson<EntriesPage>(`${ui}api/entries?doc=${encodeURIComponent(resourceList)}&page=${page}`);
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type')!, /^application\/json/);
      pages.push(r.body);
    }
    assert.deepEqual(pages.map((p) => p.entries.length), [100, 100, total - 200]);
    assert.deepEqual(pages.map((p) => p.more), [true, true, false]);
    assert.equal(pages[0]!.kind, 'resource-list');
    assert.equal(pages[0]!.total, undefined, 'the first page does not read the whole list');
    assert.equal(pages[0]!.listed, total, 'the count the crawl found');
    assert.equal(pages[2]!.total, total);
    const locs = pages.flatMap((p) => p.entries.map((e) => e.loc));
    assert.equal(new Set(locs).size, total, 'no entry twice');
    assert.deepEqual(pages.flatMap((p) => p.entries.map((e) => e.position)), [...Array(total).keys()]);
    const beyond = await getJson<EntriesPage>(`${ui}api/entries?doc=${encodeURIComponent(resourceList)}&page=9`);
    assert.deepEqual([beyond.status, beyond.body.entries.length, beyond.body.more], [200, 0, false]);
  });

  void test('search filters by URL; a search past the scan limit says so', async () => {
    const r = await getJson<EntriesPage>(`${ui}api/entries?doc=${encodeURIComponent(resourceList)}&q=F01`);
    assert.deepEqual(
      r.body.entries.map((e) => e.loc),
      [...Array(10).keys()].map((i) => `${source.url}/${name(10 + i)}`),
    );
    assert.equal(r.body.total, 10);
    assert.equal(r.body.scanLimitHit, false);
    const limited = await startExplorer(`${source.url}/`, { scanLimit: 120 });
    const l = await getJson<EntriesPage>(`${limited}api/entries?doc=${encodeURIComponent(resourceList)}&q=f2`);
    assert.equal(l.body.scanned, 120);
    assert.equal(l.body.scanLimitHit, true);
    assert.deepEqual(l.body.entries, []);
    assert.equal(l.body.total, undefined);
  });

  void test('bad parameters are refused (400), URLs outside the Source too (403): no open proxy', async () => {
    const other = await startTestServer(); // the same host on another port: another origin
    other.set('/secret.xml', 'secret');
    try {
      const cases: Array<[string, number, string]> = [
        ['api/entries', 400, 'RS_INVALID_ARGUMENT'],
        [`api/entries?doc=${encodeURIComponent(resourceList)}&page=-1`, 400, 'RS_INVALID_ARGUMENT'],
        [`api/entries?doc=${encodeURIComponent(resourceList)}&page=abc`, 400, 'RS_INVALID_ARGUMENT'],
        [`api/entries?doc=${encodeURIComponent(resourceList)}&page=99999999`, 400, 'RS_INVALID_ARGUMENT'],
        [`api/entries?doc=${encodeURIComponent(resourceList)}&q=${'x'.repeat(201)}`, 400, 'RS_INVALID_ARGUMENT'],
        ['api/entries?doc=file%3A%2F%2F%2Fetc%2Fpasswd', 400, 'RS_INVALID_ARGUMENT'],
        ['api/entries?doc=relative.xml', 400, 'RS_INVALID_ARGUMENT'],
        ['api/entries?doc=http%3A%2F%2Fexample.org%2Fa.xml', 403, 'RS_AUTHORITY'],
        [`api/entries?doc=${encodeURIComponent(`${other.origin}/secret.xml`)}`, 403, 'RS_AUTHORITY'],
        [`api/package?doc=${encodeURIComponent(`${other.origin}/secret.xml`)}`, 403, 'RS_AUTHORITY'],
        [`api/entries?doc=${encodeURIComponent(`${source.url}/missing.xml`)}`, 502, 'RS_HTTP_STATUS'],
      ];
      for (const [path, status, code] of cases) {
        const r = await getJson<{ error: { code: string; message: string } }>(`${ui}${path}`);
        assert.equal(r.status, status, path);
        assert.equal(r.body.error.code, code, path);
      }
      assert.equal(other.requests.length, 0, 'nothing was fetched from the other origin');
    } finally {
      await other.close();
    }
  });

  void test('a Source that cannot be read gives 502 with its error code, and the page still loads', async () => {
    const empty = await startTestServer();
    try {
      const e = await startExplorer(`${empty.origin}/`);
      assert.equal((await fetch(e)).status, 200);
      const r = await getJson<{ error: { code: string; message: string } }>(`${e}api/tree`);
      assert.equal(r.status, 502);
      assert.match(r.body.error.code, /^RS_/);
      const c = await getJson<{ error: { code: string } }>(`${e}api/changes`);
      assert.equal(c.status, 502, 'the time line needs the tree');
    } finally {
      await empty.close();
    }
  });

  void test('the time line lists the changes, most recent first, with their type', async () => {
    const r = await getJson<TimelinePage>(`${ui}api/changes`);
    assert.equal(r.status, 200);
    assert.equal(r.body.lists, 1);
    assert.equal(r.body.total, 12);
    assert.equal(r.body.entries.length, 12);
    const count = (c: string): number => r.body.entries.filter((e) => e.change === c).length;
    assert.deepEqual([count('updated'), count('created'), count('deleted')], [5, 4, 3]);
    const times = r.body.entries.map((e) => Date.parse(e.datetime!));
    assert.deepEqual(times, [...times].sort((a, b) => b - a), 'most recent first');
    const two = await startExplorer(`${source.url}/`, { pageSize: 5 });
    const p0 = await getJson<TimelinePage>(`${two}api/changes?page=0`);
    const p2 = await getJson<TimelinePage>(`${two}api/changes?page=2`);
    assert.deepEqual([p0.body.entries.length, p0.body.more, p2.body.entries.length, p2.body.more], [5, true, 2, false]);
    assert.deepEqual(p0.body.entries.map((e) => e.loc), r.body.entries.slice(0, 5).map((e) => e.loc));
    assert.deepEqual(p2.body.entries.map((e) => e.loc), r.body.entries.slice(10).map((e) => e.loc));
  });

  void test('a package: its files and its manifest, paged', async () => {
    const pkg = find(tree.roots, 'package')!;
    const r = await getJson<PackagePage>(`${ui}api/package?doc=${encodeURIComponent(pkg.url)}`);
    assert.equal(r.status, 200);
    assert.equal(r.body.bytes, pkg.bytes);
    assert.equal(r.body.manifest!.kind, 'resource-dump-manifest');
    assert.equal(r.body.manifest!.entries.length, 100);
    assert.ok(r.body.manifest!.entries.every((e) => e.md?.path !== undefined), 'each manifest entry has its path in the package');
    const last = await getJson<PackagePage>(`${ui}api/package?doc=${encodeURIComponent(pkg.url)}&page=2`);
    const total = last.body.manifest!.total!;
    assert.ok(total >= FILES - 3, `the manifest lists every resource of its dump (${total})`);
    assert.equal(r.body.files, total + 1, 'every resource and manifest.xml');
    assert.equal(last.body.manifest!.entries.length, total - 200);
  });

  void test('check runs and reports a conformant Source', async () => {
    const r = await getJson<CheckReport>(`${ui}api/check`);
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.issues.filter((i) => i.severity === 'error'), []);
    assert.equal(r.body.conformant, true);
    assert.equal(r.body.sampled, 20);
  });

  void test('Source text comes back as JSON data, never as markup', async () => {
    const h = await startExplorer(`${hostile.origin}/`);
    const r = await fetch(`${h}api/entries?doc=${encodeURIComponent(`${hostile.origin}/rl.xml`)}`);
    assert.match(r.headers.get('content-type')!, /^application\/json/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    const body = (await r.json()) as EntriesPage;
    assert.equal(body.entries[0]!.loc, `${hostile.origin}/<img src=x onerror="window.__pwned=1">`);
  });

  void test('explore --web serves the page until SIGTERM (exit 0); usage errors exit 2', async () => {
    const child = spawn(process.execPath, [CLI, 'explore', '--web', `${source.url}/`, '--port', '0', '--rate', '0'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no 'listening on' line within 60 s: ${out}`)), 60_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^listening on (http:\/\/127\.0\.0\.1:\d+\/)\n/m.exec(out);
        if (m !== null) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    const r = await getJson<Tree>(`${url}api/tree`);
    assert.equal(r.status, 200);
    assert.equal(r.body.roots[0]!.kind, 'source-description');
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    for (const args of [['explore', '--web', `${source.url}/`, '--json'], ['explore', `${source.url}/`, '--port', '1'], ['explore', '--web', `${source.url}/`, '--port', '70000']]) {
      const c = spawn(process.execPath, [CLI, ...args], { stdio: 'ignore' });
      children.push(c);
      assert.equal(await new Promise((resolve) => c.on('close', resolve)), 2, args.join(' '));
    }
  });
});

describe('in Chromium', () => {
  const skip = noBrowser();
  let browser: Awaited<ReturnType<typeof launchChromium>> | undefined;
  before(async () => {
    if (skip === undefined) browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
  });

  /** Opens a page; `done` closes it and asserts that no script error or CSP violation happened. */
  async function open(url: string): Promise<{ page: Page; done: () => Promise<void> }> {
    const page = await browser!.context.newPage();
    const failures: string[] = [];
    page.on('pageerror', (e) => failures.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') failures.push(m.text());
    });
    await page.goto(url);
    return {
      page,
      done: async () => {
        await page.close();
        assert.deepEqual(failures, [], 'no script error, no failed request, no CSP violation');
      },
    };
  }

  async function shot(t: TestContext, page: Page, file: string): Promise<void> {
    const path = join(ARTIFACTS, file);
    await page.screenshot({ path, fullPage: false });
    t.diagnostic(`screenshot: ${path}`);
  }

  void test('the tree, a Resource List, its next page, a search, the time line and a check report', async (t) => {
    if (skip !== undefined) return t.skip(skip);
    const { page, done } = await open(ui);
    await page.locator('.doc[data-kind="capability-list"]').waitFor();
    const kinds = await Promise.all((await page.locator('.doc').all()).map((d) => d.getAttribute('data-kind')));
    for (const k of ['source-description', 'capability-list', 'resource-list', 'change-list', 'resource-dump', 'package'])
      assert.ok(kinds.includes(k), `${k} in the tree: ${kinds.join(', ')}`);
    assert.equal(await page.locator('#source').textContent(), `${source.url}/`);

    await page.locator(`.doc[data-url="${resourceList}"]`).click();
    const rows = page.locator('#entries tbody tr');
    await page.locator('#page-info').filter({ hasText: 'entries 1–100' }).waitFor();
    assert.equal(await rows.count(), 100);
    assert.match((await page.locator('#doc-facts').textContent())!, /; 251 entries$/);
    const firstOfPage1 = await rows.first().locator('td.loc').textContent();
    assert.equal(firstOfPage1, `/${name(0)}`, 'a URL of the Source is shown as its path');
    assert.equal(await rows.first().locator('td.loc a').getAttribute('href'), `${source.url}/${name(0)}`);
    await shot(t, page, 'explorer-resource-list.png');

    await page.locator('#next').click();
    await page.locator('#page-info').filter({ hasText: 'entries 101–200' }).waitFor();
    const firstOfPage2 = await rows.first().locator('td.loc').textContent();
    assert.notEqual(firstOfPage2, firstOfPage1);
    assert.equal(firstOfPage2, `/${name(100)}`);
    assert.equal(await page.locator('#prev').isVisible(), true);

    await page.locator('#q').fill('f01');
    await page.locator('#search button').click();
    await page.locator('#doc-facts').filter({ hasText: '10 matching entries' }).waitFor();
    assert.equal(await rows.count(), 10);
    assert.ok((await rows.locator('td.loc').allTextContents()).every((l) => l.includes('f01')));

    await page.locator('#tab-timeline').click();
    await page.locator('#timeline tbody tr').first().waitFor();
    assert.equal(await page.locator('#timeline tbody tr').count(), 12);
    assert.equal(await page.locator('#timeline tr.change-deleted').count(), 3);
    assert.match((await page.locator('#tl-info').textContent())!, /^12 changes in 1 Change List/);
    await shot(t, page, 'explorer-timeline.png');

    await page.locator('#tab-check').click();
    await page.locator('#run-check').click();
    await page.locator('#verdict').waitFor({ timeout: 60_000 });
    assert.equal(await page.locator('#verdict').textContent(), 'conformant');
    assert.equal(await page.locator('#check-report td.error').count(), 0, 'no error in the report');
    await shot(t, page, 'explorer-check.png');

    await page.locator('.doc[data-kind="package"]').first().click();
    await page.locator('#doc-facts').filter({ hasText: 'resource-dump-manifest' }).waitFor();
    assert.equal(await rows.count(), 100);
    await done();
  });

  void test('a hostile Source: its text is shown as text, no script runs, javascript: is not a link', async (t) => {
    if (skip !== undefined) return t.skip(skip);
    const h = await startExplorer(`${hostile.origin}/`);
    const { page, done } = await open(h);
    await page.locator('.doc[data-kind="resource-list"]').click();
    await page.locator('#entries tbody tr').nth(2).waitFor();
    const locs = await page.locator('#entries td.loc').allTextContents();
    assert.deepEqual(locs, [
      '/<img src=x onerror="window.__pwned=1">',
      'javascript:window.__pwned=2',
      '/<script>window.__pwned=3</script>',
    ]);
    assert.equal(await page.locator('#entries img, #entries script, #entries b').count(), 0);
    assert.equal(await page.locator('#entries a[href^="javascript:"]').count(), 0);
    assert.equal(await page.evaluate('window.__pwned'), undefined);
    await done();
  });

  void test("serve's /.resourcesync/ui/ shows its own tree and its notification channels", async (t) => {
    if (skip !== undefined) return t.skip(skip);
    const site = join(tmp.dir, 'served');
    await mkdir(site, { recursive: true });
    await writeFile(join(site, 'a.txt'), 'alpha\n');
    const { child, url } = await startServe([site, '--state', join(tmp.dir, 'served-state')], 60_000);
    children.push(child);
    // A subscriber of the change channel, verified by the embedded hub, shows up in the channels summary, its
    // callback without the token in its query.
    const topic = `${url}/.resourcesync/served/change-notification/`;
    const sub = await TestSubscriber.start();
    try {
      const res = await fetch(`${url}/hub`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ 'hub.mode': 'subscribe', 'hub.topic': topic, 'hub.callback': `${sub.url}/cn?token=T0P-S3CRET` }).toString(),
      });
      assert.equal(res.status, 202);
      await res.arrayBuffer();
      let summary: ChannelSummary | undefined;
      let raw = '';
      const deadline = Date.now() + 60_000; // polled: verification may take a while on a busy machine
      for (let i = 0; i < 1000 && summary?.subscriptions?.[0]?.state !== 'verified' && (i === 0 || Date.now() < deadline); i++) {
        if (i > 0) await sleep(100);
        const r = await fetch(`${url}/.resourcesync/ui/api/channels`);
        raw = await r.text();
        summary = JSON.parse(raw) as ChannelSummary;
      }
      assert.equal(summary!.hub, `${url}/hub`);
      assert.doesNotMatch(raw, /T0P-S3CRET/, 'no query token in the summary');
      assert.deepEqual(
        summary!.subscriptions!.map((x) => [x.topic, x.callback, x.state, x.failures]),
        [[topic, `${sub.url}/cn?…`, 'verified', 0]],
      );
      assert.equal(summary!.channels.find((c) => c.topic === topic)?.subscribers, 1);
    } finally {
      await sub.close();
    }
    const redirect = await fetch(`${url}/.resourcesync/ui`, { redirect: 'manual' });
    assert.deepEqual([redirect.status, redirect.headers.get('location')], [301, '/.resourcesync/ui/']);
    const { page, done } = await open(`${url}/.resourcesync/ui/`);
    const list = page.locator('.doc[data-kind="resource-list"]').first();
    await list.waitFor();
    assert.equal(await page.locator('#source').textContent(), `${url}/`);
    await list.click();
    await page.locator('#entries td.loc').filter({ hasText: '/a.txt' }).waitFor();
    await page.locator('#tab-channels').click();
    await page.locator('#channel-list tbody tr').first().waitFor();
    assert.equal(await page.locator('#panel-channels td.url').filter({ hasText: '/cn' }).count(), 1, 'the subscriber is listed');
    assert.deepEqual(
      (await page.locator('#panel-channels tr.sub-verified td').allTextContents()).slice(0, 5).map((c, i) => (i === 3 ? /^\d{4}-|^—$/.test(c) : c)),
      [`${sub.url}/cn?…`, topic, 'verified', true, '0'],
      'its callback without the query, its state, last delivery and failures',
    );
    const topics = await page.locator('#channel-list tbody td.url').allTextContents();
    assert.ok(topics.length > 0 && topics.every((tp) => /^http:\/\/127\.0\.0\.1:\d+\/\.resourcesync\/served\/(change|framework)-notification\/$/.test(tp)), topics.join(', '));
    await shot(t, page, 'explorer-serve.png');
    await done();
    const exited = new Promise((resolve) => child.on('close', resolve));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
