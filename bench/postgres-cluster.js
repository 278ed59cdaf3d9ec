// A throwaway PostgreSQL cluster for the benches (not a bench itself: run.js runs only *.bench.js): Debian's
// `postgresql` binaries, initdb into a temporary folder (as `nobody` when run as root, since initdb refuses root),
// the server on 127.0.0.1 at a free port with its default durability (fsync and synchronous commit on), so that its
// figures compare with an SQLite database that syncs its WAL.
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './support.js';

/** The folder of the newest installed PostgreSQL's binaries, or undefined. */
export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0], 'bin') : undefined;
}

/** Starts a cluster; resolves with its URL (database `postgres`, user `postgres`, trust) and `stop()`. */
export async function startPostgresCluster() {
  const bin = postgresBin();
  if (bin === undefined) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const root = userInfo().uid === 0;
  const as = (binary, args) =>
    root ? execFileSync('runuser', ['-u', 'nobody', '--', join(bin, binary), ...args], { stdio: 'pipe' }) : execFileSync(join(bin, binary), args, { stdio: 'pipe' });
  const dir = mkdtempSync(join(tmpdir(), 'rs-bench-pg-'));
  if (root) chownSync(dir, Number(execFileSync('id', ['-u', 'nobody']).toString()), Number(execFileSync('id', ['-g', 'nobody']).toString()));
  const data = join(dir, 'data');
  const stop = () => {
    try {
      as('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    } catch {
      // not started
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C']);
    const port = await freePort();
    as('pg_ctl', ['-D', data, '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1`, '-l', join(dir, 'server.log'), '-w', '-t', '120', 'start']);
    return { url: `postgres://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (err) {
    stop();
    throw err;
  }
}
