/**
 * The shapes of the aggregator's configuration (read and checked by ./config.ts): where the aggregate is
 * published, where its mirrors and state go, and the Sources it keeps in step.
 * @see Z39.99 §14.8; docs/aggregate.md (every field)
 */

/** How a Source is followed: by push where it offers a change channel, by polling, or push when offered (`auto`). */
export type FollowMode = 'push' | 'poll' | 'auto';

/** Where a Source's `Authorization` comes from: the name of an environment variable and how its value is used. */
export interface SourceCredentials {
  /** `bearer`: the variable holds a token; `basic`: `user:password`; `authorization`: the whole header value. */
  scheme: 'bearer' | 'basic' | 'authorization';
  /** Name of the environment variable (its value is never written anywhere). */
  env: string;
}

/**
 * The XMPP account a Source's change channel is followed with (Change Notification 1.0.1 allows XMPP PubSub):
 * both by environment variable name, read at each attempt and never written anywhere.
 */
export interface XmppCredentials {
  /** Variable holding the account: `user@domain`, or `xmpp://user@domain[:port][?server=host]`. */
  jid: string;
  /** Variable holding its password. */
  password: string;
}

/** One Source of the aggregate. */
export interface AggregateSource {
  /** Name of the Source in the aggregate: its folder under `<out>/sources/` and its set in the aggregate's URLs. */
  id: string;
  /** Start URL (Source Description, Capability List, or any URL discovery accepts). */
  url: string;
  /** Seconds between polls. */
  interval: number;
  /** When to poll instead of every `interval`: a 5-field cron expression, in UTC (see `cron.ts`). */
  schedule?: string;
  /** Longest a sync of the Source may take (s): past it the attempt is abandoned and counts as a failure. */
  timeout: number;
  mode: FollowMode;
  credentials?: SourceCredentials;
  /** Requests per second to the Source's origin. */
  rate?: number;
  /** Only these Capability Lists of the Source (URLs); default every one. */
  capabilitySets?: string[];
  /** Only the resources whose URL starts with one of these (absolute http(s) URLs); default every one. */
  urlPrefixes?: string[];
  /** The XMPP account to follow the Source's XMPP PubSub node with (its own, else the top-level one). */
  xmpp?: XmppCredentials;
  /** Line of the Source's entry in the file. */
  line: number;
}

/** A checked configuration. */
export interface AggregateConfig {
  /** The configuration file (absolute). */
  file: string;
  /** Where the aggregate is published, ending in `/`; undefined: where it listens. */
  baseUrl: string | undefined;
  /** Folder of the mirrors, their state and the published aggregate (absolute; relative ones are to the file's folder). */
  out: string;
  /** Sources synced at once. */
  concurrency: number;
  /** Longest wait (s) between attempts at a failing Source. */
  maxBackoff: number;
  /**
   * Requests per second shared by every Source on one origin, across their syncs; with it, Sources on one origin
   * may sync at once. Undefined: one Source per origin at a time.
   */
  originRate?: number;
  /**
   * Where the Sources' hubs reach the aggregator's WebSub callbacks (`<callback><id>`), ending in `/`; undefined:
   * `<listening URL>/.resourcesync-callback/`. The callbacks are served on the aggregator's own port either way.
   */
  callback: string | undefined;
  /** Non-loopback callbacks the aggregate's embedded hub may contact (patterns, as `serve --allow-callback`). */
  allowCallback: string[];
  /**
   * A PostgreSQL database (`postgres://…`) holding every Source's Destination state and the aggregate's snapshots;
   * undefined: SQLite files under `out`.
   */
  state?: string;
  /**
   * With `out: s3://bucket/prefix`: the mirrors and the published documents are in that bucket (the copies of
   * Source `<id>` under `<prefix>/<id>/`), and `out` above is the local `work` folder (status, hub, working copy).
   */
  s3?: { location: string; bucket: string; prefix: string };
  /** The XMPP account of the Sources that name none (each Source carries the one it uses). */
  xmpp?: XmppCredentials;
  sources: AggregateSource[];
  /**
   * The dumps each Source's set in the aggregate offers besides its lists: a Resource Dump and Change Dumps of the
   * copies (`publish`'s `dumps`), or undefined for none.
   * @see Z39.99 §11.1, §13.1
   */
  dumps?: AggregateDumps;
  /** When the aggregate's open Change Lists are closed (`publish`'s `changeList`); undefined: at 50,000 entries. */
  changeList?: { maxEntries?: number; periodMs?: number };
}

/** The dumps of the aggregate: package format and bytes of bitstreams per package (default 100 MiB). */
export interface AggregateDumps {
  format?: 'zip' | 'warc';
  maxPackageBytes?: number;
}

/** One problem of a configuration: where, which field, what. */
export interface ConfigIssue {
  line: number;
  /** The field's path, e.g. `sources[2].interval`. */
  field: string;
  message: string;
}
