/**
 * `--state` and `--state-key`, shared by `sync` (with `--follow`) and `audit` (with `--repair`): where the
 * Destination's state lives when not in `<dest>/.resourcesync/state.sqlite`. `--state postgres://…` (or
 * `postgresql://`) opens the PostgreSQL state under a key (`--state-key`, by default the destination's absolute
 * path, or its URL as given when it is one such as `s3://bucket/prefix`); any other value is the file of an SQLite
 * state. The command opens what is named here and closes it when done (the library never closes a state it is given).
 */
import { resolve } from 'node:path';
import { postgresMessage, redactedUrl } from '../node/postgres.js';
import { ResourceSyncError, messageOf } from '../core/errors.js';
import { openPostgresDestinationState } from '../destination/postgres-state.js';
import { openSqliteDestinationState } from '../destination/sqlite-state.js';
import type { DestinationState } from '../destination/state.js';

/** The command-line options of this module. */
export const STATE_OPTIONS = {
  state: { type: 'string' },
  'state-key': { type: 'string' },
} as const;

/** Their lines in a command's help. */
export const STATE_HELP = `  --state URL|FILE         keep the Destination's state (records, cursors, lease) in PostgreSQL
                           (postgres://USER@HOST:PORT/DB; the password in the URL or in
                           PGPASSWORD) or in the SQLite file FILE, instead of
                           <dest-dir>/.resourcesync/state.sqlite
  --state-key NAME         with --state postgres://: the destination's key in the database
                           (default: the absolute path of <dest-dir>); several destinations
                           share one database, each under its own key`;

/** Where the state is, as the command line names it (nothing opened yet). */
export type StateChoice =
  | { kind: 'default' }
  | { kind: 'sqlite'; file: string }
  | { kind: 'postgres'; url: string; key: string };

/** An opened state and how to let it go; `state` is undefined for the default (the library opens it). */
export interface OpenedState {
  state: DestinationState | undefined;
  close(): Promise<void>;
}

/** True for a destination named by a URL (`s3://…`) rather than a folder. */
function isUrlDest(dest: string): boolean {
  return /^[a-z][a-z0-9+.-]+:\/\//i.test(dest);
}

/** The default key of `dest` in a shared database: its absolute path, or the URL as given. */
function defaultStateKey(dest: string): string {
  return isUrlDest(dest) ? dest : resolve(dest);
}

/**
 * The state the options name for `dest`; throws a usage message (without the password) for a malformed value.
 */
export function stateChoice(v: { state?: string | undefined; 'state-key'?: string | undefined }, dest: string): StateChoice {
  const given = v.state;
  const key = v['state-key'];
  if (given === undefined) {
    if (key !== undefined) throw new Error('--state-key goes with --state postgres://…');
    return { kind: 'default' };
  }
  if (given === '') throw new Error('--state is empty');
  if (/^postgres(ql)?:/i.test(given)) {
    if (!URL.canParse(given) || new URL(given).hostname === '') throw new Error(`--state '${redactedUrl(given)}' is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB)`);
    if (key === '') throw new Error('--state-key is empty');
    return { kind: 'postgres', url: given, key: key ?? defaultStateKey(dest) };
  }
  if (key !== undefined) throw new Error('--state-key goes with --state postgres://…');
  return { kind: 'sqlite', file: resolve(given) };
}

/** What went wrong, in words: a connection refused to every address of a name is an AggregateError without a message. */
function reasonOf(err: unknown): string {
  if (err instanceof AggregateError && err.message === '') return [...new Set(err.errors.map(messageOf))].join('; ');
  const code = (err as { code?: unknown } | undefined)?.code;
  return postgresMessage(err) || (typeof code === 'string' ? code : 'unknown error');
}

/** `text` with every occurrence of the URL's password masked (a driver's message should not carry it, but may). */
function scrub(text: string, url: string): string {
  let password: string;
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {
    return text;
  }
  return password === '' ? text : text.split(password).join('***');
}

/**
 * The error of a PostgreSQL database that could not be opened for `what` (the server unreachable, the login refused,
 * no such database, a newer schema): `RS_IO`, one sentence naming the host and database, never the password.
 */
export function openFailure(what: string, url: string, err: unknown, data: Record<string, unknown> = {}): ResourceSyncError {
  const cause = err instanceof ResourceSyncError && err.cause !== undefined ? err.cause : err;
  const shown = redactedUrl(url);
  return new ResourceSyncError('RS_IO', `The ${what} at ${shown} cannot be opened: ${scrub(reasonOf(cause), url).replace(/\.$/, '')}.`, {
    data: { ...data, url: shown },
  });
}

/**
 * Opens the state `choice` names (read-only for a dry run or an audit). A PostgreSQL state that cannot be opened
 * (the server unreachable, the login refused, no such database) is an `RS_IO` error naming the host and database,
 * never the password.
 */
export async function openStateChoice(choice: StateChoice, dest: string, options: { readonly: boolean }): Promise<OpenedState> {
  if (choice.kind === 'default') return { state: undefined, close: () => Promise.resolve() };
  let state: DestinationState;
  if (choice.kind === 'sqlite') {
    state = await openSqliteDestinationState(dest, { file: choice.file, readonly: options.readonly });
  } else {
    try {
      state = await openPostgresDestinationState(choice.url, { destination: choice.key, readonly: options.readonly });
    } catch (err) {
      throw openFailure('state', choice.url, err, { key: choice.key });
    }
  }
  let closed = false;
  return {
    state,
    close: async () => {
      if (closed) return;
      closed = true;
      // the run's outcome is reported already; a database gone meanwhile lets the lease expire on its own
      await Promise.resolve(state.close()).catch(() => undefined);
    },
  };
}
