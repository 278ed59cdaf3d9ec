/**
 * Where a hub keeps its subscriptions and outbox when told: `resourcesync hub --store` and `serve --hub-store` read
 * their value with {@link hubStoreChoice} and open it with {@link openHubStoreChoice}. A `postgres://` URL keeps
 * them in PostgreSQL under a key (several hubs share one database; every process given the same URL and key shares
 * one hub), any other value is an SQLite file; a URL of another scheme is a usage error.
 * @see WebSub §5.1 (subscriptions), §7 (content distribution)
 */
import { resolve } from 'node:path';
import type { HubStore } from '../notify/hub-store.js';
import { openPostgresHubStore } from '../notify/postgres-hub-store.js';
import { openSqliteHubStore } from '../notify/sqlite-hub-store.js';
import { redactedUrl } from '../node/postgres.js';
import { openFailure } from './state-option.js';

/** A hub's store as the command line names it (nothing opened yet). */
export type HubStoreChoice = { kind: 'postgres'; url: string; key: string } | { kind: 'sqlite'; file: string };

/** Longest hub key accepted. */
const MAX_KEY = 1000;

/**
 * The store `value` names (a PostgreSQL URL with its key, or an SQLite file), or what is wrong, as a usage message.
 * `flags` are the option names to cite; `defaultKey` is the key when `key` is not given (undefined: it must be).
 * @example hubStoreChoice('postgres://rs@db/hubs', undefined, 'default', { store: '--store', key: '--store-key' })
 */
export function hubStoreChoice(value: string, key: string | undefined, defaultKey: string | undefined, flags: { store: string; key: string }): HubStoreChoice | string {
  if (value === '') return `${flags.store} is empty.`;
  if (/^postgres(ql)?:/i.test(value)) {
    if (!URL.canParse(value) || new URL(value).hostname === '') return `${flags.store} '${redactedUrl(value)}' is not a PostgreSQL URL (postgres://USER@HOST:PORT/DB).`;
    if (key === '') return `${flags.key} is empty.`;
    const chosen = key ?? defaultKey;
    if (chosen === undefined || chosen === '') return `${flags.key} is needed with ${flags.store} postgres://… here (no base URL to derive it from).`;
    if (chosen.length > MAX_KEY) return `${flags.key} is longer than ${MAX_KEY} characters.`;
    return { kind: 'postgres', url: value, key: chosen };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return `${flags.store} '${redactedUrl(value)}' is neither a postgres:// URL nor a file path.`;
  if (key !== undefined) return `${flags.key} goes with ${flags.store} postgres://…`;
  return { kind: 'sqlite', file: resolve(value) };
}

/**
 * Opens the store `choice` names. A PostgreSQL one that cannot be opened (unreachable, login refused, no such
 * database, the connect timeout passed) is an `RS_IO` error naming the host and database, never the password.
 */
export async function openHubStoreChoice(choice: HubStoreChoice): Promise<HubStore> {
  if (choice.kind === 'sqlite') return openSqliteHubStore(choice.file);
  try {
    return await openPostgresHubStore(choice.url, { hub: choice.key });
  } catch (err) {
    throw openFailure('store', choice.url, err, { key: choice.key });
  }
}
