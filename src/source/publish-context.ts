/**
 * What the parts of `publish` and `recordChanges` share: the options of a publication (./publish-types.ts),
 * checked into the context that applies to every set, the URLs and file names of a set's documents, writing one
 * document atomically, and recording and announcing a set's changes.
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
import type { DumpFormat } from './warc-package.js';
import { DOCUMENTS_PREFIX, isValidSetName, normalizeBaseUrl, setBaseUrl } from './url-path.js';
import type { PublishOptions, PublishProgress, PublishWarning, ResourceLinksFn } from './publish-types.js';

export type { PublishOptions, PublishProgress, PublishSet, PublishWarning, ResourceLinksFn } from './publish-types.js';

const DEFAULT_PACKAGE_BYTES = 100 * 1024 * 1024;

/** The dump format asked for; anything but `zip` or `warc` is refused. */
function dumpFormat(opt: true | { format?: DumpFormat }): DumpFormat {
  const format = opt === true ? 'zip' : (opt.format ?? 'zip');
  if (format !== 'zip' && format !== 'warc') {
    throw new ResourceSyncError('RS_INVALID_ARGUMENT', `Dump format '${String(format)}' is not 'zip' or 'warc'.`, { data: { format } });
  }
  return format;
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
