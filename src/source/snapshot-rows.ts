/**
 * The rows of the Source's snapshots (src/source/source-snapshots.ts; SQLite: sqlite-snapshots.ts): the records it hands out (a
 * resource of the snapshot, a change, a Change List period, a dump), its SQLite schema, and the mapping of
 * rows to records.
 * @see Z39.99 §5.1, §12.1, §12.2
 */
import type { ChangeType, HashAlgorithm } from '../core/constants.js';
import { isKnownHashAlgorithm, parseHashes } from '../core/hash.js';
import type { Hashes } from '../node/inventory.js';

/** A resource of the stored snapshot. */
export interface StoredResource {
  path: string;
  size: number;
  mtimeMs: number;
  type: string;
  hashes: Hashes;
}

/** A resource of the stored snapshot with its fixity as `rs:md hash` text (see `SourceSnapshots.listing`). */
export interface ListedResource {
  path: string;
  size: number;
  mtimeMs: number;
  type: string;
  /** `md5:… sha-256:…`, '' when no fixity is kept. */
  hashText: string;
}

/** A recorded change: the resource's path and state right after the change (none for `deleted`). */
export interface ChangeRecord {
  /** Increasing sequence number: the forward chronological order. */
  seq: number;
  /** The Change List period that holds it. */
  period: number;
  path: string;
  change: ChangeType;
  /** Time of the change, ms since the epoch. */
  datetime: number;
  size?: number;
  mtimeMs?: number;
  type?: string;
  hashes?: Hashes;
}

/** The temporal interval covered by one Change List. Open while `until` is undefined. */
export interface ChangePeriod {
  id: number;
  from: number;
  until?: number;
  /** Number of changes recorded in it. */
  count: number;
}

/** A published dump (Resource Dump or Change Dump package set) kept for the archives. */
export interface DumpRecord {
  id: number;
  kind: 'resourcedump' | 'changedump';
  /** Resource Dump: snapshot time; Change Dump: from. */
  at?: number;
  completed?: number;
  from?: number;
  until?: number;
  /** For a Change Dump package: the period it packages. */
  period?: number;
  /** Published files (relative to the set's document folder), as JSON by the caller. */
  data: string;
}

/** When the open Change List is closed and a new one opened. */
export interface ChangeListBoundary {
  /** Close the open Change List once it holds this many changes. Default 50,000 (Z39.99 §7 limit). */
  maxEntries?: number;
  /** Close the open Change List once it is this old (ms), at the next rebuild. Default: never by age. */
  periodMs?: number;
}

/** Options of `SourceSnapshots.rebuild`. */
export interface RebuildOptions extends ChangeListBoundary {
  /** The clock; default `Date.now`. */
  now?: () => number;
  signal?: AbortSignal;
  /** Called for each change recorded, inside the transaction (e.g. to keep the bitstream of a change). */
  onChange?: (change: ChangeRecord) => void;
}

/** What one rebuild recorded. */
export interface RebuildResult {
  /** Time of the rebuild (and of every change it recorded). */
  at: number;
  /** True for the first rebuild, which records the baseline snapshot and no changes. */
  baseline: boolean;
  created: number;
  updated: number;
  deleted: number;
  unchanged: number;
  /** Resources in the snapshot after a rebuild; after an `update`, those of its paths that are still published. */
  resources: number;
  /** Periods closed by this rebuild. */
  closed: ChangePeriod[];
}

export const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS resources (
  path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime REAL NOT NULL, type TEXT NOT NULL, hashes TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS periods (
  id INTEGER PRIMARY KEY AUTOINCREMENT, from_ms INTEGER NOT NULL, until_ms INTEGER, count INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS changes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, period INTEGER NOT NULL REFERENCES periods(id), path TEXT NOT NULL,
  change TEXT NOT NULL CHECK (change IN ('created','updated','deleted')), datetime INTEGER NOT NULL,
  size INTEGER, mtime REAL, type TEXT, hashes TEXT
);
CREATE INDEX IF NOT EXISTS changes_period ON changes(period, seq);
CREATE TABLE IF NOT EXISTS dumps (
  id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, at_ms INTEGER, completed_ms INTEGER,
  from_ms INTEGER, until_ms INTEGER, period INTEGER, data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (name TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_ms INTEGER NOT NULL) WITHOUT ROWID;
`;

export interface ResourceRow {
  path: string;
  size: number;
  mtime: number;
  type: string;
  hashes: string;
}
export interface ChangeRow {
  seq: number;
  period: number;
  path: string;
  change: ChangeType;
  datetime: number;
  size: number | null;
  mtime: number | null;
  type: string | null;
  hashes: string | null;
}
export interface PeriodRow {
  id: number;
  from_ms: number;
  until_ms: number | null;
  count: number;
}
export interface DumpRow {
  id: number;
  kind: 'resourcedump' | 'changedump';
  at_ms: number | null;
  completed_ms: number | null;
  from_ms: number | null;
  until_ms: number | null;
  period: number | null;
  data: string;
}

export function toHashes(s: string): Hashes {
  const out: Hashes = {};
  for (const h of parseHashes(s)) if (isKnownHashAlgorithm(h.algorithm)) out[h.algorithm] = h.digest;
  return out;
}

export function rowToResource(r: ResourceRow): StoredResource {
  return { path: r.path, size: r.size, mtimeMs: r.mtime, type: r.type, hashes: toHashes(r.hashes) };
}

export function rowToChange(r: ChangeRow): ChangeRecord {
  const c: ChangeRecord = { seq: r.seq, period: r.period, path: r.path, change: r.change, datetime: r.datetime };
  if (r.size !== null) c.size = r.size;
  if (r.mtime !== null) c.mtimeMs = r.mtime;
  if (r.type !== null) c.type = r.type;
  if (r.hashes !== null) c.hashes = toHashes(r.hashes);
  return c;
}

export function rowToPeriod(r: PeriodRow): ChangePeriod {
  return r.until_ms === null ? { id: r.id, from: r.from_ms, count: r.count } : { id: r.id, from: r.from_ms, until: r.until_ms, count: r.count };
}

export function rowToDump(r: DumpRow): DumpRecord {
  const d: DumpRecord = { id: r.id, kind: r.kind, data: r.data };
  if (r.at_ms !== null) d.at = r.at_ms;
  if (r.completed_ms !== null) d.completed = r.completed_ms;
  if (r.from_ms !== null) d.from = r.from_ms;
  if (r.until_ms !== null) d.until = r.until_ms;
  if (r.period !== null) d.period = r.period;
  return d;
}

/** Same content: equal length and equal values for every algorithm both sides know (mtime when none). */
export function sameContent(now: { size: number; mtimeMs: number; hashes: Hashes }, before: { size: number; mtimeMs: number; hashes: Hashes }): boolean {
  if (now.size !== before.size) return false;
  let compared = 0;
  for (const a of Object.keys(now.hashes) as HashAlgorithm[]) {
    const b = before.hashes[a];
    if (b === undefined) continue;
    if (b !== now.hashes[a]) return false;
    compared++;
  }
  return compared > 0 || now.mtimeMs === before.mtimeMs;
}

