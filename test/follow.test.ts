// `sync --follow` as child processes against `serve` with its embedded hub: two Destinations subscribe, verify,
// receive changes pushed through the hub and apply them; SIGTERM unsubscribes and exits 0. A Source without a
// hub is followed by polling its Change List.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from './helpers/paths.js';
import { tempDir } from './helpers/tmp.js';
import { exited } from './helpers/exited.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');

interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
}

function start(args: string[]): Proc {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return { child, out: () => out, err: () => err };
}

async function until(what: string, predicate: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

async function startServe(site: string, extra: string[] = []): Promise<{ p: Proc; url: string }> {
  const p = start(['serve', site, '--port', '0', '--verbose', ...extra]);
  await until(`serve to listen; ${p.err()}`, () => /^listening on /m.test(p.out()));
  return { p, url: /^listening on (\S+)$/m.exec(p.out())![1]! };
}

const lines = (p: Proc): Array<Record<string, unknown>> =>
  p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

/** Relative path → content of every visible file under `dir`. */
function files(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    const full = join(e.parentPath, e.name);
    if (!e.isFile() || relative(dir, full).split(sep).some((s) => s.startsWith('.'))) continue;
    out[relative(dir, full)] = readFileSync(full, 'utf8');
  }
  return out;
}

async function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const port = (srv.address() as AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

let tmp: { dir: string; cleanup: () => Promise<void> };
const procs: Proc[] = [];
before(async () => {
  tmp = await tempDir('rs-follow-');
});
after(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await tmp.cleanup();
});

test('sync --follow: two Destinations follow a Source through its hub; SIGTERM unsubscribes and exits 0', async () => {
  const site = join(tmp.dir, 'site');
  mkdirSync(site);
  await writeFile(join(site, 'first.txt'), 'first\n');
  const serve = await startServe(site);
  procs.push(serve.p);
  const dests = [join(tmp.dir, 'd1'), join(tmp.dir, 'd2')];
  const followers = dests.map((d) => start(['sync', serve.url, d, '--follow', '--json', '--delete', '--no-fsync']));
  procs.push(...followers);
  for (const f of followers)
    await until(`a subscription; ${f.err()}`, () => /subscribed to \S+change-notification\//.test(f.err()));
  for (const d of dests) assert.equal(readFileSync(join(d, 'first.txt'), 'utf8'), 'first\n', 'the baseline');
  await until(
    'two verified subscriptions at the hub',
    () => (serve.p.err().match(/hub: verified subscribe/g) ?? []).length === 2,
  );

  await writeFile(join(site, 'pushed.txt'), 'pushed\n');
  for (const d of dests) await until(`pushed.txt in ${d}`, () => existsSync(join(d, 'pushed.txt')));
  for (const d of dests) assert.equal(readFileSync(join(d, 'pushed.txt'), 'utf8'), 'pushed\n');
  await unlink(join(site, 'first.txt'));
  for (const d of dests) await until(`first.txt deleted in ${d}`, () => !existsSync(join(d, 'first.txt')));
  for (const f of followers) {
    await until(`push lines; ${f.out()}`, () => lines(f).filter((l) => l.via === 'push').length >= 2);
    const pushed = lines(f).filter((l) => l.via === 'push');
    assert.ok(
      pushed.every((l) => typeof l.window === 'object' && l.gaps === 0),
      f.out(),
    );
  }

  followers[0]!.child.kill('SIGTERM');
  const [code] = await exited(followers[0]!.child);
  assert.equal(code, 0, followers[0]!.err());
  await until('the unsubscription', () => /hub: verified unsubscribe/.test(serve.p.err()));
  await writeFile(join(site, 'later.txt'), 'later\n');
  await until('later.txt at the remaining follower', () => existsSync(join(dests[1]!, 'later.txt')));
  assert.equal(existsSync(join(dests[0]!, 'later.txt')), false);

  followers[1]!.child.kill('SIGINT');
  assert.equal((await exited(followers[1]!.child))[0], 0);
  serve.p.child.kill('SIGTERM');
  await exited(serve.p.child);
});

test('sync --follow applies a notification from its own entries, without reading the Change List; deletions only with --delete; a plain sync afterwards finds nothing new', async () => {
  const site = join(tmp.dir, 'direct');
  mkdirSync(join(site, 'sub'), { recursive: true });
  await writeFile(join(site, 'keep.txt'), 'keep\n');
  const serve = await startServe(site);
  procs.push(serve.p);
  const dest = join(tmp.dir, 'direct-dest');
  const f = start(['sync', serve.url, dest, '--follow', '--json', '--no-fsync']); // no --delete
  procs.push(f);
  await until(`a subscription; ${f.err()}`, () => /subscribed to /.test(f.err()));
  await until('the verified subscription', () => /hub: verified subscribe/.test(serve.p.err()));
  await sleep(300); // the catch-up after subscribing is done
  const requestsBefore = serve.p.err().length;

  await writeFile(join(site, 'sub', 'new é.txt'), 'new\n');
  await until('new é.txt pushed', () => existsSync(join(dest, 'sub', 'new é.txt')));
  assert.equal(readFileSync(join(dest, 'sub', 'new é.txt'), 'utf8'), 'new\n');
  await writeFile(join(site, 'keep.txt'), 'kept, changed\n');
  await until('keep.txt updated', () => readFileSync(join(dest, 'keep.txt'), 'utf8') === 'kept, changed\n');
  await unlink(join(site, 'sub', 'new é.txt'));
  await until(`the deletion notified; ${f.out()}`, () =>
    lines(f).some((l) => l.via === 'push' && l.deleted === 0 && l.created === 0 && l.updated === 0 && l.notifications === 1),
  );
  assert.equal(existsSync(join(dest, 'sub', 'new é.txt')), true, 'not deleted without --delete');

  // the requests the Source saw meanwhile: the two resources, never a Change List or Capability List
  const requests = serve.p
    .err()
    .slice(requestsBefore)
    .split('\n')
    .filter((l) => /^GET /.test(l));
  assert.ok(requests.some((l) => l.startsWith('GET /sub/new%20%C3%A9.txt 200')), requests.join('\n'));
  assert.ok(requests.some((l) => l.startsWith('GET /keep.txt 200')), requests.join('\n'));
  assert.deepEqual(
    requests.filter((l) => /\/\.resourcesync\/|\.well-known/.test(l)),
    [],
    'no document was read: the notifications were applied from their own entries',
  );
  const pushed = lines(f).filter((l) => l.via === 'push');
  assert.ok(pushed.length >= 3 && pushed.every((l) => l.mode === 'notification' && l.gaps === 0), f.out());

  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
  // a plain sync after following: nothing to create or update (the deletion is still only reported)
  const plain = start(['sync', serve.url, dest, '--json', '--no-fsync']);
  const [code] = await exited(plain.child);
  assert.equal(code, 0, plain.err());
  const report = JSON.parse(plain.out()) as { mode: string; created: number; updated: number; deleted: number; deletionsSkippedCount: number };
  assert.equal(report.mode, 'incremental');
  assert.deepEqual([report.created, report.updated, report.deleted], [0, 0, 0], plain.out());
  serve.p.child.kill('SIGTERM');
  await exited(serve.p.child);
});

test('sync --follow polls the Change List when the Source has no change channel', async () => {
  const site = join(tmp.dir, 'plain');
  mkdirSync(site);
  await writeFile(join(site, 'a.txt'), 'a\n');
  const serve = await startServe(site, ['--no-hub']);
  procs.push(serve.p);
  const dest = join(tmp.dir, 'polled');
  const f = start(['sync', serve.url, dest, '--follow', '--json', '--interval', '0.2', '--no-fsync']);
  procs.push(f);
  await until('the polling notice', () => /no change notification channel; polling every 0.2 s/.test(f.err()));
  await writeFile(join(site, 'b.txt'), 'b\n');
  await until('b.txt by polling', () => existsSync(join(dest, 'b.txt')));
  await until(`the poll line; ${f.out()}`, () => lines(f).some((l) => l.via === 'poll' && l.created === 1));
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0);
  serve.p.child.kill('SIGTERM');
  await exited(serve.p.child);
});

test('sync --follow detects a gap between notification windows and fills it from the Change List', async () => {
  // an external hub on a fixed port, so that it can be stopped and started again at the same URL
  const free = await freePort();
  const hubData = join(tmp.dir, 'hub');
  const startHub = async (): Promise<Proc> => {
    const h = start(['hub', '--port', String(free), '--data', hubData, '--retry-ms', '20', '--verbose']);
    procs.push(h);
    await until(`the hub; ${h.err()}`, () => /^listening on /m.test(h.out()));
    return h;
  };
  let hub = await startHub();
  const hubUrl = `http://127.0.0.1:${free}/`;
  const site = join(tmp.dir, 'gap-site');
  mkdirSync(site);
  await writeFile(join(site, 'a.txt'), 'a\n');
  const serve = await startServe(site, ['--hub', hubUrl]);
  procs.push(serve.p);
  const dest = join(tmp.dir, 'gap-dest');
  const f = start(['sync', serve.url, dest, '--follow', '--json', '--no-fsync']);
  procs.push(f);
  await until(`a subscription; ${f.err()}`, () => /subscribed to /.test(f.err()));
  await until('the verified subscription', () => /subscribed http:\/\/127\.0\.0\.1:\d+\/callback/.test(hub.err()));

  await writeFile(join(site, 'b.txt'), 'b\n');
  await until('b.txt pushed', () => existsSync(join(dest, 'b.txt')));
  // the hub goes away: the next notification cannot be published, the Source moves its window on
  hub.child.kill('SIGTERM');
  await exited(hub.child);
  await writeFile(join(site, 'missed.txt'), 'missed\n');
  await until(`the failed publication; ${serve.p.err()}`, () =>
    /notification on \S+change-notification\/ not published/.test(serve.p.err()),
  );
  assert.equal(existsSync(join(dest, 'missed.txt')), false);
  hub = await startHub();
  await writeFile(join(site, 'c.txt'), 'c\n');
  await until('c.txt pushed', () => existsSync(join(dest, 'c.txt')));
  assert.equal(readFileSync(join(dest, 'missed.txt'), 'utf8'), 'missed\n', 'the gap was filled from the Change List');
  await until('the gap line', () => lines(f).some((l) => l.via === 'push' && l.gaps === 1));
  const gapLine = lines(f).find((l) => l.via === 'push' && l.gaps === 1)!;
  assert.equal(gapLine.changeList, 'gap', 'the gap was read from the Change List');
  assert.deepEqual(files(dest), files(site), 'the mirror ends identical to the Source');
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0);
  serve.p.child.kill('SIGTERM');
  await exited(serve.p.child);
  hub.child.kill('SIGTERM');
  await exited(hub.child);
});

test('serve --allow-callback: the embedded hub refuses a callback host that is not loopback by name unless a pattern allows it', async () => {
  // [::ffff:7f00:1] is 127.0.0.1 mapped into IPv6: traffic stays on loopback, but by name it is not a
  // loopback host, so the hub's callback policy treats it as any other host
  const site = join(tmp.dir, 'allow');
  mkdirSync(site);
  await writeFile(join(site, 'a.txt'), 'a\n');
  const follow = async (serveUrl: string, dest: string): Promise<Proc> => {
    const port = await freePort();
    const f = start([
      'sync', serveUrl, dest, '--follow', '--json', '--no-fsync', '--interval', '30',
      '--listen', `127.0.0.1:${port}`, '--callback-url', `http://[::ffff:7f00:1]:${port}/callback`,
    ]);
    procs.push(f);
    return f;
  };

  const refused = await startServe(site, ['--state', join(tmp.dir, 'allow-state-1')]);
  procs.push(refused.p);
  const f1 = await follow(refused.url, join(tmp.dir, 'allow-d1'));
  await until(`the refusal; ${f1.err()}`, () => /subscription failed \(.*403.*\); polling every 30 s/.test(f1.err()));
  assert.doesNotMatch(refused.p.err(), /hub: verified subscribe/);
  f1.child.kill('SIGTERM');
  assert.equal((await exited(f1.child))[0], 0);
  refused.p.child.kill('SIGTERM');
  await exited(refused.p.child);

  const allowed = await startServe(site, ['--state', join(tmp.dir, 'allow-state-2'), '--allow-callback', '[::ffff:7f00:1]']);
  procs.push(allowed.p);
  const dest = join(tmp.dir, 'allow-d2');
  const f2 = await follow(allowed.url, dest);
  await until(`a subscription; ${f2.err()}`, () => /subscribed to /.test(f2.err()));
  await until('the verified subscription at the hub', () =>
    /hub: verified subscribe http:\/\/\[::ffff:7f00:1\]:\d+\/callback/.test(allowed.p.err()),
  );
  await writeFile(join(site, 'b.txt'), 'b\n');
  await until('b.txt pushed to the allowed callback', () => existsSync(join(dest, 'b.txt')));
  f2.child.kill('SIGTERM');
  assert.equal((await exited(f2.child))[0], 0);
  allowed.p.child.kill('SIGTERM');
  await exited(allowed.p.child);

  const misuse = start(['serve', site, '--port', '0', '--no-hub', '--allow-callback', '*.example.org']);
  assert.equal((await exited(misuse.child))[0], 2);
  assert.match(misuse.err(), /--allow-callback applies to the embedded hub/);
});
