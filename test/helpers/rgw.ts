/**
 * A throwaway Ceph RADOS Gateway (an S3-compatible server) for tests: one monitor, one in-memory OSD (`memstore`),
 * `auth none`, and radosgw on 127.0.0.1 at free ports, all in a temporary folder, started by
 * test/helpers/ceph-rgw.sh (Debian packages `ceph-mon ceph-osd radosgw ceph-common`). The user `TESTKEY` /
 * `TESTSECRET` is made once RGW answers. `RGW_SKIP` says why the tests skip where a package is missing.
 *
 * Nothing is left behind: `stop()` kills every daemon (pids in the run folder, SIGKILL) and removes the folder; a process
 * `exit` handler does the same for a test file that never called it; and the script's watchdog kills the daemons
 * once this process is gone, even after a SIGKILL. Call `after(() => rgw.stop())` in the test file.
 * @example
 * const rgw = await startRgw();
 * after(() => rgw.stop());
 * await rgw.createBucket('mirror');
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { freePort } from './cli-child.js';
import { REPO_ROOT } from './paths.js';

const run = promisify(execFile);
const SCRIPT = join(REPO_ROOT, 'test', 'helpers', 'ceph-rgw.sh');
/** How long the daemons may take to answer (a cold start takes ~12 s on 2 vCPUs; more under load). */
const READY_MS = 180_000;

function which(name: string): boolean {
  return (process.env.PATH ?? '/usr/bin').split(':').concat(['/usr/bin', '/usr/sbin']).some((dir) => dir !== '' && existsSync(join(dir, name)));
}

/** The Debian package of each binary the script runs. */
const NEEDED: Record<string, string> = {
  'ceph-mon': 'ceph-mon',
  monmaptool: 'ceph-mon',
  'ceph-osd': 'ceph-osd',
  radosgw: 'radosgw',
  'radosgw-admin': 'radosgw',
  ceph: 'ceph-common',
  'ceph-authtool': 'ceph-common',
};

/** Why the RGW tests skip here (which packages are missing), or false. */
export const RGW_SKIP: string | false = (() => {
  const missing = [...new Set(Object.entries(NEEDED).filter(([binary]) => !which(binary)).map(([, pkg]) => pkg))];
  return missing.length === 0 ? false : `Ceph RGW is not installed: ${missing.join(', ')} missing (apt-get install ceph-mon ceph-osd radosgw ceph-common)`;
})();

/** A running RGW. */
export interface RgwServer {
  /** `http://127.0.0.1:PORT`. */
  endpoint: string;
  /** `us-east-1`. */
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION for child processes. */
  env: Record<string, string>;
  /** Creates a bucket (path-style). */
  createBucket(name: string): Promise<void>;
  /** The run folder (configuration, `run/*.pid`, `log/`): for a failing test's messages. */
  dir: string;
  /** Resident memory of the daemons now (MB), for figures. */
  memoryMB(): number;
  /** Kills the daemons and removes the folder; a second call does nothing. */
  stop(): Promise<void>;
}

/** Folders of servers still running, for the exit handler. */
const running = new Set<string>();
let exitHandler = false;

/** The pids in `dir/run/*.pid` (the daemons, then the watchdog). */
function pidsIn(dir: string): number[] {
  const runDir = join(dir, 'run');
  let names: string[];
  try {
    names = readdirSync(runDir).filter((n) => n.endsWith('.pid'));
  } catch {
    return [];
  }
  names.sort((a, b) => Number(a === 'watchdog.pid') - Number(b === 'watchdog.pid'));
  return names.map((n) => Number(readFileSync(join(runDir, n), 'utf8').trim())).filter((p) => Number.isInteger(p) && p > 1);
}

/** True while `pid` runs (a zombie, state Z, has exited: only its parent can reap it). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return false;
  }
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // gone already
    }
  }
}

/** Synchronous: the exit handler's way (SIGKILL, no waiting); also the last resort of `stop`. */
function killNow(dir: string): void {
  signal(pidsIn(dir), 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  running.delete(dir);
}

/** SIGKILL (the cluster is in memory and thrown away: nothing to shut down cleanly), waits until they are gone (5 s at most), removes the folder. */
async function stopIn(dir: string): Promise<void> {
  const pids = pidsIn(dir);
  signal(pids, 'SIGKILL');
  const deadline = Date.now() + 5000;
  while (pids.some(alive) && Date.now() < deadline) await sleep(20);
  killNow(dir);
}

/** The last lines of each daemon's log, for a start-up failure's message. */
async function logTails(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of ['mon.a.log', 'osd.0.log', 'client.rgw.a.log']) {
    const text = await readFile(join(dir, 'log', name), 'utf8').catch(() => '');
    if (text !== '') parts.push(`--- ${name}\n${text.split('\n').slice(-8).join('\n')}`);
  }
  return parts.join('\n');
}

/** True while the radosgw named in its pid file runs. */
function rgwRunning(dir: string): boolean {
  try {
    return alive(Number(readFileSync(join(dir, 'run', 'client.rgw.a.pid'), 'utf8').trim()));
  } catch {
    return false;
  }
}

/** Polls `endpoint` until it answers HTTP (any status) or `deadline`; fails early when radosgw exits. */
async function waitForRgw(dir: string, endpoint: string, deadline: number): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      const response = await fetch(endpoint, { signal: AbortSignal.timeout(5000) });
      await response.arrayBuffer();
      return;
    } catch {
      // not listening yet
    }
    if (attempt > 50 && !rgwRunning(dir)) throw new Error('radosgw exited');
    if (Date.now() > deadline) throw new Error(`RGW did not answer at ${endpoint} within ${READY_MS / 1000} s`);
    await sleep(100);
  }
}

function serverAt(dir: string, port: number): RgwServer {
  const endpoint = `http://127.0.0.1:${port}`;
  const region = 'us-east-1';
  const accessKeyId = 'TESTKEY';
  const secretAccessKey = 'TESTSECRET';
  return {
    endpoint,
    region,
    accessKeyId,
    secretAccessKey,
    env: { AWS_ENDPOINT_URL: endpoint, AWS_ACCESS_KEY_ID: accessKeyId, AWS_SECRET_ACCESS_KEY: secretAccessKey, AWS_REGION: region },
    async createBucket(name: string): Promise<void> {
      const client = new S3Client({ endpoint, region, forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
      try {
        await client.send(new CreateBucketCommand({ Bucket: name }));
      } finally {
        client.destroy();
      }
    },
    dir,
    memoryMB: () => {
      let kb = 0;
      for (const pid of pidsIn(dir)) {
        try {
          kb += Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
        } catch {
          // gone
        }
      }
      return Math.round(kb / 1024);
    },
    stop: () => (running.has(dir) ? stopIn(dir) : Promise.resolve()),
  };
}

/** One attempt at ports chosen now; on failure everything started is killed and the error says why. */
async function startOnce(dir: string): Promise<RgwServer> {
  const [monPort, rgwPort] = [await freePort(), await freePort()];
  const deadline = Date.now() + READY_MS;
  try {
    await run('sh', [SCRIPT, 'start', dir, String(monPort), String(rgwPort), String(process.pid)], { timeout: READY_MS });
    const server = serverAt(dir, rgwPort);
    await waitForRgw(dir, server.endpoint, deadline);
    await run('sh', [SCRIPT, 'user', dir], { timeout: Math.max(10_000, deadline - Date.now()) });
    return server;
  } catch (err) {
    const why = `${(err as { stderr?: string }).stderr ?? ''}${(err as Error).message}\n${await logTails(dir)}`;
    await stopIn(dir);
    throw new Error(`Ceph RGW did not start: ${why}`, { cause: err });
  }
}

/** Starts a fresh Ceph + RGW; tries new ports twice more when an attempt fails (a port taken meanwhile, most likely). */
export async function startRgw(): Promise<RgwServer> {
  if (RGW_SKIP !== false) throw new Error(RGW_SKIP);
  if (!exitHandler) {
    exitHandler = true;
    process.on('exit', () => {
      for (const dir of [...running]) killNow(dir);
    });
  }
  for (let attempt = 1; ; attempt++) {
    const dir = await mkdtemp(join(tmpdir(), 'rs-rgw-'));
    running.add(dir);
    try {
      return await startOnce(dir);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
}
