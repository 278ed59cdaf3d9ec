// Push latency: 50 changes/s written into a served directory for 30 s (NOTIFY_BENCH_SECONDS overrides);
// for each new file, the time from the end of its write to the file in place at a Destination that follows the
// Source by push (`sync --follow` through serve's embedded hub), next to a Destination that follows a second
// `serve --no-hub` of the same directory by polling its Change List every second, in the same run.
// Prints p50/p99 of both, push as a ratio of polling, and where the time goes (the Source's publication runs,
// the followers' batches). Real processes, loopback only. Target: push p50 <= 50 ms, p99 <= 250 ms.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';

const MAIN = fileURLToPath(new URL('../dist/src/cli/main.js', import.meta.url));
const SECONDS = Number(process.env.NOTIFY_BENCH_SECONDS ?? 30);
const RATE = Number(process.env.NOTIFY_BENCH_RATE ?? 50);
/** Files in the served folder before the run (NOTIFY_BENCH_FILES): the size of the set the changes happen in. */
const FILES = Number(process.env.NOTIFY_BENCH_FILES ?? 0);

function start(args) {
  const child = spawn(process.execPath, [MAIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const p = { child, out: '', err: '' };
  child.stdout.on('data', (d) => (p.out += d));
  child.stderr.on('data', (d) => (p.err += d));
  return p;
}

async function until(what, predicate, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

function pct(sorted, p) {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const tmp = mkdtempSync(join(tmpdir(), 'rs-notify-bench-'));
const procs = [];
try {
  const site = join(tmp, 'site');
  mkdirSync(site);
  writeFileSync(join(site, 'seed.txt'), 'seed\n');
  for (let i = 0; i < FILES; i++) {
    if (i % 1000 === 0) mkdirSync(join(site, `pre-${i / 1000}`));
    writeFileSync(join(site, `pre-${Math.floor(i / 1000)}`, `${i}.txt`), `file ${i}\n`);
  }
  const pushSrc = start(['serve', site, '--port', '0', '--state', join(tmp, 'state-push'), '--verbose']);
  const pollSrc = start(['serve', site, '--port', '0', '--no-hub', '--state', join(tmp, 'state-poll')]);
  procs.push(pushSrc, pollSrc);
  for (const s of [pushSrc, pollSrc]) await until(`serve: ${s.err}`, () => /^listening on /m.test(s.out));
  const url = (s) => /^listening on (\S+)$/m.exec(s.out)[1];
  const dests = { push: join(tmp, 'push'), poll: join(tmp, 'poll') };
  const pushF = start(['sync', url(pushSrc), dests.push, '--follow', '--json', '--no-fsync']);
  const pollF = start(['sync', url(pollSrc), dests.poll, '--follow', '--json', '--no-fsync', '--interval', '1']);
  procs.push(pushF, pollF);
  await until(`the push subscription: ${pushF.err}`, () => /subscribed to /.test(pushF.err));
  await until(
    `the polling follower: ${pollF.err}`,
    () => /polling every/.test(pollF.err) && existsSync(join(dests.poll, 'seed.txt')),
  );

  const written = new Map(); // name → time the write ended
  const latency = { push: [], poll: [] };
  const pending = { push: new Set(), poll: new Set() };
  let writing = true;
  const watcher = (async () => {
    while (writing || pending.push.size + pending.poll.size > 0) {
      const now = performance.now();
      for (const k of ['push', 'poll']) {
        for (const name of pending[k]) {
          if (existsSync(join(dests[k], name))) {
            latency[k].push(now - written.get(name));
            pending[k].delete(name);
          } else if (!writing && now - written.get(name) > 20_000) pending[k].delete(name); // counted as missing
        }
      }
      await sleep(1);
    }
  })();
  const total = SECONDS * RATE;
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const due = t0 + (i * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const name = `f-${i}.txt`;
    writeFileSync(join(site, name), `change ${i}\n`);
    written.set(name, performance.now());
    pending.push.add(name);
    pending.poll.add(name);
  }
  writing = false;
  await watcher;
  const rows = {};
  for (const k of ['push', 'poll']) {
    const s = latency[k].sort((a, b) => a - b);
    rows[k] = { n: s.length, missing: total - s.length, p50: pct(s, 50), p99: pct(s, 99) };
  }
  console.log(`notify: ${total} files written at ${RATE}/s for ${SECONDS} s${FILES > 0 ? `, into a set of ${FILES} files` : ''}`);
  console.log(
    `  push (embedded hub)  p50 ${rows.push.p50.toFixed(0)} ms  p99 ${rows.push.p99.toFixed(0)} ms  (${rows.push.n} arrived, ${rows.push.missing} missing)`,
  );
  console.log(
    `  poll (1 s interval)  p50 ${rows.poll.p50.toFixed(0)} ms  p99 ${rows.poll.p99.toFixed(0)} ms  (${rows.poll.n} arrived, ${rows.poll.missing} missing)`,
  );
  console.log('  target: push p50 <= 50 ms, p99 <= 250 ms');
  console.log(
    `  push / poll: p50 ${(rows.push.p50 / rows.poll.p50).toFixed(2)}x, p99 ${(rows.push.p99 / rows.poll.p99).toFixed(2)}x`,
  );
  // where the time goes: the Source's recordings of settled files (each announced at once), its documents runs
  // (the documents rewritten from the snapshot store) and rescans (the folder scanned too); a file that settles
  // during a run waits for it; then each follower's batches (push: the notification's entries fetched and
  // written; poll: an incremental sync from the Change List)
  for (const [label, what] of [
    ['recorded', 'recordings of settled files'],
    ['published \\(documents\\)', 'documents runs'],
    ['published', 'rescans (scan + documents)'],
  ]) {
    const runs = [...pushSrc.err.matchAll(new RegExp(`^${label}: .* in (\\d+) ms$`, 'gm'))].map((m) => Number(m[1])).sort((a, b) => a - b);
    console.log(`  source: ${runs.length} ${what}, p50 ${pct(runs, 50)} ms each (p99 ${pct(runs, 99)} ms)`);
  }
  const batchMs = (f) =>
    f.out
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.via === 'push' || l.via === 'poll')
      .map((l) => l.durationMs)
      .sort((a, b) => a - b);
  for (const [k, f, what] of [
    ['push', pushF, 'notification batches applied from their entries'],
    ['poll', pollF, 'incremental syncs from the Change List'],
  ]) {
    const d = batchMs(f);
    console.log(`  ${k}: ${d.length} ${what}, p50 ${pct(d, 50).toFixed(0)} ms each (max ${d[d.length - 1].toFixed(0)} ms)`);
  }
} finally {
  for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await Promise.all(
    procs.map((p) => (p.child.exitCode === null ? new Promise((r) => p.child.once('exit', r)) : undefined)),
  );
  rmSync(tmp, { recursive: true, force: true });
}
