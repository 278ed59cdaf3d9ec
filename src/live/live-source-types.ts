/**
 * The shapes of a live Source (see ./live-source.ts): its sets, its options and what it reports.
 * @see Z39.99 §6.3 (discovery), §12 (Change List); Change Notification §4
 */
import type { ResponderHandler } from '../server/request-response.js';
import type { ServeOptions } from '../server/node-adapter.js';
import type { WatchAction } from '../source/watch/watch.js';
import type { PublishOptions, PublishResult } from '../source/publish.js';
import type { PublishWarning } from '../source/publish-context.js';
import type { XmppPublisher } from '../notify/xmpp-publisher.js';
import type { PushEvent, PushOptions } from './push.js';
import type { InventoryFeed } from '../source/inventory-feed.js';

/**
 * A set of a live Source: a directory, or a feed (`InventoryFeed`) whose resources are elsewhere; with `watch`, a
 * feed read from a `file` is published again when the file changes, and one with `everyMs` (a query) that often.
 */
export type LiveSet = { name: string; dir: string } | LiveFeedSet;

/** A feed set of a live Source (see {@link LiveSet}). */
export interface LiveFeedSet {
  name: string;
  feed: InventoryFeed;
  file?: string;
  everyMs?: number;
}

/** The publication options a live Source takes as they are (the rest it sets itself). */
export type LivePublishOptions = Omit<
  PublishOptions,
  | 'sets'
  | 'baseUrl'
  | 'outDir'
  | 'stateDir'
  | 'signal'
  | 'htmlDiscoveryLink'
  | 'notifications'
  | 'onRecorded'
  | 'resourceListEveryMs'
  | 'scan'
  | 'hold'
  | 'settleMs'
>;

/** Push of a live Source: an embedded hub unless `hub` names one elsewhere. */
export interface LivePushOptions extends Pick<PushOptions, 'hub' | 'hubStore' | 'allowCallback' | 'hubBounds' | 'publishSecret'> {
  /** The embedded hub's state folder. Default `<stateDir>/hub` (`<first dir>/.resourcesync/hub`). */
  hubDir?: string;
  /** Also publish to this XMPP PubSub service (the publisher is closed with the Source). */
  xmpp?: { publisher: XmppPublisher; service: string };
}

/** Options of {@link createLiveSource}. */
export interface LiveSourceOptions {
  /** The sets of resources, a directory or a feed each; names are URL segments. A feed needs `stateDir`. */
  sets: readonly LiveSet[];
  /** TCP port; 0 picks a free one. Default 8080. */
  port?: number;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string;
  /** Public base URL of the resources. Default: the listening URL. */
  baseUrl?: string;
  /** State of the sets (default: each set's `<dir>/.resourcesync`). */
  stateDir?: string;
  /** Published documents. Default `<stateDir>/publish` (`<first dir>/.resourcesync/publish`). */
  outDir?: string;
  /** Publication options (hashes, list sizes, dumps, gzip, …). */
  publish?: LivePublishOptions;
  /** HTML is served with its discovery link and published as served (§6.3.3). Default false. */
  htmlDiscoveryLink?: boolean;
  /** Watch the sets and re-publish on changes. Default true; false publishes when `publishNow()` is called. */
  watch?: boolean;
  /** Send Change and Framework Notifications. Default: none. */
  push?: LivePushOptions;
  /** Mount the explorer page at `<base-url>/.resourcesync/ui/`. Default false. */
  explorer?: boolean;
  /** Aborting it closes the Source, like `close()`. */
  signal?: AbortSignal;
  /** What happens (errors, warnings, publications, notifications that failed). */
  onEvent?: (event: LiveSourceEvent) => void;
  /** Called once per finished response (for access logs). */
  onResponse?: ServeOptions['onResponse'];
}

/** What a live Source reports. */
export type LiveSourceEvent =
  | PushEvent
  /** An error answering a request (the request got 500 or its connection was closed). */
  | { type: 'error'; error: unknown }
  | { type: 'explorer-error'; error: unknown }
  /** A name that cannot be published (reported once per name). */
  | { type: 'warning'; warning: PublishWarning }
  /** A publication or recording that failed after the first (the watcher tries again later). */
  | { type: 'publish-failed'; error: unknown }
  /** A publication or recording done by the watcher. */
  | { type: 'run'; action: WatchAction; changes: PublishResult['changes']; ms: number };

/** A running live Source. */
export interface LiveSource {
  /** `http://host:port` of the listening socket. */
  readonly url: string;
  /** The base URL the resources are published under (no trailing slash). */
  readonly baseUrl: string;
  /** The responder behind the server: 503 until the first publication, then the Source's answers. */
  readonly handler: ResponderHandler;
  /** Resolves with the first publication, after which the Source serves; rejects when it failed. */
  ready(): Promise<PublishResult>;
  /**
   * Publishes now, after the publication in flight. Without the watcher it resolves with the publication's
   * result (and rejects when it failed); with it, the watcher rescans and it resolves with the latest result.
   */
  publishNow(): Promise<PublishResult>;
  /**
   * Without the watcher: records the changes of `files` (absolute paths in the sets' folders, changed outside
   * the watcher) on their own, announced at once with push, then writes the documents without scanning the sets;
   * a full publication when the files need one (see `recordChanges`). With the watcher, as `publishNow()`.
   */
  publishFiles(files: readonly string[]): Promise<PublishResult>;
  /** Forgets what the server cached of the file system (after a change made outside the watcher). */
  invalidate(): void;
  /** Stops serving, watching and pushing; resolves once all is closed and no publication is in flight. */
  close(): Promise<void>;
  /** Resolves once the Source has closed (after `close()` or the signal). */
  readonly closed: Promise<void>;
}
