/**
 * One recording of the SQLite snapshots (a rebuild or an update), inside the transaction the caller opened:
 * the resource rows, the change rows at one time, and the Change List periods it opens and closes.
 * @see Z39.99 §12.1 (Change List: from/until, open and closed)
 */
import type Database from 'better-sqlite3';
import type { ChangeType } from '../core/constants.js';
import { formatHashes } from '../core/hash.js';
import type { Hashes, InventoryEntry } from '../node/inventory.js';
import { sameContent, type ChangePeriod, type ChangeRecord, type RebuildOptions, type RebuildResult } from './snapshot-rows.js';

/** One path's state now (undefined: not published) against the stored one (undefined: not listed). */
export interface PathState {
  path: string;
  now?: InventoryEntry;
  before?: { size: number; mtimeMs: number; hashes: Hashes };
}

export class SqliteRecording {
  readonly result: RebuildResult;
  private readonly options: RebuildOptions;
  private readonly maxEntries: number;
  private open: ChangePeriod;
  private readonly statements: ReturnType<typeof prepare>;

  /** Opens the first period when there is none; closes the open one first when it reached `periodMs`. */
  constructor(db: Database.Database, options: RebuildOptions, start: { at: number; baseline: boolean; open: ChangePeriod | undefined }) {
    const at = start.at;
    this.options = options;
    this.maxEntries = Math.max(1, options.maxEntries ?? 50_000);
    this.statements = prepare(db);
    this.result = { at, baseline: start.baseline, created: 0, updated: 0, deleted: 0, unchanged: 0, resources: 0, closed: [] };
    if (start.open === undefined) {
      this.open = { id: Number(this.statements.openPeriod.run(at).lastInsertRowid), from: at, count: 0 };
    } else if (options.periodMs !== undefined && at - start.open.from >= options.periodMs) {
      this.open = this.closePeriod(start.open);
    } else {
      this.open = start.open;
    }
  }

  /** A resource of the baseline (no change recorded). */
  insert(entry: InventoryEntry): void {
    this.statements.insertResource.run(entry.path, entry.size, entry.mtimeMs, entry.type, formatHashes(entry.hashes));
    this.result.resources++;
  }

  /** Records what changed at one path (nothing when its content is the same; a new mtime or hash is kept). */
  apply({ path, now: entry, before }: PathState): void {
    const statements = this.statements;
    if (entry === undefined) {
      statements.deleteResource.run(path);
      this.record(path, 'deleted', undefined);
      return;
    }
    this.result.resources++;
    if (before === undefined) {
      statements.insertResource.run(path, entry.size, entry.mtimeMs, entry.type, formatHashes(entry.hashes));
      this.record(path, 'created', entry);
    } else if (!sameContent(entry, before)) {
      statements.updateResource.run(entry.size, entry.mtimeMs, entry.type, formatHashes(entry.hashes), path);
      this.record(path, 'updated', entry);
    } else {
      this.result.unchanged++;
      const hashText = formatHashes(entry.hashes);
      if (entry.mtimeMs !== before.mtimeMs || hashText !== formatHashes(before.hashes)) statements.touchResource.run(entry.mtimeMs, hashText, path);
    }
  }

  /** Stores the open period's count (call once, before the commit). */
  finish(): void {
    this.statements.countPeriod.run(this.open.count, this.open.id);
  }

  /** True when this recording is a baseline or recorded a change. */
  changed(): boolean {
    const r = this.result;
    return r.baseline || r.created + r.updated + r.deleted > 0;
  }

  private record(path: string, change: ChangeType, entry: InventoryEntry | undefined): void {
    const at = this.result.at;
    const open = this.open;
    const hashes = entry === undefined ? null : formatHashes(entry.hashes);
    const info = this.statements.insertChange.run(open.id, path, change, at, entry?.size ?? null, entry?.mtimeMs ?? null, entry?.type ?? null, hashes);
    open.count++;
    this.result[change]++;
    const onChange = this.options.onChange;
    if (onChange) {
      const c: ChangeRecord = { seq: Number(info.lastInsertRowid), period: open.id, path, change, datetime: at };
      if (entry) Object.assign(c, { size: entry.size, mtimeMs: entry.mtimeMs, type: entry.type, hashes: entry.hashes });
      onChange(c);
    }
    if (open.count >= this.maxEntries) this.open = this.closePeriod(open);
  }

  /** Closes `period` at this recording's time and opens the next one from there. */
  private closePeriod(period: ChangePeriod): ChangePeriod {
    const until = this.result.at;
    this.statements.closePeriod.run(until, period.count, period.id);
    this.result.closed.push({ ...period, until });
    const id = Number(this.statements.openPeriod.run(until).lastInsertRowid);
    return { id, from: until, count: 0 };
  }
}

function prepare(db: Database.Database) {
  return {
    insertResource: db.prepare('INSERT INTO resources(path, size, mtime, type, hashes) VALUES (?, ?, ?, ?, ?)'),
    updateResource: db.prepare('UPDATE resources SET size = ?, mtime = ?, type = ?, hashes = ? WHERE path = ?'),
    touchResource: db.prepare('UPDATE resources SET mtime = ?, hashes = ? WHERE path = ?'),
    deleteResource: db.prepare('DELETE FROM resources WHERE path = ?'),
    insertChange: db.prepare('INSERT INTO changes(period, path, change, datetime, size, mtime, type, hashes) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    openPeriod: db.prepare('INSERT INTO periods(from_ms, count) VALUES (?, 0)'),
    closePeriod: db.prepare('UPDATE periods SET until_ms = ?, count = ? WHERE id = ?'),
    countPeriod: db.prepare('UPDATE periods SET count = ? WHERE id = ?'),
  };
}
