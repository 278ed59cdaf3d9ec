// `resourcesync build --hub URL` as a child process against a real hub and subscriber on 127.0.0.1: the
// Capability List advertises the channels, the first run announces the new capability documents, a later run
// publishes its changes as a Change Notification whose window starts where the previous one ended. A hub that
// requires a publish secret gets it from RESOURCESYNC_HUB_PUBLISH_SECRET.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHub, type Hub } from '../../src/notify/hub.js';
import type { HubStore } from '../../src/notify/hub-store.js';
import { openSqliteHubStore } from '../../src/notify/sqlite-hub-store.js';
import { listen } from '../../src/notify/node-listener.js';
import { parseDocument } from '../../src/core/xml/read-document.js';
import { validateDocument } from '../../src/core/validate/index.js';
import { REPO_ROOT } from '../helpers/paths.js';
import { tempDir } from '../helpers/tmp.js';
import { TestSubscriber } from '../helpers/websub-subscriber.js';
import { startCli, until } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const run = promisify(execFile);

test('build --hub publishes the changes of each run to the hub', async () => {
  const tmp = await tempDir('rs-build-hub-');
  const store: HubStore = openSqliteHubStore(join(tmp.dir, 'hub.sqlite'));
  const ref: { hub?: Hub } = {};
  const listener = await listen((r) => ref.hub!.handle(r));
  const hubUrl = `${listener.url}/`;
  const hub = (ref.hub = createHub({ store, hubUrl }));
  const sub = await TestSubscriber.start();
  try {
    const data = join(tmp.dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'one.txt'), '1');
    const base = 'http://127.0.0.1:1/';
    const args = [
      MAIN,
      'build',
      data,
      '--base-url',
      base,
      '--out',
      join(tmp.dir, 'out'),
      '--state',
      join(tmp.dir, 'state'),
      '--hub',
      hubUrl,
      '--json',
    ];
    const topics = {
      '/cn': `${base}.resourcesync/data/change-notification/`,
      '/fn': `${base}.resourcesync/data/framework-notification/`,
    };
    for (const [path, topic] of Object.entries(topics)) {
      const res = await fetch(hubUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          'hub.mode': 'subscribe',
          'hub.topic': topic,
          'hub.callback': `${sub.url}${path}`,
        }).toString(),
      });
      assert.equal(res.status, 202);
      await res.arrayBuffer();
    }
    await hub.idle();
    assert.equal((await store.subscriptions()).length, 2);

    const first = JSON.parse((await run(process.execPath, args)).stdout) as { notificationsPublished: number };
    assert.equal(first.notificationsPublished, 1, 'the baseline: one Framework Notification');
    const caps = await parseDocument(readFileSync(join(tmp.dir, 'out', '.resourcesync', 'data', 'capabilitylist.xml')));
    assert.deepEqual(
      caps.entries.filter((e) => e.ln?.some((l) => l.rel === 'hub' && l.href === hubUrl)).map((e) => e.loc),
      Object.values(topics),
    );
    writeFileSync(join(data, 'two.txt'), '22');
    const second = JSON.parse((await run(process.execPath, args)).stdout) as { notificationsPublished: number };
    assert.equal(second.notificationsPublished, 2);
    await hub.idle();
    const cn = sub.deliveries.filter((d) => d.url === '/cn');
    assert.equal(cn.length, 1);
    const doc = await parseDocument(cn[0]!.body);
    assert.deepEqual(validateDocument(doc), []);
    assert.deepEqual(
      doc.entries.map((e) => [e.loc, e.md?.change, e.md?.length]),
      [[`${base}two.txt`, 'created', '2']],
    );
    const fn = await Promise.all(sub.deliveries.filter((d) => d.url === '/fn').map((d) => parseDocument(d.body)));
    assert.equal(fn.length, 2);
    assert.equal(fn[0]!.entries[0]!.md?.capability, 'capabilitylist');
    // a refused publication is a failure of the run
    await listener.close();
    writeFileSync(join(data, 'three.txt'), '3');
    await assert.rejects(
      run(process.execPath, args),
      (e: { code?: number; stderr?: string }) => e.code === 1 && /could not be reached/.test(e.stderr ?? ''),
    );
  } finally {
    await listener.close();
    await hub.close();
    await store.close();
    await sub.close();
    await tmp.cleanup();
  }
});

test('build --hub sends the publish secret of RESOURCESYNC_HUB_PUBLISH_SECRET to a hub that requires it', async () => {
  const tmp = await tempDir('rs-build-hub-secret-');
  const secret = 's3cret-for-publishers';
  const hub = startCli(['hub', '--port', '0', '--data', join(tmp.dir, 'hub')], { ...process.env, RESOURCESYNC_HUB_PUBLISH_SECRET: secret });
  try {
    await until(`the hub to listen; ${hub.err()}`, () => /^listening on /m.test(hub.out()));
    const hubUrl = /^listening on (\S+)$/m.exec(hub.out())![1]!;
    const data = join(tmp.dir, 'data');
    mkdirSync(data);
    writeFileSync(join(data, 'one.txt'), '1');
    const args = [MAIN, 'build', data, '--base-url', 'http://127.0.0.1:1/', '--out', join(tmp.dir, 'out'), '--state', join(tmp.dir, 'state'), '--hub', hubUrl, '--json'];
    const env = (value?: string): NodeJS.ProcessEnv => {
      const e: NodeJS.ProcessEnv = { ...process.env };
      delete e.RESOURCESYNC_HUB_PUBLISH_SECRET;
      return value === undefined ? e : { ...e, RESOURCESYNC_HUB_PUBLISH_SECRET: value };
    };
    // each run has a change to announce
    for (const wrong of [undefined, 'not-the-secret']) {
      writeFileSync(join(data, `${String(wrong)}.txt`), 'x');
      await assert.rejects(
        run(process.execPath, args, { env: env(wrong) }),
        (e: { code?: number; stderr?: string }) => e.code === 1 && /answered 403/.test(e.stderr ?? ''),
        `secret ${String(wrong)}`,
      );
    }
    writeFileSync(join(data, 'two.txt'), '2');
    const ok = JSON.parse((await run(process.execPath, args, { env: env(secret) })).stdout) as { notificationsPublished: number };
    assert.ok(ok.notificationsPublished >= 1, `${ok.notificationsPublished} published`);
  } finally {
    hub.child.kill('SIGKILL');
    await exited(hub.child);
    await tmp.cleanup();
  }
});
