/**
 * The shapes a publication is given and reports: its sets, its options, its progress and its warnings (see
 * ./publish.ts; checked into a context by ./publish-context.ts).
 * @see Z39.99 §5.1, §6, §8–13
 */
import type { HashAlgorithm } from '../core/constants.js';
import type { Entry, Ln } from '../core/model/types.js';
import type { SetNotifications } from './notifications.js';
import type { SnapshotsOpener } from './source-snapshots.js';
import type { DocumentSink } from './document-sink.js';
import type { DumpFormat } from './warc-package.js';
import type { InventoryFeed } from './inventory-feed.js';
/**
 * A set of resources: the files of a folder (`dir`), or an inventory given as records (`feed`: a JSON-lines feed,
 * a database query), whose resources are where their `loc` says, on this host or another.
 */
export type PublishSet = { name: string; dir: string; describedBy?: string; feed?: undefined } | { name: string; feed: InventoryFeed; describedBy?: string; dir?: undefined };

/** Options of `publish`. */
export interface PublishOptions {
  /**
   * The sets of resources: one Capability List each. Names are URL segments (`[A-Za-z0-9_-][A-Za-z0-9._-]*`).
   * A set given as a `feed` needs `stateDir` (its snapshots are kept there), and no `dumps` (its bytes are elsewhere).
   */
  sets: PublishSet[];
  /** URL of a document describing the Source: the Source Description's `rel="describedby"` link (§8). */
  describedBy?: string;
  /** Where `outDir` is served, e.g. `https://example.com/` (a trailing `/` is added). */
  baseUrl: string;
  /** The publish folder. */
  outDir: string;
  /** State folder; the store of set `s` is `<stateDir>/<s>/source.sqlite`. Default `<dir>/.resourcesync/source.sqlite`. */
  stateDir?: string;
  /**
   * Opens the snapshots of a set (another database than the embedded one); `file` is where the SQLite store
   * would be. Default: `openSqliteSnapshots(file)`. Every publication of a set opens them, and closes them when done.
   */
  snapshots?: SnapshotsOpener;
  /**
   * Where the documents end up besides `outDir` (which stays the working copy each run goes on from): an S3
   * bucket (`createS3Documents`), say. Before the publication it brings into `outDir` what it holds; after, it
   * takes every document published and drops those no longer published. Default: none, `outDir` is the output.
   */
  sink?: DocumentSink;
  /** Fixity algorithms; default `['md5']`. */
  hashes?: HashAlgorithm[];
  /** Entries per Resource List document before a Resource List Index is written; default 50,000. */
  maxEntries?: number;
  /** Bytes per Resource List document; default 50 MB. */
  maxBytes?: number;
  /** When the open Change List is closed. Default: 50,000 entries, no period. */
  changeList?: { maxEntries?: number; periodMs?: number };
  /**
   * Write a Resource Dump and a Change Dump; packages split at `maxPackageBytes` (default 100 MiB), written as
   * `format`: `'zip'` (default, the standard's format) or `'warc'` (WARC/1.1 `.warc.gz` packages, see
   * docs/source.md "Dumps as WARC"). One dump never mixes formats: changing it rewrites the dumps.
   * @see Z39.99 §11.1, §13.1
   */
  dumps?: boolean | { maxPackageBytes?: number; format?: DumpFormat };
  /**
   * Write every document of the sets gzipped, as `<name>.xml.gz`, and link to those names everywhere (Capability
   * Lists, indexes, `up`/`index`/`archives`/`contents` links, robots.txt, the Source Description). The Source
   * Description itself stays plain XML at the well-known URI. Default false.
   * @see sitemaps.org protocol (a Sitemap or Sitemap index may be gzipped); Z39.99 §7 (the Sitemap formats)
   */
  gzip?: boolean;
  /**
   * Publish every HTML resource (`text/html`, at most 1 MiB) with `<link rel="resourcesync" href="<Capability
   * List>">` inserted in its `<head>`, as a server that inserts it serves it (`createSourceResponder`'s
   * `htmlDiscoveryLink`): the listed length and hashes, and the bitstreams in dumps, are those of the served
   * bytes. HTML that already has such a link, or no `<head>`, is published as stored. Default false.
   * @see Z39.99 §6.3.3
   */
  htmlDiscoveryLink?: boolean;
  /**
   * How many of each archived item are kept: closed Change Lists (with their Change Dump packages),
   * Resource List generations and Resource Dumps. Default: every closed Change List, 5 Resource Lists
   * and 5 Resource Dumps.
   */
  retention?: number;
  now?: () => number;
  signal?: AbortSignal;
  onProgress?: (p: PublishProgress) => void;
  /**
   * Push: advertise a change and a framework notification channel per set with this hub in the Capability
   * Lists, and return each publication's notifications in `PublishResult.notifications`. With `xmpp` (the JID of
   * an XMPP PubSub service, e.g. `pubsub.example.org`), each channel also names the node of that service where
   * its notifications are published too (the node's name is the channel's topic URI; see `XmppPublisher` in
   * `resourcesync/notify`).
   * @see Change Notification §4, Framework Notification §5, XEP-0060
   */
  notifications?: { hub: string; xmpp?: string };
  /**
   * What a watcher knows of a file (absolute path under a set's folder), e.g. `SourceWatcher.hold`: true
   * while it is being written, so that it keeps its previous state in this publication (a new one is left
   * out) and no half-written content is listed; false once it has settled; undefined when nothing is known.
   */
  hold?: (file: string) => boolean | undefined;
  /**
   * A file modified less than this long (ms) before it is read, that `hold` says nothing of, is taken as still
   * being written and kept as `hold` keeps it (a write that began before a watcher heard of it is not read
   * half-done). A watcher that settles files after this much quiet passes its own span. Default 0.
   */
  settleMs?: number;
  /**
   * Push: called for each set as soon as its changes are recorded, before its documents are written, with
   * its Change Notifications (only when there are some), so that they can go out at once. They are in
   * `PublishResult.notifications` too; its Framework Notifications come only with the result.
   */
  onRecorded?: (n: SetNotifications) => void;
  /**
   * A set's Resource List is rewritten at most this often (ms) by publications that do not scan (`scan:
   * false`); meanwhile its `at` stays, and the Change Lists, kept from there on whatever the `retention`, carry
   * the changes since (§10, §12). `'auto'`: at most every 20 times what the last one took to write (a few
   * milliseconds for a small set, so whenever it changed; seconds for a long one), so that rewriting it takes
   * at most 5% of the time. Default 0: whenever the set changed.
   */
  resourceListEveryMs?: number | 'auto';
  /**
   * Publish only the sets of these names (the others were published before and have not changed): the Source
   * Description and robots.txt still name every set of `sets`, and the result counts (and lists the documents of)
   * only these. Default: every set.
   */
  only?: readonly string[];
  /**
   * Resources of every set under `<baseUrl><set>/`, even when there is one set (default false: a single set's
   * resources are at `<baseUrl>` itself). For a Source whose sets come and go (an aggregator), so that adding a
   * set does not move the others; serve it with `createSourceResponder`'s `namedSets`.
   */
  namedSets?: boolean;
  /**
   * Further `rs:ln` links of a resource, written into its entries in Resource Lists, Change Lists and dump
   * manifests: called with the set's name, the resource's path in the set and the entry as written so far (its
   * `md`: `hash`, `length`, `type`, `change`). An aggregator gives here the `rel="via"` link to the original.
   * Default: none.
   * @see Z39.99 §14 (links), §14.8 (provenance: `via`)
   * @example resourceLinks: (set, path) => [{ rel: 'via', href: `https://origin.example.org/${path}` }]
   */
  resourceLinks?: ResourceLinksFn;
  /**
   * Scan the sets' folders and record what changed (default true). False for a Source whose changes are
   * recorded as they happen ({@link recordChanges}, fed by a watcher): the documents are written from the
   * snapshot store as it is. A set without a snapshot yet, or published before with other options, is
   * scanned all the same.
   */
  scan?: boolean;
}

/** The further `rs:ln` links of a resource (see `PublishOptions.resourceLinks`); undefined or [] for none. */
export type ResourceLinksFn = (set: string, path: string, entry: Entry) => Ln[] | undefined;

/** Progress of a publication. */
export interface PublishProgress {
  set: string;
  phase: 'scan' | 'documents' | 'dumps';
  /** Files inventoried so far in this set. */
  files: number;
  bytes: number;
}

/**
 * Something a publication left out, with a stable code. `RS_UNPUBLISHABLE_NAME`: a file or folder whose name
 * holds a control character (newline, CR, tab…), a backslash or bytes that are not UTF-8; it is never listed
 * (no Destination could write it back safely, and such bytes do not round-trip through a URL), with what it holds.
 */
export interface PublishWarning {
  /**
   * `RS_INVALID_FEED`: a bad record of a feed left out (`InventoryFeed.onInvalid: 'skip'`). `RS_AUTHORITY`: a
   * feed's resources on another origin than the base URL (counted, the first named).
   */
  code: 'RS_UNPUBLISHABLE_NAME' | 'RS_INVALID_FEED' | 'RS_AUTHORITY';
  /** Name of the set. */
  set: string;
  /** Relative path in the set (undecodable bytes shown as U+FFFD); for a feed, its location. */
  path: string;
  /** For a feed: the line (or row) left out. */
  line?: number;
  message: string;
}
