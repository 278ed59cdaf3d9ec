/**
 * Where `build` and `serve` keep the Source's history (its snapshots) when not in each set's folder:
 * `--snapshots postgres://…` (several Sources, sets and machines in one database, each Source under
 * `--source-key`, by default its base URL) or `--snapshots FILE` (an SQLite file of its own). One table of
 * `parseArgs` options, one help text and one reader, for both commands.
 * @see Z39.99 §12.1 (a Change List continues from one run to the next)
 */
import { basename, dirname, extname, join, resolve } from 'node:path';
import type { SnapshotsOpener } from '../source/source-snapshots.js';
import { openPostgresSnapshots } from '../source/postgres-snapshots.js';
import { openSqliteSnapshots } from '../source/sqlite-snapshots.js';

/** The options, in `parseArgs` form. */
export const SNAPSHOTS_ARGS = {
  snapshots: { type: 'string' },
  'source-key': { type: 'string' },
} as const;

/** Help lines of the options (two-space indent, descriptions at column 27). */
export const SNAPSHOTS_HELP = `  --snapshots WHERE       keep the Source's history (snapshots, changes, Change List periods) in
                          PostgreSQL (postgres://user@host/db: builds from several folders or
                          machines continue one history) or in the SQLite file WHERE (with several
                          sets, one file per set: WHERE's name with .<set> before its extension)
  --source-key NAME       this Source's key in that database (default: the base URL)
`;

/** The values of the options as `parseArgs` gives them. */
export type SnapshotsArgValues = Partial<Record<'snapshots' | 'source-key', string>>;

/** Longest source key accepted. */
const MAX_KEY = 1000;

function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** The file of set `set` of `count` when the SQLite snapshots are `file`. */
function sqliteFile(file: string, set: string, count: number): string {
  if (count === 1) return file;
  const ext = extname(file);
  return join(dirname(file), `${basename(file, ext)}.${set}${ext === '' ? '.sqlite' : ext}`);
}

/**
 * The opener the options ask for (undefined without `--snapshots`: each set's own SQLite store), or the problem
 * as a string (a usage error). `sourceKey` is the default key (the base URL), `sets` how many sets are published.
 * @example snapshotsOpener({ snapshots: 'postgres://rs@db/rs' }, 'https://example.org/', 1)
 */
export function snapshotsOpener(
  values: SnapshotsArgValues,
  sourceKey: string | undefined,
  sets: number,
): SnapshotsOpener | undefined | string {
  const where = values.snapshots;
  const key = values['source-key'];
  if (where === undefined)
    return key === undefined
      ? undefined
      : '--source-key names a Source in the --snapshots database: give --snapshots too';
  if (where === '') return '--snapshots is empty';
  if (isPostgresUrl(where)) {
    if (!URL.canParse(where)) return '--snapshots is not a valid postgres:// URL';
    const source = key ?? sourceKey;
    if (source === undefined || source === '')
      return '--source-key is needed with --snapshots postgres://… here (no base URL to derive it from)';
    if (source.length > MAX_KEY) return `--source-key is longer than ${MAX_KEY} characters`;
    return ({ name }) => openPostgresSnapshots(where, { source, set: name });
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(where))
    return `--snapshots '${where.replace(/\/\/[^@/]*@/, '//…@')}' is neither a postgres:// URL nor a file path`;
  if (key !== undefined)
    return '--source-key applies to --snapshots postgres://… only (an SQLite file holds one Source)';
  const file = resolve(where);
  return ({ name }) => openSqliteSnapshots(sqliteFile(file, name, sets));
}
