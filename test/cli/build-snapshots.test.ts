import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../helpers/paths.js';
import { POSTGRES_SKIP, usePostgres } from '../helpers/postgres.js';
import { startCli, until } from '../helpers/cli-child.js';
import { tempDir } from '../helpers/tmp.js';

const BIN = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
const BASE = 'http://example.org/src/';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

function cli(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, stdout, stderr })));
}

/** Two working folders of one Source (as two machines have them), each with its own publish folder. */
async function machines(): Promise<{
  dirs: string[];
  outs: string[];
  write: (path: string, content: string | undefined) => void;
  cleanup: () => Promise<void>;
}> {
  const tmp = await tempDir('rs-two-machines-');
  const dirs = ['a', 'b'].map((m) => join(tmp.dir, m, 'data'));
  const outs = ['a', 'b'].map((m) => join(tmp.dir, m, 'out'));
  for (const d of dirs) mkdirSync(d, { recursive: true });
  const write = (path: string, content: string | undefined): void => {
    for (const d of dirs) {
      if (content === undefined) rmSync(join(d, path));
      else writeFileSync(join(d, path), content);
    }
  };
  return { dirs, outs, write, cleanup: tmp.cleanup };
}

/** [change, loc] of every entry of the set's open Change List in `out`. */
function changeList(out: string): Array<[string, string]> {
  const xml = readFileSync(join(out, '.resourcesync', 'data', 'changelist.xml'), 'utf8');
  return [...xml.matchAll(/<url>\s*<loc>([^<]+)<\/loc>[\s\S]*?change="(\w+)"/g)].map((m) => [m[2]!, m[1]!]);
}

async function build(
  dir: string,
  out: string,
  snapshots: string,
  more: string[] = [],
): Promise<{ created: number; updated: number; deleted: number }> {
  const r = await cli(['build', dir, '--base-url', BASE, '--out', out, '--snapshots', snapshots, '--json', ...more]);
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(r.stdout) as { changes: { created: number; updated: number; deleted: number } }).changes;
}

/** Builds from both folders in turn into one history at `snapshots`; checks each run's Change List. */
async function continuousHistory(snapshots: string): Promise<void> {
  const m = await machines();
  try {
    m.write('a.txt', 'one');
    m.write('b.txt', 'bee');
    assert.deepEqual(
      await build(m.dirs[0]!, m.outs[0]!, snapshots),
      { created: 0, updated: 0, deleted: 0 },
      'baseline on machine a',
    );
    m.write('a.txt', 'one, edited');
    m.write('b.txt', undefined);
    m.write('c.txt', 'sea');
    // machine b never built before: its run holds only what changed since machine a's
    assert.deepEqual(await build(m.dirs[1]!, m.outs[1]!, snapshots), { created: 1, updated: 1, deleted: 1 });
    assert.deepEqual(changeList(m.outs[1]!), [
      ['updated', `${BASE}a.txt`],
      ['deleted', `${BASE}b.txt`],
      ['created', `${BASE}c.txt`],
    ]);
    // nothing changed: a run on machine a records nothing
    assert.deepEqual(await build(m.dirs[0]!, m.outs[0]!, snapshots), { created: 0, updated: 0, deleted: 0 });
    m.write('d.txt', 'dee');
    assert.deepEqual(await build(m.dirs[0]!, m.outs[0]!, snapshots), { created: 1, updated: 0, deleted: 0 });
    assert.deepEqual(changeList(m.outs[0]!).slice(-1), [['created', `${BASE}d.txt`]]);
    assert.equal(changeList(m.outs[0]!).length, 4, 'the open Change List continues from machine b’s changes');
  } finally {
    await m.cleanup();
  }
}

const cluster = usePostgres();

void test(
  'build --snapshots postgres://: two folders (two machines) continue one history',
  { skip: POSTGRES_SKIP },
  async () => {
    await continuousHistory(cluster().url);
  },
);

void test('build --snapshots FILE: an SQLite file shared by two folders continues one history', async () => {
  const state = await tempDir('rs-snapshots-file-');
  try {
    await continuousHistory(join(state.dir, 'history', 'source.sqlite'));
  } finally {
    await state.cleanup();
  }
});

void test(
  'build --source-key keeps Sources apart in one database; serve --snapshots publishes the same history',
  { skip: POSTGRES_SKIP },
  async () => {
    const m = await machines();
    try {
      m.write('a.txt', 'one');
      await build(m.dirs[0]!, m.outs[0]!, cluster().url, ['--source-key', 'first']);
      m.write('a.txt', 'two');
      assert.deepEqual(
        await build(m.dirs[1]!, m.outs[1]!, cluster().url, ['--source-key', 'second']),
        { created: 0, updated: 0, deleted: 0 },
        'another key: a baseline',
      );
      assert.deepEqual(await build(m.dirs[1]!, m.outs[1]!, cluster().url, ['--source-key', 'first']), {
        created: 0,
        updated: 1,
        deleted: 0,
      });
      // serve on the same key: its Change List holds the change recorded by build
      const serve = startCli([
        'serve',
        m.dirs[0]!,
        '--port',
        '0',
        '--no-watch',
        '--no-hub',
        '--base-url',
        BASE,
        '--source-key',
        'first',
        '--snapshots',
        cluster().url,
        '--state',
        join(m.outs[0]!, '..', 'serve-state'),
      ]);
      try {
        await until('listening', () => /^listening on /m.test(serve.out()) || serve.child.exitCode !== null);
        assert.match(serve.out(), /^listening on /m, serve.err());
        const url = /^listening on (\S+)/m.exec(serve.out())![1]!;
        const response = await fetch(new URL('.resourcesync/data/changelist.xml', url.endsWith('/') ? url : `${url}/`));
        assert.equal(response.status, 200);
        const body = await response.text();
        assert.match(body, /<loc>http:\/\/example\.org\/src\/a\.txt<\/loc>[\s\S]*?change="updated"/);
      } finally {
        serve.child.kill('SIGTERM');
        await until('serve to stop', () => serve.child.exitCode !== null || serve.child.signalCode !== null);
      }
    } finally {
      await m.cleanup();
    }
  },
);

void test('build --snapshots: usage errors (exit 2) and an unreachable database (exit 1) whose password is never printed', async () => {
  const m = await machines();
  try {
    m.write('a.txt', 'one');
    const base = ['build', m.dirs[0]!, '--base-url', BASE, '--out', m.outs[0]!];
    const noSnapshots = await cli([...base, '--source-key', 'k']);
    assert.equal(noSnapshots.status, 2);
    assert.match(noSnapshots.stderr, /--source-key .*--snapshots/);
    const http = await cli([...base, '--snapshots', 'http://user:pw@example.org/db']);
    assert.equal(http.status, 2);
    assert.doesNotMatch(http.stderr, /pw/);
    const keyWithFile = await cli([...base, '--snapshots', join(m.outs[0]!, '..', 'h.sqlite'), '--source-key', 'k']);
    assert.equal(keyWithFile.status, 2);
    // serve on port 0 has no URL to derive the key from before it listens
    const serveNoKey = await cli(['serve', m.dirs[0]!, '--port', '0', '--no-watch', '--snapshots', 'postgres://rs@127.0.0.1:1/rs']);
    assert.equal(serveNoKey.status, 2);
    assert.match(serveNoKey.stderr, /--source-key/);
    const unreachable = await cli([...base, '--snapshots', 'postgres://rs:topsecret@127.0.0.1:1/rs']);
    assert.equal(unreachable.status, 1);
    assert.match(unreachable.stderr, /RS_IO/);
    assert.doesNotMatch(unreachable.stderr + unreachable.stdout, /topsecret/);
  } finally {
    await m.cleanup();
  }
});
