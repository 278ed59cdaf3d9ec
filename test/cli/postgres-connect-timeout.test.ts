// Every PostgreSQL connection the package opens has a connect timeout: against a TCP socket on 127.0.0.1 that accepts
// and never answers (a server that hangs, as a blackholed host does), `sync --state`, `audit --state`,
// `sync --queue`, `worker --queue` (pg-boss), `worker --status`, `hub --store` and the library's
// openPostgresDestinationState give up within the URL's `connect_timeout=2` with exit 3 and a message saying so;
// without it, within the default 10 s. The time is measured by the socket (accepted → closed by the client), so the
// load of the machine on the child processes' start-up does not count.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceSyncError } from '../../src/core/errors.js';
import { openPostgresDestinationState } from '../../src/destination/postgres-state.js';
import { until } from '../helpers/cli-child.js';
import { runCli } from '../helpers/mirror-check.js';

/** A server that accepts and never answers; how long each connection was held before the client closed it. */
let silent: Server;
let port: number;
const held: number[] = [];
const open = new Set<Socket>();
let work: string;

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'rs-pg-timeout-'));
  silent = createServer((socket) => {
    const at = Date.now();
    open.add(socket);
    socket.on('error', () => undefined);
    socket.resume(); // read (and ignore) the startup message, so the client's close is seen
    socket.on('close', () => {
      open.delete(socket);
      held.push(Date.now() - at);
    });
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  port = (silent.address() as AddressInfo).port;
});

after(async () => {
  for (const s of open) s.destroy();
  await new Promise((resolve) => silent.close(resolve));
  await rm(work, { recursive: true, force: true });
});

/** The connections closed since `from` (an index into `held`): each held about `seconds`, none for ever. */
async function heldFor(from: number, seconds: number): Promise<void> {
  await until('the client to close its connection', () => held.length > from && open.size === 0, 10_000);
  const times = held.slice(from);
  for (const ms of times) assert.ok(ms >= seconds * 1000 - 300 && ms < seconds * 1000 + 4000, `held ${ms} ms, not about ${seconds} s`);
}

void test('the CLI gives up after connect_timeout=2 with exit 3, saying so, never the password', async () => {
  const url = `postgres://rs:pgsecret@127.0.0.1:${port}/x?connect_timeout=2`;
  const dest = join(work, 'mirror');
  const runs: [string, string[], RegExp][] = [
    ['sync --state', ['sync', 'http://127.0.0.1:9/capabilitylist.xml', dest, '--state', url], /The state at postgres:\/\/rs@127\.0\.0\.1:\d+\/x cannot be opened: .*timeout/],
    ['audit --state', ['audit', 'http://127.0.0.1:9/capabilitylist.xml', dest, '--state', url], /cannot be opened: .*timeout/],
    ['sync --queue', ['sync', 'http://127.0.0.1:9/capabilitylist.xml', dest, '--state', url, '--queue', url], /timeout/],
    ['worker --queue', ['worker', '--queue', url], /Queue 'postgres:\/\/rs@127\.0\.0\.1:\d+\/x' could not be opened: .*timeout/],
    ['worker --status', ['worker', '--queue', url, '--status'], /Cannot read the queue at .*timeout/],
    ['hub --store', ['hub', '--store', url, '--port', '0'], /The store at postgres:\/\/rs@127\.0\.0\.1:\d+\/x cannot be opened: .*timeout/],
  ];
  for (const [name, args, why] of runs) {
    const from = held.length;
    const ran = await runCli(args, 60_000);
    assert.equal(ran.killed, false, `${name} hung`);
    assert.equal(ran.status, 3, `${name}: ${ran.stderr}`);
    assert.match(ran.stderr, why, name);
    assert.match(ran.stderr, /connect_timeout=SECONDS in the URL, 10 s by default/, name);
    assert.doesNotMatch(ran.stdout + ran.stderr, /pgsecret/, name);
    await heldFor(from, 2);
  }
});

void test('without connect_timeout the default is 10 s', async () => {
  const from = held.length;
  const ran = await runCli(['worker', '--queue', `postgres://rs@127.0.0.1:${port}/x`, '--status'], 60_000);
  assert.equal(ran.status, 3, ran.stderr);
  assert.match(ran.stderr, /did not answer within the connect timeout/);
  await heldFor(from, 10);
});

void test('the library: openPostgresDestinationState rejects with RS_IO after the connect timeout', async () => {
  const from = held.length;
  await assert.rejects(openPostgresDestinationState(`postgres://rs@127.0.0.1:${port}/x?connect_timeout=2`, { destination: 'm' }), (err: unknown) =>
    err instanceof ResourceSyncError && err.code === 'RS_IO' && /did not answer within the connect timeout/.test(err.message));
  await heldFor(from, 2);
});
