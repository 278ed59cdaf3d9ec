/**
 * The `validate` and `inspect` commands as users run them (`demo`: cli-demo.test.ts): `node dist/src/cli/main.js …`,
 * exit codes, output lines and JSON, files and a URL served by a real HTTP server on 127.0.0.1.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { FIXTURES, REPO_ROOT, SPEC_DIR } from './helpers/paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(...args: string[]): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [MAIN, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const EX = (name: string): string => join(SPEC_DIR, 'examples', name);
const EX11 = (name: string): string => join(SPEC_DIR, 'examples-1.1', name);
const INVALID = (code: string): string => join(FIXTURES, 'invalid', `${code}.xml`);

interface JsonReport {
  documents: { input: string; kind: string | null; entries: number; valid: boolean; issues: { code: string; severity: string; line?: number; path?: string; section: string; message: string }[] }[];
}

describe('resourcesync validate', () => {
  let server: Server;
  let base = '';
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rs-cli-validate-'));
    const body = await readFile(EX('ex19.xml'));
    server = createServer((req, res) => {
      if (req.url === '/changelist.xml') {
        res.writeHead(200, { 'content-type': 'application/xml' });
        res.end(body);
      } else {
        res.writeHead(404);
        res.end('not found');
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  it('exits 0 for a valid document and prints the summary', async () => {
    const r = await cli('validate', '--spec', '1.0', EX('ex14.xml'));
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, '1 document checked against Z39.99 1.0: valid, 0 errors, 0 warnings\n');
  });

  it('exits 1 and prints file:line: severity code: message [path] (section) for errors', async () => {
    const file = INVALID('hash-not-hex');
    const r = await cli('validate', file);
    assert.equal(r.code, 1);
    const lines = r.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 2);
    assert.match(lines[0]!, /^.+hash-not-hex\.xml:7: error hash-not-hex: hash value 'sha-256:f4Ox[^']*' has a digest that is not hex-encoded \[urlset\/url\[1\]\/rs:md\/@hash\] \(Z39\.99 §7\)$/);
    assert.ok(lines[0]!.startsWith(`${file}:7: `), 'the line of the <url> entry');
    assert.equal(lines[1], '1 document checked against Z39.99 1.1: 1 invalid, 1 error, 0 warnings');
  });

  it('defaults to 1.1, where lastmod is optional in Change Lists', async () => {
    assert.equal((await cli('validate', EX11('ex19.xml'))).code, 0);
    const r10 = await cli('validate', '--spec', '1.0', EX11('ex19.xml'));
    assert.equal(r10.code, 1);
    assert.match(r10.stdout, /error lastmod-missing: .*\(Z39\.99 §12\.1\)/);
  });

  it('checks several documents and fails if any has errors', async () => {
    const r = await cli('validate', '--spec', '1.0', EX('ex14.xml'), EX('ex01.xml'), EX('ex13.xml'));
    assert.equal(r.code, 1);
    assert.match(r.stdout, /ex01\.xml: error up-link-missing: a Resource List must have an <rs:ln rel="up"> pointing to its Capability List \[urlset\] \(Z39\.99 §10\.1\)/);
    assert.match(r.stdout, /3 documents checked against Z39\.99 1\.0: 1 invalid, 1 error, 0 warnings\n$/);
  });

  it('--json prints one object with each document, its kind, entries, issues and verdict', async () => {
    const r = await cli('validate', '--json', '--spec', '1.0', EX('ex19.xml'), EX('ex27.xml'));
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as JsonReport;
    assert.equal(out.documents.length, 2);
    const [a, b] = out.documents;
    assert.deepEqual({ ...a, input: undefined }, { input: undefined, kind: 'change-list', entries: 4, issues: [], valid: true });
    assert.equal(b!.kind, 'change-list');
    assert.equal(b!.valid, false);
    assert.deepEqual(b!.issues.map((i) => [i.code, i.severity, i.line, i.path]), [
      ['hash-not-hex', 'error', 8, 'urlset/url[1]/rs:md/@hash'],
      ['hash-not-hex', 'error', 8, 'urlset/url[1]/rs:ln[1]/@hash'],
      ['hash-not-hex', 'error', 22, 'urlset/url[2]/rs:md/@hash'],
      ['hash-not-hex', 'error', 22, 'urlset/url[2]/rs:ln[1]/@hash'],
    ]);
  });

  it('--lenient turns what real producers publish into warnings', async () => {
    const file = join(FIXTURES, 'lenient', 'changelist-real-world.xml');
    assert.equal((await cli('validate', file)).code, 1);
    const r = await cli('validate', '--lenient', '--json', file);
    assert.equal(r.code, 0, r.stdout);
    const out = JSON.parse(r.stdout) as JsonReport;
    assert.ok(out.documents[0]!.issues.every((i) => i.severity === 'warning' && i.code.startsWith('tolerated-')));
  });

  it('validates a document fetched over HTTP', async () => {
    const r = await cli('validate', '--spec', '1.0', `${base}/changelist.xml`);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const missing = await cli('validate', `${base}/missing.xml`);
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /missing\.xml: error RS_HTTP_STATUS: .*404/);
  });

  it('reports unreadable and non-ResourceSync input with the RS_* code and exits 1', async () => {
    const notXml = join(dir, 'not.xml');
    await writeFile(notXml, 'this is not XML at all\n');
    const html = join(dir, 'page.xml');
    await writeFile(html, '<html><body>hello</body></html>');
    const r = await cli('validate', '--json', join(dir, 'nope.xml'), notXml, html);
    assert.equal(r.code, 1);
    const out = JSON.parse(r.stdout) as JsonReport;
    const codes = out.documents.map((d) => [d.valid, d.entries, d.issues.map((i) => i.code)]);
    assert.equal(codes[0]![0], false);
    assert.deepEqual(codes[0]![2], ['RS_IO']);
    assert.match(String((codes[1]![2] as string[])[0]), /^RS_XML_/);
    assert.deepEqual(codes[2]![2], ['RS_NOT_RESOURCESYNC']);
  });

  it('exits 2 on usage errors', async () => {
    for (const args of [['validate'], ['validate', '--spec', '2.0', EX('ex14.xml')], ['validate', '--frobnicate', EX('ex14.xml')]]) {
      const r = await cli(...args);
      assert.equal(r.code, 2, args.join(' '));
      assert.equal(r.stdout, '');
      assert.match(r.stderr, /^resourcesync validate: /);
    }
    const help = await cli('validate', '--help');
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: resourcesync validate/);
  });
});

describe('resourcesync inspect', () => {
  it('describes a Change List: kind, times, links, entries, changes by type', async () => {
    const r = await cli('inspect', EX('ex21.xml'));
    assert.equal(r.code, 0, r.stderr);
    assert.equal(
      r.stdout,
      `${EX('ex21.xml')}: Change List (capability changelist, <urlset>)
  from: 2013-01-02T00:00:00Z
  until: 2013-01-03T00:00:00Z
  link up: http://example.com/dataset1/capabilitylist.xml
  link index: http://example.com/dataset1/changelist.xml
  entries: 4
  changes: created 1, updated 2, deleted 1
`,
    );
  });

  it('--json lists the parts of an index and the capabilities of a Capability List', async () => {
    const index = JSON.parse((await cli('inspect', '--json', EX('ex15.xml'))).stdout) as Record<string, unknown>;
    assert.deepEqual(index, {
      input: EX('ex15.xml'),
      kind: 'resource-list-index',
      name: 'Resource List Index',
      root: 'sitemapindex',
      capability: 'resourcelist',
      at: '2013-01-03T09:00:00Z',
      completed: '2013-01-03T09:10:00Z',
      links: [{ rel: 'up', href: 'http://example.com/dataset1/capabilitylist.xml' }],
      entries: 3,
      parts: ['http://example.com/resourcelist1.xml', 'http://example.com/resourcelist2.xml', 'http://example.com/resourcelist3.xml'],
    });
    const cl = JSON.parse((await cli('inspect', '--json', EX('ex13.xml'))).stdout) as { capabilities: unknown; kind: string };
    assert.equal(cl.kind, 'capability-list');
    assert.deepEqual(cl.capabilities, [
      { capability: 'resourcelist', loc: 'http://example.com/dataset1/resourcelist.xml' },
      { capability: 'resourcedump', loc: 'http://example.com/dataset1/resourcedump.xml' },
      { capability: 'changelist', loc: 'http://example.com/dataset1/changelist.xml' },
      { capability: 'changedump', loc: 'http://example.com/dataset1/changedump.xml' },
    ]);
  });

  it('exits 1 on unreadable input and 2 on usage errors', async () => {
    const r = await cli('inspect', join(FIXTURES, 'no-such-file.xml'));
    assert.equal(r.code, 1);
    assert.match(r.stderr, /error RS_IO: /);
    assert.equal((await cli('inspect')).code, 2);
    assert.equal((await cli('inspect', EX('ex14.xml'), EX('ex15.xml'))).code, 2);
  });
});

