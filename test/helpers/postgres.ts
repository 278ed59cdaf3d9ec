/**
 * A throwaway PostgreSQL cluster for a test file (Debian's `postgresql` package): `initdb` into a temporary folder,
 * `postgres` on 127.0.0.1 at a free port with its socket in that folder, trust authentication for the user
 * `postgres`. Run as root, the cluster belongs to `nobody` (initdb refuses root). `POSTGRES_SKIP` says why the tests
 * skip where PostgreSQL is not installed.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, readdirSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { after, before } from 'node:test';
import pg from 'pg';
import { freePort } from './cli-child.js';

const run = promisify(execFile);

/** The folder of the newest installed PostgreSQL's binaries, or undefined. */
const BIN: string | undefined = (() => {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : undefined;
})();

/** Why the PostgreSQL tests skip here, or false. */
export const POSTGRES_SKIP: string | false = BIN === undefined ? 'PostgreSQL is not installed (apt-get install postgresql)' : false;

/** A running cluster. */
export interface PostgresCluster {
  /** Connection URL of the database `postgres` as the superuser `postgres`. */
  url: string;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/** Runs a PostgreSQL binary, as `nobody` when this process is root. */
async function runAs(binary: string, args: string[]): Promise<void> {
  const command = userInfo().uid === 0 ? ['runuser', '-u', 'nobody', '--', join(BIN!, binary), ...args] : [join(BIN!, binary), ...args];
  await run(command[0]!, command.slice(1), { timeout: 120_000 });
}

/** Polls until a connection succeeds, within `timeoutMs`. */
async function waitUntilReady(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(50);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}

/** Starts a fresh cluster; retries on another port when the free port found was taken meanwhile. */
export async function startPostgres(): Promise<PostgresCluster> {
  if (BIN === undefined) throw new Error(POSTGRES_SKIP as string);
  const dir = await mkdtemp(join(tmpdir(), 'rs-postgres-'));
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  if (userInfo().uid === 0) {
    const nobody = (await run('id', ['-u', 'nobody'])).stdout.trim();
    chownSync(dir, Number(nobody), Number((await run('id', ['-g', 'nobody'])).stdout.trim()));
  }
  const stop = async (): Promise<void> => {
    await runAs('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await runAs('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8', '--locale=C']);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`;
      try {
        await runAs('pg_ctl', ['-D', data, '-o', options, '-l', log, '-w', '-t', '120', 'start']);
      } catch (err) {
        if (attempt >= 5) throw new Error(`postgres did not start: ${String(err)}\n${await readFile(log, 'utf8').catch(() => '')}`, { cause: err });
        continue; // the port was taken meanwhile, most likely
      }
      const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
      await waitUntilReady(url, 60_000);
      return { url, stop };
    }
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * One throwaway cluster for the test file (or for the `describe` it is called in): registers `before` (start) and
 * `after` (stop) with node:test, or nothing where PostgreSQL is missing (skip those tests with `POSTGRES_SKIP`).
 * Answers a getter of the running cluster.
 * @example
 * const cluster = usePostgres();
 * void test('…', { skip: POSTGRES_SKIP }, async () => { const url = cluster().url; … });
 */
export function usePostgres(): () => PostgresCluster {
  let cluster: PostgresCluster | undefined;
  if (POSTGRES_SKIP === false) {
    before(async () => {
      cluster = await startPostgres();
    });
    after(async () => {
      await cluster?.stop();
    });
  }
  return () => {
    if (cluster === undefined) throw new Error('the PostgreSQL cluster of this file is not running');
    return cluster;
  };
}

/** What {@link usePostgresClient} answers: getters of the running cluster and of a `pg` client connected to it. */
export interface PostgresWithClient {
  cluster: () => PostgresCluster;
  sql: () => pg.Client;
}

/**
 * {@link usePostgres} with a `pg` client connected to the cluster, for a file that reads the database itself. One
 * `before` starts the cluster and connects; one `after` runs `beforeStop` (say, kill the children still running),
 * ends the client, then stops the cluster: node:test runs `after` hooks in the order they are registered, so the
 * client could not be ended in a hook of its own before a cluster stopped by `usePostgres`'s.
 * @example
 * const db = usePostgresClient();
 * void test('…', { skip: POSTGRES_SKIP }, async () => { await db.sql().query('SELECT 1'); … db.cluster().url … });
 */
export function usePostgresClient(options: { beforeStop?: () => void } = {}): PostgresWithClient {
  let cluster: PostgresCluster | undefined;
  let sql: pg.Client | undefined;
  if (POSTGRES_SKIP === false) {
    before(async () => {
      cluster = await startPostgres();
      sql = new pg.Client({ connectionString: cluster.url });
      await sql.connect();
    });
    after(async () => {
      options.beforeStop?.();
      await sql?.end();
      await cluster?.stop();
    });
  }
  const running = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the PostgreSQL cluster of this file is not running');
    return value;
  };
  return { cluster: () => running(cluster), sql: () => running(sql) };
}
