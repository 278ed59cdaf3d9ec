/**
 * What the parts of `publish` and `recordChanges` share: the options of a publication, checked into the
 * context that applies to every set, the URLs and file names of a set's documents, writing one document
 * atomically, and recording and announcing a set's changes.
 */
import { copyFileSync, mkdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import type { HashAlgorithm } from '../core/constants.js';
import { ResourceSyncError } from '../core/errors.js';
import type { DocumentHeader, Entry, Ln } from '../core/model/types.js';
import { writeDocument } from '../core/xml/write-document.js';
import { writeFileAtomic } from '../node/file-sink.js';
import { changeNotifications, channelTopics, type SetNotifications } from './notifications.js';
import type { ChangeRecord } from './snapshot-rows.js';
import { openSqliteSnapshots } from './sqlite-snapshots.js';
import type { SnapshotsOpener, SourceSnapshots } from './source-snapshots.js';
import type { DocumentSink } from './document-sink.js';
import type { DumpFormat } from './warc-package.js';
import type { InventoryFeed } from './inventory-feed.js';
import { DOCUMENTS_PREFIX, isValidSetName, normalizeBaseUrl, setBaseUrl } from './url-path.js';

const DEFAULT_PACKAGE_BYTES = 100 * 1024 * 1024;

/** The dump format asked for; anything but `zip` or `warc` is refused. */
function dumpFormat(opt: true | { format?: DumpFormat }): DumpFormat {
  const format = opt === true ? 'zip' : (opt.format ?? 'zip');
  if (format !== 'zip' && format !== 'warc') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Dump format '${String(format)}' is not 'zip' or 'warc'.`, { data: { format } });
  }
  return format;
}
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

/** The options of one publication, checked and with their defaults. */
export interface Context {
  baseUrl: string;
  sdUrl: string;
  outDir: string;
  setCount: number;
  /** See `PublishOptions.namedSets`. */
  namedSets: boolean;
  /** See `PublishOptions.resourceLinks`. */
  resourceLinks: ResourceLinksFn | undefined;
  hashes: HashAlgorithm[];
  maxEntries: number;
  maxBytes: number;
  changeList: { maxEntries?: number; periodMs?: number };
  /** `format` only when it is not ZIP (so that the options of ZIP publications read as before). */
  dumps: { maxPackageBytes: number; format?: 'warc' } | undefined;
  gzip: boolean;
  htmlDiscoveryLink: boolean;
  /** Extension of the document names: `.xml`, or `.xml.gz` with `gzip`. */
  ext: string;
  retention: number | undefined;
  now: () => number;
  signal: AbortSignal | undefined;
  onProgress: ((p: PublishProgress) => void) | undefined;
  exclude: string[];
  stateDir: string | undefined;
  /** See `PublishOptions.snapshots`. */
  snapshots: SnapshotsOpener;
  notifications?: { hub: string; xmpp?: string } | undefined;
  /** Files still being written (see `PublishOptions.hold`). */
  hold: ((file: string) => boolean | undefined) | undefined;
  /** See `PublishOptions.onRecorded`. */
  onRecorded: ((n: SetNotifications) => void) | undefined;
  /** See `PublishOptions.scan`. */
  scan: boolean;
  /** See `PublishOptions.resourceListEveryMs`. */
  resourceListEveryMs: number | 'auto';
  /** See `PublishOptions.settleMs`. */
  settleMs: number;
  /** Names of the sets given as a feed: their paths are the resources' URLs. */
  feeds: Set<string>;
  /** What this run left out and why (see `PublishResult.warnings`), at most `MAX_WARNINGS`. */
  warnings: PublishWarning[];
  /** Warnings left out of `warnings` past the cap. */
  warningsOmitted: number;
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

/** Most warnings a publication keeps in full; the others are counted. */
const MAX_WARNINGS = 100;

/** Adds a warning for a name of `set` that cannot be published. */
export function unpublishable(ctx: Context, set: string, path: string): void {
  warn(ctx, {
    code: 'RS_UNPUBLISHABLE_NAME',
    set,
    path,
    message: `${JSON.stringify(path)} is not published: its name holds a control character, a backslash or bytes that are not UTF-8.`,
  });
}

/** Adds a warning, or counts it past `MAX_WARNINGS`. */
export function warn(ctx: Context, warning: PublishWarning): void {
  if (ctx.warnings.length >= MAX_WARNINGS) ctx.warningsOmitted++;
  else ctx.warnings.push(warning);
}

function invalid(message: string, data: Record<string, unknown>): ResourceSyncError {
  return new ResourceSyncError('RS_INVALID_ARGUMENT', message, { data });
}

/**
 * The options of a publication checked, with their defaults.
 * @throws ResourceSyncError RS_INVALID_ARGUMENT, RS_IO (a set's folder does not exist)
 */
export function publishContext(options: PublishOptions): Context {
  const baseUrl = normalizeBaseUrl(options.baseUrl);
  if (baseUrl === undefined) throw invalid(`Base URL '${options.baseUrl}' is not an absolute http(s) URL without query or fragment.`, { baseUrl: options.baseUrl });
  if (options.sets.length === 0) throw invalid('Option sets is empty: give at least one directory.', {});
  const names = new Set<string>();
  const feeds = new Set<string>();
  for (const s of options.sets) {
    if (!isValidSetName(s.name)) throw invalid(`Set name '${s.name}' is not a valid URL segment.`, { name: s.name });
    if (names.has(s.name)) throw invalid(`Set name '${s.name}' is used twice.`, { name: s.name });
    names.add(s.name);
    if (s.feed !== undefined) {
      if (options.stateDir === undefined) throw invalid(`Set '${s.name}' is a feed: option stateDir is required (its snapshots are kept there).`, { name: s.name });
      if (options.dumps !== undefined && options.dumps !== false) throw invalid(`Set '${s.name}' is a feed: dumps are not made of resources held elsewhere.`, { name: s.name });
      feeds.add(s.name);
      continue;
    }
    let isDir = false;
    try {
      isDir = statSync(s.dir).isDirectory();
    } catch {
      // reported below
    }
    if (!isDir) throw new ResourceSyncError('RS_IO', `Directory '${s.dir}' of set '${s.name}' does not exist.`, { data: { path: s.dir } });
  }
  const positive = (v: number | undefined, name: string, def: number): number => {
    if (v === undefined) return def;
    if (!Number.isSafeInteger(v) || v < 1) throw invalid(`Option ${name} '${v}' is not a positive integer.`, { [name]: v });
    return v;
  };
  const outDir = resolve(options.outDir);
  const dumpsOpt = options.dumps;
  return {
    baseUrl,
    sdUrl: `${baseUrl}.well-known/resourcesync`,
    outDir,
    setCount: options.sets.length,
    namedSets: options.namedSets === true,
    resourceLinks: options.resourceLinks,
    hashes: [...(options.hashes ?? ['md5'])],
    maxEntries: positive(options.maxEntries, 'maxEntries', 50_000),
    maxBytes: positive(options.maxBytes, 'maxBytes', 50 * 1024 * 1024),
    changeList: { ...options.changeList },
    dumps:
      dumpsOpt === undefined || dumpsOpt === false
        ? undefined
        : {
            maxPackageBytes: positive(dumpsOpt === true ? undefined : dumpsOpt.maxPackageBytes, 'maxPackageBytes', DEFAULT_PACKAGE_BYTES),
            ...(dumpFormat(dumpsOpt) === 'warc' ? { format: 'warc' as const } : {}),
          },
    gzip: options.gzip === true,
    htmlDiscoveryLink: options.htmlDiscoveryLink === true,
    ext: options.gzip === true ? '.xml.gz' : '.xml',
    retention: options.retention === undefined ? undefined : positive(options.retention, 'retention', 1),
    now: options.now ?? Date.now,
    signal: options.signal,
    onProgress: options.onProgress,
    exclude: [outDir, join(outDir, 'robots.txt'), ...(options.stateDir === undefined ? [] : [resolve(options.stateDir)])],
    stateDir: options.stateDir === undefined ? undefined : resolve(options.stateDir),
    snapshots: options.snapshots ?? (({ file }) => openSqliteSnapshots(file)),
    notifications: options.notifications,
    hold: options.hold,
    onRecorded: options.onRecorded,
    scan: options.scan ?? true,
    resourceListEveryMs: options.resourceListEveryMs === 'auto' ? 'auto' : Math.max(0, options.resourceListEveryMs ?? 0),
    settleMs: options.settleMs ?? 0,
    feeds,
    warnings: [],
    warningsOmitted: 0,
  };
}

/** Where a set's documents go: their URLs and files, and the URLs they refer to. */
export interface SetPaths {
  /** The set's document folder. */
  docDir: string;
  /** URL of the set's document folder, ending in `/`. */
  docUrl: string;
  /** URL of the set's Capability List: the `up` link of its documents. */
  capUrl: string;
  /** URL that the set's resource paths are relative to; '' for a feed, whose paths are the resources' URLs. */
  resBase: string;
  /** URL of a document of the set, by name. */
  documentUrl: (name: string) => string;
  /** File of a document of the set, by name. */
  documentFile: (name: string) => string;
  /** The entry of the resource at `path` with the links `resourceLinks` gives for it. */
  linked: (path: string, entry: Entry) => Entry;
}

/** The paths of a set's documents: the folder `.resourcesync/<set>/` under `outDir` and the base URL. */
export function setPaths(ctx: Context, set: { name: string }): SetPaths {
  const docDir = join(ctx.outDir, DOCUMENTS_PREFIX, set.name);
  const docUrl = `${ctx.baseUrl}${DOCUMENTS_PREFIX}/${set.name}/`;
  return {
    docDir,
    docUrl,
    capUrl: `${docUrl}capabilitylist${ctx.ext}`,
    resBase: ctx.feeds.has(set.name) ? '' : setBaseUrl(ctx.baseUrl, set.name, ctx.setCount, ctx.namedSets),
    documentUrl: (name) => docUrl + name,
    documentFile: (name) => join(docDir, name),
    linked: ctx.resourceLinks === undefined ? (_path, entry) => entry : (path, entry) => withResourceLinks(ctx, set.name, path, entry),
  };
}

/**
 * `entry` with the links `ctx.resourceLinks` gives for the resource at `path` of `set` appended to its own.
 * @see Z39.99 §14
 */
function withResourceLinks(ctx: Context, set: string, path: string, entry: Entry): Entry {
  const more = ctx.resourceLinks?.(set, path, entry);
  if (more === undefined || more.length === 0) return entry;
  entry.ln = [...(entry.ln ?? []), ...more];
  return entry;
}

/** Change List and Change Dump names number their period with five digits. */
export const pad = (n: number): string => String(n).padStart(5, '0');
/** Resource Lists and Resource Dumps kept for the archives when `retention` is not set. */
export const DEFAULT_SNAPSHOT_RETENTION = 5;

/** Writes a document atomically (temporary file + rename), gzipped with `gzip`. */
export async function writeDoc(
  file: string,
  h: DocumentHeader,
  entries: Iterable<Entry> | AsyncIterable<Entry>,
  gzip = false,
): Promise<void> {
  mkdirSync(dirname(file), { recursive: true });
  await writeFileAtomic(file, writeDocument(h, entries, { gzip }));
}

/** The top-level `archives` link of a document whose archive exists. @see ResourceSync Archives §2.2 */
export function archivesLn(href: string | undefined): Ln[] {
  return href === undefined ? [] : [{ rel: 'archives', href }];
}

export async function docBytes(h: DocumentHeader, entries: Iterable<Entry>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of writeDocument(h, entries)) chunks.push(c);
  return Buffer.concat(chunks);
}

/** `items` with `toEntry` applied to each, read as the writer asks (each `next()` passes one on, no generator in between). */
export function mapEntries<A, B>(items: AsyncIterable<A>, toEntry: (item: A) => B): AsyncIterable<B> {
  return {
    [Symbol.asyncIterator](): AsyncIterator<B> {
      const it = items[Symbol.asyncIterator]();
      return {
        next: () => it.next().then((r) => (r.done === true ? { done: true, value: undefined } : { done: false, value: toEntry(r.value) })),
        return: () => (it.return ? it.return() : Promise.resolve({ done: true, value: undefined })).then(() => ({ done: true, value: undefined })),
      };
    },
  };
}

/**
 * What recording a set's changes keeps besides the store's rows: the bitstream of each created or updated
 * resource for the Change Dump (`bitDir`, with dumps), and the changes themselves for Change Notifications
 * (with push). `onChange` is for the store's recording.
 */
export function changeRecorder(ctx: Context, setDir: string, bitDir: string): { onChange?: (c: ChangeRecord) => void; recorded: ChangeRecord[] | undefined } {
  const keep = ctx.dumps !== undefined;
  if (keep) mkdirSync(bitDir, { recursive: true });
  const recorded: ChangeRecord[] | undefined = ctx.notifications ? [] : undefined;
  if (!keep && recorded === undefined) return { recorded };
  return {
    recorded,
    onChange: (c) => {
      recorded?.push(c);
      if (!keep || c.change === 'deleted') return;
      try {
        copyFileSync(join(setDir, ...c.path.split('/')), join(bitDir, String(c.seq)));
      } catch {
        // the file went away again: its later deletion is recorded at the next rebuild
      }
    },
  };
}

/**
 * A set's Change Notifications for the changes just recorded at `at` (Change Notification §3): the window
 * starts where the previous one ended (kept in the store as `notified_until`) and ends at `at`, so that
 * windows are contiguous and never overlap. Called right after recording, before any document is written;
 * `onRecorded` hears of them at once.
 */
export async function announceChanges(
  ctx: Context & { notifications: { hub: string; xmpp?: string } },
  snapshots: SourceSnapshots,
  setName: string,
  paths: SetPaths,
  at: number,
  recorded: readonly ChangeRecord[],
): Promise<SetNotifications> {
  const last = await snapshots.getMeta('notified_until');
  const from = last === undefined ? at : Number(last);
  if (last === undefined || recorded.length > 0) await snapshots.setMeta('notified_until', String(at));
  const topics = channelTopics(paths.docUrl);
  const n: SetNotifications = {
    set: setName,
    capabilityList: paths.capUrl,
    hub: ctx.notifications.hub,
    changeTopic: topics.change,
    frameworkTopic: topics.framework,
    change: recorded.length > 0 ? changeNotifications(paths.resBase, paths.capUrl, from, at, recorded, paths.linked) : [],
    framework: undefined,
    frameworkChanges: [],
  };
  if (n.change.length > 0) ctx.onRecorded?.(n);
  return n;
}
