// Files whose names hold a newline, CR, tab, backslash or bytes that are not UTF-8 are left out of what `build`
// and `serve` publish, never silently: each is a warning with the code RS_UNPUBLISHABLE_NAME in build's output
// and JSON, and in serve's log; every other file is published as before.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli } from '../helpers/mirror-check.js';
import { startServe } from '../helpers/serve-child.js';
import { exited } from '../helpers/exited.js';
import { tempDir } from '../helpers/tmp.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
let site: string;

const BAD = ['new\nline.txt', 'carriage\rreturn.txt', 'tab\there.txt', 'back\\slash.txt', 'bad dir\n/inside.txt'];
/** What the warnings name: the file, or the folder for a file inside a folder whose name is bad. */
const WARNED = [
  'back\\slash.txt',
  'bad dir\n',
  'carriage\rreturn.txt',
  'new\nline.txt',
  'not-utf8-\ufffd.txt',
  'sub/tab\there.txt',
  'tab\there.txt',
];

before(async () => {
  tmp = await tempDir('rs-names-');
  site = join(tmp.dir, 'site');
  mkdirSync(join(site, 'sub'), { recursive: true });
  mkdirSync(join(site, 'bad dir\n'));
  writeFileSync(join(site, 'good.txt'), 'good\n');
  writeFileSync(join(site, 'sub', 'good too.txt'), 'good\n');
  for (const name of BAD) writeFileSync(join(site, name), 'bad\n');
  writeFileSync(join(site, 'sub', 'tab\there.txt'), 'bad\n');
  // a name whose bytes are not UTF-8
  writeFileSync(Buffer.concat([Buffer.from(`${site}/not-utf8-`), Buffer.from([0xff]), Buffer.from('.txt')]), 'bad\n');
});

after(async () => {
  await tmp.cleanup();
});

void test('build: names that cannot be published are warnings with a code in the JSON and on stderr', async () => {
  const out = join(tmp.dir, 'out');
  const r = await runCli(['build', site, '--base-url', 'http://127.0.0.1:1/', '--out', out, '--json']);
  assert.equal(r.status, 0, r.stderr);
  const result = JSON.parse(r.stdout) as {
    resources: number;
    warnings: Array<{ code: string; set: string; path: string }>;
    warningsOmitted: number;
  };
  assert.equal(result.resources, 2);
  assert.deepEqual(
    result.warnings.map((w) => w.code),
    WARNED.map(() => 'RS_UNPUBLISHABLE_NAME'),
  );
  assert.deepEqual(result.warnings.map((w) => w.path).sort(), [...WARNED].sort());
  assert.equal(result.warningsOmitted, 0);
  assert.equal(r.stderr.match(/warning RS_UNPUBLISHABLE_NAME/g)?.length, WARNED.length, r.stderr);
  assert.match(r.stderr, /"new\\nline\.txt" is not published/);
  // the plain output says so too
  const plain = await runCli(['build', site, '--base-url', 'http://127.0.0.1:1/', '--out', out]);
  assert.equal(plain.status, 0, plain.stderr);
  assert.equal(plain.stderr.match(/warning RS_UNPUBLISHABLE_NAME/g)?.length, WARNED.length, plain.stderr);
});

void test('serve: each name that cannot be published is logged once with its code', async () => {
  const serve = await startServe([site, '--state', join(tmp.dir, 'serve-state')]);
  try {
    const list = await (await fetch(`${serve.url}/.resourcesync/site/resourcelist.xml`)).text();
    assert.equal(list.match(/<loc>/g)?.length, 2, list);
    assert.equal(serve.log().match(/warning RS_UNPUBLISHABLE_NAME/g)?.length, WARNED.length, serve.log());
    assert.match(serve.log(), /"tab\\there\.txt" is not published/);
  } finally {
    serve.child.kill('SIGTERM');
    assert.deepEqual(await exited(serve.child), [0, null]);
  }
});
