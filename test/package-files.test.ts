// What the npm package holds: the LICENSE (MIT, as package.json says) is in the repository and in the tarball.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from './helpers/paths.js';

void test('the LICENSE is MIT, matches package.json, and npm pack lists it', async () => {
  const pkg = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')) as { license: string };
  assert.equal(pkg.license, 'MIT');
  const license = await readFile(join(REPO_ROOT, 'LICENSE'), 'utf8');
  assert.match(license, /^MIT License\n\nCopyright \(c\) \d{4} resourcesync contributors\n/);
  assert.match(license, /THE SOFTWARE IS PROVIDED "AS IS"/);
  // a dry run (no scripts, nothing written): the files the tarball would hold
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const { stdout } = await promisify(execFile)(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: REPO_ROOT,
    timeout: 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const [packed] = JSON.parse(stdout) as [{ files: { path: string }[] }];
  const paths = packed.files.map((f) => f.path);
  assert.ok(paths.includes('LICENSE'), paths.slice(0, 20).join(', '));
  assert.ok(paths.includes('package.json'));
});
