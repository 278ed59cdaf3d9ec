// `resourcesync serve` as a child process: the `listening on` line, the discovery chain from the well-known
// URI down to every resource, live changes in the open Change List, clean exit on SIGTERM.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDocument } from '../../src/core/xml/read-document.js';
import type { Entry, ResourceSyncDocument } from '../../src/core/model/types.js';
import { validateDocument } from '../../src/core/validate/index.js';
import { REPO_ROOT } from '../helpers/paths.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
let tmp: string;
let site: string;
let child: ChildProcess;
let url: string;
let stderr = '';

function encodePath(rel: string): string {
  return rel.split('/').map(encodeURIComponent).join('/');
}

async function files(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith('.')) continue;
    const rel = prefix === '' ? e.name : `${prefix}/${e.name}`;
    if (e.isDirectory()) out.push(...(await files(join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

async function fetchDoc(u: string): Promise<ResourceSyncDocument> {
  const res = await fetch(u);
  assert.equal(res.status, 200, u);
  assert.equal(res.headers.get('content-type'), 'application/xml', u);
  const doc = await parseDocument(new Uint8Array(await res.arrayBuffer()));
  for (const spec of ['1.0', '1.1'] as const) {
    const errors = validateDocument(doc, { spec, mode: 'strict' }).filter((i) => i.severity === 'error');
    assert.deepEqual(errors, [], `${u} (spec ${spec})`);
  }
  return doc;
}

/** All URL entries of a list, following a sitemapindex to its parts. */
async function listEntries(u: string): Promise<Entry[]> {
  const doc = await fetchDoc(u);
  if (doc.root === 'sitemapindex') {
    const out: Entry[] = [];
    for (const part of doc.entries) out.push(...(await listEntries(part.loc)));
    return out;
  }
  return doc.entries;
}

function capabilityEntry(doc: ResourceSyncDocument, capability: string): Entry | undefined {
  return doc.entries.find((e) => e.md?.capability === capability);
}

before(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'rs-serve-'));
  site = join(tmp, 'site');
  await mkdir(join(site, 'sub dir'), { recursive: true });
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  await writeFile(join(site, 'index.html'), '<!DOCTYPE html><html><head><title>x</title></head><body>hi</body></html>\n');
  await writeFile(join(site, 'with space.txt'), 'space\n');
  await writeFile(join(site, 'sub dir', 'ünïcödé €.txt'), 'unicode\n');
  await writeFile(join(site, '.hidden'), 'never published');
  child = spawn(process.execPath, [MAIN, 'serve', site, '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no 'listening on' line within 60 s; stderr: ${stderr}`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^listening on (http:\/\/127\.0\.0\.1:\d+)\n/m.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}; stderr: ${stderr}`)));
  });
});

after(async () => {
  if (child.exitCode === null) child.kill('SIGKILL');
  await rm(tmp, { recursive: true, force: true });
});

void test('discovery chain: well-known → Capability List → Resource List → every resource', async () => {
  const description = await fetchDoc(`${url}/.well-known/resourcesync`);
  assert.equal(description.md?.capability, 'description');
  assert.equal(description.entries.length, 1);
  const capUrl = description.entries[0]!.loc;
  const caps = await fetchDoc(capUrl);
  assert.equal(caps.md?.capability, 'capabilitylist');
  const rl = capabilityEntry(caps, 'resourcelist');
  assert.ok(rl !== undefined, 'the Capability List advertises a Resource List');
  const entries = await listEntries(rl.loc);
  const expected = await files(site);
  assert.deepEqual(entries.map((e) => e.loc).sort(), expected.map((f) => `${url}/${encodePath(f)}`).sort());
  for (const e of entries) {
    const rel = decodeURIComponent(new URL(e.loc).pathname.slice(1));
    const stored = await readFile(join(site, rel));
    // HTML is listed and served with its discovery link (§6.3.3); every other file as stored
    const bytes = rel.endsWith('.html')
      ? Buffer.from(stored.toString('utf8').replace('<head>', `<head><link rel="resourcesync" href="${capUrl}">`))
      : stored;
    if (rel.endsWith('.html')) assert.notDeepEqual(bytes, stored);
    assert.equal(e.md?.length, String(bytes.length), e.loc);
    assert.match(e.md?.hash ?? '', new RegExp(`md5:${createHash('md5').update(bytes).digest('hex')}`), e.loc);
    const res = await fetch(e.loc);
    assert.equal(res.status, 200, e.loc);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), bytes);
    assert.equal(res.headers.get('link'), `<${capUrl}>; rel="resourcesync"`);
  }
  const robots = await (await fetch(`${url}/robots.txt`)).text();
  assert.match(robots, /^Sitemap: http:\/\/127\.0\.0\.1:\d+\/\S+$/m);
  const hidden = await fetch(`${url}/.hidden`);
  assert.equal(hidden.status, 404);
  await hidden.arrayBuffer();
});

/** Runs a CLI command as a child process (the server child answers meanwhile). */
function cli(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  const c = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  let out = '';
  let err = '';
  c.stdout.on('data', (d: Buffer) => (out += d.toString()));
  c.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve) => c.once('close', (status) => resolve({ status, stdout: out, stderr: err })));
}

void test('sync and audit from serve verify the HTML as served, with its discovery link', async () => {
  const mirror = join(tmp, 'mirror');
  const synced = await cli(['sync', `${url}/`, mirror, '--no-fsync', '--json']);
  assert.equal(synced.status, 0, synced.stdout + synced.stderr);
  const report = JSON.parse(synced.stdout) as { created: number; failed: unknown[] };
  assert.deepEqual([report.created, report.failed], [(await files(site)).length, []]);
  const page = await readFile(join(mirror, 'index.html'), 'utf8');
  const capUrl = (await fetchDoc(`${url}/.well-known/resourcesync`)).entries[0]!.loc;
  assert.equal(page, `<!DOCTYPE html><html><head><link rel="resourcesync" href="${capUrl}"><title>x</title></head><body>hi</body></html>\n`);
  assert.deepEqual(await readFile(join(mirror, 'a.txt')), await readFile(join(site, 'a.txt')));
  const audited = await cli(['audit', `${url}/`, mirror]);
  assert.equal(audited.status, 0, audited.stdout + audited.stderr);
});

void test('created, updated and deleted files appear in the open Change List within 2 s, in order', async (t) => {
  const caps = await fetchDoc((await fetchDoc(`${url}/.well-known/resourcesync`)).entries[0]!.loc);
  const cl = capabilityEntry(caps, 'changelist');
  assert.ok(cl !== undefined, 'the Capability List advertises a Change List');
  const newName = 'nouveau fichier é.txt';
  const steps: Array<{ act: () => Promise<void>; loc: string; change: string }> = [
    { act: () => writeFile(join(site, 'sub dir', newName), 'new\n'), loc: `${url}/${encodePath(`sub dir/${newName}`)}`, change: 'created' },
    { act: () => writeFile(join(site, 'a.txt'), 'alpha, edited\n'), loc: `${url}/a.txt`, change: 'updated' },
    { act: () => unlink(join(site, 'with space.txt')), loc: `${url}/${encodePath('with space.txt')}`, change: 'deleted' },
  ];
  for (const step of steps) {
    await sleep(50);
    const t0 = Date.now();
    await step.act();
    for (;;) {
      const entries = await listEntries(cl.loc);
      if (entries.some((e) => e.loc === step.loc && e.md?.change === step.change)) {
        t.diagnostic(`${step.change} in the Change List after ${Date.now() - t0} ms`);
        break;
      }
      const waited = Date.now() - t0;
      // polled under a generous deadline: a busy machine may take seconds to notice and publish a change
      assert.ok(waited < 60_000, `${step.change} ${step.loc} not in the Change List after ${waited} ms; stderr: ${stderr}`);
      await sleep(50);
    }
  }
  const entries = await listEntries(cl.loc);
  const ours = entries.filter((e) => steps.some((s) => s.loc === e.loc && s.change === e.md?.change));
  assert.deepEqual(
    ours.map((e) => e.md?.change),
    ['created', 'updated', 'deleted'],
  );
  const edited = await fetch(`${url}/a.txt`);
  assert.equal(await edited.text(), 'alpha, edited\n');
  const gone = await fetch(`${url}/${encodePath('with space.txt')}`);
  assert.equal(gone.status, 404);
  await gone.arrayBuffer();
  await stat(join(site, '.resourcesync'));
});

void test('SIGTERM shuts down cleanly with exit code 0', async () => {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  const code = await Promise.race([exited, sleep(60_000).then(() => 'timeout' as const)]);
  assert.equal(code, 0, `exit ${String(code)}; stderr: ${stderr}`);
});
