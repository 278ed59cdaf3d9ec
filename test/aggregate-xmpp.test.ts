/**
 * An aggregator following Sources by push over XMPP PubSub (Change Notification 1.0.1), with a real Prosody on
 * 127.0.0.1 (skipped where `prosody` is not installed): `serve --xmpp` advertises each channel's node beside its
 * hub; the aggregator, given an XMPP account by environment variable names (`xmpp: { jid, password }`),
 * subscribes to the node with it and a change arrives through it (the interval is an hour: no poll brings it). A
 * second Source advertising no XMPP node is followed through its WebSub hub. The password is written nowhere.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XmppConnection } from '../src/notify/xmpp-client.js';
import { nodeSubscriptions } from '../src/notify/xmpp-pubsub.js';
import { exited } from './helpers/exited.js';
import { startCli, until, type CliChild } from './helpers/cli-child.js';
import { fileIs, startAggregate, statusOf, untilAsync } from './helpers/aggregate-child.js';
import { startServe } from './helpers/serve-child.js';
import { DOMAIN, Prosody, PROSODY_SKIP, SERVICE } from './helpers/prosody.js';
import { tempDir } from './helpers/tmp.js';

const USERS = { source: 'source-secret', agg: 'agg-xmpp-secret-9f1c' };

let tmp: { dir: string; cleanup: () => Promise<void> };
let server: Prosody;
const children: CliChild['child'][] = [];

before(async () => {
  if (PROSODY_SKIP !== false) return;
  tmp = await tempDir('rs-aggregate-xmpp-');
  server = await Prosody.start(join(tmp.dir, 'prosody'), { users: USERS, admins: [`source@${DOMAIN}`] });
});

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await server?.stop();
  await tmp?.cleanup();
});

async function site(name: string): Promise<string> {
  const d = join(tmp.dir, name);
  await mkdir(d);
  await writeFile(join(d, 'a.txt'), `${name}\n`);
  const past = new Date(Date.now() - 60_000);
  await utimes(join(d, 'a.txt'), past, past);
  return d;
}

/** Every file under `dir`, recursively. */
async function files(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true, recursive: true })).filter((d) => d.isFile()).map((d) => join(d.parentPath, d.name));
}

void test('aggregate over XMPP: a Source followed through its PubSub node, another through its hub', { skip: PROSODY_SKIP, timeout: 300_000 }, async () => {
  const xmppDir = await site('xmppsite');
  const sourceUri = `xmpp://source@${DOMAIN}:${server.port}/${SERVICE}?server=127.0.0.1`;
  const serveX = startCli(['serve', xmppDir, '--port', '0', '--verbose', '--xmpp', sourceUri], { ...process.env, RESOURCESYNC_XMPP_PASSWORD: USERS.source });
  children.push(serveX.child);
  await until(`serve --xmpp listening; ${serveX.err()}`, () => /^listening on /m.test(serveX.out()), 60_000);
  const xUrl = /^listening on (\S+)$/m.exec(serveX.out())![1]!;
  await until('the nodes created', () => (serveX.err().match(/xmpp: created node/g) ?? []).length === 2, 60_000);
  const hubDir = await site('hubsite');
  const serveH = await startServe([hubDir]);
  children.push(serveH.child);

  const out = join(tmp.dir, 'agg');
  await writeFile(
    join(tmp.dir, 'agg.yaml'),
    `out: ${out}\nxmpp: { jid: AGG_XMPP_JID, password: AGG_XMPP_PASSWORD }\nsources:\n  - { url: "${xUrl}/", id: x, interval: 3600 }\n  - { url: "${serveH.url}/", id: h, interval: 3600, mode: push }\n`,
  );
  const env: NodeJS.ProcessEnv = { ...process.env, AGG_XMPP_JID: `xmpp://agg@${DOMAIN}:${server.port}?server=127.0.0.1`, AGG_XMPP_PASSWORD: USERS.agg };
  delete env.RESOURCESYNC_XMPP_PASSWORD;
  const agg = await startAggregate(join(tmp.dir, 'agg.yaml'), 0, env);
  children.push(agg.p.child);
  const logs = (): string => `aggregate:\n${agg.p.err()}\nserve --xmpp:\n${serveX.err()}`;
  await until('both Sources followed by push', () => statusOf(out, 'x')?.mode === 'push' && statusOf(out, 'h')?.mode === 'push', 90_000).catch((e: unknown) => {
    throw new Error(`${String(e)}\n${logs()}`);
  });

  // the aggregator's account is the one subscribed to the node
  const node = `${xUrl}/.resourcesync/xmppsite/change-notification/`;
  const check = await XmppConnection.connect({ jid: `source@${DOMAIN}`, password: USERS.source, host: '127.0.0.1', port: server.port, timeoutMs: 60_000 });
  try {
    const subs = await nodeSubscriptions(check, SERVICE, node);
    assert.equal(subs.length, 1, JSON.stringify(subs));
    assert.match(JSON.stringify(subs), new RegExp(`agg@${DOMAIN}/`));
  } finally {
    await check.close();
  }

  await writeFile(join(xmppDir, 'b.txt'), 'pushed over xmpp\n');
  await writeFile(join(hubDir, 'b.txt'), 'pushed through the hub\n');
  await untilAsync('the change over XMPP', () => fileIs(join(out, 'sources', 'x', 'mirror', 'b.txt'), 'pushed over xmpp\n'), 90_000, logs);
  await untilAsync('the change through the hub', () => fileIs(join(out, 'sources', 'h', 'mirror', 'b.txt'), 'pushed through the hub\n'), 90_000, logs);

  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0, logs());
  const after = await XmppConnection.connect({ jid: `source@${DOMAIN}`, password: USERS.source, host: '127.0.0.1', port: server.port, timeoutMs: 60_000 });
  try {
    assert.deepEqual(await nodeSubscriptions(after, SERVICE, node), [], 'SIGTERM unsubscribed');
  } finally {
    await after.close();
  }
  for (const f of await files(out)) assert.ok(!(await readFile(f)).includes(USERS.agg), `the password is not in ${f}`);
  assert.ok(!agg.p.err().includes(USERS.agg) && !agg.p.out().includes(USERS.agg), 'nor printed');
});

void test('aggregate over XMPP: an unset variable fails the Source with a message naming it', { skip: PROSODY_SKIP, timeout: 120_000 }, async () => {
  const d = await site('unset');
  const serve = await startServe([d]);
  children.push(serve.child);
  const out = join(tmp.dir, 'agg-unset');
  await writeFile(join(tmp.dir, 'unset.yaml'), `out: ${out}\nsources:\n  - { url: "${serve.url}/", id: u, interval: 3600, xmpp: { jid: NO_SUCH_JID_VAR, password: NO_SUCH_PASS_VAR } }\n`);
  const env = { ...process.env };
  delete env.NO_SUCH_JID_VAR;
  const agg = await startAggregate(join(tmp.dir, 'unset.yaml'), 0, env);
  children.push(agg.p.child);
  await until('the failure', () => statusOf(out, 'u')?.state === 'failing', 60_000);
  assert.match(statusOf(out, 'u')?.lastError?.message ?? '', /NO_SUCH_JID_VAR \(xmpp jid\) is not set/);
  agg.p.child.kill('SIGTERM');
  assert.equal((await exited(agg.p.child))[0], 0);
});
