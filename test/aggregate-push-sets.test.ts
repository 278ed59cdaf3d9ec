/**
 * An aggregator following by push a `resourcesync serve` Source of three capability sets, two of them chosen
 * (`capability-sets`): each chosen set is subscribed through its own change channel, with its own state in
 * `<out>/sources/<id>/sets/<n>/`; a change in each chosen set arrives by push (the interval is an hour, so no
 * poll brings it), a change in the set left out never reaches the mirror.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openSqliteDestinationState } from '../src/destination/sqlite-state.js';
import { exited } from './helpers/exited.js';
import { until, type CliChild } from './helpers/cli-child.js';
import { fileIs, startAggregate, statusOf, untilAsync } from './helpers/aggregate-child.js';
import { startServe } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';

async function settle(dir: string): Promise<void> {
  const past = new Date(Date.now() - 60_000);
  for (const d of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (d.isFile()) await utimes(join(d.parentPath, d.name), past, past);
  }
}

void test('aggregate push: each chosen capability set followed through its own channel, the others left out', { timeout: 300_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-push-sets-');
  const children: CliChild['child'][] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await cleanup();
  });
  const sets = ['one', 'two', 'three'];
  for (const s of sets) {
    await mkdir(join(dir, 'src', s), { recursive: true });
    await writeFile(join(dir, 'src', s, `${s}.txt`), `${s}\n`);
    await settle(join(dir, 'src', s));
  }
  const origin = await startServe(sets.map((s) => join(dir, 'src', s)));
  children.push(origin.child);
  const out = join(dir, 'agg');
  const cap = (s: string): string => `${origin.url}/.resourcesync/${s}/capabilitylist.xml`;
  await writeFile(
    join(dir, 'agg.yaml'),
    `out: ${out}\nsources:\n  - url: ${origin.url}/\n    id: src\n    interval: 3600\n    mode: push\n    capability-sets:\n      - ${cap('one')}\n      - ${cap('two')}\n`,
  );
  const agg = await startAggregate(join(dir, 'agg.yaml'));
  children.push(agg.p.child);
  const logs = (): string => `aggregate:\n${agg.p.err()}\nserve:\n${origin.log()}`;
  await until('both chosen sets subscribed', () => statusOf(out, 'src')?.mode === 'push', 90_000).catch((e: unknown) => {
    throw new Error(`${String(e)}\n${logs()}`);
  });
  const mirror = join(out, 'sources', 'src', 'mirror');
  await untilAsync('the first copies', async () => (await fileIs(join(mirror, 'one', 'one.txt'), 'one\n')) && (await fileIs(join(mirror, 'two', 'two.txt'), 'two\n')), 60_000, logs);
  assert.equal(existsSync(join(mirror, 'three')), false, 'the set not chosen is left out');
  assert.equal(statusOf(out, 'src')?.resources, 2);

  // each chosen set keeps its own state, with its own subscription for the next run
  for (const [n, s] of [[0, 'one'], [1, 'two']] as const) {
    const state = await openSqliteDestinationState(join(out, 'sources', 'src', 'sets', String(n)), { readonly: true });
    try {
      assert.equal(await state.count(), 1, `set ${s} holds its own resource`);
      const saved = await state.getMeta(`follow.websub ${cap(s)}`);
      assert.ok(saved !== undefined, `set ${s} keeps its subscription`);
      assert.match((JSON.parse(saved) as { callbackUrl: string }).callbackUrl, new RegExp(`/src~${n}$`), 'a callback of its own');
    } finally {
      await state.close();
    }
  }

  // a change in each chosen set, and one in the set left out
  await writeFile(join(dir, 'src', 'one', 'one.txt'), 'one, changed\n');
  await writeFile(join(dir, 'src', 'two', 'new.txt'), 'new in two\n');
  await writeFile(join(dir, 'src', 'three', 'three.txt'), 'three, changed\n');
  await untilAsync('the change in set one, by push', () => fileIs(join(mirror, 'one', 'one.txt'), 'one, changed\n'), 90_000, logs);
  await untilAsync('the new file in set two, by push', () => fileIs(join(mirror, 'two', 'new.txt'), 'new in two\n'), 90_000, logs);
  await until('the status counts both', () => statusOf(out, 'src')?.resources === 3, 30_000);
  // the set left out was never subscribed to (the Source's hub says so), so no notification of it can arrive later
  const channels = (await (await fetch(`${origin.url}/.resourcesync/ui/api/channels`)).json()) as { subscriptions: { topic: string; state: string }[] };
  const verified = channels.subscriptions.filter((s) => s.state === 'verified').map((s) => s.topic);
  assert.equal(verified.length, 2, `one subscription per chosen set: ${verified.join(', ')}`);
  assert.deepEqual(verified.map((t) => /\/(one|two|three)\//.exec(t)?.[1]).sort(), ['one', 'two'], `no subscription to the set left out: ${verified.join(', ')}`);
  assert.equal(existsSync(join(mirror, 'three')), false, 'nothing of the set left out reached the mirror');
  assert.equal(statusOf(out, 'src')?.mode, 'push');
  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, logs());
});
