// The Source's snapshots in PostgreSQL (issue 24): a baseline of 200,000 resources through openPostgresSnapshots
// (COPY), and a rebuild of them with 10% changed (the stored snapshot read through a cursor, the changes written as
// multi-row statements), on a throwaway cluster on loopback. Baselines measured in the same run: a bare COPY of
// the same rows and multi-row `unnest` inserts of them (5,000 a statement) over one connection; the SQLite
// snapshots (openSqliteSnapshots) doing the same baseline and rebuild. Skips without PostgreSQL.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { POSTGRES_SKIP, startPostgres } from '../dist/test/helpers/postgres.js';
import { openPostgresSnapshots } from '../dist/src/source/postgres-snapshots.js';
import { openSqliteSnapshots } from '../dist/src/source/sqlite-snapshots.js';

const N = Number(process.env.RS_BENCH_SNAPSHOT_RESOURCES ?? 200_000);

const entry = (i, bump = 0) => ({
  path: `d/${String(i).padStart(8, '0')}.txt`,
  size: 1000 + i + bump,
  mtimeMs: 1.7e12 + i,
  type: 'text/plain',
  hashes: { md5: ((i * 2654435761 + bump) >>> 0).toString(16).padStart(32, '0') },
});
function* inventory(changed = false) {
  for (let i = 0; i < N; i++) yield entry(i, changed && i % 10 === 0 ? 1 : 0);
}

async function timed(fn) {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
}

const rate = (s) => `${Math.round(N / s).toLocaleString('en')} rows/s`;

if (POSTGRES_SKIP !== false) {
  console.log(`source-snapshots: skipped (${POSTGRES_SKIP})`);
} else {
  const cluster = await startPostgres();
  const dir = await mkdtemp(join(tmpdir(), 'rs-bench-snapshots-'));
  try {
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    await client.query(
      'CREATE TABLE bare (set_id int, path text COLLATE "C", size bigint, mtime float8, type text, hashes text, PRIMARY KEY (set_id, path))',
    );
    const copy = await timed(async () => {
      await client.query('BEGIN');
      const lines = function* () {
        let chunk = '';
        for (const e of inventory()) {
          chunk += `1\t${e.path}\t${e.size}\t${e.mtimeMs}\t${e.type}\tmd5:${e.hashes.md5}\n`;
          if (chunk.length > 65536) {
            yield chunk;
            chunk = '';
          }
        }
        if (chunk !== '') yield chunk;
      };
      await pipeline(Readable.from(lines()), client.query(copyFrom('COPY bare FROM STDIN')));
      await client.query('COMMIT');
    });
    const unnest = await timed(async () => {
      await client.query('BEGIN');
      let rows = [];
      const flush = async () => {
        await client.query(
          'INSERT INTO bare SELECT 2, * FROM unnest($1::text[], $2::bigint[], $3::float8[], $4::text[], $5::text[])',
          [
            rows.map((e) => e.path),
            rows.map((e) => e.size),
            rows.map((e) => e.mtimeMs),
            rows.map((e) => e.type),
            rows.map((e) => `md5:${e.hashes.md5}`),
          ],
        );
        rows = [];
      };
      for (const e of inventory()) {
        rows.push(e);
        if (rows.length === 5000) await flush();
      }
      if (rows.length > 0) await flush();
      await client.query('COMMIT');
    });
    await client.end();

    const store = await openPostgresSnapshots(cluster.url, { source: 'bench', set: 'data' });
    const pgBaseline = await timed(() => store.rebuild(inventory(), { now: () => 1e12 }));
    let updated = 0;
    const pgRebuild = await timed(
      async () => (updated = (await store.rebuild(inventory(true), { now: () => 2e12 })).updated),
    );
    let listed = 0;
    const pgListing = await timed(async () => {
      for await (const r of store.listing()) listed += r.size > 0 ? 1 : 0;
    });
    await store.close();

    const sqlite = openSqliteSnapshots(join(dir, 'source.sqlite'));
    const liteBaseline = await timed(() => sqlite.rebuild(inventory(), { now: () => 1e12 }));
    const liteRebuild = await timed(() => sqlite.rebuild(inventory(true), { now: () => 2e12 }));
    await sqlite.close();

    console.log(`source-snapshots: ${N.toLocaleString('en')} resources, PostgreSQL on loopback`);
    console.log(`  bare COPY (baseline): ${copy.toFixed(2)} s, ${rate(copy)}`);
    console.log(
      `  bare multi-row unnest inserts: ${unnest.toFixed(2)} s, ${rate(unnest)} (${(unnest / copy).toFixed(2)}x COPY's time)`,
    );
    console.log(
      `  openPostgresSnapshots baseline: ${pgBaseline.toFixed(2)} s, ${rate(pgBaseline)} (${(pgBaseline / copy).toFixed(2)}x bare COPY's time)`,
    );
    console.log(
      `  openPostgresSnapshots rebuild, ${updated} updated: ${pgRebuild.toFixed(2)} s, ${rate(pgRebuild)} compared`,
    );
    console.log(`  openPostgresSnapshots listing: ${pgListing.toFixed(2)} s, ${listed} rows`);
    console.log(
      `  SQLite baseline: ${liteBaseline.toFixed(2)} s (PostgreSQL ${(pgBaseline / liteBaseline).toFixed(2)}x its time)`,
    );
    console.log(
      `  SQLite rebuild: ${liteRebuild.toFixed(2)} s (PostgreSQL ${(pgRebuild / liteRebuild).toFixed(2)}x its time)`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
    await cluster.stop();
  }
}
