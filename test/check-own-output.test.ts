// `check` of our own output: what `build` writes (indexes, closed and open Change Lists, archives, dumps with
// their packages and manifests), served by our server core, and a live `serve`, are conformant: no error.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { check, type CheckReport } from '../src/check/check.js';
import { createAuthority } from '../src/client/authority.js';
import { createHttpClient } from '../src/client/http-client.js';
import type { ResponderHandler } from '../src/server/request-response.js';
import { createSourceResponder, type SourceResponder } from '../src/server/source-responder.js';
import { serve, type RunningServer } from '../src/server/node-adapter.js';
import { tempDir } from './helpers/tmp.js';
import { startServe } from './helpers/serve-child.js';
import { runCli as runCliProcess } from './helpers/mirror-check.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
const children: ChildProcess[] = [];

before(async () => {
  tmp = await tempDir('rs-check-own-');
});
after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await tmp.cleanup();
});

/** The CLI as a child process (bounded in time), its exit code as `code`. */
async function runCli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const r = await runCliProcess(args);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function runCheck(start: string): Promise<CheckReport> {
  const authority = createAuthority({ origins: [new URL(start).origin] });
  const http = createHttpClient({ authority, retries: 0, env: {} });
  try {
    return await check({ url: start, http, authority, rate: 0 });
  } finally {
    await http.close();
  }
}

function errorsOf(report: CheckReport): string[] {
  return report.issues
    .filter((i) => i.severity === 'error')
    .map((i) => `${i.code} ${i.url}:${i.line ?? ''} ${i.message}`);
}

void test('build output (Resource List Index, Change List Index, archives, dumps) served by our core is conformant', async () => {
  const site = join(tmp.dir, 'site');
  const out = join(tmp.dir, 'out');
  const state = join(tmp.dir, 'state');
  await mkdir(join(site, 'sub'), { recursive: true });
  for (let i = 0; i < 7; i++)
    await writeFile(join(site, i % 2 === 0 ? `f${i}.txt` : `sub/f${i}.txt`), `file ${i}\n`.repeat(i + 1));
  const live: { core?: SourceResponder } = {};
  const front: ResponderHandler = (req) => live.core?.(req) ?? { status: 503, headers: { 'content-length': '0' } };
  const ac = new AbortController();
  const running: RunningServer = await serve(front, { port: 0, host: '127.0.0.1', signal: ac.signal });
  try {
    const build = async (): Promise<void> => {
      const r = await runCli([
        'build',
        site,
        '--base-url',
        running.url,
        '--out',
        out,
        '--state',
        state,
        '--name',
        'site',
        '--dumps',
        '--max-entries',
        '3',
        '--changelist-max',
        '2',
      ]);
      assert.equal(r.code, 0, r.stderr);
    };
    await build();
    // changes between builds: the open Change List fills up, is closed, a new one opens
    await writeFile(join(site, 'f0.txt'), 'changed\n');
    await writeFile(join(site, 'new.txt'), 'new\n');
    await build();
    await rm(join(site, 'sub', 'f1.txt'));
    await writeFile(join(site, 'f2.txt'), 'changed too\n');
    await writeFile(join(site, 'sub', 'f3.txt'), 'changed three\n');
    await build();
    live.core = createSourceResponder({ sets: [{ name: 'site', dir: site }], outDir: out, baseUrl: running.url });
    const report = await runCheck(`${running.url}/`);
    assert.deepEqual(errorsOf(report), []);
    assert.equal(report.conformant, true);
    const kinds = new Set(report.documents.map((d) => d.kind));
    for (const k of [
      'source-description',
      'capability-list',
      'resource-list-index',
      'resource-list',
      'change-list-index',
      'change-list',
      'resource-dump',
      'package',
      'resource-dump-manifest',
    ]) {
      assert.ok(kinds.has(k), `${k} reached; kinds: ${[...kinds].join(', ')}`);
    }
    assert.equal(report.resources, 7);
    assert.equal(report.sampled, 7);
  } finally {
    ac.abort();
    await running.closed;
  }
});

void test('a live serve, after a change, is conformant (CLI exit 0)', async () => {
  const site = join(tmp.dir, 'served');
  await mkdir(site, { recursive: true });
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  await writeFile(join(site, 'b.txt'), 'beta\n');
  const { child, url } = await startServe([site], 60_000);
  children.push(child);
  await writeFile(join(site, 'c.txt'), 'gamma\n');
  // poll (bounded in time, failing if it never comes) until the change is published: in the Change List. The
  // Resource List need not list it yet: serve writes a new one at most every 20 times what the last one took
  // (longer on a busy machine), and a Destination takes the change from the Change List meanwhile.
  const text = async (doc: string): Promise<string> =>
    (await fetch(`${url}/.resourcesync/served/${doc}`)).text();
  const deadline = Date.now() + 60_000;
  while (!(await text('changelist.xml')).includes('c.txt')) {
    assert.ok(Date.now() < deadline, 'the change is published within 60 s');
    await sleep(100);
  }
  const r = await runCli(['check', url, '--rate', '0', '--json']);
  const report = JSON.parse(r.stdout) as CheckReport;
  assert.deepEqual(errorsOf(report), []);
  assert.equal(r.code, 0, r.stderr);
  // the Resource List read lists a and b, and c once a new one is written
  assert.ok(report.resources === 2 || report.resources === 3, `${report.resources} resources listed`);
  const changeList = report.documents.find((d) => d.url === `${url}/.resourcesync/served/changelist.xml`);
  assert.ok(report.resources === 3 || (changeList?.entries ?? 0) >= 1, 'c.txt is in the Resource List or the Change List');
  child.kill('SIGTERM');
});
