/**
 * Where an aggregate keeps its state, when not in SQLite files under `out`: with `state: postgres://…` (the
 * configuration's field, or `aggregate --state`), every Source's Destination state (key `aggregate:<out>:<id>`, one
 * more `:sets/<n>` per chosen capability set) and the aggregate's snapshots of every Source (Source key
 * `aggregate:<out>`, one set per Source id) and the embedded hub's store (hub key `aggregate:<out>`) are in that
 * database. The URL may name a password: it is never shown
 * ({@link AggregateStateEngine.shown} masks it).
 * @see docs/aggregate.md ("What it keeps")
 */
import { openPostgresDestinationState } from '../destination/postgres-state.js';
import type { DestinationState } from '../destination/state.js';
import { redactedUrl } from '../node/postgres.js';
import { openPostgresSnapshots } from '../source/postgres-snapshots.js';
import type { SnapshotsOpener } from '../source/source-snapshots.js';
import type { AggregateSource } from './config.js';
import type { HubStore } from '../notify/hub-store.js';
import { openPostgresHubStore } from '../notify/postgres-hub-store.js';

/** The database of an aggregate's state. */
export interface AggregateStateEngine {
  /** The database's URL without its password, for messages. */
  readonly shown: string;
  /**
   * Opens the Destination state of a Source (of its `set`-th chosen capability set, when it has some); the caller
   * closes it.
   */
  openState(source: Pick<AggregateSource, 'id'>, set: number | undefined, options: { readonly: boolean }): Promise<DestinationState>;
  /** Opens the aggregate's snapshots of a Source (the set named by its id), for `publish`. */
  readonly snapshots: SnapshotsOpener;
  /** The embedded hub's store (hub key `aggregate:<out>`), opened at its first use. */
  hubStore(): HubStore;
}

/** The key of an aggregate in the database (of its snapshots and its status): `aggregate:<out>`, the `s3://` URL with one. */
export function aggregateKey(config: { out: string; s3?: { location: string } | undefined }): string {
  return `aggregate:${config.s3?.location ?? config.out}`;
}

/** The key of a Source's Destination state in the database. */
function aggregateStateKey(out: string, id: string, set?: number): string {
  return `aggregate:${out}:${id}${set === undefined ? '' : `:sets/${set}`}`;
}

/**
 * The PostgreSQL engine of the aggregate whose mirrors are at `out` (its folder, or its `s3://` URL), in the
 * database at `url`. Nothing is opened until a state or snapshots are.
 */
export function postgresStateEngine(url: string, out: string): AggregateStateEngine {
  return {
    shown: redactedUrl(url),
    openState: (source, set, options) =>
      openPostgresDestinationState(url, { destination: aggregateStateKey(out, source.id, set), readonly: options.readonly, maxConnections: 2 }),
    snapshots: (set) => openPostgresSnapshots(url, { source: `aggregate:${out}`, set: set.name, maxConnections: 4 }),
    hubStore: () => lazyHubStore(() => openPostgresHubStore(url, { hub: `aggregate:${out}` })),
  };
}

/**
 * A hub store opened at its first use (every method answers with a promise): the hub is made at once, the database
 * reached when the hub first needs it; an open that failed is tried again at the next call.
 */
function lazyHubStore(open: () => Promise<HubStore>): HubStore {
  let opened: Promise<HubStore> | undefined;
  const store = (): Promise<HubStore> =>
    (opened ??= open().catch((error: unknown) => {
      opened = undefined;
      throw error;
    }));
  return new Proxy({} as HubStore, {
    get: (_target, name) => {
      if (typeof name !== 'string' || name === 'then') return undefined; // a store, not a promise
      return async (...args: unknown[]): Promise<unknown> => {
        if (name === 'close' && opened === undefined) return undefined;
        const s = await store();
        const method = Reflect.get(s, name) as (...a: unknown[]) => unknown;
        return method.apply(s, args);
      };
    },
  });
}
