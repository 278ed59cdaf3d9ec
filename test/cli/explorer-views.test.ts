// The status views as the commands serve them: `aggregate` mounts the explorer at /.resourcesync/ui/ with the
// Aggregate view (a Source that is down shows failing, its credentials by variable name only), and
// `explore --web <url> --queue postgres://…` adds the Queue view (usage errors exit 2 without the password).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { AggregateStatusView, QueueStatusView } from '../../src/web/status-views.js';
import { freePort, startCli, until, type CliChild } from '../helpers/cli-child.js';
import { exited } from '../helpers/exited.js';
import { runCli } from '../helpers/mirror-check.js';
import { rawRequest } from '../helpers/raw-http.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';

const children: CliChild[] = [];
after(async () => {
  for (const c of children) {
    if (c.child.exitCode === null) {
      c.child.kill('SIGTERM');
      await exited(c.child);
    }
  }
});

async function started(args: string[], env?: NodeJS.ProcessEnv): Promise<{ p: CliChild; url: string }> {
  const p = startCli(args, env);
  children.push(p);
  await until(`${args[0]} listening`, () => /^listening on /m.test(p.out()) || p.child.exitCode !== null);
  assert.equal(p.child.exitCode, null, `${args[0]} exited: ${p.err()}`);
  return { p, url: /^listening on (\S+?)\/?$/m.exec(p.out())![1]! };
}

void test('aggregate serves the explorer with the Aggregate view: a Source that is down shows failing, no secret', async () => {
  const { dir, cleanup } = await tempDir('rs-agg-ui-');
  try {
    const config = join(dir, 'aggregate.yaml');
    const [a, b] = [await freePort(), await freePort()];
    await writeFile(
      config,
      `out: ${join(dir, 'out')}\nmax-backoff: 2\nsources:\n  - url: http://127.0.0.1:${a}/\n    id: down-a\n    interval: 1\n` +
        `  - url: http://127.0.0.1:${b}/\n    id: down-b\n    interval: 1\n    credentials:\n      bearer: DOWN_TOKEN\n`,
    );
    const { p, url } = await started(['aggregate', config, '--port', '0'], { ...process.env, DOWN_TOKEN: 'sup3rsecret' });
    const page = await fetch(`${url}/.resourcesync/ui/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /id="tab-aggregate"/);
    assert.deepEqual(await (await fetch(`${url}/.resourcesync/ui/api/views`)).json(), { aggregate: true, queue: false, channels: false });
    let view: AggregateStatusView | undefined;
    let text = '';
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const res = await fetch(`${url}/.resourcesync/ui/api/aggregate`);
      assert.equal(res.status, 200);
      text = await res.text();
      view = JSON.parse(text) as AggregateStatusView;
      if (view.sources.length === 2 && view.sources.every((s) => s.failing && s.lastError !== undefined)) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.deepEqual(view!.sources.map((s) => s.failing), [true, true], text);
    const downB = view!.sources.find((s) => s.id === 'down-b')!;
    assert.equal(downB.credentialsEnv, 'DOWN_TOKEN');
    assert.equal(downB.mode, 'poll');
    assert.ok(downB.nextAttempt !== undefined);
    assert.doesNotMatch(text, /sup3rsecret/);
    // only requests addressed to the aggregator's own host
    const port = Number(new URL(url).port);
    assert.equal((await rawRequest(port, '/.resourcesync/ui/api/aggregate', 'GET', 15_000, 'evil.example')).status, 421);
    p.child.kill('SIGTERM');
    assert.deepEqual(await exited(p.child), [0, null]);
  } finally {
    await cleanup();
  }
});

void test('explore --queue: usage errors exit 2 and never print the password', async () => {
  const noWeb = await runCli(['explore', 'http://127.0.0.1:9/', '--queue', 'postgres://rs:pw1secret@127.0.0.1/db']);
  assert.equal(noWeb.status, 2);
  assert.match(noWeb.stderr, /--queue go with --web/);
  const notPg = await runCli(['explore', '--web', 'http://127.0.0.1:9/', '--port', '0', '--queue', 'mysql://rs:pw2secret@127.0.0.1/db']);
  assert.equal(notPg.status, 2);
  assert.match(notPg.stderr, /is not a postgres:\/\/ URL/);
  assert.doesNotMatch(noWeb.stderr + notPg.stderr + noWeb.stdout + notPg.stdout, /pw\dsecret/);
});

describe('explore --web --queue on a real PostgreSQL', { skip: POSTGRES_SKIP }, () => {
  const cluster = usePostgres();

  void test('the page offers the Queue view, which reads the queue without the password', async () => {
    const queue = cluster().url.replace('postgres@', 'postgres:qsecret@');
    const { p, url } = await started(['explore', '--web', 'http://127.0.0.1:9/', '--port', '0', '--queue', queue]);
    assert.deepEqual(await (await fetch(`${url}/api/views`)).json(), { aggregate: false, queue: true, channels: false });
    const res = await fetch(`${url}/api/queue`);
    assert.equal(res.status, 200);
    const text = await res.text();
    const view = JSON.parse(text) as QueueStatusView;
    assert.deepEqual(view.runs, []);
    assert.equal(view.queue, cluster().url, 'the URL without its password');
    assert.doesNotMatch(text + p.out() + p.err(), /qsecret/);
    p.child.kill('SIGTERM');
    assert.deepEqual(await exited(p.child), [0, null]);
  });
});
