/**
 * The status of each Source of an aggregate, kept in a small SQLite file (`<out>/aggregate.sqlite`) that the
 * running aggregator writes on every change and `resourcesync aggregate status` reads meanwhile (WAL: a reader
 * never waits for the writer).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { ResourceSyncError } from '../core/errors.js';
import { openStore } from '../node/sqlite.js';

/** Where an aggregate keeps its status, under its `out` folder. */
const STATUS_FILE = 'aggregate.sqlite';

/** What one Source of an aggregate is doing and how it went. Times are ms since the epoch. */
export interface SourceStatus {
  id: string;
  url: string;
  /** How the Source is followed: `poll` (at its interval) or `push`. */
  mode: 'poll' | 'push';
  /** `waiting` for its next attempt, `syncing`, `failing` (the last attempt failed), `stopped` (removed from the configuration). */
  state: 'waiting' | 'syncing' | 'failing' | 'stopped';
  /** When the last attempt started. */
  lastAttempt?: number;
  /** When the last successful sync started: the aggregate holds the Source as it was then, or later. */
  lastSync?: number;
  /** How the last successful sync went: `baseline`, `incremental` or `none`. */
  lastSyncMode?: string;
  /** Resources the mirror holds after the last successful sync. */
  resources?: number;
  /** What the last successful sync did. */
  lastRun?: { created: number; updated: number; deleted: number; unchanged: number; failed: number; durationMs: number };
  /** Since the Source was first added: successful syncs, failed attempts, resources created, updated and deleted. */
  totals: { syncs: number; errors: number; created: number; updated: number; deleted: number };
  /** Failed attempts in a row (0 after a success): the backoff grows with them. */
  failures: number;
  /** The last failure (kept after a success, for the record): its `RS_*` code and message. */
  lastError?: { code: string; message: string; at: number };
  /** When the next attempt is due. */
  nextAttempt?: number;
}

const SCHEMA = `CREATE TABLE IF NOT EXISTS sources (id TEXT PRIMARY KEY, status TEXT NOT NULL);`;

/** The writer of an aggregate's status (one per aggregator). */
export interface StatusStore {
  get(id: string): SourceStatus | undefined;
  put(status: SourceStatus): void;
  remove(id: string): void;
  all(): SourceStatus[];
  close(): void;
}

/**
 * Opens (creating it) the status file of the aggregate whose output folder is `out`.
 * @throws ResourceSyncError `RS_IO`, `RS_LOCKED`
 */
export function openStatusStore(out: string): StatusStore {
  const db = openStore(join(out, STATUS_FILE), { schema: SCHEMA, synchronous: 'NORMAL' });
  const get = db.prepare<[string], { status: string }>('SELECT status FROM sources WHERE id = ?');
  const put = db.prepare<[string, string]>('INSERT INTO sources(id, status) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET status = excluded.status');
  const del = db.prepare<[string]>('DELETE FROM sources WHERE id = ?');
  const all = db.prepare<[], { status: string }>('SELECT status FROM sources ORDER BY id');
  return {
    get: (id) => {
      const row = get.get(id);
      return row === undefined ? undefined : (JSON.parse(row.status) as SourceStatus);
    },
    put: (s) => void put.run(s.id, JSON.stringify(s)),
    remove: (id) => void del.run(id),
    all: () => all.all().map((r) => JSON.parse(r.status) as SourceStatus),
    close: () => db.close(),
  };
}

/**
 * Reads the status of every Source of the aggregate whose output folder is `out`, without writing anything (the
 * aggregator may be running). Failing Sources first, then by id.
 * @throws ResourceSyncError `RS_INVALID_ARGUMENT` when `out` holds no aggregate status, `RS_IO` when it cannot be read
 * @example for (const s of readAggregateStatus('./aggregate')) console.log(s.id, s.state, s.lastError?.message);
 */
export function readAggregateStatus(out: string): SourceStatus[] {
  const file = join(out, STATUS_FILE);
  if (!existsSync(file)) {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `'${out}' holds no aggregate status (no ${STATUS_FILE}): has the aggregator run?`, { data: { out } });
  }
  let db: Database.Database | undefined;
  try {
    db = new Database(file, { readonly: true, timeout: 5000 });
    const rows = db.prepare<[], { status: string }>('SELECT status FROM sources').all();
    return sortStatus(rows.map((r) => JSON.parse(r.status) as SourceStatus));
  } catch (cause) {
    throw new ResourceSyncError('RS_IO', `Aggregate status '${file}' cannot be read.`, { cause, data: { path: file } });
  } finally {
    db?.close();
  }
}

/** True when the Source's last attempt failed (it may be trying again now). */
export function isFailing(s: SourceStatus): boolean {
  return s.state !== 'stopped' && s.failures > 0;
}

/** Failing Sources first (most failures first), then stopped ones last, by id within each. */
export function sortStatus(list: SourceStatus[]): SourceStatus[] {
  const rank = (s: SourceStatus): number => (isFailing(s) ? 0 : s.state === 'stopped' ? 2 : 1);
  return list.sort((a, b) => rank(a) - rank(b) || (rank(a) === 0 ? b.failures - a.failures : 0) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
