/**
 * `kill -9` of an aggregator following a live `resourcesync serve` Source by push, every part a real process:
 * killed right after the Source changed (before its notification arrives), and again right as the hub has
 * delivered one (while it is being applied); each time started again on the same port, it takes its subscription
 * over, catches up from the Source's Change List, and goes on by push. Nothing is lost: the mirror equals the
 * Source, and the aggregate's Change List records every change once. Every wait polls against a deadline.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { exited } from './helpers/exited.js';
import { freePort, until, type CliChild } from './helpers/cli-child.js';
import { fileIs, startAggregate, statusOf, untilAsync } from './helpers/aggregate-child.js';
import { startServe } from './helpers/serve-child.js';
import { tempDir } from './helpers/tmp.js';

/** Path → content of every file under `dir`, its `.resourcesync` folder left out. */
async function tree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const d of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = relative(dir, join(d.parentPath, d.name));
    if (d.isFile() && !path.split('/').includes('.resourcesync')) out[path] = await readFile(join(d.parentPath, d.name), 'utf8');
  }
  return out;
}

const locs = (xml: string): string[] => [...xml.matchAll(/<loc>([^<]+)<\/loc>/g)].map((m) => m[1]!);

/** `<loc> <change>` of every entry of the aggregate's Change List(s) for its only Source. */
async function aggregateChanges(url: string): Promise<string[]> {
  const sd = await (await fetch(`${url}/.well-known/resourcesync`)).text();
  const capabilityList = await (await fetch(locs(sd)[0]!)).text();
  const cl = /<url>\s*<loc>([^<]+)<\/loc>\s*<rs:md capability="changelist"/.exec(capabilityList)?.[1];
  assert.ok(cl !== undefined, capabilityList);
  const read = async (u: string): Promise<string[]> => {
    const xml = await (await fetch(u)).text();
    if (xml.includes('<sitemapindex')) return (await Promise.all(locs(xml).map(read))).flat();
    return [...xml.matchAll(/<url>([\s\S]*?)<\/url>/g)].map((m) => `${/<loc>([^<]+)<\/loc>/.exec(m[1]!)?.[1]?.slice(url.length)} ${/change="(\w+)"/.exec(m[1]!)?.[1] ?? '?'}`);
  };
  return read(cl);
}

void test('aggregate push: kill -9 before and while a notification arrives loses nothing', { timeout: 400_000 }, async (t) => {
  const { dir, cleanup } = await tempDir('rs-aggregate-push-crash-');
  const children: CliChild['child'][] = [];
  t.after(async () => {
    for (const c of children) c.kill('SIGKILL');
    await cleanup();
  });
  const src = join(dir, 'src');
  await mkdir(src);
  await writeFile(join(src, 'a.txt'), 'a1\n');
  const past = new Date(Date.now() - 60_000);
  await utimes(join(src, 'a.txt'), past, past);
  const origin = await startServe([src, '--verbose']);
  children.push(origin.child);
  const out = join(dir, 'agg');
  const config = join(dir, 'agg.yaml');
  await writeFile(config, `out: ${out}\nsources:\n  - url: ${origin.url}/\n    id: s\n    interval: 3600\n    mode: push\n`);
  const port = await freePort();
  let agg = await startAggregate(config, port);
  children.push(agg.p.child);
  const logs = (): string => `aggregate:\n${agg.p.err()}\nserve:\n${origin.log().slice(-4000)}`;
  const mirror = join(out, 'sources', 's', 'mirror');
  const pushed = async (file: string, content: string): Promise<void> => {
    await writeFile(join(src, file), content);
    await untilAsync(`${file} by push`, () => fileIs(join(mirror, file), content), 90_000, logs);
  };
  const restart = async (): Promise<void> => {
    agg.p.child.kill('SIGKILL');
    await exited(agg.p.child);
    agg = await startAggregate(config, port);
    children.push(agg.p.child);
  };
  await until('following by push', () => statusOf(out, 's')?.mode === 'push', 90_000);
  await pushed('a.txt', 'a2\n');

  // killed right after the Source changed: the notification finds no one; the restart catches up
  await writeFile(join(src, 'b.txt'), 'b\n');
  await rm(join(src, 'a.txt'));
  await restart();
  await untilAsync('b.txt after the restart', () => fileIs(join(mirror, 'b.txt'), 'b\n'), 90_000, logs);
  await until('following by push again', () => statusOf(out, 's')?.mode === 'push', 90_000);
  await pushed('c.txt', 'c\n');

  // killed as the hub has delivered a notification (the aggregator answered it, and is applying it)
  const delivered = (): number => (origin.log().match(/hub: delivered /g) ?? []).length;
  const before = delivered();
  await writeFile(join(src, 'd.txt'), 'd\n');
  await until('the delivery', () => delivered() > before, 60_000);
  await restart();
  await untilAsync('d.txt after the restart', () => fileIs(join(mirror, 'd.txt'), 'd\n'), 90_000, logs);
  await until('following by push once more', () => statusOf(out, 's')?.mode === 'push', 90_000);
  await pushed('e.txt', 'e\n');

  // the mirror equals the Source; the aggregate's Change List records every change once
  assert.deepEqual(await tree(mirror), await tree(src));
  const want = ['a.txt updated', 'a.txt deleted', 'b.txt created', 'c.txt created', 'd.txt created', 'e.txt created'].map((c) => `/s/${c}`);
  const aggUrl = `http://127.0.0.1:${port}`;
  let seen: string[] = [];
  await untilAsync('the aggregate recorded every change', async () => (seen = await aggregateChanges(aggUrl)).includes('/s/e.txt created'), 60_000, () => `${JSON.stringify(seen)}\n${logs()}`);
  const changes = await aggregateChanges(aggUrl);
  for (const w of want) assert.equal(changes.filter((c) => c === w).length, 1, `${w} once in ${JSON.stringify(changes)}`);
  assert.equal(new Set(changes).size, changes.length, `no change recorded twice: ${JSON.stringify(changes)}`);
  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, logs());
});
