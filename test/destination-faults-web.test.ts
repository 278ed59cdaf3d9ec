/**
 * `resourcesync sync` against a Source that misbehaves on about 15% of its resources, chosen by a seeded
 * PRNG: 500 and 503 with `Retry-After: 1`, a connection reset in the middle of the body, a body cut short
 * under a full Content-Length (FIN), one flipped byte at the right length, and a stall of several seconds
 * before the headers. Half of the spoiled resources fail on every request (the sync must report each with its
 * cause), half on the first request only (the retries must absorb them). Then the Source heals and a second
 * sync converges. test/destination-faults.test.ts covers one resource per fault through the library.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { urlPath } from './helpers/fake-source.js';
import { nothingCorrupt, runCli, withSource } from './helpers/mirror-check.js';
import { prng } from './helpers/prng.js';

const SEED = 0xfa17;
const RESOURCES = 200;
/** The client's timeout in this test, and the stall (several times longer). */
const TIMEOUT_MS = 1500;
const STALL_MS = 4000;

const FAULTS = ['500', '503', 'reset', 'cut', 'flip', 'stall'] as const;
type Fault = (typeof FAULTS)[number];

/** What the report must say for a resource that fails on every request. */
const CODE: Record<Fault, string> = {
  '500': 'RS_HTTP_STATUS',
  '503': 'RS_HTTP_STATUS',
  reset: 'RS_NETWORK',
  cut: 'RS_NETWORK',
  flip: 'RS_HASH_MISMATCH',
  stall: 'RS_HTTP_TIMEOUT',
};


interface Spoiled {
  fault: Fault;
  /** Fails on every request, else on the first only. */
  always: boolean;
}

interface SyncJson {
  created: number;
  failed: { url: string; code: string; message: string }[];
}

void test('a Source that fails 15% of its resources: nothing unverified committed, every failure reported, then convergence', async () => {
  await withSource(async (src, dest, server) => {
    const rand = prng(SEED);
    const paths: string[] = [];
    for (let i = 0; i < RESOURCES; i++) {
      const path = `f/${i % 9}/res ${i}${i % 4 === 0 ? ' ü%' : ''}.bin`;
      // every tenth body is over 256 KiB, so the client streams it (a reset or a cut then lands mid-stream)
      const size = i % 10 === 0 ? 300_000 + Math.floor(rand() * 900_000) : 100 + Math.floor(rand() * 20_000);
      src.put(path, randomBytes(size));
      paths.push(path);
    }
    src.publish();
    // a seeded shuffle picks the spoiled 15%; faults go round in turn, every other one on every request
    const order = paths.map((p) => ({ p, k: rand() })).sort((a, b) => a.k - b.k);
    const spoiled = new Map<string, Spoiled>();
    order.slice(0, Math.round(RESOURCES * 0.15)).forEach(({ p }, j) => {
      spoiled.set(urlPath(p), { fault: FAULTS[j % FAULTS.length]!, always: Math.floor(j / FAULTS.length) % 2 === 0 });
    });
    const timers = new Set<NodeJS.Timeout>();
    const injected: Record<Fault, number> = { '500': 0, '503': 0, reset: 0, cut: 0, flip: 0, stall: 0 };
    server.fault = (req, res, n) => {
      const s = spoiled.get(req.url ?? '');
      if (s === undefined || (!s.always && n > 1)) return false;
      injected[s.fault]++;
      const body = src.files.get(decodeURIComponent((req.url ?? '').slice(1)))!.body;
      const headers = { 'content-type': 'application/octet-stream', 'content-length': String(body.length) };
      const half = (r: ServerResponse): void => {
        r.writeHead(200, headers);
        r.write(body.subarray(0, body.length >> 1));
      };
      switch (s.fault) {
        case '500':
        case '503':
          res.writeHead(Number(s.fault), { 'retry-after': '1' }).end('unavailable');
          return true;
        case 'reset':
          half(res);
          setImmediate(() => req.socket.resetAndDestroy());
          return true;
        case 'cut':
          half(res);
          req.socket.end(); // a clean FIN after half of the announced length
          return true;
        case 'flip': {
          const wrong = Buffer.from(body);
          const at = wrong.length >> 1;
          wrong[at] = wrong[at]! ^ 0xff;
          res.writeHead(200, headers).end(wrong);
          return true;
        }
        case 'stall': {
          const timer = setTimeout(() => {
            timers.delete(timer);
            if (!res.destroyed) res.writeHead(200, headers).end(body);
          }, STALL_MS);
          timers.add(timer);
          return true;
        }
      }
    };
    try {
      const first = await runCli(['sync', src.capabilityList, dest, '--json', '--timeout', String(TIMEOUT_MS), '--retries', '1'], 180_000);
      assert.equal(first.killed, false, `the sync did not finish in 180 s; stderr:\n${first.stderr}`);
      assert.equal(first.status, 1, `exit 1: some resources failed\n${first.stderr}`);
      for (const f of FAULTS) assert.ok(injected[f] > 0, `fault ${f} injected`);
      const report = JSON.parse(first.stdout) as SyncJson;
      const failed = Object.fromEntries(report.failed.map((f) => [f.url.slice(src.origin.length), f.code]));
      const expected = Object.fromEntries([...spoiled].filter(([, s]) => s.always).map(([u, s]) => [u, CODE[s.fault]]));
      assert.deepEqual(failed, expected, 'exactly the resources spoiled on every request fail, each with its cause');
      for (const f of report.failed) assert.ok(f.message.length > 0, `a message for ${f.url}`);
      // nothing unverified in place, no temporary file left, and the resources spoiled once were retried to completion
      const present = await nothingCorrupt(src, dest);
      const missing = paths.filter((p) => !present.includes(p)).map(urlPath).sort();
      assert.deepEqual(missing, Object.keys(expected).sort());
      assert.equal(report.created, RESOURCES - missing.length);

      // the Source heals: the next sync fetches what failed (remembered in the state) and converges
      server.fault = undefined;
      const second = await runCli(['sync', src.capabilityList, dest, '--json', '--timeout', String(TIMEOUT_MS)], 180_000);
      assert.equal(second.status, 0, `${second.stdout}\n${second.stderr}`);
      assert.deepEqual((JSON.parse(second.stdout) as SyncJson).failed, []);
      assert.equal((await nothingCorrupt(src, dest)).length, RESOURCES);
      const audit = await runCli(['audit', src.capabilityList, dest, '--json']);
      assert.equal(audit.status, 0, audit.stdout);
    } finally {
      for (const t of timers) clearTimeout(t);
    }
  });
});
