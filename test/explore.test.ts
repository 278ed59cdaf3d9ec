// `resourcesync explore --json` of a known Source (a static Source on a real server) equals the expected tree;
// --depth bounds the crawl; the text tree shows every document; exit codes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ExploreResult } from '../src/check/explore.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';
import { runCli as runCliProcess } from './helpers/mirror-check.js';

let server: TestServer;
let O: string;

const HEAD = `<?xml version="1.0" encoding="UTF-8"?>\n`;
const NS = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`;
const bodies = new Map<string, string>();

before(async () => {
  server = await startTestServer();
  O = server.origin;
  const docs: Record<string, string> = {
    '/.well-known/resourcesync': `<urlset ${NS}><rs:md capability="description"/><url><loc>${O}/cl.xml</loc><rs:md capability="capabilitylist"/></url></urlset>`,
    '/cl.xml':
      `<urlset ${NS}><rs:ln rel="up" href="${O}/.well-known/resourcesync"/><rs:md capability="capabilitylist"/>` +
      `<url><loc>${O}/rl.xml</loc><rs:md capability="resourcelist"/></url>` +
      `<url><loc>${O}/ch.xml</loc><rs:md capability="changelist"/></url>` +
      `<url><loc>${O}/rd.xml</loc><rs:md capability="resourcedump"/></url></urlset>`,
    '/rl.xml':
      `<sitemapindex ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
      `<sitemap><loc>${O}/rl1.xml</loc><rs:md at="2026-01-01T00:00:00Z"/></sitemap>` +
      `<sitemap><loc>${O}/rl2.xml</loc><rs:md at="2026-01-01T00:00:00Z"/></sitemap></sitemapindex>`,
    '/rl1.xml':
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:ln rel="index" href="${O}/rl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
      `<url><loc>${O}/a</loc></url><url><loc>${O}/b</loc></url></urlset>`,
    '/rl2.xml':
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:ln rel="index" href="${O}/rl.xml"/><rs:md capability="resourcelist" at="2026-01-01T00:00:00Z"/>` +
      `<url><loc>${O}/c</loc></url></urlset>`,
    '/ch.xml':
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="changelist" from="2026-01-01T00:00:00Z"/>` +
      `<url><loc>${O}/a</loc><rs:md change="updated" datetime="2026-01-01T10:00:00Z"/></url></urlset>`,
    '/rd.xml':
      `<urlset ${NS}><rs:ln rel="up" href="${O}/cl.xml"/><rs:md capability="resourcedump" at="2026-01-01T00:00:00Z"/>` +
      `<url><loc>${O}/rd-1.zip</loc><rs:md type="application/zip" length="4096"/></url>` +
      `<url><loc>${O}/rd-2.zip</loc><rs:md type="application/zip" length="100"/></url></urlset>`,
  };
  for (const [path, body] of Object.entries(docs)) {
    bodies.set(path, HEAD + body);
    server.set(path, { body: HEAD + body, headers: { 'content-type': 'application/xml' } });
  }
});

after(async () => {
  await server.close();
});

/** The CLI as a child process (bounded in time), its exit code as `code`. */
async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runCliProcess(args);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const size = (path: string): number => Buffer.byteLength(bodies.get(path)!);

void test('explore --json of a known Source equals the expected tree', async () => {
  const r = await runCli(['explore', `${O}/`, '--json', '--rate', '0']);
  assert.equal(r.code, 0, r.stderr);
  const at = '2026-01-01T00:00:00Z';
  const expected: ExploreResult = {
    start: `${O}/`,
    sourceDescription: `${O}/.well-known/resourcesync`,
    documents: 9,
    roots: [
      {
        url: `${O}/.well-known/resourcesync`,
        kind: 'source-description',
        capability: 'description',
        entries: 1,
        bytes: size('/.well-known/resourcesync'),
        children: [
          {
            url: `${O}/cl.xml`,
            kind: 'capability-list',
            capability: 'capabilitylist',
            entries: 3,
            bytes: size('/cl.xml'),
            children: [
              {
                url: `${O}/rl.xml`,
                kind: 'resource-list-index',
                capability: 'resourcelist',
                at,
                entries: 2,
                bytes: size('/rl.xml'),
                children: [
                  {
                    url: `${O}/rl1.xml`,
                    kind: 'resource-list',
                    capability: 'resourcelist',
                    at,
                    entries: 2,
                    bytes: size('/rl1.xml'),
                    children: [],
                  },
                  {
                    url: `${O}/rl2.xml`,
                    kind: 'resource-list',
                    capability: 'resourcelist',
                    at,
                    entries: 1,
                    bytes: size('/rl2.xml'),
                    children: [],
                  },
                ],
              },
              {
                url: `${O}/ch.xml`,
                kind: 'change-list',
                capability: 'changelist',
                from: at,
                entries: 1,
                bytes: size('/ch.xml'),
                children: [],
              },
              {
                url: `${O}/rd.xml`,
                kind: 'resource-dump',
                capability: 'resourcedump',
                at,
                entries: 2,
                bytes: size('/rd.xml'),
                children: [
                  { url: `${O}/rd-1.zip`, kind: 'package', entries: 0, bytes: 4096, children: [] },
                  { url: `${O}/rd-2.zip`, kind: 'package', entries: 0, bytes: 100, children: [] },
                ],
              },
            ],
          },
        ],
      },
    ],
  };
  assert.deepEqual(JSON.parse(r.stdout), expected);
  // no resource, no package was requested
  assert.ok(
    !server.requests.some((q) => /^\/(a|b|c|rd-\d\.zip)$/.test(q.url)),
    server.requests.map((q) => q.url).join(' '),
  );
});

void test('--depth 1 stops below the Capability List; the text tree names every document', async () => {
  const shallow = await runCli(['explore', `${O}/`, '--json', '--depth', '1', '--rate', '0']);
  assert.equal(shallow.code, 0, shallow.stderr);
  const result = JSON.parse(shallow.stdout) as ExploreResult;
  assert.equal(result.documents, 2);
  assert.deepEqual(result.roots[0]?.children[0]?.children, []);
  const text = await runCli(['explore', `${O}/cl.xml`, '--rate', '0']);
  assert.equal(text.code, 0, text.stderr);
  const lines = text.stdout.trimEnd().split('\n');
  assert.match(lines[0]!, /^source-description .*\/\.well-known\/resourcesync \[1 entry, \d+ B\]$/);
  assert.match(text.stdout, /│ {2}├─ resource-list .*\/rl1\.xml at 2026-01-01T00:00:00Z \[2 entries, \d+ B\]/);
  assert.match(text.stdout, /├─ change-list .*\/ch\.xml from 2026-01-01T00:00:00Z open \[1 entry, \d+ B\]/);
  assert.match(text.stdout, / {3}└─ package .*\/rd-2\.zip \[100 B\]/);
  assert.equal(lines.at(-1), '9 documents');
});

void test('explore exits 3 when nothing is found and 2 on usage errors', async () => {
  // port 1: nothing listens there (a server's port, once closed, may soon serve another test file's Source)
  const r = await runCli(['explore', 'http://127.0.0.1:1/', '--rate', '0', '--timeout', '2000']);
  assert.equal(r.code, 3, r.stderr);
  assert.equal((await runCli(['explore'])).code, 2);
  assert.equal((await runCli(['explore', `${O}/`, '--depth', '-1'])).code, 2);
});
