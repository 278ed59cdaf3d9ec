// Exit codes, leftovers and output of the CLI as a user meets them: a Source that answers 503 or 429 while it is
// discovered (exit 5, the cause named), a failed first sync that leaves the destination as it found it, paths that
// are files, usage errors in two lines, the notes of a failed discovery shown, JSON on every line of stdout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, withSource } from '../helpers/mirror-check.js';
import { startTestServer } from '../helpers/test-server.js';
import { tempDir } from '../helpers/tmp.js';

/** Every line of `stdout` parses as JSON (and there is at least one). */
function everyLineJson(stdout: string, what: string): unknown[] {
  const lines = stdout.split('\n').filter((l) => l !== '');
  assert.ok(lines.length > 0, `${what}: no output`);
  return lines.map((l, i) => {
    try {
      return JSON.parse(l) as unknown;
    } catch {
      assert.fail(`${what}: stdout line ${i + 1} is not JSON: ${l.slice(0, 200)}`);
    }
  });
}

for (const status of [503, 429, 500]) {
  void test(`${status} at the start URL while discovering is exit 5 with the status, URL and Retry-After; nothing is left behind`, async () => {
    const s = await startTestServer();
    const tmp = await tempDir('rs-cli-exit-');
    try {
      // the start answers `status`; the well-known URI and robots.txt are plain 404s (the Source is reached)
      s.fault = (req, res) => {
        if (req.url !== '/') return false;
        res.writeHead(status, { 'retry-after': '1', 'content-type': 'text/html' }).end('<html>busy</html>');
        return true;
      };
      const fresh = join(tmp.dir, 'new-mirror');
      const r = await runCli(['sync', `${s.origin}/`, fresh, '--retries', '0']);
      assert.equal(r.status, 5, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`'${s.origin}/' answered HTTP ${status} \\(Retry-After: 1\\); try again later`),
      );
      assert.equal(existsSync(fresh), false, 'a failed first run leaves no folder behind');

      // a folder that existed, with a file of the user's: left as it was, no .resourcesync inside
      const existing = join(tmp.dir, 'existing');
      await mkdir(existing);
      await writeFile(join(existing, 'mine.txt'), 'mine');
      const j = await runCli(['sync', `${s.origin}/`, existing, '--retries', '0', '--json']);
      assert.equal(j.status, 5, j.stderr);
      const [out] = everyLineJson(j.stdout, 'sync --json') as [
        { error: { code: string; data: { status: number; retryAfter: string } } },
      ];
      assert.equal(out.error.code, 'RS_HTTP_STATUS');
      assert.equal(out.error.data.status, status);
      assert.equal(out.error.data.retryAfter, '1');
      assert.deepEqual(await readdir(existing), ['mine.txt']);

      const a = await runCli(['audit', `${s.origin}/`, existing]);
      assert.equal(a.status, 5, a.stderr);
    } finally {
      await s.close();
      await tmp.cleanup();
    }
  });
}

void test('a Source that holds no ResourceSync document is still exit 3, and the notes of what was tried are shown', async () => {
  const s = await startTestServer();
  const tmp = await tempDir('rs-cli-exit-');
  try {
    s.set('/', '<html><body>nothing here</body></html>');
    const dest = join(tmp.dir, 'm');
    const r = await runCli(['sync', `${s.origin}/`, dest]);
    assert.equal(r.status, 3, r.stderr);
    assert.match(r.stderr, /leads to no Capability List/);
    assert.match(r.stderr, /^ {2}notes: \d+ \(.*discovery-tried-well-known.*\)$/m); // counts by code
    assert.match(r.stderr, new RegExp(`^ {2}note: .*'${s.origin}/robots.txt' answered HTTP 404\\.$`, 'm')); // in full
    assert.equal(existsSync(dest), false);
  } finally {
    await s.close();
    await tmp.cleanup();
  }
});

void test('a path that is a file is one clear line and the usage exit code, for every command that takes a folder', async () => {
  const tmp = await tempDir('rs-cli-file-');
  try {
    const file = join(tmp.dir, 'a-file');
    await writeFile(file, 'x');
    await mkdir(join(tmp.dir, 'site'));
    await writeFile(join(tmp.dir, 'site', 'a.txt'), 'a');
    // no Source is asked: the path is refused first (port 1 is never connected to)
    const cases: [string, string[]][] = [
      ['audit', ['audit', 'http://127.0.0.1:1/', file]],
      ['audit', ['audit', 'http://127.0.0.1:1/', join(file, 'below')]],
      ['sync', ['sync', 'http://127.0.0.1:1/', file]],
      ['sync', ['sync', 'http://127.0.0.1:1/', join(file, 'below')]],
      ['build', ['build', join(tmp.dir, 'site'), '--base-url', 'http://127.0.0.1:1/', '--out', file]],
      ['hub', ['hub', '--port', '0', '--data', file]],
      ['oai-pmh', ['oai-pmh', 'http://127.0.0.1:1/oai', '--out', file, '--base-url', 'http://127.0.0.1:1/']],
    ];
    for (const [command, args] of cases) {
      const r = await runCli(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      const lines = r.stderr.trimEnd().split('\n');
      assert.ok(lines.length <= 2, r.stderr);
      assert.match(lines[0]!, new RegExp(`^resourcesync ${command}: .* is not a folder`));
      assert.doesNotMatch(r.stderr, /ENOTDIR|EEXIST|\n\s+at /);
    }
    const inspect = await runCli(['inspect', join(file, 'x.xml')]);
    assert.match(inspect.stderr + inspect.stdout, /no such file/);
    assert.doesNotMatch(inspect.stderr + inspect.stdout, /ENOTDIR/);
  } finally {
    await tmp.cleanup();
  }
});

void test('a usage error is two lines, the problem and where the help is, for every command', async () => {
  const commands = [
    'validate',
    'inspect',
    'build',
    'serve',
    'sync',
    'audit',
    'check',
    'explore',
    'simulate',
    'hub',
    'links',
    'oai-pmh',
  ];
  for (const command of commands) {
    const r = await runCli([command, '--no-such-option']);
    assert.equal(r.status, 2, `${command}: ${r.stderr}`);
    const lines = r.stderr.trimEnd().split('\n');
    assert.equal(lines.length, 2, `${command}: ${r.stderr}`);
    assert.match(lines[0]!, new RegExp(`^resourcesync ${command}: .*--no-such-option`));
    assert.equal(lines[1], `See 'resourcesync ${command} --help'.`);
    assert.equal(r.stdout, '');
  }
  const missing = await runCli(['sync', 'http://127.0.0.1:1/']);
  assert.equal(missing.status, 2);
  assert.equal(missing.stderr.trimEnd().split('\n').length, 2, missing.stderr);
  const unknown = await runCli(['frobnicate']);
  assert.equal(unknown.status, 2);
  assert.equal(unknown.stderr, "resourcesync: unknown command 'frobnicate'.\nSee 'resourcesync --help'.\n");
});

void test('--json: every line of stdout is JSON, for every command that has --json', async () => {
  await withSource(async (src, dir) => {
    src.put('a.txt', 'alpha\n');
    src.put('b/c.txt', 'gamma\n');
    src.publish();
    const dest = join(dir, 'mirror');
    const site = join(dir, 'site');
    await mkdir(site);
    await writeFile(join(site, 'x.txt'), 'x');
    const docFile = join(dir, 'rl.xml');
    await writeFile(docFile, src.resourceListXml());
    const runs: string[][] = [
      ['validate', '--json', docFile],
      ['inspect', '--json', docFile],
      ['build', site, '--base-url', 'http://127.0.0.1:1/', '--out', join(dir, 'out'), '--json'],
      ['sync', src.capabilityList, dest, '--json', '--no-fsync'],
      ['sync', src.capabilityList, dest, '--json', '--dry-run'],
      ['audit', src.capabilityList, dest, '--json'],
      ['links', dest, 'a.txt', '--json'],
      ['check', src.capabilityList, '--json', '--rate', '0'],
      ['explore', src.capabilityList, '--json', '--rate', '0'],
      // failures too: the error is a JSON line
      ['sync', 'http://127.0.0.1:1/', join(dir, 'never'), '--json', '--retries', '0'],
      ['audit', 'http://127.0.0.1:1/', join(dir, 'never'), '--json'],
      ['oai-pmh', 'http://127.0.0.1:1/oai', '--out', join(dir, 'oai'), '--base-url', 'http://127.0.0.1:1/', '--json'],
    ];
    for (const args of runs) {
      const r = await runCli(args);
      assert.ok(
        r.status !== null && r.status !== 2 && r.status < 64,
        `${args.join(' ')}: exit ${r.status} ${r.stderr}`,
      );
      everyLineJson(r.stdout, args.join(' '));
    }
  });
});

void test('links: the §14 links a mirror keeps are shown for every resource, for one by URL or path, and as JSON', async () => {
  const s = await startTestServer();
  const tmp = await tempDir('rs-cli-links-');
  try {
    const ns = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"';
    s.set('/a.txt', 'alpha');
    s.set('/b.txt', 'beta');
    s.set(
      '/capabilitylist.xml',
      `<urlset ${ns}><rs:md capability="capabilitylist"/><url><loc>${s.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url></urlset>`,
    );
    s.set(
      '/resourcelist.xml',
      `<urlset ${ns}><rs:ln rel="up" href="${s.origin}/capabilitylist.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>` +
        `<url><loc>${s.origin}/a.txt</loc><rs:ln rel="describedby" href="/meta/a.xml" type="application/xml" length="12"/>` +
        `<rs:ln rel="memento" href="${s.origin}/a.txt?v=1" modified="2019-01-01T00:00:00Z"/></url>` +
        `<url><loc>${s.origin}/b.txt</loc></url></urlset>`,
    );
    const dest = join(tmp.dir, 'm');
    const synced = await runCli(['sync', `${s.origin}/capabilitylist.xml`, dest, '--no-fsync']);
    assert.equal(synced.status, 0, synced.stderr);

    const all = await runCli(['links', dest]);
    assert.equal(all.status, 0, all.stderr);
    assert.equal(
      all.stdout,
      `a.txt  ${s.origin}/a.txt\n  describedby ${s.origin}/meta/a.xml  (type application/xml, length 12)\n  memento     ${s.origin}/a.txt?v=1  (modified 2019-01-01T00:00:00Z)\n`,
    );
    const byPath = await runCli(['links', dest, 'b.txt']);
    assert.equal(byPath.status, 0, byPath.stderr);
    assert.equal(byPath.stdout, `b.txt  ${s.origin}/b.txt\n  (no links kept)\n`);
    const json = await runCli(['links', dest, `${s.origin}/a.txt`, '--json', '--rel', 'describedby']);
    assert.equal(json.status, 0, json.stderr);
    assert.deepEqual(everyLineJson(json.stdout, 'links --json'), [
      {
        url: `${s.origin}/a.txt`,
        path: 'a.txt',
        links: { describedby: [{ href: `${s.origin}/meta/a.xml`, type: 'application/xml', length: '12' }] },
      },
    ]);
    assert.equal((await runCli(['links', dest, 'nope.txt'])).status, 1);
    const notMirror = await runCli(['links', tmp.dir]);
    assert.equal(notMirror.status, 2);
    assert.match(notMirror.stderr, /holds no mirror/);
  } finally {
    await s.close();
    await tmp.cleanup();
  }
});
