// `serve --xmpp` and `sync --follow --xmpp` as child processes with a real Prosody on 127.0.0.1 (skipped where
// `prosody` is not installed): the Capability List names each channel's node beside the hub and stays valid; a
// file written at the Source arrives at the Destination through the node; payloads that are not Change
// Notifications or are too large are refused and following goes on; a follower killed and started again takes
// over its subscription; SIGTERM unsubscribes and exits 0; while
// the XMPP server is down the Destination polls, and once it is back it subscribes again, the change whose
// notification was lost read from the Change List.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseDocument } from '../src/core/xml/read-document.js';
import { validateDocument } from '../src/core/validate/index.js';
import { writeDocumentString } from '../src/core/xml/write-document.js';
import { changeNotification } from '../src/core/model/notification.js';
import { XmppConnection } from '../src/notify/xmpp-client.js';
import { nodeSubscriptions, payloadMarkup, publishItem } from '../src/notify/xmpp-pubsub.js';
import { raw } from '../src/notify/xmpp-xml.js';
import { REPO_ROOT } from './helpers/paths.js';
import { tempDir } from './helpers/tmp.js';
import { exited } from './helpers/exited.js';
import { DOMAIN, Prosody, PROSODY_SKIP, SERVICE } from './helpers/prosody.js';

const MAIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const USERS = { source: 'source-secret', dest: 'dest-secret' };

interface Proc {
  child: ChildProcess;
  out: () => string;
  err: () => string;
}

function start(args: string[], password?: string): Proc {
  const env = { ...process.env };
  delete env.RESOURCESYNC_XMPP_PASSWORD;
  if (password !== undefined) env.RESOURCESYNC_XMPP_PASSWORD = password;
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  procs.push({ child, out: () => out, err: () => err });
  return procs[procs.length - 1]!;
}

async function until(what: string, predicate: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const lines = (p: Proc): Array<Record<string, unknown>> =>
  p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);

const count = (text: string, re: RegExp): number => (text.match(new RegExp(re.source, 'g')) ?? []).length;

let tmp: { dir: string; cleanup: () => Promise<void> };
let server: Prosody;
const procs: Proc[] = [];
let sourceUri: string;
let destUri: string;

before(async () => {
  if (PROSODY_SKIP !== false) return;
  tmp = await tempDir('rs-follow-xmpp-');
  server = await Prosody.start(join(tmp.dir, 'prosody'), { users: USERS, admins: [`source@${DOMAIN}`], stanzaSizeLimit: 4 * 1024 * 1024 });
  sourceUri = `xmpp://source@${DOMAIN}:${server.port}/${SERVICE}?server=127.0.0.1`;
  destUri = `xmpp://dest@${DOMAIN}:${server.port}?server=127.0.0.1`;
});

after(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await server?.stop();
  await tmp?.cleanup();
});

async function startServe(site: string): Promise<{ p: Proc; url: string }> {
  const p = start(['serve', site, '--port', '0', '--verbose', '--xmpp', sourceUri], USERS.source);
  await until(`serve to listen; ${p.err()}`, () => /^listening on /m.test(p.out()));
  return { p, url: /^listening on (\S+)$/m.exec(p.out())![1]! };
}

void test('serve --xmpp: each channel names its node beside the hub; the Capability List is valid', { skip: PROSODY_SKIP }, async () => {
  const site = join(tmp.dir, 'advertised');
  mkdirSync(site);
  await writeFile(join(site, 'a.txt'), 'a\n');
  const serve = await startServe(site);
  const res = await fetch(`${serve.url}/.resourcesync/advertised/capabilitylist.xml`);
  const caps = await parseDocument(new Uint8Array(await res.arrayBuffer()));
  assert.deepEqual(validateDocument(caps).filter((i) => i.severity === 'error'), []);
  for (const capability of ['change-notification', 'framework-notification']) {
    const e = caps.entries.find((x) => x.md?.capability === capability)!;
    assert.deepEqual(e.ln, [
      { rel: 'hub', href: `${serve.url}/hub` },
      { rel: 'alternate', href: `xmpp:${SERVICE}?pubsub;action=subscribe;node=${e.loc}` },
    ]);
  }
  await until('both nodes created', () => count(serve.p.err(), /xmpp: created node/) === 2);
  serve.p.child.kill('SIGTERM');
  assert.equal((await exited(serve.p.child))[0], 0, serve.p.err());
});

void test('sync --follow --xmpp: a file written at the Source arrives; refused payloads; SIGTERM unsubscribes and exits 0', { skip: PROSODY_SKIP }, async () => {
  const site = join(tmp.dir, 'pushed');
  mkdirSync(site);
  await writeFile(join(site, 'first.txt'), 'first\n');
  const serve = await startServe(site);
  const node = `${serve.url}/.resourcesync/pushed/change-notification/`;
  const dest = join(tmp.dir, 'd-pushed');
  const f = start(['sync', serve.url, dest, '--follow', '--json', '--delete', '--no-fsync', '--interval', '3600', '--xmpp', destUri], USERS.dest);
  await until(`the subscription; ${f.err()}`, () => f.err().includes(`subscribed to node ${node} at ${SERVICE}`));
  assert.equal(readFileSync(join(dest, 'first.txt'), 'utf8'), 'first\n');

  await writeFile(join(site, 'pushed.txt'), 'pushed\n');
  await until(`pushed.txt; ${f.out()}${f.err()}`, () => existsSync(join(dest, 'pushed.txt')));
  assert.equal(readFileSync(join(dest, 'pushed.txt'), 'utf8'), 'pushed\n');
  await until('the push line', () => lines(f).some((l) => l.via === 'push' && l.mode === 'notification' && l.created === 1));

  // payloads that are not Change Notifications, and one too large for the Destination (1 MiB); the test's own
  // connections wait up to 60 s for an answer, since Prosody takes its time over a 1 MiB item on a busy machine
  const owner = await XmppConnection.connect({ jid: `source@${DOMAIN}`, password: USERS.source, host: '127.0.0.1', port: server.port, timeoutMs: 60_000 });
  try {
    await publishItem(owner, SERVICE, node, raw('<foo xmlns="urn:example">not a notification</foo>'));
    await publishItem(owner, SERVICE, node, payloadMarkup(writeDocumentString({ root: 'urlset', md: { capability: 'resourcelist' }, ln: [], entries: [] })));
    const big = changeNotification({
      from: '2000-01-01T00:00:00Z',
      until: '2000-01-01T00:00:01Z',
      entries: Array.from({ length: 12_000 }, (_, i) => ({ loc: `${serve.url}/nowhere/${i}-${'x'.repeat(60)}.txt`, md: { change: 'created' } })),
    });
    const bigMarkup = payloadMarkup(writeDocumentString(big));
    assert.ok(bigMarkup.xml.length > 1024 * 1024);
    await publishItem(owner, SERVICE, node, bigMarkup);
  } finally {
    await owner.close();
  }
  await until(`the refusals; ${f.err()}`, () => /an XMPP stanza of about \d+ bytes was refused \(too large\)/.test(f.err()));
  await until(`the warnings; ${f.out()}`, () => {
    const codes = lines(f).flatMap((l) => ((l.warnings as Array<{ code: string }> | undefined) ?? []).map((w) => w.code));
    return codes.includes('notification-unreadable') && codes.includes('notification-not-change');
  });
  assert.equal(f.child.exitCode, null, 'following goes on');
  await writeFile(join(site, 'second.txt'), 'second\n');
  await until(`second.txt; ${f.out()}${f.err()}`, () => existsSync(join(dest, 'second.txt')));
  assert.equal(readFileSync(join(dest, 'second.txt'), 'utf8'), 'second\n');
  assert.ok(!existsSync(join(dest, 'nowhere')), 'nothing of the refused payload was applied');

  const check = await XmppConnection.connect({ jid: `source@${DOMAIN}`, password: USERS.source, host: '127.0.0.1', port: server.port, timeoutMs: 60_000 });
  try {
    const subscribed = await nodeSubscriptions(check, SERVICE, node);
    assert.equal(subscribed.length, 1);
    // killed, then started again on the same folder: the same full JID subscribes again, nothing left behind
    f.child.kill('SIGKILL');
    await exited(f.child);
    const again = start(['sync', serve.url, dest, '--follow', '--json', '--delete', '--no-fsync', '--interval', '3600', '--xmpp', destUri], USERS.dest);
    await until(`the subscription again; ${again.err()}`, () => again.err().includes(`subscribed to node ${node}`));
    assert.deepEqual(await nodeSubscriptions(check, SERVICE, node), subscribed);
    await writeFile(join(site, 'third.txt'), 'third\n');
    await until(`third.txt; ${again.out()}${again.err()}`, () => lines(again).some((l) => l.via === 'push' && l.created === 1));
    assert.equal(readFileSync(join(dest, 'third.txt'), 'utf8'), 'third\n');
    again.child.kill('SIGTERM');
    const [code] = await exited(again.child);
    assert.equal(code, 0, again.err());
    assert.deepEqual(await nodeSubscriptions(check, SERVICE, node), [], 'SIGTERM unsubscribed');
  } finally {
    await check.close();
  }
  serve.p.child.kill('SIGTERM');
  assert.equal((await exited(serve.p.child))[0], 0, serve.p.err());
});

void test('sync --follow --xmpp: with the XMPP server down it polls; back, it subscribes again and the lost change comes from the Change List', { skip: PROSODY_SKIP }, async () => {
  const site = join(tmp.dir, 'outage');
  mkdirSync(site);
  await writeFile(join(site, 'first.txt'), 'first\n');
  const serve = await startServe(site);
  const node = `${serve.url}/.resourcesync/outage/change-notification/`;
  // one follower polls every second, the other only reads the Change List when it subscribes again
  const polling = start(['sync', serve.url, join(tmp.dir, 'd-poll'), '--follow', '--json', '--no-fsync', '--interval', '1', '--xmpp', destUri], USERS.dest);
  const waiting = start(['sync', serve.url, join(tmp.dir, 'd-wait'), '--follow', '--json', '--no-fsync', '--interval', '3600', '--xmpp', destUri], USERS.dest);
  for (const f of [polling, waiting]) await until(`the subscription; ${f.err()}`, () => f.err().includes(`subscribed to node ${node}`));

  await server.stop();
  for (const f of [polling, waiting]) await until(`the loss; ${f.err()}`, () => f.err().includes('the XMPP connection was lost'));
  await until(`the Source to notice; ${serve.p.err()}`, () => serve.p.err().includes('XMPP connection lost'));
  await writeFile(join(site, 'during.txt'), 'during\n');
  await until(`the lost notification; ${serve.p.err()}`, () => /notification on \S+change-notification\/ not published over XMPP/.test(serve.p.err()));
  await until(`during.txt by polling; ${polling.out()}`, () => lines(polling).some((l) => l.via === 'poll' && l.created === 1));
  assert.equal(readFileSync(join(tmp.dir, 'd-poll', 'during.txt'), 'utf8'), 'during\n');
  assert.ok(!existsSync(join(tmp.dir, 'd-wait', 'during.txt')), 'no push and no poll: not there yet');

  await server.resume();
  for (const f of [polling, waiting]) await until(`the subscription again; ${f.err()}`, () => count(f.err(), /subscribed to node /) === 2);
  await until(`during.txt from the Change List; ${waiting.out()}`, () => lines(waiting).some((l) => l.via === 'catch-up' && l.created === 1));
  assert.equal(readFileSync(join(tmp.dir, 'd-wait', 'during.txt'), 'utf8'), 'during\n');

  await until(`the Source to connect again; ${serve.p.err()}`, () => count(serve.p.err(), /xmpp: connected as /) === 2);
  await writeFile(join(site, 'after.txt'), 'after\n');
  for (const [f, d] of [
    [polling, 'd-poll'],
    [waiting, 'd-wait'],
  ] as const) {
    await until(`after.txt in ${d}; ${f.out()}`, () => existsSync(join(tmp.dir, d, 'after.txt')));
    assert.equal(readFileSync(join(tmp.dir, d, 'after.txt'), 'utf8'), 'after\n');
  }
  await until('a push line', () => lines(waiting).some((l) => l.via === 'push' && l.created === 1));
  for (const f of [polling, waiting]) {
    f.child.kill('SIGTERM');
    assert.equal((await exited(f.child))[0], 0, f.err());
  }
  serve.p.child.kill('SIGTERM');
  assert.equal((await exited(serve.p.child))[0], 0, serve.p.err());
});

void test('--xmpp: the password only from the environment; a wrong one stops serve', { skip: PROSODY_SKIP }, async () => {
  await server.resume(); // (running already, unless a test before failed while it was stopped)
  const site = join(tmp.dir, 'wrong');
  mkdirSync(site);
  const noPassword = start(['serve', site, '--port', '0', '--xmpp', sourceUri]);
  assert.equal((await exited(noPassword.child))[0], 2);
  assert.match(noPassword.err(), /RESOURCESYNC_XMPP_PASSWORD/);
  const inUri = start(['serve', site, '--port', '0', '--xmpp', `xmpp://source:${USERS.source}@${DOMAIN}:${server.port}/${SERVICE}`], USERS.source);
  assert.equal((await exited(inUri.child))[0], 2);
  assert.match(inUri.err(), /a password does not belong in it/);
  assert.match(inUri.err(), /'xmpp:\/\/source:\*\*\*@localhost:\d+\/pubsub\.localhost' is not an XMPP account URI/);
  assert.doesNotMatch(inUri.err() + inUri.out(), new RegExp(USERS.source), 'the password is not printed');
  const wrong = start(['serve', site, '--port', '0', '--xmpp', sourceUri], 'wrong');
  assert.equal((await exited(wrong.child))[0], 1);
  assert.match(wrong.err(), /refused to authenticate 'source@localhost' \(not-authorized\)/);
  const noFollow = start(['sync', 'http://127.0.0.1:9/', join(tmp.dir, 'nf'), '--xmpp', destUri], USERS.dest);
  assert.equal((await exited(noFollow.child))[0], 2);
  assert.match(noFollow.err(), /--xmpp goes with --follow/);
});
