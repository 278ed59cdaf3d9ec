// `sync --follow` over time, against `serve --hub` and a stand-alone `resourcesync hub` child process: a hub killed
// with kill -9 and started again loses the notification of a change made meanwhile, and the follower still gets the
// change (it reads the Change List every --reconcile-interval while subscribed); a follower killed with kill -9 and
// started again takes its subscription over (same callback) instead of leaving a second one at the hub.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './helpers/tmp.js';
import { exited } from './helpers/exited.js';
import { freePort, startCli as start, until, type CliChild as Proc } from './helpers/cli-child.js';

let tmp: { dir: string; cleanup: () => Promise<void> };
const procs: Proc[] = [];
before(async () => {
  tmp = await tempDir('rs-follow-reconcile-');
});
after(async () => {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
  await tmp.cleanup();
});

/** The callbacks a hub holds a live subscription for, from its --verbose log. */
function liveCallbacks(log: string): string[] {
  const set = new Set<string>();
  for (const m of log.matchAll(/\b(subscribed|unsubscribed) (\S+) to /g)) {
    if (m[1] === 'subscribed') set.add(m[2]!);
    else set.delete(m[2]!);
  }
  return [...set];
}

/** A stand-alone hub on a fixed port (so that it comes back at the same URL) and `serve --hub` publishing to it. */
async function sourceWithHub(name: string): Promise<{
  site: string;
  serveUrl: string;
  hubUrl: string;
  startHub: () => Promise<Proc>;
  hub: () => Proc;
  /** Starts `sync --follow --json` of the Source into `dest`, the hub's origin allowed. */
  follow: (dest: string, extra: string[]) => Proc;
}> {
  const port = await freePort();
  const hubData = join(tmp.dir, `${name}-hub`);
  const ref: { hub?: Proc } = {};
  const startHub = async (): Promise<Proc> => {
    const h = start(['hub', '--port', String(port), '--data', hubData, '--retry-ms', '20', '--verbose']);
    procs.push(h);
    await until(`the hub; ${h.err()}`, () => /^listening on /m.test(h.out()));
    ref.hub = h;
    return h;
  };
  await startHub();
  const hubUrl = `http://127.0.0.1:${port}/`;
  const site = join(tmp.dir, `${name}-site`);
  mkdirSync(site);
  await writeFile(join(site, 'a.txt'), 'a\n');
  const serve = start(['serve', site, '--port', '0', '--hub', hubUrl]);
  procs.push(serve);
  await until(`serve to listen; ${serve.err()}`, () => /^listening on /m.test(serve.out()));
  const serveUrl = /^listening on (\S+)$/m.exec(serve.out())![1]!;
  const follow = (dest: string, extra: string[]): Proc => {
    const p = start(['sync', serveUrl, dest, '--follow', '--json', '--no-fsync', '--allow-origin', hubUrl, ...extra]);
    procs.push(p);
    return p;
  };
  return { site, serveUrl, hubUrl, startHub, hub: () => ref.hub!, follow };
}

test('sync --follow: a change made while the hub was down (kill -9) arrives by the reconcile timer once the hub is back', async () => {
  const s = await sourceWithHub('outage');
  const dest = join(tmp.dir, 'outage-dest');
  const f = s.follow(dest, ['--reconcile-interval', '1']);
  procs.push(f);
  await until(`a subscription; ${f.err()}`, () => /subscribed to /.test(f.err()));
  await writeFile(join(s.site, 'pushed.txt'), 'pushed\n');
  await until('pushed.txt pushed', () => existsSync(join(dest, 'pushed.txt')));

  s.hub().child.kill('SIGKILL');
  await exited(s.hub().child);
  await writeFile(join(s.site, 'during.txt'), 'during the outage\n');
  await s.startHub();
  await until(`during.txt; ${f.out()}`, () => existsSync(join(dest, 'during.txt')));
  assert.equal(readFileSync(join(dest, 'during.txt'), 'utf8'), 'during the outage\n');
  await until(`the reconcile line; ${f.out()}`, () =>
    f
      .out()
      .split('\n')
      .some((l) => l.includes('"via":"reconcile"') && l.includes('"created":1')),
  );
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
});

test('sync --follow: a follower killed with kill -9 and started again takes its subscription over; the hub holds one', async () => {
  const s = await sourceWithHub('restart');
  const dest = join(tmp.dir, 'restart-dest');
  const live = (): string[] => liveCallbacks(s.hub().err());
  const first = s.follow(dest, []);
  procs.push(first);
  await until(`a subscription; ${first.err()}`, () => /subscribed to /.test(first.err()));
  await until('the hub verified it', () => live().length === 1);
  const [callback] = live();
  first.child.kill('SIGKILL');
  await exited(first.child);

  await writeFile(join(s.site, 'gap.txt'), 'while no follower ran\n');
  const again = s.follow(dest, []);
  procs.push(again);
  await until(`a subscription; ${again.err()}`, () => /subscribed to /.test(again.err()));
  await until(
    'the hub verified it again',
    () =>
      (
        s
          .hub()
          .err()
          .match(/\bsubscribed \S+ to /g) ?? []
      ).length >= 2,
  );
  assert.deepEqual(live(), [callback], 'the same callback, its port free: one subscription at the hub, not two');
  await until('gap.txt from the Change List', () => existsSync(join(dest, 'gap.txt')));
  await writeFile(join(s.site, 'after.txt'), 'after\n');
  await until('after.txt pushed', () => existsSync(join(dest, 'after.txt')));
  again.child.kill('SIGTERM');
  assert.equal((await exited(again.child))[0], 0, again.err());
  await until('the unsubscription', () =>
    new RegExp(`unsubscribed ${callback!.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} to `).test(s.hub().err()),
  );
});

test('sync --follow: started again on another --listen port, a follower first ends the subscription the killed one left', async () => {
  const s = await sourceWithHub('moved');
  const dest = join(tmp.dir, 'moved-dest');
  const live = (): string[] => liveCallbacks(s.hub().err());
  const run = async (port: number): Promise<Proc> => {
    const p = s.follow(dest, ['--listen', `127.0.0.1:${port}`]);
    procs.push(p);
    await until(`a subscription; ${p.err()}`, () => /subscribed to /.test(p.err()));
    return p;
  };
  const [p1, p2] = [await freePort(), await freePort()];
  const first = await run(p1);
  await until('the hub verified it', () => live().length === 1);
  first.child.kill('SIGKILL');
  await exited(first.child);
  const again = await run(p2);
  assert.match(
    again.err(),
    new RegExp(`the subscription of a previous run \\(http://127\\.0\\.0\\.1:${p1}/callback\\) was ended`),
  );
  await until(
    `one live subscription at the hub; ${s.hub().err()}`,
    () => live().length === 1 && live()[0] === `http://127.0.0.1:${p2}/callback`,
  );
  again.child.kill('SIGTERM');
  assert.equal((await exited(again.child))[0], 0, again.err());
});

test('sync --follow --delete: an outsider publishes forged notifications for the topic at an open hub; nothing is deleted or stuck', async () => {
  const s = await sourceWithHub('forged');
  for (let i = 0; i < 5; i++) await writeFile(join(s.site, `f${i}.txt`), `file ${i}\n`);
  const dest = join(tmp.dir, 'forged-dest');
  const f = s.follow(dest, ['--delete']);
  await until(`a subscription; ${f.err()}`, () => /subscribed to /.test(f.err()));
  await until('the baseline', () => existsSync(join(dest, 'f4.txt')));
  const topic = `${s.serveUrl}/.resourcesync/forged-site/change-notification/`;
  const iso = new Date().toISOString();
  const entries = (urls: Array<[string, string]>): string =>
    urls.map(([loc, change]) => `<url><loc>${loc}</loc><rs:md change="${change}" datetime="${iso}"/></url>`).join('\n');
  const forge = async (from: string, until_: string, body: string): Promise<number> => {
    const res = await fetch(s.hubUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/xml', link: `<${topic}>; rel="self", <${s.hubUrl}>; rel="hub"` },
      body: `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="change-notification" from="${from}" until="${until_}"/>
${body}
</urlset>`,
    });
    await res.arrayBuffer();
    return res.status;
  };
  const all = Array.from({ length: 5 }, (_, i): [string, string] => [`${s.serveUrl}/f${i}.txt`, 'deleted']);
  const forgedWindow = await forge('2000-01-01T00:00:00Z', '9999-12-31T23:59:59Z', entries(all));
  const forgedEntries = await forge(
    '2000-01-01T00:00:00Z',
    iso,
    entries([
      ['http://127.0.0.1:1/elsewhere.txt', 'created'],
      [`${s.serveUrl}/a/..%2F..%2Fescape.txt`, 'created'],
      [`${s.serveUrl}/.resourcesync/state.sqlite`, 'updated'],
      [`${s.serveUrl}/missing.txt`, 'created'],
    ]),
  );
  if (forgedWindow < 300 || forgedEntries < 300) {
    // the hub relayed them: the follower saw them, and refused them
    const codes = (): string[] =>
      f
        .out()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => ((JSON.parse(l) as { warnings?: Array<{ code: string }> }).warnings ?? []).map((w) => w.code));
    if (forgedWindow < 300)
      await until(`the future window refused; ${f.out()}`, () => codes().includes('notification-window-future'));
    if (forgedEntries < 300)
      await until(`the entries refused; ${f.out()}`, () => codes().includes('notification-entry-ignored'));
  }
  for (let i = 0; i < 5; i++)
    assert.equal(readFileSync(join(dest, `f${i}.txt`), 'utf8'), `file ${i}\n`, 'nothing deleted');
  await writeFile(join(s.site, 'later.txt'), 'later\n');
  await until('a later change still arrives', () => existsSync(join(dest, 'later.txt')));
  f.child.kill('SIGTERM');
  assert.equal((await exited(f.child))[0], 0, f.err());
  const plain = start(['sync', s.serveUrl, dest, '--delete', '--json', '--no-fsync']);
  assert.equal((await exited(plain.child))[0], 0, `a plain sync --delete afterwards: ${plain.out()}${plain.err()}`);
});
