/**
 * The options that give `build` and `serve` an inventory as records instead of directories: a JSON-lines feed
 * (`--jsonl FILE`, or `-` for stdin) or a PostgreSQL query (`--pg-inventory URL --pg-query SQL`), whether it is
 * the whole inventory or only changes (`--jsonl-changes`), and what a bad record does (`--lenient`).
 */
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { basename, resolve } from 'node:path';
import { jsonLinesFeed, type InventoryFeed } from '../source/inventory-feed.js';
import { postgresFeed } from '../source/pg-inventory.js';
import { isValidSetName } from '../source/url-path.js';

/** The options, in `parseArgs` form. */
export const FEED_ARGS = {
  jsonl: { type: 'string' },
  'pg-inventory': { type: 'string' },
  'pg-query': { type: 'string' },
  'jsonl-changes': { type: 'boolean' },
  lenient: { type: 'boolean' },
} as const;

/** Help lines (two-space indent, descriptions at column 27). */
export const FEED_HELP = `  --jsonl FILE            publish the resources a JSON-lines feed (.gz: gzipped) lists, one a line:
                          {"loc": URL, "lastmod": ..., "length": N, "hash": "md5:...", "type": ...};
                          "change": "deleted" deletes; FILE '-' reads stdin (build only).
                          In place of directories; needs --state
  --pg-inventory URL      publish the rows of a PostgreSQL query (--pg-query), columns named
                          as in a feed line (loc, lastmod, length, hash, type, change)
  --pg-query SQL          the query of --pg-inventory
  --jsonl-changes         the feed (or query) holds changes only: a resource it leaves out
                          stays as it was (default: it is the whole inventory, and a
                          resource it leaves out is deleted)
  --lenient               leave bad lines (or rows) out with a warning, and count them
                          (default: a bad line fails the run, nothing recorded)
`;

/** A wrong combination of these options; the message names them. */
export class FeedArgsError extends Error {}

/** The values as `parseArgs` gives them. */
export type FeedArgValues = Partial<Record<'jsonl' | 'pg-inventory' | 'pg-query', string>> & Partial<Record<'jsonl-changes' | 'lenient', boolean>>;

/** The feed the options give, with its set's name; undefined when they give none. */
export function feedFromArgs(values: FeedArgValues, options: { stdin?: () => AsyncIterable<Uint8Array | string>; name?: string }): { name: string; feed: InventoryFeed; file?: string } | undefined {
  const jsonl = values.jsonl;
  const pg = values['pg-inventory'];
  if (jsonl === undefined && pg === undefined) {
    for (const flag of ['pg-query', 'jsonl-changes', 'lenient'] as const) if (values[flag] !== undefined) throw new FeedArgsError(`--${flag} goes with --jsonl or --pg-inventory`);
    return undefined;
  }
  if (jsonl !== undefined && pg !== undefined) throw new FeedArgsError('--jsonl and --pg-inventory exclude each other');
  if (options.name !== undefined && !isValidSetName(options.name)) throw new FeedArgsError(`--name '${options.name}' is not a valid set name (letters, digits, '.', '_', '-'; not starting with '.')`);
  const common = { ...(values['jsonl-changes'] === true ? { scope: 'changes' as const } : {}), ...(values.lenient === true ? { onInvalid: 'skip' as const } : {}) };
  if (pg !== undefined) {
    if (values['pg-query'] === undefined || values['pg-query'].trim() === '') throw new FeedArgsError('--pg-inventory needs --pg-query');
    if (!/^postgres(ql)?:\/\//.test(pg)) throw new FeedArgsError('--pg-inventory is not a postgres:// URL');
    return { name: options.name ?? 'resources', feed: postgresFeed(pg, values['pg-query'], common) };
  }
  if (values['pg-query'] !== undefined) throw new FeedArgsError('--pg-query goes with --pg-inventory');
  if (jsonl === '-') {
    if (options.stdin === undefined) throw new FeedArgsError("--jsonl '-' (stdin) is for build: serve reads a file, and again when it changes");
    let read = false;
    const stdin = options.stdin;
    const once = (): AsyncIterable<Uint8Array | string> => {
      if (read) throw new FeedArgsError('stdin can be read once only');
      read = true;
      return stdin();
    };
    return { name: options.name ?? 'resources', feed: jsonLinesFeed(once, { location: 'stdin', ...common }) };
  }
  const file = resolve(jsonl!);
  const fromFile = basename(file).replace(/(\.[^.]*)?(\.gz)?$/, '').replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[.]+/, '').slice(0, 80);
  return {
    name: options.name ?? (isValidSetName(fromFile) ? fromFile : 'resources'),
    // a gzipped feed (`.gz`) is read through gunzip
    feed: jsonLinesFeed(() => (file.endsWith('.gz') ? createReadStream(file).pipe(createGunzip()) : createReadStream(file)), { location: jsonl!, ...common }),
    file,
  };
}
