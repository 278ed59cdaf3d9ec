/**
 * An inventory given as records instead of found in a folder (a JSON-lines feed, a database query), and its
 * staging: the records of one run are checked and put in a temporary SQLite file keyed by `loc`, so that a
 * duplicate is found at once, a bad record stops the run before anything is recorded, and the snapshot store
 * reads them back in its order (UTF-8 byte order of `loc`, SQLite's BINARY collation) whatever the order of the
 * feed. Memory stays flat: one record at a time in, one at a time out.
 * @see Z39.99 §10.1 (Resource List), §12.1 (Change List)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { feedError, parseFeedLine, type FeedRecord } from '../core/feed-record.js';
import { formatHashes } from '../core/hash.js';
import { NO_LASTMOD, NO_LENGTH, type InventoryEntry } from '../node/inventory-types.js';
import { textLines } from '../node/text-lines.js';
import { toHashes } from './snapshot-rows.js';

/** One item of a feed: a record, or the error of a bad line (or row). */
export type FeedItem = { line: number; record: FeedRecord; error?: undefined } | { line: number; error: ResourceSyncError; record?: undefined };

/**
 * A set's inventory as records: read once per publication.
 * @example
 * const feed = jsonLinesFeed(() => createReadStream('items.jsonl'), { location: 'items.jsonl' });
 * await publish({ sets: [{ name: 'items', feed }], baseUrl, outDir, stateDir });
 */
export interface InventoryFeed {
  /** Where the records come from, for messages (a file name, `stdin`, a database URL without its password). */
  readonly location: string;
  /**
   * `inventory` (default): each run's records are the whole set, and a resource missing from them is deleted.
   * `changes`: only the records present change anything (a resource absent from them stays as it was).
   * Either way a record with `"change": "deleted"` deletes its resource.
   */
  readonly scope?: 'inventory' | 'changes';
  /**
   * A bad record (not JSON, a missing or relative `loc`, a bad `lastmod`, `length`, `hash` or `type`, a `loc`
   * given twice): `fail` (default) stops the publication before anything is recorded; `skip` leaves it out,
   * with a warning (`RS_INVALID_FEED`), and counts it.
   */
  readonly onInvalid?: 'fail' | 'skip';
  /** The records of one run, in any order; a bad one as an `error` item (an I/O failure is thrown). */
  records(): AsyncIterable<FeedItem>;
}

/**
 * A JSON-lines feed: one JSON object a line (`{"loc": …, "lastmod": …, "length": …, "hash": …, "type": …}`, see
 * `feedRecord`); blank lines are ignored. `open` gives the bytes of one run (a file read again at each run;
 * stdin only once).
 * @example jsonLinesFeed(() => createReadStream('items.jsonl'), { location: 'items.jsonl', scope: 'changes' })
 */
export function jsonLinesFeed(open: () => AsyncIterable<Uint8Array | string>, options: { location: string; scope?: 'inventory' | 'changes'; onInvalid?: 'fail' | 'skip' }): InventoryFeed {
  return {
    location: options.location,
    ...(options.scope ? { scope: options.scope } : {}),
    ...(options.onInvalid ? { onInvalid: options.onInvalid } : {}),
    records: async function* () {
      for await (const { line, text } of textLines(open())) {
        if (text.trim() === '') continue;
        try {
          yield { line, record: parseFeedLine(text, line) };
        } catch (err) {
          if (!(err instanceof ResourceSyncError) || err.code !== 'RS_INVALID_FEED') throw err;
          yield { line, error: err };
        }
      }
    },
  };
}

/** What staging one run of a feed found. */
export interface StagedFeed {
  /** Records staged (deletions included). */
  records: number;
  /** Bad records left out (`onInvalid: 'skip'`). */
  skipped: number;
  /** Records whose `loc` is not under `options.origin`, and the first of them. */
  foreign: { count: number; first?: string };
  /** Every resource the run lists, in UTF-8 byte order of `loc` (deletions left out): a whole inventory. */
  entries(): Iterable<InventoryEntry>;
  /** Each `loc` of the run with its new state, undefined for a deletion, in the same order: changes only. */
  states(): Iterable<{ path: string; entry: InventoryEntry | undefined }>;
  /** Removes the staging file. */
  close(): void;
}

type Row = [string, number, number, number, string, string];

/** The name of a staging folder starts with this. */
export const STAGING_PREFIX = 'rs-feed-';

/**
 * Reads one run of `feed` into a temporary SQLite file under `dir` (default the system's temporary folder).
 * @throws ResourceSyncError RS_INVALID_FEED for the first bad record unless `feed.onInvalid` is `skip` (then
 * `onSkipped` hears of each); RS_ABORTED
 */
export async function stageFeed(feed: InventoryFeed, options: StageOptions = {}): Promise<StagedFeed> {
  const folder = mkdtempSync(join(options.dir ?? tmpdir(), STAGING_PREFIX));
  const file = join(folder, 'feed.sqlite');
  const db = new Database(file);
  const close = (): void => {
    if (db.open) db.close();
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    db.pragma('journal_mode = OFF');
    db.pragma('synchronous = OFF');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('cache_size = -32768');
    db.exec('CREATE TABLE staged (loc TEXT PRIMARY KEY, line INTEGER NOT NULL, deleted INTEGER NOT NULL, size INTEGER NOT NULL, mtime REAL NOT NULL, type TEXT NOT NULL, hashes TEXT NOT NULL) WITHOUT ROWID');
    const counts = await stageRecords(db, feed, options);
    return { ...counts, entries: () => rows(db, false, (r) => row(r)), states: () => rows(db, true, (r) => ({ path: r[0], entry: r[1] === 1 ? undefined : row(r) })), close };
  } catch (err) {
    close();
    throw err;
  }
}

function row(r: Row): InventoryEntry {
  return { path: r[0], size: r[2], mtimeMs: r[3], type: r[4], hashes: toHashes(r[5]) };
}

function* rows<T>(db: Database.Database, withDeleted: boolean, toItem: (r: Row) => T): Generator<T> {
  const sql = `SELECT loc, deleted, size, mtime, type, hashes FROM staged${withDeleted ? '' : ' WHERE deleted = 0'} ORDER BY loc`;
  for (const r of db.prepare(sql).raw(true).iterate() as IterableIterator<Row>) yield toItem(r);
}

/** Options of {@link stageFeed}. */
export interface StageOptions {
  /** Folder of the temporary file; default the system's temporary folder. */
  dir?: string;
  signal?: AbortSignal;
  /** Hears of each bad record left out (`onInvalid: 'skip'`). */
  onSkipped?: (err: ResourceSyncError) => void;
  /** Records staged so far, every 10,000. */
  onProgress?: (records: number) => void;
  /** The Source's origin (`https://example.org`): records elsewhere are counted in `foreign`. */
  origin?: string;
}

/** Inserts the records in transactions of 10,000; a `loc` already staged is a bad record naming both lines. */
async function stageRecords(db: Database.Database, feed: InventoryFeed, options: StageOptions): Promise<Pick<StagedFeed, 'records' | 'skipped' | 'foreign'>> {
  const insert = db.prepare('INSERT INTO staged (loc, line, deleted, size, mtime, type, hashes) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (loc) DO NOTHING');
  const earlier = db.prepare('SELECT line FROM staged WHERE loc = ?').pluck();
  const skip = feed.onInvalid === 'skip';
  let records = 0;
  let skipped = 0;
  const foreign: StagedFeed['foreign'] = { count: 0 };
  const home = options.origin === undefined ? undefined : `${options.origin}/`;
  let inBatch = 0;
  const bad = (err: ResourceSyncError): void => {
    if (!skip) throw new ResourceSyncError(err.code, `${feed.location}: ${err.message}`, { data: { ...err.data, location: feed.location } });
    skipped++;
    options.onSkipped?.(err);
  };
  db.exec('BEGIN');
  for await (const item of feed.records()) {
    if (item.error !== undefined) {
      bad(item.error);
      continue;
    }
    const r = item.record;
    const info = insert.run(r.loc, item.line, r.deleted ? 1 : 0, r.length ?? NO_LENGTH, r.lastmod ?? NO_LASTMOD, r.type ?? '', formatHashes(r.hashes));
    if (info.changes === 0) {
      bad(feedError(item.line, 'loc', `${JSON.stringify(r.loc.length > 80 ? `${r.loc.slice(0, 77)}...` : r.loc)} is given again (first on line ${String(earlier.get(r.loc))})`, r.loc));
      continue;
    }
    records++;
    if (home !== undefined && !r.loc.startsWith(home) && new URL(r.loc).origin !== options.origin) {
      foreign.count++;
      foreign.first ??= r.loc;
    }
    if (++inBatch >= 10_000) {
      inBatch = 0;
      db.exec('COMMIT');
      options.onProgress?.(records);
      if (options.signal?.aborted) throw new ResourceSyncError('RS_ABORTED', 'Reading the feed was aborted.', { cause: options.signal.reason });
      db.exec('BEGIN');
    }
  }
  db.exec('COMMIT');
  options.onProgress?.(records);
  return { records, skipped, foreign };
}
