// The Destination's state in PostgreSQL against the embedded SQLite state, in the same run: 100,000 resource
// records applied through `apply` in batches of 1,000 (as a sync flushes them), the same records applied again with
// new hashes (upserts of rows that exist), every record read back in URL order through `records()`, and the bytes
// each row takes. PostgreSQL runs on loopback with its default durability (a commit is flushed), SQLite in WAL with
// synchronous = NORMAL (the state's setting). Figures as ratios to SQLite, and the inserts also to the bare
// multi-row statement the state sends (one `INSERT … SELECT FROM unnest(…)` per batch in a transaction, sent by
// `pg` on one connection), timed in the same run; the best of two rounds each.
// Skips, saying why, where PostgreSQL is not installed.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openPostgresDestinationState } from '../dist/src/destination/postgres-state.js';
import { openSqliteDestinationState } from '../dist/src/destination/sqlite-state.js';
import { postgresBin, startPostgresCluster } from './postgres-cluster.js';

const N = Number(process.env.RS_BENCH_STATE_RECORDS ?? 100_000);
const BATCH = 1000;
const ROUNDS = 2;

const hex = (i, salt) => ((Math.imul(i + salt, 2654435761) >>> 0).toString(16).padStart(8, '0'));

/** The records of one pass; `salt` changes the hashes and lengths (an update of every record). */
function batchOf(start, salt) {
  const put = [];
  for (let i = start; i < Math.min(N, start + BATCH); i++) {
    const h = hex(i, salt);
    put.push({
      url: `http://example.com/dataset1/resources/${i}.html`,
      path: `resources/${i}.html`,
      length: 1000 + ((i + salt) % 100_000),
      hashes: { md5: `${h}${h}${h}${h}`, 'sha-256': `${h}${h}${h}${h}${h}${h}${h}${h}` },
      lastmod: '2013-01-02T13:00:00Z',
    });
  }
  return put;
}

/** Seconds taken by `fn`. */
async function timed(fn) {
  const t0 = performance.now();
  await fn();
  return (performance.now() - t0) / 1000;
}

/** One round on a fresh state: the insert pass, the update pass and the ordered read. */
async function round(open) {
  const state = await open();
  try {
    const insert = await timed(async () => {
      for (let i = 0; i < N; i += BATCH) await state.apply({ put: batchOf(i, 0) });
    });
    const update = await timed(async () => {
      for (let i = 0; i < N; i += BATCH) await state.apply({ put: batchOf(i, 7) });
    });
    let read = 0;
    const scan = await timed(async () => {
      for await (const r of state.records()) if (r.length > 0) read++;
    });
    if (read !== N) throw new Error(`read ${read} records back, not ${N}`);
    return { insert, update, scan };
  } finally {
    await state.close();
  }
}

/** The bare statement: the same batches as one multi-row upsert each, in a transaction, on one connection. */
async function bareRound(client, table) {
  await client.query(`CREATE TABLE ${table} (destination TEXT NOT NULL, url TEXT COLLATE "C" NOT NULL, path TEXT NOT NULL, length BIGINT NOT NULL,
    hashes TEXT NOT NULL, lastmod TEXT, etag TEXT, links TEXT, PRIMARY KEY (destination, url))`);
  const insert = await timed(async () => {
    for (let i = 0; i < N; i += BATCH) {
      const put = batchOf(i, 0);
      const column = (f) => put.map(f);
      await client.query('BEGIN');
      await client.query(
        `INSERT INTO ${table} SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::text[], $8::text[])
         ON CONFLICT (destination, url) DO UPDATE SET path = excluded.path, length = excluded.length, hashes = excluded.hashes,
           lastmod = excluded.lastmod, etag = excluded.etag, links = excluded.links`,
        ['bare', column((r) => r.url), column((r) => r.path), column((r) => r.length), column((r) => JSON.stringify(r.hashes)), column((r) => r.lastmod), column(() => null), column(() => null)],
      );
      await client.query('COMMIT');
    }
  });
  await client.query(`DROP TABLE ${table}`);
  return insert;
}

const best = (rounds, key) => Math.min(...rounds.map((r) => r[key]));
const rate = (seconds) => Math.round(N / seconds).toLocaleString('en-US');
const fmt = (x, digits = 2) => x.toFixed(digits);

if (postgresBin() === undefined) {
  console.log('state bench skipped: PostgreSQL is not installed (apt-get install postgresql)');
} else {
  const dir = mkdtempSync(join(tmpdir(), 'rs-bench-state-'));
  const cluster = await startPostgresCluster();
  try {
    const sqlite = [];
    const postgres = [];
    const bare = [];
    let sqliteFile = '';
    const client = new pg.Client({ connectionString: cluster.url });
    await client.connect();
    for (let k = 0; k < ROUNDS; k++) {
      sqliteFile = join(dir, `state-${k}.sqlite`);
      sqlite.push(await round(() => openSqliteDestinationState(dir, { file: sqliteFile })));
      postgres.push(await round(() => openPostgresDestinationState(cluster.url, { destination: `bench-${k}` })));
      bare.push(await bareRound(client, `bench_bare_${k}`));
    }
    for (const [what, key] of [['insert', 'insert'], ['upsert of existing rows', 'update'], ['ordered read (records())', 'scan']]) {
      const p = best(postgres, key);
      const s = best(sqlite, key);
      console.log(`state ${what}: PostgreSQL ${rate(p)} records/s (${fmt(s / p)} x SQLite); SQLite ${rate(s)} records/s`);
    }
    const b = Math.min(...bare);
    console.log(`state insert, PostgreSQL: ${fmt(b / best(postgres, 'insert'))} x the bare multi-row statement on one connection (${rate(b)} records/s)`);
    try {
      const size = async () => {
        const { rows } = await client.query("SELECT pg_total_relation_size('resourcesync_resources') AS bytes, COUNT(*) AS n FROM resourcesync_resources");
        return Number(rows[0].bytes) / Number(rows[0].n);
      };
      const updated = await size();
      await client.query('VACUUM FULL resourcesync_resources');
      const pgBytes = await size();
      const sqliteBytes = statSync(sqliteFile).size / N;
      console.log(
        `state bytes per record: PostgreSQL ${Math.round(pgBytes)} B (table, primary key and TOAST, compacted; ${Math.round(updated)} B after the update pass, before vacuum), SQLite ${Math.round(sqliteBytes)} B (${fmt(pgBytes / sqliteBytes)} x)`,
      );
      console.log(`state 10^8 records in PostgreSQL: about ${fmt((pgBytes * 1e8) / 1e9, 0)} GB (compacted), written in about ${fmt(1e8 / (N / best(postgres, 'insert')) / 3600, 1)} h at this insert rate`);
    } finally {
      await client.end();
    }
    console.log(`state rounds (s, insert/update/read): ${postgres.map((r, k) => `PostgreSQL ${fmt(r.insert)}/${fmt(r.update)}/${fmt(r.scan)}, SQLite ${fmt(sqlite[k].insert)}/${fmt(sqlite[k].update)}/${fmt(sqlite[k].scan)}`).join('; ')}`);
  } finally {
    cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
