// The databases that hold secrets are readable by their owner only: a follower's state (its saved WebSub
// subscription, secret included) and a hub's store (its subscribers' secrets), with SQLite's `-wal` and `-shm`
// companions, which hold the same data; the folders we create for them too.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './helpers/tmp.js';
import { startCli as start, until, type CliChild as Proc } from './helpers/cli-child.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
const procs: Proc[] = [];
before(async () => {
  tmp = await tempDir('rs-private-');
});
after(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await tmp.cleanup();
});

/** The permission bits of `path` as octal text, e.g. `600`. */
const mode = (path: string): string => (statSync(path).mode & 0o777).toString(8);

/**
 * Asserts that the database `file` and whichever of its companions exist are 0600, and, for a store that stays
 * open (a hub's), that its WAL exists. A follower closes its state between batches, and SQLite removes the WAL
 * of a store it closes, so there the WAL may or may not be there.
 */
function assertPrivateStore(file: string, open = true): void {
  if (open) assert.ok(existsSync(`${file}-wal`), `${file}-wal exists while the store is open`);
  for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) assert.equal(mode(f), '600', f);
}

test('a follower\'s state and serve\'s embedded hub store, holding subscription secrets, are readable by the owner only', async () => {
  const site = join(tmp.dir, 'site');
  mkdirSync(site);
  writeFileSync(join(site, 'a.txt'), 'a\n');
  const serve = start(['serve', site, '--port', '0', '--verbose']);
  procs.push(serve);
  await until(`serve to listen; ${serve.err()}`, () => /^listening on /m.test(serve.out()));
  const url = /^listening on (\S+)$/m.exec(serve.out())![1]!;
  const dest = join(tmp.dir, 'dest');
  const follower = start(['sync', url, dest, '--follow', '--json', '--no-fsync']);
  procs.push(follower);
  await until(`a subscription; ${follower.err()}`, () => /subscribed to /.test(follower.err()));
  await until(`the verified subscription; ${serve.err()}`, () => /hub: verified subscribe/.test(serve.err()));

  assert.equal(mode(join(dest, '.resourcesync')), '700');
  assertPrivateStore(join(dest, '.resourcesync', 'state.sqlite'), false);
  assert.equal(mode(join(site, '.resourcesync', 'hub')), '700');
  assertPrivateStore(join(site, '.resourcesync', 'hub', 'hub.sqlite'));
  assert.equal(mode(join(dest, 'a.txt')).slice(1), '44', 'the mirrored files keep their usual mode');
});

test('resourcesync hub: a new data folder is 0700 and its store 0600; an existing store open to others is narrowed to 0600', async () => {
  const fresh = join(tmp.dir, 'hub-data');
  const hub = start(['hub', '--port', '0', '--data', fresh]);
  procs.push(hub);
  await until(`the hub to listen; ${hub.err()}`, () => /^listening on /m.test(hub.out()));
  assert.equal(mode(fresh), '700');
  assertPrivateStore(join(fresh, 'hub.sqlite'));

  const old = join(tmp.dir, 'old-hub-data');
  mkdirSync(old, { mode: 0o755 });
  chmodSync(old, 0o755);
  writeFileSync(join(old, 'hub.sqlite'), '', { mode: 0o644 });
  chmodSync(join(old, 'hub.sqlite'), 0o644);
  const again = start(['hub', '--port', '0', '--data', old]);
  procs.push(again);
  await until(`the hub to listen; ${again.err()}`, () => /^listening on /m.test(again.out()));
  assert.equal(mode(old), '755', 'a folder that exists is left as it is');
  assertPrivateStore(join(old, 'hub.sqlite'));
});
