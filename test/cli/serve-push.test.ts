// `resourcesync serve` with its embedded hub, as a child process: the Capability List advertises both channels
// with the hub; the topics answer with Link rel=self/hub; a subscriber verified through <base-url>/hub receives
// each recorded change as a valid Change Notification with contiguous windows, and the rewritten capability
// documents on the framework channel, signed with its secret; --no-hub advertises no channel.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { parseDocument } from '../../src/core/xml/read-document.js';
import { validateDocument } from '../../src/core/validate/index.js';
import { parseLinkHeader } from '../../src/core/link-header.js';
import type { ResourceSyncDocument } from '../../src/core/model/types.js';
import { verifySignature } from '../../src/notify/signature.js';
import { startServe, type ServeChild } from '../helpers/serve-child.js';
import { tempDir } from '../helpers/tmp.js';
import { TestSubscriber, type Received } from '../helpers/websub-subscriber.js';
import { exited } from '../helpers/exited.js';

/** How long a step may take: generous, since a busy machine is slow (each wait ends as soon as its condition holds). */
const WAIT_MS = 60_000;

async function doc(bytes: Uint8Array): Promise<ResourceSyncDocument> {
  const d = await parseDocument(bytes);
  assert.deepEqual(
    validateDocument(d).filter((i) => i.severity === 'error'),
    [],
  );
  return d;
}

async function fetchDoc(u: string): Promise<ResourceSyncDocument> {
  const res = await fetch(u);
  assert.equal(res.status, 200, u);
  return doc(new Uint8Array(await res.arrayBuffer()));
}

let tmp: { dir: string; cleanup: () => Promise<void> };
let site: string;
let serve: ServeChild;
let sub: TestSubscriber;

before(async () => {
  tmp = await tempDir('rs-serve-push-');
  site = join(tmp.dir, 'site');
  await mkdir(site);
  await writeFile(join(site, 'a.txt'), 'alpha\n');
  serve = await startServe([site, '--verbose']);
  sub = await TestSubscriber.start();
});

after(async () => {
  if (serve.child.exitCode === null) serve.child.kill('SIGKILL');
  await sub.close();
  await tmp.cleanup();
});

void test('serve: the Capability List advertises both channels with the embedded hub; topics answer with Link rel=self/hub', async () => {
  const caps = await fetchDoc(`${serve.url}/.resourcesync/site/capabilitylist.xml`);
  for (const capability of ['change-notification', 'framework-notification']) {
    const e = caps.entries.find((x) => x.md?.capability === capability);
    assert.equal(e?.loc, `${serve.url}/.resourcesync/site/${capability}/`);
    assert.deepEqual(e?.ln, [{ rel: 'hub', href: `${serve.url}/hub` }]);
    for (const method of ['HEAD', 'GET']) {
      const res = await fetch(e.loc, { method });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
      const links = parseLinkHeader(res.headers.get('link') ?? '');
      assert.equal(links.find((l) => l.rel.includes('self'))?.target, e.loc);
      assert.equal(links.find((l) => l.rel.includes('hub'))?.target, `${serve.url}/hub`);
    }
  }
  const hub = await fetch(`${serve.url}/hub`);
  assert.equal(hub.status, 200);
  await hub.arrayBuffer();
});

void test('serve: recorded changes reach a subscriber as Change Notifications with contiguous windows, documents on the framework channel', async () => {
  const change = `${serve.url}/.resourcesync/site/change-notification/`;
  const framework = `${serve.url}/.resourcesync/site/framework-notification/`;
  for (const [topic, path] of [
    [change, '/cn'],
    [framework, '/fn'],
  ] as const) {
    const res = await fetch(`${serve.url}/hub`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        'hub.mode': 'subscribe',
        'hub.topic': topic,
        'hub.callback': `${sub.url}${path}`,
        'hub.secret': 'shh',
      }).toString(),
    });
    assert.equal(res.status, 202);
    await res.arrayBuffer();
  }
  await sub.waitFor(
    () => (serve.log().match(/hub: verified/g) ?? []).length === 2,
    `two verified subscriptions; log: ${serve.log()}`,
    WAIT_MS,
  );

  const on = (path: string): Received[] => sub.deliveries.filter((d) => d.url === path);
  await writeFile(join(site, 'b.txt'), 'bravo\n');
  await sub.waitFor(() => on('/cn').length >= 1, 'the first change notification', WAIT_MS);
  await writeFile(join(site, 'a.txt'), 'alpha, edited\n');
  await sub.waitFor(() => on('/cn').some((d) => d.body.includes('/a.txt')), 'the update', WAIT_MS);
  await unlink(join(site, 'b.txt'));
  await sub.waitFor(() => on('/cn').some((d) => d.body.includes('"deleted"')), 'the deletion', WAIT_MS);

  const cns = await Promise.all(on('/cn').map((d) => doc(d.body)));
  for (const d of on('/cn')) {
    assert.ok(verifySignature(String(d.headers['x-hub-signature']), 'shh', d.body));
    const links = parseLinkHeader(String(d.headers.link));
    assert.equal(links.find((l) => l.rel.includes('self'))?.target, change);
  }
  for (const cn of cns) {
    assert.equal(cn.md?.capability, 'change-notification');
    assert.equal(cn.ln.find((l) => l.rel === 'up')?.href, `${serve.url}/.resourcesync/site/capabilitylist.xml`);
  }
  for (let i = 1; i < cns.length; i++) assert.equal(cns[i]!.md?.from, cns[i - 1]!.md?.until, 'windows are contiguous');
  const changes = cns.flatMap((c) => c.entries.map((e) => [e.loc, e.md?.change]));
  assert.deepEqual(changes, [
    [`${serve.url}/b.txt`, 'created'],
    [`${serve.url}/a.txt`, 'updated'],
    [`${serve.url}/b.txt`, 'deleted'],
  ]);
  const first = cns[0]!.entries[0]!;
  assert.match(first.md?.hash ?? '', /^md5:[0-9a-f]{32}$/);
  assert.equal(first.md?.length, '6');

  // the documents follow the Change Notifications: their Framework Notifications say which were rewritten
  await sub.waitFor(
    () => ['"changelist"', '"resourcelist"'].every((c) => on('/fn').some((d) => d.body.includes(`capability=${c}`))),
    'framework notifications of the Change List and the Resource List',
    WAIT_MS,
  );
  const fns = await Promise.all(on('/fn').map((d) => doc(d.body)));
  const written = fns.flatMap((f) => f.entries.map((e) => `${e.md?.capability} ${e.md?.change}`));
  assert.ok(written.includes('changelist updated'), written.join(', '));
  assert.ok(written.includes('resourcelist updated'), written.join(', '));
  for (const d of on('/fn')) {
    assert.ok(verifySignature(String(d.headers['x-hub-signature']), 'shh', d.body));
    assert.equal(parseLinkHeader(String(d.headers.link)).find((l) => l.rel.includes('self'))?.target, framework);
  }
});

void test('serve: SIGTERM exits 0 with the hub; --no-hub advertises no channel', async () => {
  serve.child.kill('SIGTERM');
  const [code] = await exited(serve.child);
  assert.equal(code, 0, serve.log());
  const plain = await startServe([site, '--no-hub', '--verbose']);
  try {
    const caps = await fetchDoc(`${plain.url}/.resourcesync/site/capabilitylist.xml`);
    assert.equal(caps.entries.filter((e) => /notification/.test(e.md?.capability ?? '')).length, 0);
    const res = await fetch(`${plain.url}/hub`, { method: 'POST', body: 'x' });
    assert.notEqual(res.status, 200);
    await res.arrayBuffer();
  } finally {
    plain.child.kill('SIGTERM');
    await exited(plain.child);
  }
});
