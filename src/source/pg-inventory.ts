/**
 * A PostgreSQL query as a set's inventory: each row is a resource, its columns read by name with the words of a
 * JSON-lines feed (`loc`, `lastmod`, `length`, `hash`, `type`, `change`; `md5`, `sha-1`, `sha-256` too). The rows
 * are read through a server-side cursor (`DECLARE … CURSOR`, `FETCH` a page at a time) in a read-only
 * transaction, so that memory holds one page whatever the size of the result. The `pg` module is loaded on the
 * first run, not with the package.
 * @see Z39.99 §10.1 (Resource List)
 */
import type pg from 'pg';
import { pgConnection, postgresMessage, redactedUrl } from '../node/postgres.js';
import { ResourceSyncError } from '../core/errors.js';
import { feedRecord } from '../core/feed-record.js';
import type { FeedItem, InventoryFeed } from './inventory-feed.js';

/** Options of {@link postgresFeed}. */
export interface PostgresFeedOptions {
  /** See `InventoryFeed.scope`. */
  scope?: 'inventory' | 'changes';
  /** See `InventoryFeed.onInvalid`. */
  onInvalid?: 'fail' | 'skip';
  /** Rows fetched at a time; default 5,000. */
  fetchRows?: number;
}

/** The error of a failed query, with the server's SQLSTATE, position and hint when it gave them. */
function queryError(err: unknown, location: string, stage: 'connect' | 'query'): ResourceSyncError {
  const e = err as { message?: string; code?: string; position?: string; hint?: string };
  const what = stage === 'connect' ? `Could not connect to ${location}` : `The inventory query on ${location} failed`;
  const at = e.position ? ` at character ${e.position}` : '';
  const hint = e.hint ? ` (hint: ${e.hint})` : '';
  const state = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? ` [SQLSTATE ${e.code}]` : '';
  return new ResourceSyncError('RS_QUERY', `${what}: ${stage === 'connect' ? postgresMessage(err) : e.message ?? String(err)}${at}${hint}${state}`, {
    data: { location, ...(state !== '' ? { sqlstate: e.code } : {}) },
    cause: err,
  });
}

/** The item of row `n`: its record, or what is wrong with it ("row n: field: …"). */
function rowItem(row: Record<string, unknown>, n: number): FeedItem {
  // `sha_256` and `sha_1` stand for the names SQL would need quoted
  const raw = row.sha_256 !== undefined || row.sha_1 !== undefined ? { ...row, 'sha-256': row['sha-256'] ?? row.sha_256, 'sha-1': row['sha-1'] ?? row.sha_1 } : row;
  try {
    return { line: n, record: feedRecord(raw, n) };
  } catch (err) {
    if (!(err instanceof ResourceSyncError) || err.code !== 'RS_INVALID_FEED') throw err;
    return { line: n, error: new ResourceSyncError('RS_INVALID_FEED', err.message.replace(/^line /, 'row '), { data: { ...err.data, row: n } }) };
  }
}

/**
 * The rows of `query` on the database at `url` as an inventory feed, read again at each run.
 * @example
 * const feed = postgresFeed('postgres://app@db/repo', 'SELECT url AS loc, modified AS lastmod, bytes AS length, md5 FROM items WHERE public');
 * await publish({ sets: [{ name: 'items', feed }], baseUrl: 'https://example.org/', outDir: 'public', stateDir: 'state' });
 */
export function postgresFeed(url: string, query: string, options: PostgresFeedOptions = {}): InventoryFeed {
  const location = redactedUrl(url);
  const fetchRows = Math.max(1, options.fetchRows ?? 5000);
  return {
    location,
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.onInvalid ? { onInvalid: options.onInvalid } : {}),
    records: async function* () {
      const { default: postgres } = await import('pg');
      const client: pg.Client = new postgres.Client({ ...pgConnection(url), application_name: 'resourcesync inventory' });
      try {
        await client.connect();
      } catch (err) {
        throw queryError(err, location, 'connect');
      }
      try {
        const run = async (sql: string): Promise<pg.QueryResult> => {
          try {
            return await client.query(sql);
          } catch (err) {
            throw queryError(err, location, 'query');
          }
        };
        await run('BEGIN READ ONLY');
        await run(`DECLARE resourcesync_inventory NO SCROLL CURSOR FOR ${query.trim().replace(/;\s*$/, '')}`);
        let n = 0;
        for (;;) {
          const page = await run(`FETCH ${fetchRows} FROM resourcesync_inventory`);
          if (n === 0 && !page.fields.some((f) => f.name === 'loc')) {
            throw new ResourceSyncError('RS_QUERY', `The inventory query on ${location} gives no column named loc (it gives ${page.fields.map((f) => f.name).join(', ') || 'none'}).`, {
              data: { location, columns: page.fields.map((f) => f.name) },
            });
          }
          for (const row of page.rows as Record<string, unknown>[]) yield rowItem(row, ++n);
          if (page.rows.length < fetchRows) break;
        }
        await run('COMMIT');
      } finally {
        await client.end().catch(() => undefined);
      }
    },
  };
}
