/**
 * One recording of the PostgreSQL snapshots (a rebuild or an update), inside the transaction the caller opened:
 * the resource rows, the change rows at one time and the Change List periods it opens and closes. A baseline's
 * rows stream into the table through COPY (pg-copy-streams; measured here at 52–68k rows/s where multi-row
 * `unnest` inserts made 32k rows/s); the rows of later recordings are buffered and written as multi-row
 * statements (`unnest` of arrays, {@link BATCH} rows each: upserts, deletes, changes).
 * @see Z39.99 §12.1 (Change List: from/until, open and closed)
 */
import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import type { ChangeType } from '../core/constants.js';
import { formatHashes } from '../core/hash.js';
import type { InventoryEntry } from '../node/inventory.js';
import {
  sameContent,
  type ChangePeriod,
  type ChangeRecord,
  type RebuildOptions,
  type RebuildResult,
} from './snapshot-rows.js';
import type { PathState } from './sqlite-recording.js';

/** Rows written by one statement. */
const BATCH = 5000;
/** Characters of COPY text sent at once. */
const COPY_CHUNK = 64 * 1024;

/** A value in COPY's text format: backslash, tab, newline and carriage return escaped. */
function copyField(value: string): string {
  return NEEDS_ESCAPE.test(value)
    ? value.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'))
    : value;
}
const NEEDS_ESCAPE = /[\\\t\n\r]/;

const R = 'resourcesync_snapshot_resources';

interface PendingChange {
  period: number;
  path: string;
  change: ChangeType;
  entry: InventoryEntry | undefined;
}

export class PostgresRecording {
  readonly result: RebuildResult;
  private readonly client: pg.ClientBase;
  private readonly setId: number;
  private readonly options: RebuildOptions;
  private readonly maxEntries: number;
  private open: ChangePeriod = { id: 0, from: 0, count: 0 };
  /** Resource rows to insert or update: path, size, mtime, type, hashes. */
  private readonly upserts: Array<[string, number, number, string, string]> = [];
  private readonly upserted = new Set<string>();
  private readonly deletes: string[] = [];
  private readonly changes: PendingChange[] = [];
  /** The baseline's COPY, open from its first rows to `finish`, and the text not yet sent. */
  private copy: ReturnType<typeof copyFrom> | undefined;
  private copyText = '';

  private constructor(client: pg.ClientBase, setId: number, options: RebuildOptions, at: number, baseline: boolean) {
    this.client = client;
    this.setId = setId;
    this.options = options;
    this.maxEntries = Math.max(1, options.maxEntries ?? 50_000);
    this.result = { at, baseline, created: 0, updated: 0, deleted: 0, unchanged: 0, resources: 0, closed: [] };
  }

  /** Starts a recording: opens the first period when there is none; closes the open one first when it reached `periodMs`. */
  static async start(
    client: pg.ClientBase,
    setId: number,
    options: RebuildOptions,
    start: { at: number; baseline: boolean; open: ChangePeriod | undefined },
  ): Promise<PostgresRecording> {
    const recording = new PostgresRecording(client, setId, options, start.at, start.baseline);
    if (start.open === undefined)
      recording.open = { id: await recording.openPeriod(start.at), from: start.at, count: 0 };
    else if (options.periodMs !== undefined && start.at - start.open.from >= options.periodMs)
      await recording.closePeriod(start.open);
    else recording.open = start.open;
    return recording;
  }

  /** A resource of the baseline (no change recorded), streamed through COPY. */
  async insert(entry: InventoryEntry): Promise<void> {
    this.copyText += `${this.setId}\t${copyField(entry.path)}\t${entry.size}\t${entry.mtimeMs}\t${copyField(entry.type)}\t${copyField(formatHashes(entry.hashes))}\n`;
    this.result.resources++;
    if (this.copyText.length >= COPY_CHUNK) await this.flushCopy();
  }

  /** Ends a recording that failed: a COPY under way is cancelled (CopyFail), so that the transaction can roll back. */
  async abort(): Promise<void> {
    const copy = this.copy;
    this.copy = undefined;
    if (copy === undefined || copy.writableFinished) return;
    copy.destroy(new Error('recording aborted'));
    await finished(copy).catch(() => undefined);
  }

  private async flushCopy(): Promise<void> {
    const text = this.copyText;
    this.copyText = '';
    if (text === '' && this.copy === undefined) return;
    this.copy ??= this.client.query(
      copyFrom('COPY resourcesync_snapshot_resources (set_id, path, size, mtime, type, hashes) FROM STDIN'),
    );
    if (!this.copy.write(text)) await once(this.copy, 'drain');
  }

  private async endCopy(): Promise<void> {
    await this.flushCopy();
    const copy = this.copy;
    if (copy === undefined) return;
    copy.end();
    await finished(copy);
    this.copy = undefined;
  }

  /** Records what changed at one path (nothing when its content is the same; a new mtime or hash is kept). */
  async apply({ path, now: entry, before }: PathState): Promise<void> {
    if (entry === undefined) {
      if (this.upserted.has(path)) await this.flushResources(); // written earlier in this recording: deleted after
      this.deletes.push(path);
      await this.record(path, 'deleted', undefined);
    } else {
      this.result.resources++;
      if (before === undefined || !sameContent(entry, before)) {
        this.upsert(entry);
        await this.record(path, before === undefined ? 'created' : 'updated', entry);
      } else {
        this.result.unchanged++;
        if (entry.mtimeMs !== before.mtimeMs || formatHashes(entry.hashes) !== formatHashes(before.hashes))
          this.upsert(entry);
      }
    }
    if (this.upserts.length + this.deletes.length >= BATCH) await this.flushResources();
    if (this.changes.length >= BATCH) await this.flushChanges();
  }

  /** Writes what is buffered and the open period's count (call once, before the commit). */
  async finish(): Promise<void> {
    await this.endCopy();
    await this.flushResources();
    await this.flushChanges();
    await this.client.query('UPDATE resourcesync_snapshot_periods SET count = $1 WHERE id = $2', [
      this.open.count,
      this.open.id,
    ]);
  }

  /** True when this recording is a baseline or recorded a change. */
  changed(): boolean {
    const r = this.result;
    return r.baseline || r.created + r.updated + r.deleted > 0;
  }

  private upsert(entry: InventoryEntry): void {
    if (!this.result.baseline) this.upserted.add(entry.path);
    this.upserts.push([entry.path, entry.size, entry.mtimeMs, entry.type, formatHashes(entry.hashes)]);
  }

  private async record(path: string, change: ChangeType, entry: InventoryEntry | undefined): Promise<void> {
    this.changes.push({ period: this.open.id, path, change, entry });
    this.open.count++;
    this.result[change]++;
    if (this.open.count >= this.maxEntries) await this.closePeriod(this.open);
  }

  /** Closes `period` at this recording's time and opens the next one from there. */
  private async closePeriod(period: ChangePeriod): Promise<void> {
    const until = this.result.at;
    await this.client.query('UPDATE resourcesync_snapshot_periods SET until_ms = $1, count = $2 WHERE id = $3', [
      until,
      period.count,
      period.id,
    ]);
    this.result.closed.push({ ...period, until });
    this.open = { id: await this.openPeriod(until), from: until, count: 0 };
  }

  private async openPeriod(from: number): Promise<number> {
    const row = await this.client.query<{ id: number }>(
      'INSERT INTO resourcesync_snapshot_periods (set_id, from_ms) VALUES ($1, $2) RETURNING id::float8 AS id',
      [this.setId, from],
    );
    return row.rows[0]!.id;
  }

  private async flushResources(): Promise<void> {
    // a path deleted then written again (an update naming it twice) is written after its deletion
    if (this.deletes.length > 0) {
      await this.client.query(`DELETE FROM ${R} WHERE set_id = $1 AND path = ANY($2::text[])`, [
        this.setId,
        this.deletes.splice(0),
      ]);
    }
    this.upserted.clear();
    if (this.upserts.length === 0) return;
    const rows = [...new Map(this.upserts.splice(0).map((row) => [row[0], row])).values()];
    await this.client.query(
      `INSERT INTO ${R} (set_id, path, size, mtime, type, hashes)
       SELECT $1, * FROM unnest($2::text[], $3::bigint[], $4::float8[], $5::text[], $6::text[])
       ON CONFLICT (set_id, path) DO UPDATE SET size = excluded.size, mtime = excluded.mtime, type = excluded.type, hashes = excluded.hashes`,
      [
        this.setId,
        rows.map((r) => r[0]),
        rows.map((r) => r[1]),
        rows.map((r) => r[2]),
        rows.map((r) => r[3]),
        rows.map((r) => r[4]),
      ],
    );
  }

  /** Writes the buffered changes with sequence numbers taken in order, then tells `onChange` of each. */
  private async flushChanges(): Promise<void> {
    const changes = this.changes.splice(0);
    if (changes.length === 0) return;
    const seqs = (
      await this.client.query<{ seq: number }>(
        "SELECT nextval(pg_get_serial_sequence('resourcesync_snapshot_changes', 'seq'))::float8 AS seq FROM generate_series(1, $1)",
        [changes.length],
      )
    ).rows
      .map((row) => row.seq)
      .sort((a, b) => a - b);
    const at = this.result.at;
    await this.client.query(
      `INSERT INTO resourcesync_snapshot_changes (seq, set_id, period, path, change, datetime, size, mtime, type, hashes)
       SELECT s, $1, p, path, c, $2, size, mtime, type, hashes
       FROM unnest($3::bigint[], $4::bigint[], $5::text[], $6::text[], $7::bigint[], $8::float8[], $9::text[], $10::text[]) AS u (s, p, path, c, size, mtime, type, hashes)`,
      [
        this.setId,
        at,
        seqs,
        changes.map((c) => c.period),
        changes.map((c) => c.path),
        changes.map((c) => c.change),
        changes.map((c) => c.entry?.size ?? null),
        changes.map((c) => c.entry?.mtimeMs ?? null),
        changes.map((c) => c.entry?.type ?? null),
        changes.map((c) => (c.entry === undefined ? null : formatHashes(c.entry.hashes))),
      ],
    );
    const onChange = this.options.onChange;
    if (onChange === undefined) return;
    changes.forEach((c, i) => {
      const record: ChangeRecord = { seq: seqs[i]!, period: c.period, path: c.path, change: c.change, datetime: at };
      if (c.entry)
        Object.assign(record, {
          size: c.entry.size,
          mtimeMs: c.entry.mtimeMs,
          type: c.entry.type,
          hashes: c.entry.hashes,
        });
      onChange(record);
    });
  }
}
