// `sync --follow` against a hostile Source (a node:http server on 127.0.0.1 written here): its Capability List is
// answered normally for the first sync, then, when the follower reads its change channel, with 1 GiB, a byte every
// 300 ms, or a hub on another origin. The follower refuses the first at the document limit, gives up on the second
// at its deadline, ends promptly on SIGTERM during either, and contacts no hub its authority does not allow.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { ServerResponse } from 'node:http';
import { tempDir } from './helpers/tmp.js';
import { exited } from './helpers/exited.js';
import { startCli as start, until, type CliChild as Proc } from './helpers/cli-child.js';
import { FakeSource } from './helpers/fake-source.js';
import { startTestServer, type TestServer } from './helpers/test-server.js';

const HEAD = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="capabilitylist"/>
`;

/** The Capability List of `src`, with a change channel whose hub is `hub`. */
function capabilityList(src: FakeSource, hub: string): string {
  return `${HEAD}<url><loc>${src.origin}/resourcelist.xml</loc><rs:md capability="resourcelist"/></url>
<url><loc>${src.origin}/changelist.xml</loc><rs:md capability="changelist"/></url>
<url><loc>${src.origin}/change-notification/</loc><rs:ln rel="hub" href="${hub}"/><rs:md capability="change-notification"/></url>
</urlset>`;
}

/** A Source with a.txt whose Capability List names `hub`. */
async function hostileSource(hub?: string): Promise<{ server: TestServer; src: FakeSource }> {
  const server = await startTestServer();
  const src = new FakeSource(server);
  src.put('a.txt', 'a\n');
  src.publish();
  server.set('/capabilitylist.xml', capabilityList(src, hub ?? `${src.origin}/hub`));
  return { server, src };
}

/**
 * Makes the Capability List hostile once, for the first request after the first sync read the Change List (the
 * follower's channel read): `answer` writes that response; `seen` counts it.
 */
function hostileChannel(server: TestServer, answer: (res: ServerResponse) => void): { seen: () => number } {
  let changeListRead = false;
  let seen = 0;
  server.fault = (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/changelist.xml') changeListRead = true;
    if (path !== '/capabilitylist.xml' || !changeListRead || seen > 0) return false; // hostile once: the channel read
    seen++;
    answer(res);
    return true;
  };
  return { seen: () => seen };
}

/** Writes the head of a Capability List, then `chunk` every `everyMs` until the client goes (or `maxBytes`). */
function endless(res: ServerResponse, chunk: Buffer, everyMs: number, maxBytes: number, sent: { bytes: number }): void {
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.write(HEAD);
  const pump = (): void => {
    while (!res.destroyed && sent.bytes < maxBytes) {
      sent.bytes += chunk.length;
      if (!res.write(chunk)) {
        res.once('drain', pump);
        return;
      }
      if (everyMs > 0) {
        setTimeout(pump, everyMs);
        return;
      }
    }
    res.end();
  };
  res.on('close', () => res.destroy());
  pump();
}

let tmp: { dir: string; cleanup: () => Promise<void> };
const procs: Proc[] = [];
const servers: TestServer[] = [];
before(async () => {
  tmp = await tempDir('rs-follow-hostile-');
});
after(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  for (const s of servers) await s.close();
  await tmp.cleanup();
});

test('sync --follow: a 1 GiB Capability List is refused at the document limit; the follower keeps polling', async () => {
  const { server, src } = await hostileSource();
  servers.push(server);
  const sent = { bytes: 0 };
  const hostile = hostileChannel(server, (res) => endless(res, Buffer.alloc(1024 * 1024, 0x20), 0, 1024 ** 3, sent));
  const dest = join(tmp.dir, 'big');
  const f = start(['sync', src.capabilityList, dest, '--follow', '--json', '--no-fsync', '--interval', '0.3']);
  procs.push(f);
  await until(`the refusal; ${f.err()}`, () =>
    /change channel could not be read \(.*(limit|larger|longer).*\); polling every 0\.3 s/i.test(f.err()),
  );
  assert.equal(hostile.seen(), 1);
  assert.ok(sent.bytes < 64 * 1024 * 1024, `the follower stopped reading early (${sent.bytes} bytes sent)`);
  src.put('b.txt', 'b\n');
  src.publish();
  server.set('/capabilitylist.xml', capabilityList(src, `${src.origin}/hub`));
  await until('b.txt by polling', () => existsSync(join(dest, 'b.txt')));
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
});

test('sync --follow: a Capability List that drips a byte at a time ends at the deadline of --timeout; polling goes on', async () => {
  const { server, src } = await hostileSource();
  servers.push(server);
  const sent = { bytes: 0 };
  const hostile = hostileChannel(server, (res) => endless(res, Buffer.from(' '), 300, 1024 ** 3, sent));
  const dest = join(tmp.dir, 'drip');
  const f = start([
    'sync',
    src.capabilityList,
    dest,
    '--follow',
    '--json',
    '--no-fsync',
    '--interval',
    '0.3',
    '--timeout',
    '2000',
  ]);
  procs.push(f);
  await until(`the deadline; ${f.err()}`, () =>
    /change channel could not be read \(.*not read within 2000 ms.*\); polling every 0\.3 s/.test(f.err()),
  );
  assert.equal(hostile.seen(), 1);
  src.put('b.txt', 'b\n');
  src.publish();
  await until('b.txt by polling', () => existsSync(join(dest, 'b.txt')));
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
});

test('sync --follow: SIGTERM while the Capability List drips ends the follower at once, exit 0', async () => {
  const { server, src } = await hostileSource();
  servers.push(server);
  const hostile = hostileChannel(server, (res) => endless(res, Buffer.from(' '), 300, 1024 ** 3, { bytes: 0 }));
  const f = start(['sync', src.capabilityList, join(tmp.dir, 'term'), '--follow', '--json', '--no-fsync']);
  procs.push(f);
  await until(`the channel read; ${f.err()}`, () => hostile.seen() === 1);
  const t0 = Date.now();
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
  const took = Date.now() - t0;
  assert.ok(took < 10_000, `exited ${took} ms after SIGTERM, not at the end of the 30 s deadline`);
});

test('sync --follow: a hub on another origin is not contacted unless --allow-origin names it', async () => {
  const hub = await startTestServer();
  servers.push(hub);
  const { server, src } = await hostileSource(`${hub.origin}/`);
  servers.push(server);
  const f = start([
    'sync',
    src.capabilityList,
    join(tmp.dir, 'other-hub'),
    '--follow',
    '--json',
    '--no-fsync',
    '--interval',
    '0.3',
  ]);
  procs.push(f);
  await until(`the refusal; ${f.err()}`, () =>
    f
      .err()
      .includes(
        `hub '${hub.origin}/' is on an origin this Destination may not contact; not subscribing (allow it with --allow-origin ${hub.origin}); polling every 0.3 s`,
      ),
  );
  await until('a poll', () => server.requests.filter((r) => r.url === '/changelist.xml').length >= 3);
  assert.deepEqual(hub.requests, [], 'nothing was sent to the other origin');
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());

  const allowed = start([
    'sync',
    src.capabilityList,
    join(tmp.dir, 'other-hub-allowed'),
    '--follow',
    '--json',
    '--no-fsync',
    '--allow-origin',
    hub.origin,
  ]);
  procs.push(allowed);
  await until(`the subscription request; ${allowed.err()}`, () => hub.requests.some((r) => r.method === 'POST'));
  allowed.child.kill('SIGTERM');
  assert.equal((await exited(allowed.child))[0], 0, allowed.err());
});

test('sync --follow: SIGTERM while a poll reads a Change List that drips ends the follower at once, exit 0', async () => {
  const { server, src } = await hostileSource();
  servers.push(server);
  let reads = 0;
  server.fault = (req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/changelist.xml' || ++reads < 2) return false;
    endless(res, Buffer.from(' '), 300, 1024 ** 3, { bytes: 0 }); // every read after the first sync's
    return true;
  };
  server.set(
    '/capabilitylist.xml',
    src.server.routes
      .get('/capabilitylist.xml')!
      .body!.toString()
      .replace(/<url><loc>[^<]*change-notification[^\n]*\n/, ''),
  );
  const f = start([
    'sync',
    src.capabilityList,
    join(tmp.dir, 'term-poll'),
    '--follow',
    '--json',
    '--no-fsync',
    '--interval',
    '0.2',
  ]);
  procs.push(f);
  await until(`a poll under way; ${f.err()}`, () => reads >= 2);
  const t0 = Date.now();
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
  const took = Date.now() - t0;
  assert.ok(took < 10_000, `exited ${took} ms after SIGTERM`);
});
