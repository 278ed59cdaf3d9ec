/**
 * What the parts of `publish` share: the options of one publication as they apply to every set, the URLs
 * and file names of a set's documents, and writing one document atomically.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { HashAlgorithm } from '../core/constants.js';
import type { DocumentHeader, Entry, Ln } from '../core/model/types.js';
import { formatW3CDatetime } from '../core/w3c-datetime.js';
import { writeDocument } from '../core/xml/write-document.js';
import { writeFileAtomic } from '../node/file-sink.js';
import { changeNotifications, channelTopics, type SetNotifications } from './notifications.js';
import type { ChangeRecord, SnapshotStore } from './snapshot-store.js';

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
  hashes: HashAlgorithm[];
  maxEntries: number;
  maxBytes: number;
  changeList: { maxEntries?: number; periodMs?: number };
  dumps: { maxPackageBytes: number } | undefined;
  gzip: boolean;
  htmlDiscoveryLink: boolean;
  /** Extension of the document names: `.xml`, or `.xml.gz` with `gzip`. */
  x: string;
  retention: number | undefined;
  now: () => number;
  signal: AbortSignal | undefined;
  onProgress: ((p: PublishProgress) => void) | undefined;
  exclude: string[];
  stateDir: string | undefined;
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
}

/** Where a set's documents go: their URLs (`u`) and files (`f`), and the URLs they refer to. */
export interface SetPaths {
  /** URL of the set's document folder, ending in `/`. */
  docUrl: string;
  /** URL of the set's Capability List: the `up` link of its documents. */
  capUrl: string;
  /** URL that the set's resource paths are relative to. */
  resBase: string;
  /** URL of a document of the set. */
  u: (name: string) => string;
  /** File of a document of the set. */
  f: (name: string) => string;
}

/** Change List and Change Dump names number their period with five digits. */
export const pad = (n: number): string => String(n).padStart(5, '0');
export const ts = formatW3CDatetime;
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

export function* map<A, B>(it: Iterable<A>, f: (a: A) => B): Generator<B> {
  for (const a of it) yield f(a);
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
export function announceChanges(
  ctx: Context & { notifications: { hub: string; xmpp?: string } },
  store: SnapshotStore,
  set: { name: string; docUrl: string; capUrl: string; resBase: string },
  at: number,
  recorded: readonly ChangeRecord[],
): SetNotifications {
  const last = store.getMeta('notified_until');
  const from = last === undefined ? at : Number(last);
  if (last === undefined || recorded.length > 0) store.setMeta('notified_until', String(at));
  const topics = channelTopics(set.docUrl);
  const n: SetNotifications = {
    set: set.name,
    capabilityList: set.capUrl,
    hub: ctx.notifications.hub,
    changeTopic: topics.change,
    frameworkTopic: topics.framework,
    change: recorded.length > 0 ? changeNotifications(set.resBase, set.capUrl, from, at, recorded) : [],
    framework: undefined,
    frameworkChanges: [],
  };
  if (n.change.length > 0) ctx.onRecorded?.(n);
  return n;
}
