import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isResourceSyncError } from '../core/errors.js';
import { createLiveSource, type LiveSourceEvent } from './live-source.js';

async function folder(): Promise<{ root: string; dir: string }> {
  const root = await mkdtemp(join(tmpdir(), 'rs-live-'));
  const dir = join(root, 'data');
  await mkdir(dir);
  await writeFile(join(dir, 'a.txt'), 'first\n');
  return { root, dir };
}

void test('answers 503 until the first publication, then serves the set; publishNow publishes a change', async () => {
  const { root, dir } = await folder();
  const events: LiveSourceEvent[] = [];
  const source = await createLiveSource({
    sets: [{ name: 'data', dir }],
    port: 0,
    stateDir: join(root, 'state'),
    watch: false,
    onEvent: (e) => events.push(e),
  });
  try {
    const early = await source.handler({ method: 'GET', target: '/a.txt', headers: {} });
    assert.equal(early.status, 503);
    assert.equal(early.headers['retry-after'], '1');
    const first = await source.ready();
    assert.equal(first.resources, 1);
    const resource = await fetch(`${source.url}/a.txt`);
    assert.equal(resource.status, 200);
    assert.equal(await resource.text(), 'first\n');
    const description = await fetch(`${source.url}/.well-known/resourcesync`);
    assert.equal(description.status, 200);

    await writeFile(join(dir, 'b.txt'), 'second\n');
    const again = await source.publishNow();
    assert.deepEqual(again.changes, { created: 1, updated: 0, deleted: 0 });
    const created = await fetch(`${source.url}/b.txt`);
    assert.equal(created.status, 200);
    await created.arrayBuffer();
    assert.deepEqual(events.filter((e) => e.type === 'error' || e.type === 'publish-failed'), []);
  } finally {
    await source.close();
    await rm(root, { recursive: true, force: true });
  }
});

void test('a port in use rejects with RS_NETWORK, naming the address', async () => {
  const { root, dir } = await folder();
  const holder = await createLiveSource({ sets: [{ name: 'data', dir }], port: 0, stateDir: join(root, 'state'), watch: false });
  const port = Number(new URL(holder.url).port);
  try {
    await assert.rejects(
      createLiveSource({ sets: [{ name: 'data', dir }], port, stateDir: join(root, 'state2'), watch: false }),
      (error: unknown) => isResourceSyncError(error, 'RS_NETWORK') && error.message.startsWith(`cannot listen on 127.0.0.1:${port}: `),
    );
  } finally {
    await holder.close();
    await rm(root, { recursive: true, force: true });
  }
});

void test('with the watcher, a file written after the start is served and close() resolves closed', async () => {
  const { root, dir } = await folder();
  const runs: string[] = [];
  const source = await createLiveSource({
    sets: [{ name: 'data', dir }],
    port: 0,
    stateDir: join(root, 'state'),
    onEvent: (e) => {
      if (e.type === 'run') runs.push(e.action);
    },
  });
  try {
    await source.ready();
    await writeFile(join(dir, 'c.txt'), 'third\n');
    const deadline = Date.now() + 30_000;
    let listed = false;
    while (!listed && Date.now() < deadline) {
      const list = await fetch(`${source.url}/.resourcesync/data/resourcelist.xml`);
      listed = (await list.text()).includes('/c.txt</loc>');
      if (!listed) await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.ok(listed, 'c.txt is listed');
    assert.ok(runs.includes('rescan'));
  } finally {
    await source.close();
    await source.closed;
    await rm(root, { recursive: true, force: true });
  }
});

void test('publishFiles records the files named on their own, without scanning the sets, then writes the documents', async () => {
  const { root, dir } = await folder();
  const source = await createLiveSource({ sets: [{ name: 'data', dir }], port: 0, stateDir: join(root, 'state'), watch: false });
  try {
    await source.ready();
    await writeFile(join(dir, 'c.txt'), 'named\n');
    await writeFile(join(dir, 'd.txt'), 'not named\n');
    const named = await source.publishFiles([join(dir, 'c.txt')]);
    assert.deepEqual(named.changes, { created: 1, updated: 0, deleted: 0 });
    assert.equal(named.resources, 2);
    const changes = await (await fetch(`${source.url}/.resourcesync/data/changelist.xml`)).text();
    assert.match(changes, /\/c\.txt<\/loc>/);
    assert.doesNotMatch(changes, /\/d\.txt<\/loc>/);
    const rescan = await source.publishNow();
    assert.deepEqual(rescan.changes, { created: 1, updated: 0, deleted: 0 });
    assert.equal(rescan.resources, 3);
  } finally {
    await source.close();
    await rm(root, { recursive: true, force: true });
  }
});
